package handover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Names the Deployment controller writes, upstream's and bosun's alike.
const (
	revisionAnnotation        = "deployment.kubernetes.io/revision"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	changeCauseAnnotation     = "kubernetes.io/change-cause"
	podTemplateHashLabel      = "pod-template-hash"

	// The client names both managers append to their User-Agent.
	deploymentClient = "/deployment-controller"
	replicaSetClient = "/replicaset-controller"
)

const (
	// testTimeout bounds a whole test and waitTimeout one awaited state; generous, because
	// the machine is small and shared.
	testTimeout = 8 * time.Minute
	waitTimeout = 2 * time.Minute

	// idleWindow is how long a manager's queues must stay empty, with no item added or
	// retried, before it counts as done: an item can be re-added a moment after the queue
	// drained (a pod event that requeues its ReplicaSet), and a failed item waits out its
	// backoff outside the queue.
	idleWindow = 2 * time.Second

	// stopTimeout bounds how long a manager may take to exit after SIGTERM.
	stopTimeout = time.Minute
)

// env is what a test works with: the framework's environment, with a context bounded by
// testTimeout, for the test t.
type env struct {
	*framework.Env
	t *testing.T
	// proto reads objects as protobuf, as both managers do, so that a template hashed in
	// the test is the same Go value the managers hashed.
	proto kubernetes.Interface
	// ownAgent is the User-Agent prefix of this test binary's clients (the test's writes
	// and the pod readier's).
	ownAgent string
}

func setup(t *testing.T) *env {
	t.Helper()
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{Timeout: testTimeout, WaitTimeout: waitTimeout})
	protoConfig := e.CP.Config()
	protoConfig.ContentType = runtime.ContentTypeProtobuf
	proto, err := kubernetes.NewForConfig(protoConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &env{Env: e, t: t, proto: proto, ownAgent: agentPrefix(os.Args[0])}
}

// agentPrefix is the start of the User-Agent client-go gives the binary at path:
// "<base name>/<version> (<os>/<arch>) kubernetes/<commit>", then "/<client name>".
func agentPrefix(path string) string {
	return filepath.Base(path) + "/"
}

// side is one of the two controller managers that take turns running the ReplicaSet
// and Deployment controllers.
type side struct {
	name string
	// agent is the User-Agent prefix of the manager's clients.
	agent string
	start func(e *env) *running
}

// running is a side's processes.
type running struct {
	// workloads runs the ReplicaSet and Deployment controllers.
	workloads *framework.ControllerManager
	all       []*framework.ControllerManager
}

// upstreamSide is kube-controller-manager running the workload controllers, as in a
// cluster without bosun, with bosun's garbage collector beside it (the tests run no
// upstream collector).
func upstreamSide(t *testing.T) side {
	t.Helper()
	framework.RequireIntegration(t)
	path, err := framework.ToolPath("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	return side{
		name:  "kube-controller-manager",
		agent: agentPrefix(path),
		start: func(e *env) *running {
			e.t.Helper()
			cm := framework.StartUpstreamControllerManager(e.t, e.CP, "replicaset,deployment")
			gc := framework.StartBosunControllerManager(e.t, e.CP, framework.ControllerManagerOptions{Controllers: "garbagecollector"})
			return &running{workloads: cm, all: []*framework.ControllerManager{cm, gc}}
		},
	}
}

// bosunSide is bosun-controller-manager running the workload controllers and its garbage
// collector, as an operator runs it.
func bosunSide(t *testing.T) side {
	t.Helper()
	framework.RequireIntegration(t)
	return side{
		name:  "bosun-controller-manager",
		agent: agentPrefix(framework.BuildBosunBinary(t, "bosun-controller-manager")),
		start: func(e *env) *running {
			e.t.Helper()
			bosun := framework.StartBosunControllerManager(e.t, e.CP, framework.ControllerManagerOptions{Controllers: "replicaset,deployment,garbagecollector"})
			return &running{workloads: bosun, all: []*framework.ControllerManager{bosun}}
		},
	}
}

// stop sends SIGTERM to every process of the side, as an operator (or the kubelet of a
// static pod) would, and waits until all have exited. It returns the time after the last
// exit: every request of the side reached the API server before it.
func (e *env) stop(r *running) time.Time {
	e.t.Helper()
	for _, cm := range r.all {
		if err := cm.Signal(syscall.SIGTERM); err != nil {
			e.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(e.Ctx, stopTimeout)
	defer cancel()
	for _, cm := range r.all {
		err := cm.Wait(ctx)
		if !cm.Exited() {
			e.t.Fatalf("%s did not exit after SIGTERM: %v", cm.Name(), err)
		}
		e.t.Logf("%s (pid %d) exited with status %d after SIGTERM", cm.Name(), cm.Pid(), cm.ExitCode())
	}
	return time.Now()
}

// queueSeries are the workqueue metrics, by queue, that waitIdle reads.
type queueSeries struct{ adds, retries, depth, unfinished float64 }

func readQueue(metrics, queue string) (queueSeries, error) {
	var q queueSeries
	for _, s := range []struct {
		metric string
		into   *float64
	}{
		{"workqueue_adds_total", &q.adds},
		{"workqueue_retries_total", &q.retries},
		{"workqueue_depth", &q.depth},
		{"workqueue_unfinished_work_seconds", &q.unfinished},
	} {
		series := fmt.Sprintf("%s{name=%q}", s.metric, queue)
		v, ok := framework.MetricValue(metrics, series)
		if !ok {
			return q, fmt.Errorf("/metrics has no %s", series)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return q, fmt.Errorf("%s = %q: %w", series, v, err)
		}
		*s.into = f
	}
	return q, nil
}

// waitIdle waits until the manager has processed every Deployment and ReplicaSet of the
// cluster and has nothing left to do: its "deployment" and "replicaset" queues have each
// taken at least as many adds as there are objects (every informer add enqueues its
// object; the count is cluster-wide because so are the informers), both are empty with no
// item in a worker, and that stays so, with no add and no retry (client-go counts every
// delayed add as a retry), for idleWindow. Both managers name their queues and metrics
// the same way.
func (e *env) waitIdle(cm *framework.ControllerManager, who string) {
	e.t.Helper()
	if err := e.idle(cm, who); err != nil {
		e.t.Fatal(err)
	}
}

// idle is waitIdle returning its failure, for a caller that still has something to
// learn from the cluster after a manager that never settles (what it keeps changing).
func (e *env) idle(cm *framework.ControllerManager, who string) error {
	e.t.Helper()
	token := e.CP.Config().BearerToken
	var last string
	var idleSince time.Time
	var idleAt [2]queueSeries
	began := time.Now()
	err := framework.WaitFor(e.Ctx, waitTimeout, who+" to process every Deployment and ReplicaSet and go idle", func(ctx context.Context) (bool, error) {
		deployments, err := e.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		replicaSets, err := e.Client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		metrics, err := cm.Metrics(token)
		if err != nil {
			return false, err
		}
		d, err := readQueue(metrics, "deployment")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		rs, err := readQueue(metrics, "replicaset")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d Deployments, deployment queue %+v; %d ReplicaSets, replicaset queue %+v",
			len(deployments.Items), d, len(replicaSets.Items), rs)
		idle := d.adds >= float64(len(deployments.Items)) && rs.adds >= float64(len(replicaSets.Items)) &&
			d.depth == 0 && d.unfinished == 0 && rs.depth == 0 && rs.unfinished == 0
		now := [2]queueSeries{d, rs}
		if !idle {
			idleSince = time.Time{}
			return false, nil
		}
		if idleSince.IsZero() || now != idleAt {
			idleSince, idleAt = time.Now(), now
			return false, nil
		}
		return time.Since(idleSince) >= idleWindow, nil
	})
	if err != nil {
		return fmt.Errorf("%w\nlast seen: %s", err, last)
	}
	e.t.Logf("%s idle after %v: %s", who, time.Since(began).Round(time.Millisecond), last)
	return nil
}

// startPodReadier marks the namespace's pods Running and Ready as they appear, except
// those accept refuses (nil accepts all), in place of a kubelet.
func (e *env) startPodReadier(accept func(*corev1.Pod) bool) {
	e.t.Helper()
	e.StartPodReadier(e.t, 4, accept)
}

// markAllReady marks every active pod of the namespace that is not ready Running and
// Ready: the pods a readier filter refused earlier get no new watch event to be seen by.
func (e *env) markAllReady() int {
	e.t.Helper()
	pods := e.GetPods(e.t, nil)
	marked := 0
	for i := range pods {
		pod := &pods[i]
		if !podutil.IsPodActive(pod) || podutil.IsPodReady(pod) {
			continue
		}
		if _, err := framework.SetPodRunning(e.Ctx, e.Client, e.Namespace, pod.Name, true, time.Time{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Fatal(err)
		}
		marked++
	}
	return marked
}

// sameTemplateIgnoringHash is how a Deployment controller recognises its new ReplicaSet.
func sameTemplateIgnoringHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, podTemplateHashLabel)
	delete(b.Labels, podTemplateHashLabel)
	return equality.Semantic.DeepEqual(a, b)
}

// state is every Deployment, ReplicaSet and pod of the namespace at one moment.
type state struct {
	deployments map[string]*appsv1.Deployment
	replicaSets map[types.UID]*appsv1.ReplicaSet
	pods        map[types.UID]*corev1.Pod
}

// read lists the namespace with client.
func (e *env) read(ctx context.Context, client kubernetes.Interface) (*state, error) {
	s := &state{deployments: map[string]*appsv1.Deployment{}, replicaSets: map[types.UID]*appsv1.ReplicaSet{}, pods: map[types.UID]*corev1.Pod{}}
	ds, err := client.AppsV1().Deployments(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range ds.Items {
		s.deployments[ds.Items[i].Name] = &ds.Items[i]
	}
	rses, err := client.AppsV1().ReplicaSets(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range rses.Items {
		s.replicaSets[rses.Items[i].UID] = &rses.Items[i]
	}
	pods, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		s.pods[pods.Items[i].UID] = &pods.Items[i]
	}
	return s, nil
}

func (e *env) mustRead() *state {
	e.t.Helper()
	s, err := e.read(e.Ctx, e.Client)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// replicaSetsOf returns the ReplicaSets controlled by d, oldest revision first.
func (s *state) replicaSetsOf(d *appsv1.Deployment) []*appsv1.ReplicaSet {
	var owned []*appsv1.ReplicaSet
	for _, rs := range s.replicaSets {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID {
			owned = append(owned, rs)
		}
	}
	sort.Slice(owned, func(i, j int) bool {
		ri, _ := strconv.Atoi(owned[i].Annotations[revisionAnnotation])
		rj, _ := strconv.Atoi(owned[j].Annotations[revisionAnnotation])
		if ri != rj {
			return ri < rj
		}
		return owned[i].Name < owned[j].Name
	})
	return owned
}

// podsOf returns the pods controlled by rs.
func (s *state) podsOf(rs *appsv1.ReplicaSet) []*corev1.Pod {
	var owned []*corev1.Pod
	for _, pod := range s.pods {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.UID == rs.UID {
			owned = append(owned, pod)
		}
	}
	return owned
}

// unsettled returns why the Deployment's rollout is not finished for good, or "" when it
// is: the controller has observed the latest spec and says the rollout is complete;
// exactly one ReplicaSet has the template and runs every replica, ready and available
// and counted so in its status; every older one is scaled to 0 with no pod left; no more
// old ones exist than revisionHistoryLimit allows (a Deployment controller cleans them up
// only on the sync after the one that completes the rollout); and the new ReplicaSet
// carries the Deployment's revision. A manager stopped in such a state has nothing left to
// do for the Deployment, so its successor has nothing to write.
func (s *state) unsettled(d *appsv1.Deployment) string {
	replicas := *d.Spec.Replicas
	st := d.Status
	if st.ObservedGeneration != d.Generation {
		return fmt.Sprintf("observedGeneration %d, generation %d", st.ObservedGeneration, d.Generation)
	}
	if st.Replicas != replicas || st.UpdatedReplicas != replicas || st.ReadyReplicas != replicas || st.AvailableReplicas != replicas || st.UnavailableReplicas != 0 {
		return fmt.Sprintf("status %+v, want %d replicas all updated, ready and available", st, replicas)
	}
	if c := deploymentCondition(d, appsv1.DeploymentProgressing); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "NewReplicaSetAvailable" {
		return fmt.Sprintf("Progressing condition %+v, want True/NewReplicaSetAvailable", c)
	}
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range s.replicaSetsOf(d) {
		if rs.Status.ObservedGeneration != rs.Generation {
			return fmt.Sprintf("ReplicaSet %s: observedGeneration %d, generation %d", rs.Name, rs.Status.ObservedGeneration, rs.Generation)
		}
		if sameTemplateIgnoringHash(&rs.Spec.Template, &d.Spec.Template) {
			if newRS != nil {
				return fmt.Sprintf("ReplicaSets %s and %s both have the template", newRS.Name, rs.Name)
			}
			newRS = rs
			continue
		}
		old = append(old, rs)
		if *rs.Spec.Replicas != 0 || rs.Status.Replicas != 0 || len(s.podsOf(rs)) != 0 {
			return fmt.Sprintf("old ReplicaSet %s: spec %d, status %d, %d pods", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas, len(s.podsOf(rs)))
		}
	}
	if newRS == nil {
		return "no ReplicaSet has the template"
	}
	rst := newRS.Status
	if *newRS.Spec.Replicas != replicas || rst.Replicas != replicas || rst.FullyLabeledReplicas != replicas || rst.ReadyReplicas != replicas || rst.AvailableReplicas != replicas {
		return fmt.Sprintf("new ReplicaSet %s: spec %d, status %+v", newRS.Name, *newRS.Spec.Replicas, rst)
	}
	pods := s.podsOf(newRS)
	if len(pods) != int(replicas) {
		return fmt.Sprintf("new ReplicaSet %s has %d pods, want %d", newRS.Name, len(pods), replicas)
	}
	for _, pod := range pods {
		if !podutil.IsPodActive(pod) || !podutil.IsPodReady(pod) {
			return fmt.Sprintf("pod %s is not active and ready", pod.Name)
		}
	}
	if limit := d.Spec.RevisionHistoryLimit; limit != nil && len(old) > int(*limit) {
		return fmt.Sprintf("%d old ReplicaSets, revisionHistoryLimit %d", len(old), *limit)
	}
	if got, want := newRS.Annotations[revisionAnnotation], d.Annotations[revisionAnnotation]; got != want || want == "" {
		return fmt.Sprintf("new ReplicaSet %s has revision %q, the Deployment %q", newRS.Name, got, want)
	}
	return ""
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// newReplicaSet returns the ReplicaSet of d that has d's template.
func (s *state) newReplicaSet(d *appsv1.Deployment) *appsv1.ReplicaSet {
	for _, rs := range s.replicaSetsOf(d) {
		if sameTemplateIgnoringHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// waitSettled waits until every Deployment of the namespace is settled (see unsettled)
// with the wanted revision (by name; a Deployment missing from want may have any) and
// returns that state.
func (e *env) waitSettled(what string, want map[string]string) *state {
	e.t.Helper()
	var last string
	var s *state
	e.Await(e.t, what, func(ctx context.Context) (bool, error) {
		var err error
		if s, err = e.read(ctx, e.Client); err != nil {
			return false, err
		}
		if len(s.deployments) == 0 {
			last = "no Deployments"
			return false, nil
		}
		for _, d := range s.deployments {
			if reason := s.unsettled(d); reason != "" {
				last = fmt.Sprintf("Deployment %s: %s", d.Name, reason)
				return false, nil
			}
			if rev, ok := want[d.Name]; ok && d.Annotations[revisionAnnotation] != rev {
				last = fmt.Sprintf("Deployment %s at revision %q, want %q", d.Name, d.Annotations[revisionAnnotation], rev)
				return false, nil
			}
		}
		return true, nil
	}, func() string { return last + "\n" + s.describe() })
	return s
}

// describe renders the ReplicaSets and pods for failure messages.
func (s *state) describe() string {
	if s == nil {
		return "(nothing read)"
	}
	var b strings.Builder
	names := make([]string, 0, len(s.deployments))
	for name := range s.deployments {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := s.deployments[name]
		fmt.Fprintf(&b, "Deployment %s generation %d revision %q status %+v\n", d.Name, d.Generation, d.Annotations[revisionAnnotation], d.Status)
		for _, rs := range s.replicaSetsOf(d) {
			ready := 0
			pods := s.podsOf(rs)
			for _, pod := range pods {
				if podutil.IsPodReady(pod) {
					ready++
				}
			}
			fmt.Fprintf(&b, "  ReplicaSet %s uid %s revision %q history %q spec %d status %+v; %d pods, %d ready\n",
				rs.Name, rs.UID, rs.Annotations[revisionAnnotation], rs.Annotations[revisionHistoryAnnotation],
				*rs.Spec.Replicas, rs.Status, len(pods), ready)
		}
	}
	return b.String()
}

// expectUnchanged fails the test for every difference between two states of the
// namespace that a manager doing nothing could not have caused: a ReplicaSet or pod
// created, deleted or replaced (new UID), a revision or revision-history annotation
// changed, or any object written at all (a new resourceVersion), with the diff.
func (e *env) expectUnchanged(before, after *state, who string) {
	e.t.Helper()
	for uid, b := range before.replicaSets {
		a, ok := after.replicaSets[uid]
		if !ok {
			e.t.Errorf("ReplicaSet %s (uid %s, revision %q) is gone after %s took over", b.Name, uid, b.Annotations[revisionAnnotation], who)
			continue
		}
		for _, key := range []string{revisionAnnotation, revisionHistoryAnnotation} {
			if a.Annotations[key] != b.Annotations[key] {
				e.t.Errorf("ReplicaSet %s: %s changed from %q to %q after %s took over", b.Name, key, b.Annotations[key], a.Annotations[key], who)
			}
		}
		if a.ResourceVersion != b.ResourceVersion {
			e.t.Errorf("ReplicaSet %s was written after %s took over (resourceVersion %s -> %s):\n%s", b.Name, who, b.ResourceVersion, a.ResourceVersion, diff.Diff(b, a))
		}
	}
	var created []string
	for uid, a := range after.replicaSets {
		if _, ok := before.replicaSets[uid]; !ok {
			created = append(created, fmt.Sprintf("%s (uid %s, revision %q, %d replicas)", a.Name, uid, a.Annotations[revisionAnnotation], *a.Spec.Replicas))
		}
	}
	if len(created) > 0 {
		sort.Strings(created)
		e.t.Errorf("%d ReplicaSets were created after %s took over; first ones:\n  %v", len(created), who, joinErrors(created))
	}
	for uid, b := range before.pods {
		a, ok := after.pods[uid]
		if !ok {
			e.t.Errorf("pod %s (uid %s) is gone after %s took over", b.Name, uid, who)
			continue
		}
		if a.ResourceVersion != b.ResourceVersion {
			e.t.Errorf("pod %s was written after %s took over:\n%s", b.Name, who, diff.Diff(b, a))
		}
	}
	created = nil
	for uid, a := range after.pods {
		if _, ok := before.pods[uid]; !ok {
			created = append(created, fmt.Sprintf("%s (uid %s)", a.Name, uid))
		}
	}
	if len(created) > 0 {
		sort.Strings(created)
		e.t.Errorf("%d pods were created after %s took over; first ones:\n  %v", len(created), who, joinErrors(created))
	}
	for name, b := range before.deployments {
		a, ok := after.deployments[name]
		if !ok {
			e.t.Errorf("Deployment %s is gone after %s took over", name, who)
			continue
		}
		if a.Annotations[revisionAnnotation] != b.Annotations[revisionAnnotation] {
			e.t.Errorf("Deployment %s: revision changed from %q to %q after %s took over", name, b.Annotations[revisionAnnotation], a.Annotations[revisionAnnotation], who)
		}
		if a.ResourceVersion != b.ResourceVersion {
			e.t.Errorf("Deployment %s was written after %s took over:\n%s", name, who, diff.Diff(b, a))
		}
	}
}

// mutatingVerbs are the audit verbs of requests that can change an object.
var mutatingVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// writes returns the audited requests that could change an object of the namespace and
// for which match is true.
func (e *env) writes(match func(ev *auditv1.Event) bool) []auditv1.Event {
	e.t.Helper()
	events, err := e.CP.AuditEvents()
	if err != nil {
		e.t.Fatal(err)
	}
	var found []auditv1.Event
	for i := range events {
		ev := &events[i]
		if !mutatingVerbs[ev.Verb] || ev.ObjectRef == nil || ev.ObjectRef.Namespace != e.Namespace {
			continue
		}
		if match(ev) {
			found = append(found, *ev)
		}
	}
	return found
}

// succeeded reports whether the API server accepted the request.
func succeeded(ev *auditv1.Event) bool {
	return ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300
}

func describeEvent(ev *auditv1.Event) string {
	resource := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		resource += "/" + ev.ObjectRef.Subresource
	}
	code := int32(0)
	if ev.ResponseStatus != nil {
		code = ev.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s %s -> %d at %s by %q", ev.Verb, resource, ev.ObjectRef.Name, code,
		ev.RequestReceivedTimestamp.Format("15:04:05.000000"), ev.UserAgent)
}

// expectNoWritesSince fails the test for every request since the given time that could
// have changed an object of the namespace (events included), unless the test itself made
// it.
func (e *env) expectNoWritesSince(since time.Time, who string) {
	e.t.Helper()
	found := e.writes(func(ev *auditv1.Event) bool {
		return !ev.RequestReceivedTimestamp.Time.Before(since) && !strings.HasPrefix(ev.UserAgent, e.ownAgent)
	})
	if len(found) == 0 {
		return
	}
	lines := make([]string, len(found))
	for i := range found {
		lines[i] = describeEvent(&found[i])
	}
	e.t.Errorf("%d requests that write the namespace since %s took over, want none; first ones:\n  %v", len(found), who, joinErrors(lines))
}

// fromClient matches requests of one client of one manager: the User-Agent starts with
// the manager's prefix and ends with the client name.
func fromClient(agent, client string) func(*auditv1.Event) bool {
	return func(ev *auditv1.Event) bool {
		return strings.HasPrefix(ev.UserAgent, agent) && strings.HasSuffix(ev.UserAgent, client)
	}
}

// creates counts the successful creates of a resource among events.
func creates(events []auditv1.Event, resource string) int {
	n := 0
	for i := range events {
		ev := &events[i]
		if ev.Verb == "create" && ev.ObjectRef.Resource == resource && ev.ObjectRef.Subresource == "" && succeeded(ev) {
			n++
		}
	}
	return n
}

// readyGate is a pod readier filter that holds back the pods of one image: it lets the
// first `limit` of them become ready, then none until released.
type readyGate struct {
	image string
	limit int

	mu       sync.Mutex
	accepted map[string]bool
	released bool
}

func newReadyGate(image string, limit int) *readyGate {
	return &readyGate{image: image, limit: limit, accepted: map[string]bool{}}
}

func (g *readyGate) accept(pod *corev1.Pod) bool {
	if pod.Spec.Containers[0].Image != g.image {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// A pod accepted once stays accepted: its first write may have lost a conflict.
	if g.released || g.accepted[pod.Name] {
		return true
	}
	if len(g.accepted) < g.limit {
		g.accepted[pod.Name] = true
		return true
	}
	return false
}

func (g *readyGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released = true
}

// history records every stored change of the namespace's pods and ReplicaSets through
// watches, so that a test can replay the states the API server went through in the order
// of their etcd revisions, not just the ones a poll happens to catch.
type history struct {
	t      *testing.T
	cancel context.CancelFunc
	wg     sync.WaitGroup

	initialPods []corev1.Pod
	initialRSes []appsv1.ReplicaSet

	mu    sync.Mutex
	steps []step
	err   error
}

// step is one stored change: exactly one of pod and rs is set.
type step struct {
	revision int64
	deleted  bool
	pod      *corev1.Pod
	rs       *appsv1.ReplicaSet
}

func (e *env) startHistory() *history {
	e.t.Helper()
	pods, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	rses, err := e.Client.AppsV1().ReplicaSets(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.Ctx)
	h := &history{t: e.t, cancel: cancel, initialPods: pods.Items, initialRSes: rses.Items}
	h.follow(ctx, pods.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, opts)
	})
	h.follow(ctx, rses.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return e.Client.AppsV1().ReplicaSets(e.Namespace).Watch(ctx, opts)
	})
	e.t.Cleanup(h.stop)
	return h
}

// follow watches from resourceVersion rv until ctx ends, reopening the watch when the
// server closes it. A gap (the watch expired) is recorded as an error: the replay would
// be incomplete.
func (h *history) follow(ctx context.Context, rv string, open func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for ctx.Err() == nil {
			w, err := open(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if ctx.Err() == nil {
					h.fail(fmt.Errorf("watch from %s: %w", rv, err))
				}
				return
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					// Stopping the history cancels the watch, which may end with an error.
					if ctx.Err() == nil {
						h.fail(fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object)))
					}
					w.Stop()
					return
				}
				obj, ok := ev.Object.(metav1.Object)
				if !ok {
					continue
				}
				rv = obj.GetResourceVersion()
				if ev.Type == watch.Bookmark {
					continue
				}
				revision, err := strconv.ParseInt(rv, 10, 64)
				if err != nil {
					h.fail(fmt.Errorf("resourceVersion %q is not an etcd revision", rv))
					w.Stop()
					return
				}
				s := step{revision: revision, deleted: ev.Type == watch.Deleted}
				switch o := ev.Object.(type) {
				case *corev1.Pod:
					s.pod = o
				case *appsv1.ReplicaSet:
					s.rs = o
				default:
					continue
				}
				h.mu.Lock()
				h.steps = append(h.steps, s)
				h.mu.Unlock()
			}
			w.Stop()
		}
	}()
}

func (h *history) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
}

func (h *history) stop() {
	h.cancel()
	h.wg.Wait()
}

// replay stops recording and calls visit with the pods and ReplicaSets (by UID) of every
// recorded state, oldest first, and the step that led to it.
func (h *history) replay(visit func(s step, pods map[types.UID]*corev1.Pod, rses map[types.UID]*appsv1.ReplicaSet)) int {
	h.t.Helper()
	h.stop()
	if h.err != nil {
		h.t.Fatalf("the recorded history is incomplete: %v", h.err)
	}
	steps := append([]step(nil), h.steps...)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].revision < steps[j].revision })
	pods := map[types.UID]*corev1.Pod{}
	for i := range h.initialPods {
		pods[h.initialPods[i].UID] = &h.initialPods[i]
	}
	rses := map[types.UID]*appsv1.ReplicaSet{}
	for i := range h.initialRSes {
		rses[h.initialRSes[i].UID] = &h.initialRSes[i]
	}
	for _, s := range steps {
		switch {
		case s.pod != nil && s.deleted:
			delete(pods, s.pod.UID)
		case s.pod != nil:
			pods[s.pod.UID] = s.pod
		case s.deleted:
			delete(rses, s.rs.UID)
		default:
			rses[s.rs.UID] = s.rs
		}
		visit(s, pods, rses)
	}
	return len(steps)
}

// joinErrors renders at most the first ten messages.
func joinErrors(msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	shown := msgs[:min(len(msgs), 10)]
	return errors.New(strings.Join(shown, "\n  "))
}

// The workloads of the no-churn tests. Every Deployment has a readable image per
// revision so that a failure message tells the revisions apart.

// richDeployment is a RollingUpdate Deployment whose pod template uses most of what a pod
// spec can hold, so that any field one manager renders, defaults or hashes differently
// from the other shows up as a template that no longer matches its ReplicaSet.
func richDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name, "tier": "web"}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	quantity := resource.MustParse
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: selector,
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       ptr.To(intstr.FromString("50%")),
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: labels,
					Annotations: map[string]string{
						"prometheus.io/scrape": "true",
						"example.com/owner":    "team-a",
					},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName:            "default",
					TerminationGracePeriodSeconds: ptr.To[int64](45),
					DNSPolicy:                     corev1.DNSClusterFirst,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsUser:      ptr.To[int64](1000),
						RunAsGroup:     ptr.To[int64](3000),
						FSGroup:        ptr.To[int64](2000),
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: []corev1.Container{{
						Name:         "init-config",
						Image:        "registry.example/tools:1",
						Command:      []string{"sh", "-c", "cp /config/* /work/"},
						VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}, {Name: "config", MountPath: "/config", ReadOnly: true}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("10m"), corev1.ResourceMemory: quantity("16Mi")},
						},
					}},
					Containers: []corev1.Container{
						{
							Name:  "main",
							Image: "registry.example/web:1",
							Args:  []string{"--listen=:8080", "--config=/work/config"},
							Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
							Env: []corev1.EnvVar{
								{Name: "VERSION", Value: "1"},
								{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
								{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
								{Name: "MEMORY_LIMIT_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
									ContainerName: "main", Resource: "limits.memory", Divisor: quantity("1Mi"),
								}}},
								{Name: "LOG_LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
									LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"}, Key: "log-level", Optional: ptr.To(true),
								}}},
							},
							EnvFrom: []corev1.EnvFromSource{{
								Prefix:       "CFG_",
								ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"}, Optional: ptr.To(true)},
							}},
							Resources: corev1.ResourceRequirements{
								Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("100m"), corev1.ResourceMemory: quantity("64Mi")},
								Limits:   corev1.ResourceList{corev1.ResourceCPU: quantity("500m"), corev1.ResourceMemory: quantity("128Mi")},
							},
							ReadinessProbe: &corev1.Probe{
								ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
									Path: "/healthz", Port: intstr.FromString("http"),
									HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "readiness"}},
								}},
								InitialDelaySeconds: 2, PeriodSeconds: 5, FailureThreshold: 3,
							},
							LivenessProbe: &corev1.Probe{
								ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
								PeriodSeconds: 10, TimeoutSeconds: 2,
							},
							Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}},
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr.To(false),
								ReadOnlyRootFilesystem:   ptr.To(true),
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							},
							VolumeMounts: []corev1.VolumeMount{
								{Name: "work", MountPath: "/work"},
								{Name: "podinfo", MountPath: "/etc/podinfo", ReadOnly: true},
								{Name: "bundle", MountPath: "/var/run/bundle", ReadOnly: true},
							},
						},
						{
							Name:  "proxy",
							Image: "registry.example/proxy:1",
							Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 9090}},
							ReadinessProbe: &corev1.Probe{
								ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9090)}},
								PeriodSeconds: 5,
							},
							LivenessProbe: &corev1.Probe{
								ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("proxy")}},
								InitialDelaySeconds: 15,
							},
							Resources: corev1.ResourceRequirements{
								Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("50m"), corev1.ResourceMemory: quantity("32Mi")},
								Limits:   corev1.ResourceList{corev1.ResourceMemory: quantity("64Mi")},
							},
						},
					},
					Volumes: []corev1.Volume{
						{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
							Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(quantity("64Mi")),
						}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"},
							Items:                []corev1.KeyToPath{{Key: "config", Path: "config"}},
							DefaultMode:          ptr.To[int32](0o440),
							Optional:             ptr.To(true),
						}}},
						{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
							Items: []corev1.DownwardAPIVolumeFile{
								{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
								{Path: "cpu-limit", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu", Divisor: quantity("1m")}},
							},
						}}},
						{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
							Sources: []corev1.VolumeProjection{
								{ConfigMap: &corev1.ConfigMapProjection{
									LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"},
									Optional:             ptr.To(true),
								}},
								{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
									{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
								}}},
								{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "bundle", ExpirationSeconds: ptr.To[int64](3600), Path: "token"}},
							},
						}}},
					},
					Affinity: &corev1.Affinity{
						NodeAffinity: &corev1.NodeAffinity{
							RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
								MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
							}}},
							PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
								Weight:     20,
								Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "node.example/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"web", "general"}}}},
							}},
						},
						PodAntiAffinity: &corev1.PodAntiAffinity{
							PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
								Weight: 100,
								PodAffinityTerm: corev1.PodAffinityTerm{
									LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
									TopologyKey:   "kubernetes.io/hostname",
								},
							}},
						},
					},
					Tolerations: []corev1.Toleration{
						{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](120)},
						{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule},
					},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew:           1,
						TopologyKey:       "topology.kubernetes.io/zone",
						WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					}},
				},
			},
		},
	}
}

// simpleDeployment is a Deployment of one container of image with the API server's
// defaults for everything else.
func simpleDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
			},
		},
	}
}

func recreateDeployment(name string) *appsv1.Deployment {
	d := simpleDeployment(name, 2, "registry.example/batch:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

// historyDeployment keeps two old ReplicaSets, counts a pod available only after two
// seconds of readiness, and records why each revision was made.
func historyDeployment(name string) *appsv1.Deployment {
	d := simpleDeployment(name, 2, "registry.example/api:1")
	d.Annotations = map[string]string{changeCauseAnnotation: "create with api:1"}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	d.Spec.MinReadySeconds = 2
	return d
}
