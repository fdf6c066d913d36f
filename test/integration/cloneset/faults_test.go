package cloneset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The environment variables of TestCloneSetSurvivesManagerKills.
const (
	// faultSeedEnv replays a run: set it to the seed the run logged, and the test draws the
	// same fault plan (progress points, jitters, which fault is the API server's).
	faultSeedEnv = "BOSUN_FAULT_SEED"
	// longFaultsEnv=1 runs the large variant (longFaults), too slow for every CI run.
	longFaultsEnv = "BOSUN_LONG_FAULTS"
)

// faultScale is how large a run of TestCloneSetSurvivesManagerKills is.
type faultScale struct {
	// replicas is the CloneSet's size.
	replicas int32
	// kills is how many times each phase SIGKILLs the manager; each phase also SIGKILLs
	// kube-apiserver once.
	kills int
	// timeout bounds the whole test.
	timeout time.Duration
}

var (
	defaultFaults = faultScale{replicas: 300, kills: 3, timeout: 10 * time.Minute}
	longFaults    = faultScale{replicas: 1000, kills: 6, timeout: 30 * time.Minute}
)

const (
	// faultJitter bounds the random delay between reaching a fault's progress point and the
	// fault, so that it lands anywhere in a sync rather than just after a poll.
	faultJitter = 500 * time.Millisecond
	// faultSlack widens a fault's window when the audit log's requests are matched to it:
	// the test's clock reads the moment of the signal, the API server's clock those of the
	// requests, and a killed client's last requests may still be read from its socket.
	faultSlack = 300 * time.Millisecond
	// availabilitySampleInterval is how often the pods' availability is sampled during a
	// rollout.
	availabilitySampleInterval = 100 * time.Millisecond
	// faultEnvVar is the variable the recreate phase adds to the template, which no running
	// pod can take in place.
	faultEnvVar = "ROLLOUT"
)

// A CloneSet whose manager is SIGKILLed and restarted at random moments, several times per
// phase, and whose kube-apiserver is SIGKILLed and restarted once per phase, still ends each
// phase exactly where it should, having written nothing twice: scaled from 0 to N (paced by
// scaleStrategy.maxUnavailable 20%, so that the faults fall among the creates), rolled
// in place (new image, InPlaceIfPossible, maxUnavailable 20%, partition 0), then rolled by
// recreation (new env, maxSurge 10%). After each phase, once the namespace is quiet: exactly
// N active pods, all at the update revision, Normal, InPlaceUpdateReady and Ready, their
// instance IDs unique, the status counters what the pods are; from the audit log, exactly
// the pods the phase needs were created (a create cut off by a fault may have landed or not,
// the pods tell), none deleted in the first two phases and in the third exactly the old
// ones, once each; the in-place phase replaced no pod and restarted each container once.
// Every 100 ms of both rollouts the pods are sampled: never more unavailable than
// maxUnavailable allows. The faults fall at random progress points of each phase (drawn
// from a seed the test logs; BOSUN_FAULT_SEED replays it) plus a random jitter, so that a
// fault may hit a manager right after its restart too. The manager's informers and the
// stand-in kubelet's reconnect on their own after the API server's restart.
// BOSUN_LONG_FAULTS=1 runs 1,000 pods and 6 manager kills per phase instead of 300 and 3.
func TestCloneSetSurvivesManagerKills(t *testing.T) {
	scale := defaultFaults
	if os.Getenv(longFaultsEnv) == "1" {
		scale = longFaults
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(faultSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", faultSeedEnv, s, err)
		}
	}
	t.Logf("fault seed %d (replay with %s=%d); %d pods, %d manager kills and 1 kube-apiserver kill per phase",
		seed, faultSeedEnv, seed, scale.replicas, scale.kills)

	// Its own servers: the test restarts kube-apiserver, which the package's other tests
	// share.
	cp := framework.StartTestControlPlane(t, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
	e := setupOn(t, cp, true, scale.timeout)
	// A phase of hundreds of pods, slowed by its faults, takes longer than one state of the
	// other tests.
	e.WaitTimeout = 4 * time.Minute
	r := &faultRun{e: e, scale: scale, rng: rand.New(rand.NewPCG(seed, seed))}
	r.client = protobufClient(t, cp)
	r.manager = e.startControllerWith(t, framework.ControllerManagerOptions{Controllers: controllersUnderTest})
	e.startKubelet(t)
	r.began = time.Now()

	cs := newCloneSet("web", 0)
	r.uid = e.cloneSets().Create(t, r.configure(cs)).UID
	e.cloneSets().WaitFor(t, "web", "its status", func(cs *appsv1beta1.CloneSet) bool {
		return cs.Status.ObservedGeneration == cs.Generation && cs.Status.UpdateRevision != ""
	})

	// No subtests: a restart of the manager fails the test that started it, this one.
	created := r.phase(t, faultPhase{
		name:    "scale-up",
		change:  func(t *testing.T) { e.scale(t, "web", scale.replicas) },
		through: available,
		creates: true,
	})
	for _, pod := range created {
		if n := restarts(pod); n != 0 {
			t.Errorf("scale-up: pod %s: its container restarted %d times, want never", pod.Name, n)
		}
	}
	if t.Failed() {
		return
	}

	rolled := r.phase(t, faultPhase{
		name:     "in-place",
		change:   func(t *testing.T) { e.setImage(t, "web", image2) },
		through:  func(pod *corev1.Pod) bool { return pod.Spec.Containers[0].Image == image2 },
		sample:   true,
		previous: created,
	})
	uids := map[string]types.UID{}
	for _, pod := range created {
		uids[pod.Name] = pod.UID
	}
	for _, pod := range rolled {
		if uids[pod.Name] != pod.UID {
			t.Errorf("in-place: pod %s (UID %s) is not one of the pods before the update: a pod was recreated", pod.Name, pod.UID)
		}
		if img := pod.Spec.Containers[0].Image; img != image2 {
			t.Errorf("in-place: pod %s runs %s, want %s", pod.Name, img, image2)
		}
		// The stand-in kubelet restarts a container once per image change it sees.
		if n := restarts(pod); n != 1 {
			t.Errorf("in-place: pod %s: its container restarted %d times, want once (one in-place update)", pod.Name, n)
		}
	}
	if t.Failed() {
		return
	}

	recreated := r.phase(t, faultPhase{
		name: "recreate",
		change: func(t *testing.T) {
			e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) {
				cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: faultEnvVar, Value: "3"}}
				cs.Spec.UpdateStrategy.RollingUpdate.MaxSurge = percent("10%")
			})
		},
		through:  hasFaultEnv,
		sample:   true,
		creates:  true,
		previous: rolled,
		replaces: true,
	})
	for _, pod := range recreated {
		if !hasFaultEnv(pod) || restarts(pod) != 0 {
			t.Errorf("recreate: pod %s: env %v, %d restarts; want a new pod with %s", pod.Name, pod.Spec.Containers[0].Env, restarts(pod), faultEnvVar)
		}
	}
	t.Logf("%d faults in %v: %s", len(r.faults), time.Since(r.began).Round(time.Second), r.faultSummary())
}

// faultRun is the state of TestCloneSetSurvivesManagerKills.
type faultRun struct {
	e       *testEnv
	scale   faultScale
	rng     *rand.Rand
	began   time.Time            // when the manager and the stand-in kubelet ran
	client  kubernetes.Interface // protobuf, for the frequent lists of hundreds of pods
	manager *framework.ControllerManager
	uid     types.UID // the CloneSet's
	faults  []fault
}

// fault is one SIGKILL the test sent and the restart that followed.
type fault struct {
	phase, target string
	// at is just before the signal, back when the restarted process was ready again.
	at, back time.Time
	// through is how many of the phase's pods had got through it then.
	through int
}

// faultPhase is one change of TestCloneSetSurvivesManagerKills and what it may write.
type faultPhase struct {
	// name labels the phase's messages.
	name string
	// change starts the phase; the manager is up, its webhooks admit the CloneSet write.
	change func(t *testing.T)
	// through says whether a pod has got through the phase, which places its faults.
	through func(*corev1.Pod) bool
	// sample checks the availability of the pods every availabilitySampleInterval.
	sample bool
	// creates: the phase creates N pods, else none.
	creates bool
	// previous are the pods before the phase; with replaces the phase deletes every one
	// of them, else none.
	previous []*corev1.Pod
	replaces bool
}

// configure sets the rollout of TestCloneSetSurvivesManagerKills on cs.
func (r *faultRun) configure(cs *appsv1beta1.CloneSet) *appsv1beta1.CloneSet {
	ru := rolling(cs)
	ru.PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
	ru.MaxUnavailable = percent("20%")
	ru.Partition = intOrStr(0)
	// New pods are created while few are unavailable, so that the scale-up lasts as long as
	// the pods take to become available and the faults fall among its creates, rather than
	// after a burst of them.
	cs.Spec.ScaleStrategy.MaxUnavailable = percent("20%")
	return cs
}

// phase makes the change, breaks things along it, waits until the namespace is quiet and
// checks the phase's end and writes. It returns the active pods at the end.
func (r *faultRun) phase(t *testing.T, p faultPhase) []*corev1.Pod {
	e := r.e
	began := time.Now()
	// The messages of the phase's checks follow this line.
	t.Logf("phase %s begins", p.name)
	defer func() { t.Logf("phase %s ends after %v", p.name, time.Since(began).Round(time.Millisecond)) }()
	var sampler *availabilitySampler
	if p.sample {
		sampler = r.sampleAvailability(t)
	}
	p.change(t)
	r.injectFaults(t, p.name, p.through)
	cs, _ := e.waitForSettled(t, "web")
	e.settle(t)
	if sampler != nil {
		sampler.stop()
		worst, when, samples := sampler.result()
		budget := int(r.scale.replicas) / 5 // maxUnavailable 20%
		t.Logf("at most %d of %d pods unavailable in %d samples (maxUnavailable %d)", worst, r.scale.replicas, samples, budget)
		if samples < 10 {
			t.Errorf("only %d samples of the pods' availability, want many: the check saw nothing", samples)
		}
		if worst > budget {
			t.Errorf("%d pods were unavailable at once, want at most %d (maxUnavailable 20%% of %d): %s", worst, budget, r.scale.replicas, when)
		}
	}
	if r.manager.Exited() {
		t.Fatalf("the manager exited: %s", r.manager.LogTail(40))
	}
	all := e.GetPods(t, nil)
	active := activePods(all, r.uid)
	r.checkEnd(t, cs, active)
	r.checkWrites(t, p, began, all, active)
	return active
}

// injectFaults SIGKILLs the manager scale.kills times and kube-apiserver once, each when a
// random share (5% to 90%) of the pods has got through the phase, after a random jitter,
// restarting each at once and waiting until it is ready.
func (r *faultRun) injectFaults(t *testing.T, phase string, through func(*corev1.Pod) bool) {
	n := int(r.scale.replicas)
	points := make([]int, r.scale.kills+1)
	for i := range points {
		points[i] = max(1, int(float64(n)*(0.05+0.85*r.rng.Float64())))
	}
	slices.Sort(points)
	apiServerAt := r.rng.IntN(len(points))
	jitters := make([]time.Duration, len(points))
	for i := range jitters {
		jitters[i] = time.Duration(r.rng.Int64N(int64(faultJitter)))
	}
	t.Logf("fault plan: at %v of %d pods through (kube-apiserver at the %s), jitters %v", points, n, ordinal(apiServerAt+1), jitters)
	for i, point := range points {
		var got int
		r.e.Await(t, fmt.Sprintf("%d of %d pods to get through the phase", point, n), func(ctx context.Context) (bool, error) {
			pods, err := r.client.CoreV1().Pods(r.e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			got = countPods(activePods(pods.Items, r.uid), through)
			return got >= point, nil
		}, func() string { return fmt.Sprintf("%d through", got) })
		time.Sleep(jitters[i])
		f := fault{phase: phase, through: got, at: time.Now()}
		if i == apiServerAt {
			f.target = "kube-apiserver"
			if err := r.e.CP.RestartAPIServer(r.e.Ctx, framework.KillAPIServer); err != nil {
				t.Fatal(err)
			}
		} else {
			f.target = "manager"
			r.manager.Restart()
		}
		f.back = time.Now()
		r.faults = append(r.faults, f)
		t.Logf("SIGKILLed %s with at least %d of %d pods through; back after %v", f.target, got, n, f.back.Sub(f.at).Round(time.Millisecond))
	}
}

func ordinal(i int) string {
	switch i {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(i) + "th"
}

// checkEnd checks the settled end of a phase: exactly N active pods, each at the update
// revision, Normal, InPlaceUpdateReady and Ready, of unique instance IDs; the status
// counters what the pods are.
func (r *faultRun) checkEnd(t *testing.T, cs *appsv1beta1.CloneSet, pods []*corev1.Pod) {
	t.Helper()
	n := int(r.scale.replicas)
	cs = r.e.cloneSets().Get(t, cs.Name) // as it is now, after the quiet period
	if len(pods) != n {
		t.Errorf("%d active pods, want exactly %d: %s", len(pods), n, describePodPtrs(pods))
	}
	ids := map[string]string{}
	var ready, updated, updatedReady, nAvailable, updatedAvailable int
	for _, pod := range pods {
		id := pod.Labels[appsv1beta1.CloneSetInstanceID]
		if other, dup := ids[id]; dup || id == "" {
			t.Errorf("pods %s and %s have the same instance ID %q", other, pod.Name, id)
		}
		ids[id] = pod.Name
		isReady := conditionTrue(pod, corev1.PodReady)
		isUpdated := revisionOf(pod) == cs.Status.UpdateRevision
		if !isUpdated || lifecycleState(pod) != appsv1beta1.LifecycleStateNormal || !conditionTrue(pod, appsv1beta1.InPlaceUpdateReady) || !isReady {
			t.Errorf("pod %s is not settled at update revision %s: %s", pod.Name, cs.Status.UpdateRevision, podDetails(pod))
		}
		if isReady {
			ready++
		}
		if isUpdated {
			updated++
		}
		if isUpdated && isReady {
			updatedReady++
		}
		if available(pod) {
			nAvailable++
			if isUpdated {
				updatedAvailable++
			}
		}
	}
	s := cs.Status
	want := statusCounts{
		ObservedGeneration: cs.Generation, Replicas: int32(len(pods)), ReadyReplicas: int32(ready),
		AvailableReplicas: int32(nAvailable), UpdatedReplicas: int32(updated), UpdatedReadyReplicas: int32(updatedReady),
		UpdatedAvailableReplicas: int32(updatedAvailable), CurrentRevision: s.UpdateRevision, UpdateRevision: s.UpdateRevision,
	}
	got := statusCounts{
		ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, UpdatedReplicas: s.UpdatedReplicas, UpdatedReadyReplicas: s.UpdatedReadyReplicas,
		UpdatedAvailableReplicas: s.UpdatedAvailableReplicas, CurrentRevision: s.CurrentRevision, UpdateRevision: s.UpdateRevision,
	}
	if got != want {
		t.Errorf("status %+v, want what the pods are: %+v", got, want)
	}
}

// checkWrites checks, from the audit log, the pod creates and deletes of a phase begun at
// began: the pods created are exactly those it needs, the pods deleted exactly those it
// replaces, once each; a request that failed was cut off by a fault. all are the
// namespace's pods at the end, active those of the CloneSet.
func (r *faultRun) checkWrites(t *testing.T, p faultPhase, began time.Time, all []corev1.Pod, active []*corev1.Pod) {
	t.Helper()
	writes, err := r.e.AuditEvents(func(ev *auditv1.Event) bool {
		return (ev.Verb == "create" || ev.Verb == "delete" || ev.Verb == "deletecollection") && ev.ObjectRef != nil &&
			ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Subresource == "" && ev.ObjectRef.Namespace == r.e.Namespace &&
			!ev.RequestReceivedTimestamp.Time.Before(began)
	})
	if err != nil {
		t.Fatal(err)
	}
	previous := sets.New[string]()
	for _, pod := range p.previous {
		previous.Insert(pod.Name)
	}
	createdOK, tried, deleted := sets.New[string](), sets.New[string](), map[string]int{}
	var cutOff []string
	for i := range writes {
		ev := &writes[i]
		name, code := ev.ObjectRef.Name, int32(0)
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		switch ok := code == http.StatusCreated || code == http.StatusOK; {
		case ev.Verb == "deletecollection":
			t.Errorf("a deletecollection of pods answered %d", code)
		case ok && ev.Verb == "create":
			if createdOK.Has(name) {
				t.Errorf("pod %s was created twice", name)
			}
			createdOK.Insert(name)
			tried.Insert(name)
		case ok:
			deleted[name]++
		case r.duringFault(ev.RequestReceivedTimestamp.Time, ev.StageTimestamp.Time):
			cutOff = append(cutOff, fmt.Sprintf("%s %s: %d", ev.Verb, name, code))
			if ev.Verb == "create" {
				tried.Insert(name)
			}
		default:
			t.Errorf("%s of pod %s at %s answered %d, with no fault near: %s", ev.Verb, name,
				ev.RequestReceivedTimestamp.Format("15:04:05.000"), code, statusMessage(ev))
		}
	}
	// Pods deleted stay, Terminating, as no kubelet ends them, but for those not yet bound,
	// which go at once: the namespace's pods and the deletes name every pod there was.
	existing := map[string]*corev1.Pod{}
	for i := range all {
		existing[all[i].Name] = &all[i]
	}
	landed := sets.New[string]()
	for name := range existing {
		if !previous.Has(name) && controlledBy(existing[name], r.uid) {
			landed.Insert(name)
		}
	}
	for name := range deleted {
		if !previous.Has(name) {
			landed.Insert(name)
		}
	}
	var unaudited []string
	for _, name := range sets.List(landed.Difference(tried)) {
		// A create the API server carried out but did not log before its SIGKILL.
		if pod := existing[name]; pod != nil && r.duringAPIServerKill(pod.CreationTimestamp.Time) {
			unaudited = append(unaudited, name)
			continue
		}
		t.Errorf("pod %s exists or was deleted, but no create of it in this phase is audited", name)
	}
	for _, name := range sets.List(createdOK.Difference(landed)) {
		t.Errorf("pod %s was created, but neither exists nor was deleted", name)
	}
	want := 0
	if p.creates {
		want = int(r.scale.replicas)
	}
	t.Logf("%d pods created (%d creates accepted, %d unaudited at the kube-apiserver kill), %d deleted; %d requests cut off by faults: %v",
		landed.Len(), createdOK.Len(), len(unaudited), len(deleted), len(cutOff), cutOff)
	if landed.Len() != want {
		t.Errorf("%d pods were created, want exactly %d: %v", landed.Len(), want, sets.List(landed))
	}
	for name, n := range deleted {
		switch {
		case !p.replaces || !previous.Has(name):
			t.Errorf("pod %s was deleted (%d times): the phase replaces no pod but the old ones", name, n)
		case n > 1:
			t.Errorf("pod %s was deleted %d times, want once", name, n)
		}
	}
	if p.replaces {
		for _, pod := range p.previous {
			now := existing[pod.Name]
			if deleted[pod.Name] == 0 && (now == nil || now.DeletionTimestamp == nil) {
				t.Errorf("old pod %s was not deleted", pod.Name)
			}
		}
	}
	// Every pod that is not among the active ones at the end was deleted by this phase or
	// an earlier one: none left behind released or orphaned.
	activeNames := sets.New(podNames(active)...)
	for name, pod := range existing {
		if !activeNames.Has(name) && pod.DeletionTimestamp == nil {
			t.Errorf("pod %s is neither active in the CloneSet nor deleted: %s", name, podDetails(pod))
		}
	}
}

// statusCounts are the fields of a CloneSet's status that say what its pods are.
type statusCounts struct {
	ObservedGeneration                                              int64
	Replicas, ReadyReplicas, AvailableReplicas                      int32
	UpdatedReplicas, UpdatedReadyReplicas, UpdatedAvailableReplicas int32
	CurrentRevision, UpdateRevision                                 string
}

func statusMessage(ev *auditv1.Event) string {
	if ev.ResponseStatus == nil {
		return ""
	}
	return ev.ResponseStatus.Message
}

// duringFault reports whether a request received and completed at those times (by the API
// server's clock) overlapped a fault: from its signal until the restarted process was
// ready, widened by faultSlack.
func (r *faultRun) duringFault(received, completed time.Time) bool {
	return slices.ContainsFunc(r.faults, func(f fault) bool {
		return !received.After(f.back.Add(faultSlack)) && !completed.Before(f.at.Add(-faultSlack))
	})
}

// duringAPIServerKill reports whether a pod created at created (whole seconds) may have been
// created by a request the API server did not log before a SIGKILL.
func (r *faultRun) duringAPIServerKill(created time.Time) bool {
	return slices.ContainsFunc(r.faults, func(f fault) bool {
		return f.target == "kube-apiserver" && !created.Before(f.at.Add(-2*time.Second)) && !created.After(f.at.Add(time.Second))
	})
}

func (r *faultRun) faultSummary() string {
	counts := map[string]int{}
	for _, f := range r.faults {
		counts[f.target]++
	}
	return fmt.Sprintf("%d manager SIGKILLs, %d kube-apiserver SIGKILLs", counts["manager"], counts["kube-apiserver"])
}

// restarts returns how often the stand-in kubelet restarted the pod's first container.
func restarts(pod *corev1.Pod) int32 {
	if len(pod.Status.ContainerStatuses) == 0 {
		return 0
	}
	return pod.Status.ContainerStatuses[0].RestartCount
}

func hasFaultEnv(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.Containers[0].Env, func(v corev1.EnvVar) bool { return v.Name == faultEnvVar })
}

// protobufClient is an admin clientset of cp that speaks protobuf, which costs the API
// server and the test a fraction of JSON's for a list of hundreds of pods.
func protobufClient(t *testing.T, cp *framework.ControlPlane) kubernetes.Interface {
	t.Helper()
	config := cp.Config()
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.UserAgent = "cloneset-faults-test"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// availabilitySampler lists the CloneSet's pods every availabilitySampleInterval and keeps
// the most that were unavailable at once: missing, or not Ready, or not InPlaceUpdateReady.
type availabilitySampler struct {
	done, stopped chan struct{}

	mu      sync.Mutex
	worst   int
	when    string
	samples int
}

func (r *faultRun) sampleAvailability(t *testing.T) *availabilitySampler {
	s := &availabilitySampler{done: make(chan struct{}), stopped: make(chan struct{})}
	n := int(r.scale.replicas)
	go func() {
		defer close(s.stopped)
		ticker := time.NewTicker(availabilitySampleInterval)
		defer ticker.Stop()
		for {
			// Each sample is one consistent list; those that fail while kube-apiserver is
			// down are skipped.
			ctx, cancel := context.WithTimeout(r.e.Ctx, 5*time.Second)
			list, err := r.client.CoreV1().Pods(r.e.Namespace).List(ctx, metav1.ListOptions{})
			cancel()
			if err == nil {
				pods := activePods(list.Items, r.uid)
				up := countPods(pods, func(pod *corev1.Pod) bool {
					return conditionTrue(pod, corev1.PodReady) && conditionTrue(pod, appsv1beta1.InPlaceUpdateReady)
				})
				s.record(n-up, pods)
			}
			select {
			case <-s.done:
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *availabilitySampler) record(unavailable int, pods []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	if unavailable > s.worst || s.when == "" {
		s.worst = unavailable
		var down []string
		for _, pod := range pods {
			if !conditionTrue(pod, corev1.PodReady) || !conditionTrue(pod, appsv1beta1.InPlaceUpdateReady) {
				down = append(down, pod.Name+" ("+podDetails(pod)+")")
			}
		}
		const shown = 10
		more := ""
		if len(down) > shown {
			more = fmt.Sprintf("; and %d more", len(down)-shown)
			down = down[:shown]
		}
		s.when = fmt.Sprintf("at %s, %d active pods; not available: %s%s", time.Now().Format("15:04:05.000"), len(pods), strings.Join(down, "; "), more)
	}
}

// stop ends the sampling; calling it again does nothing.
func (s *availabilitySampler) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	<-s.stopped
}

func (s *availabilitySampler) result() (worst int, when string, samples int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worst, s.when, s.samples
}
