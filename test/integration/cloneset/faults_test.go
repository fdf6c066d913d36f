package cloneset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
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

// faultEnvVar is the variable the recreate phase adds to the template, which no running pod
// can take in place.
const faultEnvVar = "ROLLOUT"

var (
	defaultFaults = faultScale{replicas: 300, kills: 3, timeout: 10 * time.Minute}
	longFaults    = faultScale{replicas: 1000, kills: 6, timeout: 30 * time.Minute}
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
	r := &faultRun{e: e, scale: scale, client: cp.ProtobufClientset(t, "cloneset-faults-test")}
	manager := e.startControllerWith(t, framework.ControllerManagerOptions{Controllers: controllersUnderTest})
	r.faults = framework.NewFaultInjector(e.Env, manager, seed, scale.kills)
	r.manager = manager
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
		if n := framework.ContainerRestarts(pod); n != 0 {
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
		if n := framework.ContainerRestarts(pod); n != 1 {
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
		if !hasFaultEnv(pod) || framework.ContainerRestarts(pod) != 0 {
			t.Errorf("recreate: pod %s: env %v, %d restarts; want a new pod with %s", pod.Name, pod.Spec.Containers[0].Env, framework.ContainerRestarts(pod), faultEnvVar)
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
	// sample checks the availability of the pods every framework.PodSampleInterval.
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
	var sampler *framework.PodSampler
	unavailable := &framework.Peak{}
	if p.sample {
		sampler = r.sampleAvailability(t, unavailable)
	}
	p.change(t)
	n := int(r.scale.replicas)
	r.faults.Inject(t, p.name, n, func(ctx context.Context) (int, error) {
		pods, err := r.client.CoreV1().Pods(r.e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return countPods(activePods(pods.Items, r.uid), p.through), nil
	})
	cs, _ := e.waitForSettled(t, "web")
	e.settle(t)
	if sampler != nil {
		samples := sampler.Stop()
		worst, when := unavailable.Get()
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
	previous := sets.New(podNames(p.previous)...)
	writes := r.faults.CheckPodWrites(t, began, previous, all, func(pod *corev1.Pod) bool { return controlledBy(pod, r.uid) })
	landed, deleted := writes.Created, writes.Deleted
	existing := map[string]*corev1.Pod{}
	for i := range all {
		existing[all[i].Name] = &all[i]
	}
	want := 0
	if p.creates {
		want = int(r.scale.replicas)
	}
	t.Logf("%s", writes)
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

func hasFaultEnv(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.Containers[0].Env, func(v corev1.EnvVar) bool { return v.Name == faultEnvVar })
}

// sampleAvailability lists the CloneSet's pods every framework.PodSampleInterval and keeps
// in unavailable the most that were unavailable at once: missing, or not Ready, or not
// InPlaceUpdateReady.
func (r *faultRun) sampleAvailability(t *testing.T, unavailable *framework.Peak) *framework.PodSampler {
	n := int(r.scale.replicas)
	up := func(pod *corev1.Pod) bool {
		return conditionTrue(pod, corev1.PodReady) && conditionTrue(pod, appsv1beta1.InPlaceUpdateReady)
	}
	return framework.StartPodSampler(t, r.e.Ctx, r.client, r.e.Namespace, func(list []corev1.Pod) {
		pods := activePods(list, r.uid)
		unavailable.Record(n-countPods(pods, up), func() string {
			var down []string
			for _, pod := range pods {
				if !up(pod) {
					down = append(down, pod.Name+" ("+podDetails(pod)+")")
				}
			}
			const shown = 10
			more := ""
			if len(down) > shown {
				more = fmt.Sprintf("; and %d more", len(down)-shown)
				down = down[:shown]
			}
			return fmt.Sprintf("at %s, %d active pods; not available: %s%s", time.Now().Format("15:04:05.000"), len(pods), strings.Join(down, "; "), more)
		})
	})
}
