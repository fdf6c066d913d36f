package advanceddaemonset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// faultScale is how large a run of TestAdvancedDaemonSetSurvivesManagerKills is.
type faultScale struct {
	// nodes is how many Nodes the DaemonSet runs on.
	nodes int
	// kills is how many times each phase SIGKILLs the manager; each phase also SIGKILLs
	// kube-apiserver once.
	kills int
	// timeout bounds the whole test.
	timeout time.Duration
}

var (
	defaultFaults = faultScale{nodes: 200, kills: 2, timeout: 10 * time.Minute}
	longFaults    = faultScale{nodes: 500, kills: 5, timeout: 30 * time.Minute}
)

const (
	// faultBudget is the rollouts' maxUnavailable (and the surge phase's maxSurge), of the
	// desired nodes, rounded up.
	faultBudget = 20
	// faultEnvVar is the variable the recreating phases set in the template, which no
	// running pod can take in place.
	faultEnvVar = "ROLLOUT"
	// holdLabel marks the pods the preDelete hook holds; every pod carries it.
	holdLabel = "hold"
	// hookUserAgent tells in the audit log the stand-in for whoever owns the preDelete hook.
	hookUserAgent = "ads-faults-hook"
	// hookWork is how long the hook's owner works on a pod marked PreparingDelete before it
	// removes holdLabel, releasing the pod.
	hookWork = 200 * time.Millisecond
)

// An Advanced DaemonSet over hundreds of Nodes whose manager is SIGKILLed and restarted at
// random moments, several times per phase, and whose kube-apiserver is SIGKILLed and
// restarted once per phase, still ends each phase exactly where it should, having written
// nothing twice. The phases: the DaemonSet is created (InPlaceIfPossible, maxUnavailable
// 20%) and runs a pod on every node; it is rolled in place (new image); rolled by
// recreation (Standard, new env) with a partition that keeps a quarter of the nodes, the
// lexicographically smallest, at the old revision; rolled with maxSurge 20% and
// maxUnavailable 0 (new env, partition 0); rolled with a preDelete hook whose label every
// pod carries (new env, maxUnavailable 20%), a stand-in for the hook's owner releasing each
// pod 200 ms after it is marked PreparingDelete. After each phase, once the namespace is
// quiet: exactly one active pod per node, each Ready and InPlaceUpdateReady where it has
// the gate, not PreparingDelete, at the update revision but for the partition's, which sit
// on the smallest nodes; the status counters what the pods are; from the audit log, exactly
// the pods the phase needs were created (a create cut off by a fault may have landed or
// not, the pods tell) and exactly the old pods it replaces were deleted, once each, in the
// preDelete phase each only after the hook's owner released it; the in-place phase
// replaced no pod and restarted each container once. Every 100 ms of every phase the pods
// are sampled: never two active pods on one node (with surge: never more than two, and
// never more than maxSurge nodes with two of which one is not available yet), and during the rollouts never more nodes
// without an available pod than maxUnavailable. The faults fall at random progress points
// of each phase (drawn from a seed the test logs; BOSUN_FAULT_SEED replays it) plus a
// random jitter. BOSUN_LONG_FAULTS=1 runs 500 nodes and 5 manager kills per phase instead
// of 200 and 2.
func TestAdvancedDaemonSetSurvivesManagerKills(t *testing.T) {
	scale := defaultFaults
	if framework.LongFaults() {
		scale = longFaults
	}
	seed := framework.FaultSeed(t)
	t.Logf("fault seed %d (replay with %s=%d); %d nodes, %d manager kills and 1 kube-apiserver kill per phase",
		seed, framework.FaultSeedEnv, seed, scale.nodes, scale.kills)

	// Its own servers: the test restarts kube-apiserver, which the package's other tests
	// share.
	// Pod creates are audited with the pods: the controller names them by generateName.
	cp := framework.StartTestControlPlane(t, framework.Options{BosunCRDs: true, AuditPolicy: framework.PodCreatesAuditPolicy})
	opts := envOptions
	opts.Timeout = scale.timeout
	e := &testEnv{framework.NewTestEnv(t, cp, opts)}
	// A phase of hundreds of pods, slowed by its faults, takes longer than one state of the
	// other tests.
	e.WaitTimeout = 2 * time.Minute
	r := &faultRun{e: e, scale: scale, client: cp.ProtobufClientset(t, "ads-faults-test")}
	r.createNodes(t)
	manager := e.startManager(t, "")
	r.faults = framework.NewFaultInjector(e.Env, manager, seed, scale.kills)
	r.manager = manager
	framework.NewKubelet(e.Env, framework.KubeletOptions{Unbound: true}).Start(t)
	r.startHookOwner(t)
	began := time.Now()

	n := scale.nodes
	budget := (n*faultBudget + 99) / 100
	// No subtests: a restart of the manager fails the test that started it, this one.
	created := r.phase(t, faultPhase{
		name: "create",
		change: func(t *testing.T) {
			ds := newDS("agent")
			ds.Spec.Template.Labels[holdLabel] = "true"
			ru := rollingUpdate(ds)
			ru.Type, ru.MaxUnavailable = appsv1alpha1.InplaceRollingUpdateType, ptr.To(intstr.FromString(fmt.Sprintf("%d%%", faultBudget)))
			r.uid = e.daemonSets().Create(t, ds).UID
		},
		through: func(*corev1.Pod) bool { return true },
		creates: n,
	})
	for _, pod := range created {
		if c := framework.ContainerRestarts(pod); c != 0 {
			t.Errorf("create: pod %s: its container restarted %d times, want never", pod.Name, c)
		}
	}
	if t.Failed() {
		return
	}

	rolled := r.phase(t, faultPhase{
		name:           "in-place",
		change:         func(t *testing.T) { e.setImage(t, "agent", image2) },
		through:        func(pod *corev1.Pod) bool { return pod.Spec.Containers[0].Image == image2 },
		maxUnavailable: budget,
		previous:       created,
	})
	uids := map[string]types.UID{}
	for _, pod := range created {
		uids[pod.Name] = pod.UID
	}
	for _, pod := range rolled {
		if uids[pod.Name] != pod.UID {
			t.Errorf("in-place: pod %s (UID %s) is not one of the pods before the update: a pod was recreated", pod.Name, pod.UID)
		}
		// The stand-in kubelet restarts a container once per image change it sees.
		if c := framework.ContainerRestarts(pod); c != 1 || pod.Spec.Containers[0].Image != image2 {
			t.Errorf("in-place: pod %s runs %s and restarted %d times, want %s and once (one in-place update)", pod.Name, pod.Spec.Containers[0].Image, c, image2)
		}
	}
	if t.Failed() {
		return
	}

	partition := n / 4
	kept := sets.New(r.nodes[:partition]...)
	partitioned := r.phase(t, faultPhase{
		name: "partition",
		change: func(t *testing.T) {
			e.daemonSets().Update(t, "agent", func(ds *appsv1alpha1.DaemonSet) {
				setFaultEnv(ds, "3")
				ru := rollingUpdate(ds)
				ru.Type, ru.Partition = appsv1alpha1.StandardRollingUpdateType, ptr.To(intstr.FromInt32(int32(partition)))
			})
		},
		through:        hasFaultEnv("3"),
		maxUnavailable: budget,
		keepOld:        partition,
		creates:        n - partition,
		previous:       rolled,
		deletes:        func(pod *corev1.Pod) bool { return !kept.Has(nodeOf(pod)) },
	})
	for _, pod := range partitioned {
		if kept.Has(nodeOf(pod)) && uids[pod.Name] != pod.UID {
			t.Errorf("partition: pod %s on node %s, which the partition keeps, is not the pod before the update", pod.Name, nodeOf(pod))
		}
	}
	if t.Failed() {
		return
	}

	surged := r.phase(t, faultPhase{
		name: "surge",
		change: func(t *testing.T) {
			e.daemonSets().Update(t, "agent", func(ds *appsv1alpha1.DaemonSet) {
				setFaultEnv(ds, "4")
				ru := rollingUpdate(ds)
				ru.Partition = ptr.To(intstr.FromInt32(0))
				ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromString(fmt.Sprintf("%d%%", faultBudget))), ptr.To(intstr.FromInt32(0))
			})
		},
		through:  hasFaultEnv("4"),
		maxSurge: budget,
		creates:  n,
		previous: partitioned,
		deletes:  func(*corev1.Pod) bool { return true },
	})
	if t.Failed() {
		return
	}

	r.phase(t, faultPhase{
		name: "preDelete",
		change: func(t *testing.T) {
			e.daemonSets().Update(t, "agent", func(ds *appsv1alpha1.DaemonSet) {
				setFaultEnv(ds, "5")
				ds.Spec.Lifecycle = &appsv1alpha1.Lifecycle{PreDelete: &appsv1alpha1.LifecycleHook{LabelsHandler: map[string]string{holdLabel: "true"}}}
				ru := rollingUpdate(ds)
				ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(0)), ptr.To(intstr.FromString(fmt.Sprintf("%d%%", faultBudget)))
			})
		},
		through:        hasFaultEnv("5"),
		maxUnavailable: budget,
		creates:        n,
		previous:       surged,
		deletes:        func(*corev1.Pod) bool { return true },
		hooked:         true,
	})
	t.Logf("%d faults in %v: %s", len(r.faults.Faults()), time.Since(began).Round(time.Second), r.faults.Summary())
}

// faultRun is the state of TestAdvancedDaemonSetSurvivesManagerKills.
type faultRun struct {
	e       *testEnv
	scale   faultScale
	client  kubernetes.Interface // protobuf, for the frequent lists of hundreds of pods
	manager *framework.ControllerManager
	faults  *framework.FaultInjector
	// nodes are the Nodes' names, sorted.
	nodes   []string
	nodeSet sets.Set[string]
	uid     types.UID // the DaemonSet's
	// unansweredReleases are when the hook's owner sent the last release of a pod that
	// failed, by pod name: such a release may have landed without an audit event when
	// kube-apiserver was SIGKILLed.
	unansweredReleases sync.Map
}

// faultPhase is one change of TestAdvancedDaemonSetSurvivesManagerKills and what it may
// write.
type faultPhase struct {
	// name labels the phase's messages.
	name string
	// change starts the phase; the manager is up, its webhooks admit the DaemonSet write.
	change func(t *testing.T)
	// through says whether a pod of the update revision has got through the phase (it
	// must be available too), which places its faults.
	through func(*corev1.Pod) bool
	// maxUnavailable, when positive, is how many nodes may lack an available pod at any
	// moment of the phase; the first phase, which creates the pods, checks none.
	maxUnavailable int
	// maxSurge is how many nodes may run two pods at once; with 0, none may.
	maxSurge int
	// keepOld is how many nodes, the smallest names, the partition keeps at the old revision.
	keepOld int
	// creates is how many pods the phase creates.
	creates int
	// previous are the pods before the phase; deletes picks those the phase replaces
	// (nil: none).
	previous []*corev1.Pod
	deletes  func(*corev1.Pod) bool
	// hooked: the preDelete hook holds every pod the phase deletes until its owner releases it.
	hooked bool
}

// createNodes creates the test's Ready Nodes, named so that they sort by number.
func (r *faultRun) createNodes(t *testing.T) {
	t.Helper()
	nodes := make([]*corev1.Node, r.scale.nodes)
	for i := range nodes {
		nodes[i] = r.e.NewNode(fmt.Sprintf("n%04d", i), map[string]string{}, time.Now())
	}
	for _, node := range r.e.CreateNodes(t, nodes) {
		r.nodes = append(r.nodes, node.Name)
	}
	slices.Sort(r.nodes)
	r.nodeSet = sets.New(r.nodes...)
}

// startHookOwner plays whoever owns the preDelete hook: every framework.PodSampleInterval
// it looks at the pods, and hookWork after it first saw a pod marked PreparingDelete it
// removes the pod's holdLabel, which lets the controller delete it.
func (r *faultRun) startHookOwner(t *testing.T) {
	client := r.e.CP.ProtobufClientset(t, hookUserAgent)
	marked := map[types.UID]time.Time{}
	release := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, holdLabel))
	framework.StartPodSampler(t, r.e.Ctx, client, r.e.Namespace, func(pods []corev1.Pod) {
		for i := range pods {
			pod := &pods[i]
			if pod.Labels[holdLabel] == "" || pod.Labels[appsv1alpha1.LifecycleStateKey] != string(appsv1alpha1.LifecycleStatePreparingDelete) {
				continue
			}
			if _, seen := marked[pod.UID]; !seen {
				marked[pod.UID] = time.Now()
			}
			if time.Since(marked[pod.UID]) < hookWork {
				continue
			}
			// Failures (kube-apiserver down) are tried again with the next list; a failed
			// release may have landed unaudited, which checkHookRespected needs to know.
			sent := time.Now()
			if _, err := client.CoreV1().Pods(pod.Namespace).Patch(r.e.Ctx, pod.Name, types.StrategicMergePatchType, release, metav1.PatchOptions{}); err != nil {
				r.unansweredReleases.Store(pod.Name, sent)
			}
		}
	})
}

// peaks are the worst moments a phase's sampler saw.
type peaks struct {
	// unavailable counts nodes without an available pod; mostOnANode the active pods on
	// the busiest node; doubled the nodes with more than one active pod, one of them not
	// available (surging).
	unavailable, mostOnANode, doubled framework.Peak
}

// sample records what one list of the namespace's pods shows.
func (r *faultRun) sample(p *peaks, list []corev1.Pod) {
	var pods []*corev1.Pod
	for i := range list {
		if podutil.IsPodActive(&list[i]) {
			pods = append(pods, &list[i])
		}
	}
	note := func() string { return time.Now().Format("15:04:05.000") + ": " + describePodPtrs(interesting(pods)) }
	perNode := map[string]int{}
	availableOn, unavailableOn := sets.New[string](), sets.New[string]()
	for _, pod := range pods {
		perNode[nodeOf(pod)]++
		if available(pod) {
			availableOn.Insert(nodeOf(pod))
		} else {
			unavailableOn.Insert(nodeOf(pod))
		}
	}
	most, doubled := 0, 0
	for node, count := range perNode {
		most = max(most, count)
		// maxSurge bounds the nodes whose second pod is not available yet; a node whose
		// new pod is available keeps its old one only until the controller's next sync.
		if count > 1 && unavailableOn.Has(node) {
			doubled++
		}
	}
	p.mostOnANode.Record(most, note)
	p.doubled.Record(doubled, note)
	p.unavailable.Record(len(r.nodes)-availableOn.Intersection(r.nodeSet).Len(), note)
}

// interesting are the pods a failure message about a sample shows: those not available or
// sharing their node, at most 20.
func interesting(pods []*corev1.Pod) []*corev1.Pod {
	perNode := map[string]int{}
	for _, pod := range pods {
		perNode[nodeOf(pod)]++
	}
	var out []*corev1.Pod
	for _, pod := range pods {
		if (!available(pod) || perNode[nodeOf(pod)] > 1) && len(out) < 20 {
			out = append(out, pod)
		}
	}
	return out
}

// available reports whether pod serves: Ready (minReadySeconds is 0) and, when it has the
// InPlaceUpdateReady gate, not in the middle of an in-place update.
func available(pod *corev1.Pod) bool {
	if !podutil.IsPodActive(pod) || !podutil.IsPodReady(pod) {
		return false
	}
	for _, gate := range pod.Spec.ReadinessGates {
		if gate.ConditionType == appsv1alpha1.InPlaceUpdateReady && !framework.PodConditionTrue(pod, gate.ConditionType) {
			return false
		}
	}
	return true
}

// phase makes the change, breaks things along it, waits until the namespace is quiet and
// checks the phase's end and writes. It returns the active pods at the end.
func (r *faultRun) phase(t *testing.T, p faultPhase) []*corev1.Pod {
	e := r.e
	began := time.Now()
	// The messages of the phase's checks follow this line.
	t.Logf("phase %s begins", p.name)
	defer func() { t.Logf("phase %s ends after %v", p.name, time.Since(began).Round(time.Millisecond)) }()
	seen := &peaks{}
	sampler := framework.StartPodSampler(t, e.Ctx, r.client, e.Namespace, func(pods []corev1.Pod) { r.sample(seen, pods) })
	p.change(t)
	rolls := len(r.nodes) - p.keepOld
	r.faults.Inject(t, p.name, rolls, func(ctx context.Context) (int, error) {
		list, err := r.client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		through := 0
		for _, pod := range daemonPods(list.Items, r.uid) {
			if available(&pod) && p.through(&pod) {
				through++
			}
		}
		return through, nil
	})
	ds := r.waitForEnd(t, p)
	e.WaitForNoWrites(t, idlePeriod)
	samples := sampler.Stop()
	if r.manager.Exited() {
		t.Fatalf("the manager exited: %s", r.manager.LogTail(40))
	}
	all := e.GetPods(t, nil)
	active := activePods(all, r.uid)
	r.checkEnd(t, p, ds, active)
	writes := r.checkWrites(t, p, began, all, active)
	r.checkSamples(t, p, seen, samples, writes.Unanswered)
	return active
}

// waitForEnd waits until the DaemonSet's status reports, for its current generation, a pod
// on every node, all available and all but the partition's updated, and until its pods are
// one per node, every one available and at the update revision (but for the partition's).
func (r *faultRun) waitForEnd(t *testing.T, p faultPhase) *appsv1alpha1.DaemonSet {
	t.Helper()
	n := int32(len(r.nodes))
	updated := n - int32(p.keepOld)
	var (
		ds        *appsv1alpha1.DaemonSet
		pods, all []corev1.Pod
	)
	r.e.Await(t, fmt.Sprintf("the status to report %d pods desired, scheduled and available, %d updated, for the current generation, and the pods to be so", n, updated), func(ctx context.Context) (bool, error) {
		var err error
		if ds, err = r.e.Bosun.AppsV1alpha1().DaemonSets(r.e.Namespace).Get(ctx, "agent", metav1.GetOptions{}); err != nil {
			return false, err
		}
		list, err := r.client.CoreV1().Pods(r.e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		all, pods = list.Items, daemonPods(list.Items, r.uid)
		s := ds.Status
		if s.ObservedGeneration != ds.Generation || s.DaemonSetHash == "" || s.DesiredNumberScheduled != n || s.CurrentNumberScheduled != n ||
			s.UpdatedNumberScheduled != updated || s.NumberAvailable != n || s.NumberMisscheduled != 0 || !onePerNode(pods, r.nodes, "") {
			return false, nil
		}
		atUpdate := 0
		for i := range pods {
			if !available(&pods[i]) {
				return false, nil
			}
			if hashOf(&pods[i]) == s.DaemonSetHash {
				atUpdate++
			}
		}
		return atUpdate == int(updated), nil
	}, func() string {
		var inactive []corev1.Pod
		for _, pod := range all {
			if !podutil.IsPodActive(&pod) {
				inactive = append(inactive, pod)
			}
		}
		return fmt.Sprintf("DaemonSet %s; pods not alone on their node or not available (at most 20): %s; pods not active: %s",
			dsString(ds), describePods(unsettled(pods)), describePods(inactive))
	})
	return ds
}

// unsettled are those of pods that are not available or not alone on their node, at most 20.
func unsettled(pods []corev1.Pod) []corev1.Pod {
	perNode := byNode(pods)
	var out []corev1.Pod
	for _, pod := range pods {
		if (!available(&pod) || len(perNode[nodeOf(&pod)]) > 1) && len(out) < 20 {
			out = append(out, pod)
		}
	}
	return out
}

// checkSamples checks the worst moments the sampler saw during the phase. unanswered
// creates and deletes (see framework.PodWrites) may each have left one more pod next to
// another for a while: the controller took a create as failed and created another, then
// deleted the surplus (checkWrites accounts for each), or a delete failed and the old pod
// stayed next to its available replacement until the retry.
func (r *faultRun) checkSamples(t *testing.T, p faultPhase, seen *peaks, samples, unanswered int) {
	t.Helper()
	unavailable, whenUnavailable := seen.unavailable.Get()
	most, whenMost := seen.mostOnANode.Get()
	doubled, whenDoubled := seen.doubled.Get()
	t.Logf("%d samples: at most %d of %d nodes without an available pod (maxUnavailable %d), %d pods on one node, %d nodes with two, one not available (maxSurge %d, %d unanswered creates and deletes)",
		samples, unavailable, len(r.nodes), p.maxUnavailable, most, doubled, p.maxSurge, unanswered)
	if samples < 10 {
		t.Errorf("only %d samples of the pods, want many: the checks saw nothing", samples)
	}
	// The first phase, whose pods become available one by one, has neither.
	rollout := p.maxUnavailable > 0 || p.maxSurge > 0
	if rollout && unavailable > p.maxUnavailable {
		t.Errorf("%d nodes were without an available pod at once, want at most %d (maxUnavailable): %s", unavailable, p.maxUnavailable, whenUnavailable)
	}
	mostAllowed := 1
	if p.maxSurge > 0 || unanswered > 0 {
		mostAllowed = 2
	}
	if most > mostAllowed {
		t.Errorf("%d active pods on one node at once, want at most %d: %s", most, mostAllowed, whenMost)
	}
	if doubled > p.maxSurge+unanswered {
		t.Errorf("%d nodes ran two active pods at once, one not available, want at most %d (maxSurge) and %d for the unanswered creates and deletes: %s", doubled, p.maxSurge, unanswered, whenDoubled)
	}
}

// checkEnd checks the settled end of a phase: exactly one active pod per node, each
// available and not PreparingDelete, at the update revision but for the keepOld on the
// smallest nodes; the status counters what the pods are.
func (r *faultRun) checkEnd(t *testing.T, p faultPhase, ds *appsv1alpha1.DaemonSet, pods []*corev1.Pod) {
	t.Helper()
	ds = r.e.daemonSets().Get(t, ds.Name) // as it is now, after the quiet period
	hash := ds.Status.DaemonSetHash
	byNodeName := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		byNodeName[nodeOf(pod)] = append(byNodeName[nodeOf(pod)], pod)
	}
	if len(pods) != len(r.nodes) {
		t.Errorf("%d active pods, want exactly %d, one per node", len(pods), len(r.nodes))
	}
	var ready, nAvailable, updated int32
	for i, node := range r.nodes {
		onNode := byNodeName[node]
		if len(onNode) != 1 {
			t.Errorf("node %s runs %d active pods, want 1: %s", node, len(onNode), describePodPtrs(onNode))
			continue
		}
		pod := onNode[0]
		wantUpdated := i >= p.keepOld
		if (hashOf(pod) == hash) != wantUpdated {
			t.Errorf("pod %s on node %s (%d of the sorted nodes) has hash %s; want the update revision %s: %v (partition %d)", pod.Name, node, i, hashOf(pod), hash, wantUpdated, p.keepOld)
		}
		if state := pod.Labels[appsv1alpha1.LifecycleStateKey]; state != "" && state != string(appsv1alpha1.LifecycleStateNormal) {
			t.Errorf("pod %s is in lifecycle state %s", pod.Name, state)
		}
		if !available(pod) {
			t.Errorf("pod %s is not available: %s", pod.Name, describePodPtrs(onNode))
		}
		if podutil.IsPodReady(pod) {
			ready++
		}
		if available(pod) {
			nAvailable++
		}
		if hashOf(pod) == hash {
			updated++
		}
	}
	for node, onNode := range byNodeName {
		if !r.nodeSet.Has(node) {
			t.Errorf("pods on %q, which is none of the test's nodes: %s", node, describePodPtrs(onNode))
		}
	}
	n := int32(len(r.nodes))
	s := ds.Status
	want := statusCounts{
		ObservedGeneration: ds.Generation, Desired: n, Current: n, Ready: ready, Available: nAvailable,
		Unavailable: n - nAvailable, Updated: updated,
	}
	got := statusCounts{
		ObservedGeneration: s.ObservedGeneration, Desired: s.DesiredNumberScheduled, Current: s.CurrentNumberScheduled,
		Misscheduled: s.NumberMisscheduled, Ready: s.NumberReady, Available: s.NumberAvailable,
		Unavailable: s.NumberUnavailable, Updated: s.UpdatedNumberScheduled,
	}
	if got != want {
		t.Errorf("status %+v, want what the pods are: %+v", got, want)
	}
}

// statusCounts are the fields of a DaemonSet's status that say what its pods are.
type statusCounts struct {
	ObservedGeneration                                                     int64
	Desired, Current, Misscheduled, Ready, Available, Unavailable, Updated int32
}

// checkWrites checks, from the audit log, the pod creates and deletes of a phase begun at
// began: the pods created and still there are exactly those it needs, the pods deleted are
// exactly the old ones it replaces, once each, and, with the hook, each only after its
// owner released it. One exception, which the test names: a create that a kube-apiserver
// SIGKILL cut off without an answer may have landed (even one the audit log shows
// accepted: the server logs before it answers), and the controller, as upstream's, takes
// it as failed and creates another pod for the node (pods have generated names, so the
// second create cannot be refused); it then deletes the surplus pod. Such surplus pods
// must have been created at a kube-apiserver kill or within framework.RetryWindow after
// it, be no more than the creates left unanswered, and be gone at the end. all are the
// namespace's pods at the end, active those of the DaemonSet.
func (r *faultRun) checkWrites(t *testing.T, p faultPhase, began time.Time, all []corev1.Pod, active []*corev1.Pod) framework.PodWrites {
	t.Helper()
	previous := sets.New[string]()
	replaced := sets.New[string]()
	for _, pod := range p.previous {
		previous.Insert(pod.Name)
		if p.deletes != nil && p.deletes(pod) {
			replaced.Insert(pod.Name)
		}
	}
	writes := r.faults.CheckPodWrites(t, began, previous, all, func(pod *corev1.Pod) bool { return controlledBy(pod, r.uid) })
	activeNames := sets.New[string]()
	for _, pod := range active {
		activeNames.Insert(pod.Name)
	}
	kept, surplus := writes.Created.Intersection(activeNames), writes.Created.Difference(activeNames)
	t.Logf("%s; %d surplus pods (created and deleted again): %v", writes, surplus.Len(), sets.List(surplus))
	if kept.Len() != p.creates {
		var others []string
		for _, pod := range active {
			if !kept.Has(pod.Name) {
				others = append(others, fmt.Sprintf("%s (before the phase: %v, created %s)", pod.Name, previous.Has(pod.Name), pod.CreationTimestamp.Format("15:04:05")))
			}
		}
		t.Errorf("%d pods were created and are there, want exactly %d; the other active pods: %v", kept.Len(), p.creates, others)
	}
	if surplus.Len() > writes.UnansweredCreates {
		t.Errorf("%d surplus pods, but only %d creates were left unanswered: %v", surplus.Len(), writes.UnansweredCreates, sets.List(surplus))
	}
	for _, name := range sets.List(surplus) {
		if at, audited := writes.CreatedAt[name]; audited && !r.faults.AfterAPIServerKill(at, framework.RetryWindow) {
			t.Errorf("pod %s was created at %s and deleted again, with no kube-apiserver kill near: one pod too many", name, at.Format("15:04:05.000"))
		}
	}
	existing := map[string]*corev1.Pod{}
	for i := range all {
		existing[all[i].Name] = &all[i]
	}
	for name, times := range writes.Deleted {
		switch {
		case !replaced.Has(name) && !surplus.Has(name):
			t.Errorf("pod %s was deleted (%d times), but the phase replaces only %d old pods", name, times, replaced.Len())
		case times > 1:
			t.Errorf("pod %s was deleted %d times, want once", name, times)
		}
	}
	// A pod that is gone was deleted, if by a delete whose audit event a kube-apiserver
	// SIGKILL cut off (the retry then answers 404).
	for _, name := range sets.List(replaced.Union(surplus)) {
		if now := existing[name]; now != nil && now.DeletionTimestamp == nil {
			t.Errorf("pod %s was not deleted", name)
		}
	}
	// Every pod that is not among the active ones at the end was deleted: none left behind
	// released or orphaned.
	for name, pod := range existing {
		if !activeNames.Has(name) && pod.DeletionTimestamp == nil {
			t.Errorf("pod %s is neither active in the DaemonSet nor deleted: %s", name, podDetails(pod))
		}
	}
	if p.hooked {
		r.checkHookRespected(t, began, replaced, surplus)
	}
	return writes
}

// checkHookRespected checks from the audit log that every pod of the phase begun at began
// was deleted only after the hook's owner had released it (or sent a release that a
// kube-apiserver SIGKILL cut off, which may have landed unaudited), and that the owner released
// every pod the phase replaces and no other (it releases only pods marked PreparingDelete)
// but for surplus pods (see checkWrites), which the hook holds too.
func (r *faultRun) checkHookRespected(t *testing.T, began time.Time, replaced, surplus sets.Set[string]) {
	t.Helper()
	events, err := r.e.AuditEvents(func(ev *auditv1.Event) bool {
		return (ev.Verb == "patch" || ev.Verb == "delete") && ev.ObjectRef != nil && ev.ObjectRef.Resource == "pods" &&
			ev.ObjectRef.Subresource == "" && ev.ObjectRef.Namespace == r.e.Namespace &&
			!ev.RequestReceivedTimestamp.Time.Before(began) && ev.ResponseStatus != nil && ev.ResponseStatus.Code == 200
	})
	if err != nil {
		t.Fatal(err)
	}
	// When each pod's release completed: its first successful patch by the hook's owner.
	released := map[string]time.Time{}
	for i := range events {
		ev := &events[i]
		if ev.Verb != "patch" || !strings.HasPrefix(ev.UserAgent, hookUserAgent) {
			continue
		}
		if at, ok := released[ev.ObjectRef.Name]; !ok || ev.StageTimestamp.Time.Before(at) {
			released[ev.ObjectRef.Name] = ev.StageTimestamp.Time
		}
	}
	// A pod whose release is not audited may have been released by a request a
	// kube-apiserver SIGKILL cut off, which its owner saw fail.
	for name := range replaced {
		if sent, unanswered := r.unansweredReleases.Load(name); unanswered {
			if _, audited := released[name]; !audited && r.faults.AfterAPIServerKill(sent.(time.Time), 0) {
				released[name] = sent.(time.Time)
			}
		}
	}
	for i := range events {
		ev := &events[i]
		if ev.Verb != "delete" {
			continue
		}
		at, ok := released[ev.ObjectRef.Name]
		if !ok || ev.RequestReceivedTimestamp.Time.Before(at) {
			t.Errorf("pod %s was deleted at %s, while the preDelete hook held it (released: %v at %s)", ev.ObjectRef.Name,
				ev.RequestReceivedTimestamp.Format("15:04:05.000000"), ok, at.Format("15:04:05.000000"))
		}
	}
	names := sets.KeySet(released)
	t.Logf("the hook's owner released %d pods", names.Len())
	if !replaced.IsSuperset(names.Difference(surplus)) || !names.IsSuperset(replaced) {
		t.Errorf("the hook's owner released %d pods, want exactly the %d the phase replaces; released but not replaced: %v; replaced but not released: %v",
			names.Len(), replaced.Len(), sets.List(names.Difference(replaced)), sets.List(replaced.Difference(names)))
	}
}

// activePods returns the active pods of pods that the object with uid controls.
func activePods(pods []corev1.Pod, uid types.UID) []*corev1.Pod {
	own := daemonPods(pods, uid)
	out := make([]*corev1.Pod, len(own))
	for i := range own {
		out[i] = &own[i]
	}
	return out
}

func setFaultEnv(ds *appsv1alpha1.DaemonSet, value string) {
	ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: faultEnvVar, Value: value}}
}

func hasFaultEnv(value string) func(*corev1.Pod) bool {
	return func(pod *corev1.Pod) bool {
		return slices.Contains(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: faultEnvVar, Value: value})
	}
}
