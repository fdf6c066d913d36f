package advanceddaemonset

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// defaultTolerations are the tolerations every daemon pod gets, so that it runs where
// upstream's DaemonSet pods run.
var defaultTolerations = []corev1.Toleration{
	{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: "node.kubernetes.io/disk-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.kubernetes.io/memory-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.kubernetes.io/pid-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.kubernetes.io/unschedulable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// Each eligible node gets exactly one pod, bound to it by node affinity, labelled with the
// revision and tolerating what upstream's daemon pods tolerate; an untolerated NoSchedule
// taint keeps the pod away.
func TestOnePodPerEligibleNode(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	eligible := e.createNodes(t, "a", "b")
	tainted := e.createNode(t, "c", withTaint("dedicated", corev1.TaintEffectNoSchedule)).Name

	ds := e.daemonSets().Create(t, newDS("agent"))
	ds = e.daemonSets().WaitFor(t, ds.Name, "status desired=2 current=2 for the current generation", func(ds *appsv1alpha1.DaemonSet) bool {
		s := ds.Status
		return s.ObservedGeneration == ds.Generation && s.DesiredNumberScheduled == 2 && s.CurrentNumberScheduled == 2 && s.DaemonSetHash != ""
	})
	pods := e.waitForDaemonPods(t, ds, eligible, ds.Status.DaemonSetHash)
	e.WaitForNoWrites(t, idlePeriod)

	if all := e.GetPods(t, nil); len(all) != 2 {
		t.Errorf("%s; want exactly 2 pods, none on %s", describePods(all), tainted)
	}
	for _, pod := range pods {
		if names := affinityNodeNames(&pod); len(names) != 1 {
			t.Errorf("pod %s: required node affinity names %v, want exactly its node", pod.Name, names)
		}
		if hashOf(&pod) == "" {
			t.Errorf("pod %s has no %s label", pod.Name, appsv1alpha1.ControllerRevisionHashLabelKey)
		}
		for _, want := range defaultTolerations {
			if !slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool {
				return tol.Key == want.Key && tol.Operator == want.Operator && tol.Effect == want.Effect && tol.TolerationSeconds == nil
			}) {
				t.Errorf("pod %s lacks the toleration %+v; has %+v", pod.Name, want, pod.Spec.Tolerations)
			}
		}
		if ref := metav1.GetControllerOf(&pod); ref == nil || ref.Kind != kindDaemonSet || ref.APIVersion != "apps.kruise.io/v1beta1" {
			t.Errorf("pod %s: controller reference %+v, want the apps.kruise.io/v1beta1 DaemonSet", pod.Name, ref)
		}
	}
}

// Cordoned and NotReady nodes still get a pod: eligibility ignores node readiness, as
// upstream's DaemonSet does.
func TestCordonedAndNotReadyNodesGetPods(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	cordoned := e.createNode(t, "cordoned", func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		// What the node lifecycle controller adds to a cordoned node.
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule})
	}).Name
	notReady := e.createNode(t, "notready", func(n *corev1.Node) {
		n.Status.Conditions[0].Status, n.Status.Conditions[0].Reason = corev1.ConditionFalse, "KubeletNotReady"
		// What the node lifecycle controller adds to a node that stopped being Ready.
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute})
	}).Name

	ds := e.daemonSets().Create(t, newDS("agent"))
	e.waitForDaemonPods(t, ds, []string{cordoned, notReady}, "")
	e.daemonSets().WaitFor(t, ds.Name, "status desired=2 current=2", func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 2 && ds.Status.CurrentNumberScheduled == 2
	})
}

// An untolerated NoExecute taint evicts the node's pod; an untolerated NoSchedule taint
// leaves it running, counted as misscheduled.
func TestNoExecuteTaintEvictsAndNoScheduleTaintMisschedules(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	evicting, keeping := nodes[0], nodes[1]
	ds, pods := e.waitForSettled(t, e.daemonSets().Create(t, newDS("agent")).Name, nodes)
	kept := byNode(pods)[keeping][0]

	e.Nodes().Update(t, evicting, withTaint("evict", corev1.TaintEffectNoExecute))
	e.WaitForPods(t, "the pod on the NoExecute-tainted node to be deleted", func(pods []corev1.Pod) bool {
		return len(byNode(daemonPods(pods, ds.UID))[evicting]) == 0
	})
	e.daemonSets().WaitFor(t, ds.Name, "status desired=1 current=1 misscheduled=0", func(ds *appsv1alpha1.DaemonSet) bool {
		s := ds.Status
		return s.DesiredNumberScheduled == 1 && s.CurrentNumberScheduled == 1 && s.NumberMisscheduled == 0
	})

	e.Nodes().Update(t, keeping, withTaint("drain", corev1.TaintEffectNoSchedule))
	e.daemonSets().WaitFor(t, ds.Name, "status desired=0 misscheduled=1", func(ds *appsv1alpha1.DaemonSet) bool {
		s := ds.Status
		return s.DesiredNumberScheduled == 0 && s.CurrentNumberScheduled == 0 && s.NumberMisscheduled == 1
	})
	e.WaitForNoWrites(t, idlePeriod)
	left := daemonPods(e.GetPods(t, nil), ds.UID)
	if len(left) != 1 || left[0].UID != kept.UID {
		t.Errorf("%s; want only the original pod %s on the NoSchedule-tainted node", describePods(left), kept.Name)
	}
}

// A nodeSelector follows node labels: a node that gains the label gets a pod, one that
// loses it loses its pod.
func TestNodeSelectorFollowsNodeLabels(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	edge := e.createNode(t, "a", withLabels(map[string]string{"role": "edge"})).Name
	other := e.createNode(t, "b").Name

	ds := newDS("agent")
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
	ds = e.daemonSets().Create(t, ds)
	e.waitForDaemonPods(t, ds, []string{edge}, "")

	e.Nodes().Update(t, other, func(n *corev1.Node) { n.Labels["role"] = "edge" })
	e.waitForDaemonPods(t, ds, []string{edge, other}, "")

	e.Nodes().Update(t, edge, func(n *corev1.Node) { delete(n.Labels, "role") })
	e.waitForDaemonPods(t, ds, []string{other}, "")
	e.daemonSets().WaitFor(t, ds.Name, "status desired=1 current=1 misscheduled=0", func(ds *appsv1alpha1.DaemonSet) bool {
		s := ds.Status
		return s.DesiredNumberScheduled == 1 && s.CurrentNumberScheduled == 1 && s.NumberMisscheduled == 0
	})
}

// A Failed pod is deleted with a Warning event and replaced; when replacements keep
// failing, each deletion waits longer than the one before (1 s, then 2 s).
func TestFailedPodIsReplacedWithGrowingBackoff(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	node := e.createNode(t, "a").Name
	ds := e.daemonSets().Create(t, newDS("agent"))

	seen := map[types.UID]bool{}
	for round := 1; round <= 3; round++ {
		pods := e.WaitForPods(t, fmt.Sprintf("a new pod on %s (round %d)", node, round), func(pods []corev1.Pod) bool {
			own := daemonPods(pods, ds.UID)
			return len(own) == 1 && !seen[own[0].UID]
		})
		pod := daemonPods(pods, ds.UID)[0]
		seen[pod.UID] = true
		e.Pods().UpdateStatus(t, pod.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
		e.WaitForPods(t, "the failed pod "+pod.Name+" to be deleted", func(pods []corev1.Pod) bool {
			return !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.UID == pod.UID })
		})
	}
	e.WaitForPods(t, "a fourth pod replacing the third failed one", func(pods []corev1.Pod) bool {
		own := daemonPods(pods, ds.UID)
		return len(own) == 1 && !seen[own[0].UID]
	})

	if events := e.dsEvents(t, ds.Name, eventFailedDaemonPod); len(events) == 0 || events[0].Type != corev1.EventTypeWarning {
		t.Errorf("events %s on the DaemonSet: %+v, want Warning ones", eventFailedDaemonPod, events)
	}
	// The API server's own arrival times of the three deletions. Only lower bounds are
	// checked: a slow machine makes the gaps longer, never shorter. The tolerance covers the
	// time between the controller's backoff decision and the deletion's arrival.
	deletes := e.podRequests(t, "delete")
	if len(deletes) != 3 {
		t.Fatalf("%d pod deletions, want 3 (one per failure)", len(deletes))
	}
	const tolerance = 100 * time.Millisecond
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if gap := deletes[i+1].Received.Sub(deletes[i].Received); gap < want-tolerance {
			t.Errorf("deletion %d came %v after deletion %d, want a backoff of at least %v", i+2, gap, i+1, want)
		}
	}
}

// burstReplicas caps the pods one sync creates. A sync creates in slow-start batches (1, 2,
// 4, ...), each batch in parallel, and the next sync starts only once the controller has
// seen its pods: with a cap of 3 no more than 2 creates are ever in flight at once, where an
// uncapped controller sends 4 together for 10 nodes.
func TestBurstReplicasCapsCreatesPerSync(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	var suffixes []string
	for i := range 10 {
		suffixes = append(suffixes, fmt.Sprintf("n%02d", i))
	}
	nodes := e.createNodes(t, suffixes...)

	ds := newDS("agent")
	ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(3))
	ds = e.daemonSets().Create(t, ds)
	e.waitForDaemonPods(t, ds, nodes, "")

	creates := e.podRequests(t, "create")
	if len(creates) != 10 {
		t.Fatalf("%d pod creations, want 10", len(creates))
	}
	inFlight := 0
	for i, c := range creates {
		concurrent := 1
		for j, other := range creates {
			// In flight when c arrived: arrived no later and not yet answered.
			if j != i && !other.Received.After(c.Received) && c.Received.Before(other.Completed) {
				concurrent++
			}
		}
		inFlight = max(inFlight, concurrent)
	}
	if inFlight > 3 {
		t.Errorf("%d pod creations were in flight at once, more than burstReplicas=3 allows in one sync", inFlight)
	}
}

// With progressive creation and a partition of 2, only 3 of 5 nodes get a pod: the
// lexicographically smallest.
func TestProgressiveCreationHonoursPartition(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	nodes := e.createNodes(t, "a", "b", "c", "d", "e")

	ds := newDS("agent")
	ds.Annotations = map[string]string{partitionedScalingLabel: "true"}
	rollingUpdate(ds).Partition = ptr.To(intstr.FromInt32(2))
	ds = e.daemonSets().Create(t, ds)
	e.waitForDaemonPods(t, ds, nodes[:3], "")
	e.WaitForNoWrites(t, idlePeriod)
	if pods := daemonPods(e.GetPods(t, nil), ds.UID); !onePerNode(pods, nodes[:3], "") {
		t.Errorf("%s; want one pod on each of %v only", describePods(pods), nodes[:3])
	}
}

// An orphan pod that matches the selector and is bound to an eligible node is adopted;
// the node gets no second pod.
func TestOrphanPodIsAdopted(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	node := e.createNode(t, "a").Name

	template := newDS("agent")
	orphan := e.Pods().Create(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: copyMap(template.Spec.Template.Labels)},
		Spec: corev1.PodSpec{
			Containers: template.Spec.Template.Spec.Containers,
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}},
			}},
		},
	})
	// OnDelete, so that the adopted pod, which carries no revision label, is not replaced
	// by a rolling update: adoption alone is under test.
	template.Spec.UpdateStrategy.Type = appsv1alpha1.OnDeleteDaemonSetStrategyType
	ds := e.daemonSets().Create(t, template)

	pods := e.WaitForPods(t, "the orphan to be adopted", func(pods []corev1.Pod) bool {
		own := daemonPods(pods, ds.UID)
		return len(own) == 1 && own[0].UID == orphan.UID
	})
	e.WaitForNoWrites(t, idlePeriod)
	if pods = e.GetPods(t, nil); len(pods) != 1 || pods[0].UID != orphan.UID || !controlledBy(&pods[0], ds.UID) {
		t.Errorf("%s; want only the adopted orphan", describePods(pods))
	}
	e.daemonSets().WaitFor(t, ds.Name, "status desired=1 current=1", func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 1 && ds.Status.CurrentNumberScheduled == 1
	})
}
