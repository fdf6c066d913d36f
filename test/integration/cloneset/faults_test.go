package cloneset

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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
	if framework.LongFaults() {
		scale = longFaults
	}
	seed := framework.FaultSeed(t)
	t.Logf("fault seed %d (replay with %s=%d); %d pods, %d manager kills and 1 kube-apiserver kill per phase",
		seed, framework.FaultSeedEnv, seed, scale.replicas, scale.kills)

	// Its own servers: the test restarts kube-apiserver, which the package's other tests
	// share.
	cp := framework.StartTestControlPlane(t, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
	e := setupOn(t, cp, true, scale.timeout)
	// A phase of hundreds of pods, slowed by its faults, takes longer than one state of the
	// other tests.
	e.WaitTimeout = 4 * time.Minute
	r := &faultRun{e: e, scale: scale}
	r.client = protobufClient(t, cp)
	r.manager = e.startControllerWith(t, framework.ControllerManagerOptions{Controllers: controllersUnderTest})
	r.faults = framework.NewFaultInjector(seed, cp, r.manager)
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
	t.Logf("%d faults in %v: %s", len(r.faults.Faults()), time.Since(r.began).Round(time.Second), r.faults.Summary())
}

// faultRun is the state of TestCloneSetSurvivesManagerKills.
type faultRun struct {
	e       *testEnv
	scale   faultScale
	began   time.Time            // when the manager and the stand-in kubelet ran
	client  kubernetes.Interface // protobuf, for the frequent lists of hundreds of pods
	manager *framework.ControllerManager
	uid     types.UID // the CloneSet's
	faults  *framework.FaultInjector
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
	r.faults.Inject(t, r.e.Env, phase, int(r.scale.replicas), r.scale.kills, "pods through", func(ctx context.Context) (int, error) {
		pods, err := r.client.CoreV1().Pods(r.e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return countPods(activePods(pods.Items, r.uid), through), nil
	})
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
		case r.faults.DuringFault(ev.RequestReceivedTimestamp.Time, ev.StageTimestamp.Time):
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
		if pod := existing[name]; pod != nil && r.faults.DuringAPIServerKill(pod.CreationTimestamp.Time) {
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
