package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// stubPod is a bound pod of one container with the CloneSet's two readiness gates.
func stubPod(image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cs-abcde", UID: "uid-1"},
		Spec: corev1.PodSpec{
			NodeName:   "bench-node-0001",
			Containers: []corev1.Container{{Name: "pause", Image: image}},
			ReadinessGates: []corev1.PodReadinessGate{
				{ConditionType: appsv1beta1.InPlaceUpdateReady}, {ConditionType: appsv1beta1.KruisePodReadyConditionType},
			},
		},
	}
}

func setCondition(pod *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			pod.Status.Conditions[i].Status = s
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s})
}

func TestStubPodStatusRunsTheSpecAndWaitsForTheGates(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	pod := stubPod("registry.k8s.io/pause:3.10")
	setCondition(pod, appsv1beta1.InPlaceUpdateReady, corev1.ConditionTrue)

	status := stubPodStatus(pod, now)
	if status.Phase != corev1.PodRunning || status.StartTime == nil || !status.StartTime.Equal(&now) {
		t.Errorf("phase %s, start time %v; want Running since %v", status.Phase, status.StartTime, now)
	}
	if len(status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses %+v, want one", status.ContainerStatuses)
	}
	c := status.ContainerStatuses[0]
	if c.Image != "registry.k8s.io/pause:3.10" || c.ImageID != stubImageID(c.Image) || !c.Ready || c.RestartCount != 0 || c.State.Running == nil {
		t.Errorf("container status %+v, want a ready, running pause:3.10 with its image ID", c)
	}
	for _, want := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady} {
		if conditionStatus(status.Conditions, want) != corev1.ConditionTrue {
			t.Errorf("condition %s is %q, want True", want, conditionStatus(status.Conditions, want))
		}
	}
	// KruisePodReady has not been set yet: the pod is not Ready.
	if got := conditionStatus(status.Conditions, corev1.PodReady); got != corev1.ConditionFalse {
		t.Errorf("Ready is %q with a gate not True, want False", got)
	}

	// Once the gate's condition is True, Ready follows; nothing else changes.
	pod.Status = *status
	setCondition(pod, appsv1beta1.KruisePodReadyConditionType, corev1.ConditionTrue)
	later := metav1.NewTime(now.Add(time.Minute))
	ready := stubPodStatus(pod, later)
	if got := conditionStatus(ready.Conditions, corev1.PodReady); got != corev1.ConditionTrue {
		t.Errorf("Ready is %q with every gate True, want True", got)
	}
	if !equality.Semantic.DeepEqual(ready.ContainerStatuses, status.ContainerStatuses) || !ready.StartTime.Equal(&now) {
		t.Errorf("the container statuses or start time changed: %+v", ready)
	}

	// A pod whose status is already what the stub reports gets the same status back, so
	// the stub writes nothing.
	pod.Status = *ready
	if again := stubPodStatus(pod, metav1.NewTime(later.Add(time.Minute))); !equality.Semantic.DeepEqual(again, &pod.Status) {
		t.Errorf("a settled pod's status changed:\n%+v\nwant\n%+v", again, pod.Status)
	}
}

func TestStubPodStatusRestartsAContainerWithANewImage(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	pod := stubPod("registry.k8s.io/pause:3.10")
	setCondition(pod, appsv1beta1.InPlaceUpdateReady, corev1.ConditionTrue)
	setCondition(pod, appsv1beta1.KruisePodReadyConditionType, corev1.ConditionTrue)
	pod.Status = *stubPodStatus(pod, now)
	before := pod.Status.ContainerStatuses[0]

	// The controller starts an in-place update: the gate's condition turns False and the
	// image changes.
	setCondition(pod, appsv1beta1.InPlaceUpdateReady, corev1.ConditionFalse)
	pod.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10.1"
	later := metav1.NewTime(now.Add(time.Minute))
	status := stubPodStatus(pod, later)
	c := status.ContainerStatuses[0]
	if c.Image != "registry.k8s.io/pause:3.10.1" || c.ImageID == before.ImageID || c.ImageID != stubImageID(c.Image) {
		t.Errorf("container status %+v, want the new image with its own image ID (old %s)", c, before.ImageID)
	}
	if c.RestartCount != 1 || c.ContainerID == before.ContainerID || !c.State.Running.StartedAt.Equal(&later) {
		t.Errorf("container status %+v, want a restarted container", c)
	}
	if got := conditionStatus(status.Conditions, corev1.PodReady); got != corev1.ConditionFalse {
		t.Errorf("Ready is %q while InPlaceUpdateReady is False, want False", got)
	}
	for _, cond := range status.Conditions {
		if cond.Type == corev1.PodReady && !cond.LastTransitionTime.Equal(&later) {
			t.Errorf("Ready turned False at %v, want %v", cond.LastTransitionTime, later)
		}
	}
}

func TestStubPodStatusWithoutReadinessGates(t *testing.T) {
	pod := stubPod("app")
	pod.Spec.ReadinessGates = nil
	status := stubPodStatus(pod, metav1.Now())
	if got := conditionStatus(status.Conditions, corev1.PodReady); got != corev1.ConditionTrue {
		t.Errorf("Ready is %q without readiness gates, want True", got)
	}
}

func TestStubImageID(t *testing.T) {
	for image, repository := range map[string]string{
		"registry.k8s.io/pause:3.10":   "registry.k8s.io/pause",
		"registry.k8s.io/pause:3.10.1": "registry.k8s.io/pause",
		"localhost:5000/app":           "localhost:5000/app",
		"app":                          "app",
	} {
		id := stubImageID(image)
		prefix := repository + "@sha256:"
		if !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+64 {
			t.Errorf("stubImageID(%q) = %q, want %s<64 hex digits>", image, id, prefix)
		}
	}
	if stubImageID("registry.k8s.io/pause:3.10") == stubImageID("registry.k8s.io/pause:3.10.1") {
		t.Error("two tags have the same image ID")
	}
}

func TestPercentileOfFiveRuns(t *testing.T) {
	s := spreadOf([]float64{5, 1, 4, 2, 3})
	if s.n != 5 || s.p50 != 3 || s.p95 != 5 {
		t.Errorf("spreadOf(1..5) = %+v, want p50 3 and p95 5", s)
	}
	if s := spreadOf([]float64{2, 1}); s.p50 != 1 || s.p95 != 2 {
		t.Errorf("spreadOf(1, 2) = %+v, want p50 1 (nearest rank) and p95 2", s)
	}
	if s := spreadOf(nil); s.n != 0 || s.cell(formatCPU) != "—" {
		t.Errorf("spreadOf(nil) = %+v, cell %q", s, s.cell(formatCPU))
	}
	if got := spreadOf([]float64{1.5}).cell(formatCPU); got != "1.50" {
		t.Errorf("one run's cell = %q, want no p95", got)
	}
	if got := spreadOf([]float64{1, 2, 3}).cell(formatCPU); got != "2.00 (3.00)" {
		t.Errorf("cell = %q, want p50 (p95)", got)
	}
	if got := percentile([]uint64{10, 20, 30, 40}, 50); got != 20 {
		t.Errorf("percentile of uint64 = %d, want 20", got)
	}
}

func TestRolledOut(t *testing.T) {
	done := workloadStatus{Generation: 2, ObservedGeneration: 2, Replicas: 10, Available: 10, Updated: 10, UpdatedAvailable: 10, UpdateRevision: "cs-new"}
	if !rolledOut(done, "cs-old", 10) {
		t.Errorf("rolledOut(%+v) = false", done)
	}
	for name, edit := range map[string]func(*workloadStatus){
		"old generation":       func(s *workloadStatus) { s.ObservedGeneration = 1 },
		"old revision":         func(s *workloadStatus) { s.UpdateRevision = "cs-old" },
		"surplus pod":          func(s *workloadStatus) { s.Replicas = 11 },
		"one not updated":      func(s *workloadStatus) { s.Updated = 9 },
		"one not available":    func(s *workloadStatus) { s.UpdatedAvailable = 9 },
		"one old not yet gone": func(s *workloadStatus) { s.Available = 9 },
	} {
		s := done
		edit(&s)
		if rolledOut(s, "cs-old", 10) {
			t.Errorf("%s: rolledOut(%+v) = true", name, s)
		}
	}
}

func TestRolledPodsProblem(t *testing.T) {
	ready := func(name, image string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}},
		}
	}
	deleting := ready("c", "old")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	pods := []corev1.Pod{ready("a", "new"), ready("b", "new"), deleting}
	if p := rolledPodsProblem(pods, 2, "new"); p != "" {
		t.Errorf("rolledPodsProblem() = %q for two ready pods of the new image and one being deleted", p)
	}
	if p := rolledPodsProblem(pods, 3, "new"); !strings.Contains(p, "2 active pods") {
		t.Errorf("rolledPodsProblem() = %q, want a count", p)
	}
	pods[1].Spec.Containers[0].Image = "old"
	if p := rolledPodsProblem(pods, 2, "new"); !strings.Contains(p, "pod b does not run new") {
		t.Errorf("rolledPodsProblem() = %q, want pod b's image", p)
	}
	pods[1] = ready("b", "new")
	pods[1].Status.Conditions[0].Status = corev1.ConditionFalse
	if p := rolledPodsProblem(pods, 2, "new"); !strings.Contains(p, "pod b is not Ready") {
		t.Errorf("rolledPodsProblem() = %q, want pod b not Ready", p)
	}
}

func TestNewBenchCloneSet(t *testing.T) {
	inPlace := newBenchCloneSet("cs", 100, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, "", false)
	rolling := inPlace.Spec.UpdateStrategy.RollingUpdate
	if *inPlace.Spec.Replicas != 100 || inPlace.Spec.UpdateStrategy.Type != appsv1beta1.RollingUpdateCloneSetUpdateStrategyType ||
		rolling.PodUpdatePolicy != appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType || rolling.MaxSurge.IntValue() != 0 ||
		rolling.MaxUnavailable.String() != "20%" || len(inPlace.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("in-place CloneSet %+v", inPlace.Spec)
	}
	if inPlace.Spec.Selector.MatchLabels["app"] != "cs" || inPlace.Spec.Template.Labels["app"] != "cs" {
		t.Errorf("selector %v and template labels %v, want app=cs", inPlace.Spec.Selector, inPlace.Spec.Template.Labels)
	}
	recreate := newBenchCloneSet("cs", 100, appsv1beta1.RecreateCloneSetPodUpdateStrategyType, "25%", true)
	if got := recreate.Spec.UpdateStrategy.RollingUpdate.MaxSurge.String(); got != "25%" {
		t.Errorf("maxSurge %s, want 25%%", got)
	}
	if vct := recreate.Spec.VolumeClaimTemplates; len(vct) != 1 || vct[0].Name != cloneSetClaimName || vct[0].Spec.Resources.Requests.Storage().String() != cloneSetClaimSize {
		t.Errorf("claim templates %+v", vct)
	}
}

func TestRequestsInAWindow(t *testing.T) {
	at := func(s int) metav1.MicroTime {
		return metav1.NewMicroTime(time.Date(2026, 11, 26, 10, 0, s, 0, time.UTC))
	}
	event := func(s int, verb, ua, resource, sub string) auditv1.Event {
		return auditv1.Event{Stage: auditv1.StageResponseComplete, Verb: verb, UserAgent: ua, RequestReceivedTimestamp: at(s),
			ObjectRef: &auditv1.ObjectReference{Resource: resource, Subresource: sub}, ResponseStatus: &metav1.Status{Code: 200}}
	}
	events := []auditv1.Event{
		event(0, "create", "kruise-manager", "pods", ""), // before the window
		event(1, "create", "kruise-manager", "pods", ""), // the window's first second
		event(2, "update", "kruise-manager", "pods", "status"),
		event(2, "get", "kruise-manager", "pods", ""),
		event(2, "patch", agentUserAgent, "pods", "status"),
		event(3, "list", "kube-controller-manager/v1.36.4 (linux/amd64) kubernetes/abc/replicaset-controller", "pods", ""),
		event(4, "create", "kruise-manager", "events", ""), // after the window
	}
	window := eventsWithin(events, at(1).Time, at(3).Time)
	if len(window) != 5 {
		t.Fatalf("eventsWithin() kept %d events, want 5", len(window))
	}
	requests, agents := requestsOf(window, actorManager)
	if requests["create"] != 1 || requests["update"] != 1 || requests["get"] != 1 || requests["list"] != 1 || len(requests) != 4 {
		t.Errorf("requestsOf() by verb = %v; kube-controller-manager's list belongs to the manager", requests)
	}
	if agents["kruise-manager"] != 3 || len(agents) != 2 {
		t.Errorf("requestsOf() by agent = %v, want 3 of kruise-manager and 1 of kube-controller-manager", agents)
	}
	r := cloneSetRowResult{Pods: 1, Requests: requests, Writes: countWrites(window, at(1).Time)}
	if r.managerRequests() != 4 || r.managerWrites() != 2 || r.managerPodWrites() != 2 {
		t.Errorf("requests %d, writes %d, pod writes %d; want 4, 2, 2", r.managerRequests(), r.managerWrites(), r.managerPodWrites())
	}
	if got := r.Writes[actorAgents]["pods/status"].Requests; got != 1 {
		t.Errorf("the node stub's status writes = %d, want 1", got)
	}
}

func TestCloneSetOptions(t *testing.T) {
	parse := func(args ...string) (*cloneSetOptions, error) {
		o := &cloneSetOptions{}
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		o.register(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return o, o.validate()
	}
	o, err := parse()
	if err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	if o.runs != 5 || o.qps != 50 || o.burst != 100 || o.workers != 3 || o.small != 100 || o.large != 1000 ||
		o.steadySets != 50 || o.steadyReplicas != 20 || len(o.managers) != 3 || len(o.groups) != 5 {
		t.Errorf("defaults %+v", o)
	}
	for _, args := range [][]string{
		{"-cloneset-managers=bosun,nobody"},
		{"-cloneset-rows=scale,fast"},
		{"-cloneset-runs=0"},
		{"-cloneset-kube-api-qps=2.5"}, // kruise-manager takes whole numbers
		{"-cloneset-steady-window=0s"},
	} {
		if _, err := parse(args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := parse("-cloneset-kube-api-qps=2.5", "-cloneset-managers=bosun"); err != nil {
		t.Errorf("a fractional QPS without kruise-manager: %v", err)
	}
}

func TestCloneSetReport(t *testing.T) {
	o := &options{kruiseCRDs: kruiseCRDsNeeded, cloneSet: cloneSetOptions{runs: 3, qps: 50, burst: 100, workers: 3, small: 100, large: 1000,
		steadySets: 50, steadyReplicas: 20, steadyWindow: time.Minute, nodes: 100, bosunControllers: bosunCloneSetControllers}}
	row := func(wall time.Duration, cpu float64, rssMiB uint64, requests, podWrites int) cloneSetRowResult {
		return cloneSetRowResult{Pods: 100, Wall: wall, CPUSeconds: cpu, PeakRSS: rssMiB * mebibyte, Window: time.Minute,
			Requests: map[string]int{"create": requests},
			Writes:   map[string]map[string]writeCount{actorManager: {"pods": {Requests: podWrites}}, actorAgents: {"pods/status": {Requests: 200, Conflicts: 3}}}}
	}
	res := newCloneSetResults()
	for i := range 3 {
		extra := time.Duration(i) * time.Second
		res.runs[managerBosun] = append(res.runs[managerBosun], cloneSetRun{Manager: managerBosun, IdleRSS: 60 * mebibyte, LoadAverage: 1, Rows: map[string]cloneSetRowResult{
			rowScaleSmall:   row(4*time.Second+extra, 1, 60, 100+i, 100),
			rowInPlaceSmall: row(10*time.Second, 2, 60, 400, 400),
			rowSteady:       {Pods: 1000, Window: time.Minute, CPUSeconds: 0.1, PeakRSS: 70 * mebibyte},
		}})
		res.runs[managerKruise] = append(res.runs[managerKruise], cloneSetRun{Manager: managerKruise, IdleRSS: 80 * mebibyte, LoadAverage: 2, Rows: map[string]cloneSetRowResult{
			rowScaleSmall:   row(5*time.Second, 3, 100, 100, 100),
			rowInPlaceSmall: row(8*time.Second, 3, 100, 400, 400),
		}})
		res.runs[managerUpstream] = append(res.runs[managerUpstream], cloneSetRun{Manager: managerUpstream, IdleRSS: 70 * mebibyte, Rows: map[string]cloneSetRowResult{
			rowScaleSmall: row(2*time.Second, 0.5, 50, 100, 100),
		}})
	}
	report := res.markdown(o)
	for _, want := range []string{
		"## CloneSet against kruise-manager and upstream's ReplicaSet controller",
		"| Row | figure | bosun | kruise-manager | upstream | bosun ÷ kruise-manager (p50) | bosun ÷ upstream (p50) |",
		"| **scale 0→100 (create → status.replicas)** | wall | 5.0 s (6.0 s) | 5.0 s (5.0 s) | 2.0 s (2.0 s) | 1.00× | 2.50× |",
		"|  | manager writes to pods per pod | 4.00 (4.00) | 4.00 (4.00) | — | 1.00× | — |",
		"| **steady state, 50 CloneSets × 20 pods, 1m0s window** | **manager API writes per minute** | 0.0 (0.0) | — | — | — | — |",
		"| in-place image update, 100 pods, maxUnavailable 20% (→ updatedAvailableReplicas) | kruise-manager | node stub | `pods/status` 200 (3 conflicts) |",
		"- scale 0→100 (create → status.replicas): wall 1.00× (met), CPU 0.33× (met), RSS 0.60× (met), requests 1.01× (met)",
		"- in-place image update, 100 pods, maxUnavailable 20% (→ updatedAvailableReplicas): wall 1.25× (**missed**), CPU 0.67× (**missed**), " +
			"RSS 0.60× (met), pod writes per pod 4.00 (**missed**)",
		"- steady state, 50 CloneSets × 20 pods, 1m0s window: writes per minute 0.00 (met)",
		"- kruise-manager, load average (1 min) before each run: 2.00, 2.00, 2.00",
		"--cloneset-workers=3",
		"--concurrent-cloneset-syncs=3",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if got := newCloneSetResults().markdown(o); got != "" {
		t.Errorf("the report of no run = %q, want nothing", got)
	}
}
