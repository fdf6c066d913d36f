package advanceddaemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// recordUnavailable watches the pods from now until the test ends and keeps the largest
// number of nodes that had no pod available (Ready for minReadySeconds) at once. Pods only
// become available by time passing, never lose availability without an event, so checking
// after every event sees every peak.
func (e *testEnv) recordUnavailable(t *testing.T, nodes []string, minReadySeconds int32) *framework.Peak {
	t.Helper()
	r := &framework.Peak{}
	e.observePods(t, func(pods []*corev1.Pod) {
		r.Record(nodesWithoutAvailablePod(pods, nodes, minReadySeconds, time.Now()), func() string { return describePodPtrs(pods) })
	})
	return r
}

// hashesByNode maps each node to the hashes of the DaemonSet's active pods there, joined.
func hashesByNode(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for node, onNode := range byNode(pods) {
		var hashes []string
		for _, pod := range onNode {
			hashes = append(hashes, hashOf(&pod))
		}
		out[node] = strings.Join(hashes, ",")
	}
	return out
}

// waitForHashes waits until the DaemonSet's active pods are one per node with the hash
// want gives for the node, and returns them.
func (e *testEnv) waitForHashes(t *testing.T, ds *appsv1alpha1.DaemonSet, want map[string]string) []corev1.Pod {
	t.Helper()
	pods := e.WaitForPods(t, fmt.Sprintf("pods of %s with the hashes %v", ds.Name, want), func(pods []corev1.Pod) bool {
		return maps.Equal(hashesByNode(daemonPods(pods, ds.UID)), want)
	})
	return daemonPods(pods, ds.UID)
}

// A template change with maxUnavailable=1 replaces the pods one node at a time: a new
// ControllerRevision and hash, every pod updated in the end, and never more than one node
// without an available pod.
func TestRollingUpdateReplacesOneNodeAtATime(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b", "c")
	ds, _ := e.waitForSettled(t, e.daemonSets().Create(t, newDS("agent")).Name, nodes)
	oldHash := ds.Status.DaemonSetHash
	unavailable := e.recordUnavailable(t, nodes, 0)

	e.setImage(t, ds.Name, image2)
	newHash := e.waitForNewHash(t, ds.Name, oldHash)
	ds, pods := e.waitForSettled(t, ds.Name, nodes)

	if ds.Status.DaemonSetHash != newHash || ds.Status.UpdatedNumberScheduled != 3 {
		t.Errorf("status %s, want daemonSetHash %s and updatedNumberScheduled 3", dsString(ds), newHash)
	}
	for _, pod := range pods {
		if pod.Spec.Containers[0].Image != image2 {
			t.Errorf("pod %s runs %s, want %s", pod.Name, pod.Spec.Containers[0].Image, image2)
		}
	}
	revs := e.revisions(t)
	if _, ok := revs[oldHash]; !ok {
		t.Errorf("no ControllerRevision for the old hash %s", oldHash)
	}
	if _, ok := revs[newHash]; !ok {
		t.Errorf("no ControllerRevision for the new hash %s", newHash)
	}
	if peak, when := unavailable.Get(); peak > 1 {
		t.Errorf("%d nodes had no available pod at once, want at most maxUnavailable=1; then: %s", peak, when)
	}
}

// A partition keeps that many old pods, on the lexicographically smallest node names;
// lowering it finishes the update; a percentage is of the desired pods, rounded down.
func TestPartitionKeepsOldPodsOnSmallestNodes(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b", "c", "d")
	ds := newDS("agent")
	rollingUpdate(ds).Partition = ptr.To(intstr.FromInt32(1))
	ds, _ = e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	h1 := ds.Status.DaemonSetHash

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, h1)
	want := map[string]string{nodes[0]: h1, nodes[1]: h2, nodes[2]: h2, nodes[3]: h2}
	e.waitForHashes(t, ds, want)
	e.daemonSets().WaitFor(t, ds.Name, "status.updatedNumberScheduled=3", func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.UpdatedNumberScheduled == 3 && ds.Status.NumberAvailable == 4
	})
	e.WaitForNoWrites(t, idlePeriod)
	if got := hashesByNode(daemonPods(e.GetPods(t, nil), ds.UID)); !maps.Equal(got, want) {
		t.Errorf("pod hashes by node %v, want %v: partition 1 keeps the smallest node old", got, want)
	}

	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Partition = ptr.To(intstr.FromInt32(0)) })
	e.waitForHashes(t, ds, map[string]string{nodes[0]: h2, nodes[1]: h2, nodes[2]: h2, nodes[3]: h2})
	e.waitForSettled(t, ds.Name, nodes)

	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) {
		rollingUpdate(ds).Partition = ptr.To(intstr.FromString("50%"))
		ds.Spec.Template.Spec.Containers[0].Image = image3
	})
	h3 := e.waitForNewHash(t, ds.Name, h2)
	want = map[string]string{nodes[0]: h2, nodes[1]: h2, nodes[2]: h3, nodes[3]: h3}
	e.waitForHashes(t, ds, want)
	e.WaitForNoWrites(t, idlePeriod)
	if got := hashesByNode(daemonPods(e.GetPods(t, nil), ds.UID)); !maps.Equal(got, want) {
		t.Errorf("pod hashes by node %v, want %v: partition 50%% of 4 keeps 2 old", got, want)
	}
}

// A rolling-update node selector limits the update to the matching nodes; a node that
// stops matching keeps its new pod (OpenKruise does not roll it back).
func TestRollingSelectorUpdatesOnlyMatchingNodes(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	a := e.createNode(t, "a").Name
	canary := e.createNode(t, "b", withLabels(map[string]string{"canary": "true"})).Name
	c := e.createNode(t, "c").Name
	nodes := []string{a, canary, c}
	ds := newDS("agent")
	rollingUpdate(ds).Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
	ds, _ = e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	h1 := ds.Status.DaemonSetHash

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, h1)
	want := map[string]string{a: h1, canary: h2, c: h1}
	pods := e.waitForHashes(t, ds, want)
	e.WaitForNoWrites(t, idlePeriod)
	if got := hashesByNode(daemonPods(e.GetPods(t, nil), ds.UID)); !maps.Equal(got, want) {
		t.Fatalf("pod hashes by node %v, want %v: only the canary node is rolled", got, want)
	}

	before := podUIDs(pods)
	e.Nodes().Update(t, canary, func(n *corev1.Node) { delete(n.Labels, "canary") })
	e.WaitForNoWrites(t, idlePeriod)
	after := daemonPods(e.GetPods(t, nil), ds.UID)
	if got := hashesByNode(after); !maps.Equal(got, want) || !maps.Equal(podUIDs(after), before) {
		t.Errorf("after the canary label was removed: %s; want the same pods, hashes %v", describePods(after), want)
	}
}

// Paused stops replacing pods, but a node added meanwhile gets a pod of the new revision.
func TestPausedKeepsPodsButNewNodesGetNewRevision(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	ds, pods := e.waitForSettled(t, e.daemonSets().Create(t, newDS("agent")).Name, nodes)
	h1, before := ds.Status.DaemonSetHash, podUIDs(pods)

	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) {
		rollingUpdate(ds).Paused = ptr.To(true)
		ds.Spec.Template.Spec.Containers[0].Image = image2
	})
	h2 := e.waitForNewHash(t, ds.Name, h1)
	e.WaitForNoWrites(t, idlePeriod)
	if after := daemonPods(e.GetPods(t, nil), ds.UID); !maps.Equal(podUIDs(after), before) || !onePerNode(after, nodes, h1) {
		t.Errorf("paused: %s; want the original pods, all at %s", describePods(after), h1)
	}

	added := e.createNode(t, "c").Name
	e.waitForHashes(t, ds, map[string]string{nodes[0]: h1, nodes[1]: h1, added: h2})
	e.WaitForNoWrites(t, idlePeriod)
	after := daemonPods(e.GetPods(t, nil), ds.UID)
	for node, uid := range before {
		if podUIDs(after)[node] != uid {
			t.Errorf("the paused DaemonSet replaced the pod on %s: %s", node, describePods(after))
		}
	}
}

// OnDelete replaces nothing by itself; a deleted pod comes back at the new revision.
func TestOnDeleteReplacesOnlyDeletedPods(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	ds := newDS("agent")
	ds.Spec.UpdateStrategy.Type = appsv1alpha1.OnDeleteDaemonSetStrategyType
	ds, pods := e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	h1, before := ds.Status.DaemonSetHash, podUIDs(pods)

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, h1)
	e.WaitForNoWrites(t, idlePeriod)
	if after := daemonPods(e.GetPods(t, nil), ds.UID); !maps.Equal(podUIDs(after), before) {
		t.Fatalf("OnDelete: %s; want the original pods untouched", describePods(after))
	}

	e.Pods().Delete(t, byNode(pods)[nodes[0]][0].Name)
	after := e.waitForHashes(t, ds, map[string]string{nodes[0]: h2, nodes[1]: h1})
	if podUIDs(after)[nodes[1]] != before[nodes[1]] {
		t.Errorf("the pod on %s was replaced too: %s", nodes[1], describePods(after))
	}
}

// With maxSurge=1 and maxUnavailable=0 the new pod starts next to the old one, on one node
// at a time, and the old one goes only once the new one has been Ready for minReadySeconds.
func TestMaxSurgeStartsNewPodBeforeDeletingOld(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	const minReady = 3
	ds := newDS("agent")
	ds.Spec.MinReadySeconds = minReady
	ru := rollingUpdate(ds)
	ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
	ds, _ = e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	h1 := ds.Status.DaemonSetHash

	unavailable := e.recordUnavailable(t, nodes, minReady)
	surged := &framework.Peak{}
	e.observePods(t, func(pods []*corev1.Pod) {
		perNode := map[string]int{}
		for _, pod := range pods {
			if podutil.IsPodActive(pod) {
				perNode[nodeOf(pod)]++
			}
		}
		doubled := 0
		for _, n := range perNode {
			if n > 1 {
				doubled++
			}
		}
		surged.Record(doubled, func() string { return describePodPtrs(pods) })
	})

	e.setImage(t, ds.Name, image2)
	e.waitForNewHash(t, ds.Name, h1)
	e.waitForSettled(t, ds.Name, nodes)

	if peak, when := surged.Get(); peak != 1 {
		t.Errorf("at most %d nodes ran two pods at once, want exactly maxSurge=1; then: %s", peak, when)
	}
	if peak, when := unavailable.Get(); peak > 0 {
		t.Errorf("%d nodes had no pod available for %d s, want none (an old pod went before its replacement was available); then: %s", peak, minReady, when)
	}
}

// inPlaceState is the part of apps.kruise.io/inplace-update-state the tests read.
type inPlaceState struct {
	Revision              string `json:"revision"`
	LastContainerStatuses map[string]struct {
		ImageID string `json:"imageID"`
	} `json:"lastContainerStatuses"`
}

// reportImage writes the container status a kubelet reports once the container runs image.
func (e *testEnv) reportImage(t *testing.T, podName, image string) {
	t.Helper()
	e.Pods().UpdateStatus(t, podName, func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "main", Image: image, ImageID: framework.ImageID(image), Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}}
	})
}

// An image-only change with InPlaceIfPossible updates the pods in place: same pods, new
// image and hash, the in-place state recorded, InPlaceUpdateReady False until the kubelet
// reports the new image, then True and the pod counted updated and available.
func TestInPlaceImageUpdateKeepsPods(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	ds := newDS("agent")
	ru := rollingUpdate(ds)
	ru.Type, ru.MaxUnavailable = appsv1alpha1.InplaceRollingUpdateType, ptr.To(intstr.FromInt32(2))
	ds, pods := e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	for _, pod := range pods {
		e.reportImage(t, pod.Name, image1)
	}
	h1, before := ds.Status.DaemonSetHash, podUIDs(pods)

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, h1)
	pods = e.WaitForPods(t, "both pods updated in place, InPlaceUpdateReady=False", func(pods []corev1.Pod) bool {
		own := daemonPods(pods, ds.UID)
		if !onePerNode(own, nodes, h2) {
			return false
		}
		for _, pod := range own {
			c := podCondition(&pod, appsv1alpha1.InPlaceUpdateReady)
			if c == nil || c.Status != corev1.ConditionFalse {
				return false
			}
		}
		return true
	})
	pods = daemonPods(pods, ds.UID)
	if got := podUIDs(pods); !maps.Equal(got, before) {
		t.Fatalf("pods were recreated: %s", describePods(pods))
	}
	for _, pod := range pods {
		if pod.Spec.Containers[0].Image != image2 {
			t.Errorf("pod %s runs %s, want %s", pod.Name, pod.Spec.Containers[0].Image, image2)
		}
		var state inPlaceState
		if err := json.Unmarshal([]byte(pod.Annotations[appsv1alpha1.InPlaceUpdateStateKey]), &state); err != nil {
			t.Errorf("pod %s: annotation %s: %v", pod.Name, appsv1alpha1.InPlaceUpdateStateKey, err)
			continue
		}
		// OpenKruise records the revision's name, <daemonset>-<hash>.
		if !strings.HasSuffix(state.Revision, h2) || state.LastContainerStatuses["main"].ImageID != framework.ImageID(image1) {
			t.Errorf("pod %s: in-place state %+v, want revision %s and the old imageID %s", pod.Name, state, h2, framework.ImageID(image1))
		}
	}

	for _, pod := range pods {
		e.reportImage(t, pod.Name, image2)
	}
	e.WaitForPods(t, "InPlaceUpdateReady=True on both pods", func(pods []corev1.Pod) bool {
		own := daemonPods(pods, ds.UID)
		for _, pod := range own {
			if c := podCondition(&pod, appsv1alpha1.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue {
				return false
			}
		}
		return len(own) == 2
	})
	_, pods = e.waitForSettled(t, ds.Name, nodes)
	if got := podUIDs(pods); !maps.Equal(got, before) {
		t.Errorf("pods were recreated: %s", describePods(pods))
	}
	if events := e.dsEvents(t, ds.Name, eventUpdatedPodInPlace); len(events) == 0 {
		t.Errorf("no %s event on the DaemonSet", eventUpdatedPodInPlace)
	}
}

// A change beyond images (an env var) cannot be applied in place: the pods are recreated.
func TestInPlaceFallsBackToRecreate(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	ds := newDS("agent")
	rollingUpdate(ds).Type = appsv1alpha1.InplaceRollingUpdateType
	ds, pods := e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	for _, pod := range pods {
		e.reportImage(t, pod.Name, image1)
	}
	h1, before := ds.Status.DaemonSetHash, podUIDs(pods)

	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
	})
	e.waitForNewHash(t, ds.Name, h1)
	_, pods = e.waitForSettled(t, ds.Name, nodes)
	for node, uid := range podUIDs(pods) {
		if uid == before[node] {
			t.Errorf("the pod on %s was kept; an env change must recreate it", node)
		}
	}
	for _, pod := range pods {
		if len(pod.Spec.Containers[0].Env) != 1 {
			t.Errorf("pod %s lacks the new env var: %+v", pod.Name, pod.Spec.Containers[0].Env)
		}
	}
}

// A preDelete hook holds a pod the update would delete: it is marked PreparingDelete and
// stays until the hooked label goes, then it is deleted and replaced.
func TestPreDeleteHookHoldsPodUntilLabelRemoved(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a")
	ds := newDS("agent")
	ds.Spec.Template.Labels["hold"] = "true"
	ds.Spec.Lifecycle = &appsv1alpha1.Lifecycle{PreDelete: &appsv1alpha1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	ds, pods := e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	held := pods[0]

	e.setImage(t, ds.Name, image2)
	// Not waitForNewHash: whether status.observedGeneration follows while a pod is held is
	// not what this test is about.
	h2 := e.daemonSets().WaitFor(t, ds.Name, "a new status.daemonSetHash", func(d *appsv1alpha1.DaemonSet) bool {
		return d.Status.DaemonSetHash != "" && d.Status.DaemonSetHash != ds.Status.DaemonSetHash
	}).Status.DaemonSetHash
	e.WaitForPods(t, "pod "+held.Name+" to be marked PreparingDelete", func(pods []corev1.Pod) bool {
		for _, pod := range pods {
			if pod.UID == held.UID {
				return pod.Labels[appsv1alpha1.LifecycleStateKey] == string(appsv1alpha1.LifecycleStatePreparingDelete)
			}
		}
		return false
	})
	e.WaitForNoWrites(t, idlePeriod)
	all := e.GetPods(t, nil)
	if len(all) != 1 || all[0].UID != held.UID || all[0].DeletionTimestamp != nil {
		t.Fatalf("%s; want only the held pod, not deleted", describePods(all))
	}
	if all[0].Annotations[appsv1alpha1.LifecycleTimestampKey] == "" {
		t.Errorf("pod %s has no %s annotation", held.Name, appsv1alpha1.LifecycleTimestampKey)
	}

	e.Pods().Update(t, held.Name, func(p *corev1.Pod) { delete(p.Labels, "hold") })
	pods = e.waitForHashes(t, ds, map[string]string{nodes[0]: h2})
	if pods[0].UID == held.UID {
		t.Errorf("the held pod %s was kept after its hook label went", held.Name)
	}
}

// ---- Beyond OpenKruise: strict maxUnavailable ----

// quickUpdateMinReady is the minReadySeconds of the quick-update scenario: the second change
// has to land within it of the first new pod's readiness, which takes milliseconds, while
// every node's rollout waits it out once.
const quickUpdateMinReady = 8

// quickSecondUpdate settles 3 pods with minReadySeconds, changes the template, waits for the
// first new pod to be Ready (not yet available), and changes the template again. It
// returns the DaemonSet, its nodes and the recorder of nodes without an available pod,
// which started before the first change.
func (e *testEnv) quickSecondUpdate(t *testing.T, minReady int32) (*appsv1alpha1.DaemonSet, []string, *framework.Peak) {
	t.Helper()
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b", "c")
	ds := newDS("agent")
	ds.Spec.MinReadySeconds = minReady
	rollingUpdate(ds).MaxUnavailable = ptr.To(intstr.FromInt32(1))
	ds, _ = e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	unavailable := e.recordUnavailable(t, nodes, minReady)

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, ds.Status.DaemonSetHash)
	pods := e.WaitForPods(t, "the first new pod to be Ready", func(pods []corev1.Pod) bool {
		for _, pod := range daemonPods(pods, ds.UID) {
			if hashOf(&pod) == h2 && podutil.IsPodReady(&pod) {
				return true
			}
		}
		return false
	})
	e.setImage(t, ds.Name, image3)
	// The scenario needs the second change to land while the first new pod is not yet
	// available; minReadySeconds is chosen so that only a stalled machine misses it.
	for _, pod := range daemonPods(pods, ds.UID) {
		if hashOf(&pod) == h2 && podutil.IsPodAvailable(&pod, minReady, metav1.Now()) {
			t.Fatalf("pod %s became available before the second change; the scenario did not happen", pod.Name)
		}
	}
	e.waitForNewHash(t, ds.Name, h2)
	return ds, nodes, unavailable
}

// With AdvancedDaemonSetStrictMaxUnavailable, replacing an old pod that is not available
// counts against maxUnavailable: two quick template changes never leave more than one node
// without an available pod.
func TestStrictMaxUnavailableHoldsAcrossQuickUpdates(t *testing.T) {
	e := setup(t)
	e.startManager(t, strictMaxUnavailableGate+"=true")
	ds, nodes, unavailable := e.quickSecondUpdate(t, quickUpdateMinReady)

	e.waitForSettled(t, ds.Name, nodes)
	if peak, when := unavailable.Get(); peak > 1 {
		t.Errorf("%d nodes had no available pod at once, want at most maxUnavailable=1; then: %s", peak, when)
	}
}

// Without the gate the controller behaves as OpenKruise does (issue #1323): the unavailable
// new pod of the first change is replaced outside the budget, and another node's pod goes
// down with it. This shows what the gate changes.
func TestWithoutStrictGateQuickUpdatesExceedMaxUnavailable(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	_, _, unavailable := e.quickSecondUpdate(t, quickUpdateMinReady)

	err := framework.WaitFor(e.Ctx, waitTimeout, "two nodes without an available pod at once", func(context.Context) (bool, error) {
		peak, _ := unavailable.Get()
		return peak >= 2, nil
	})
	if err != nil {
		t.Error(err)
	}
}

// ---- Beyond OpenKruise: the Progressing condition ----

// status.conditions carries Progressing: RollingUpdate while pods are replaced,
// RolloutComplete once done, RolloutPaused (False) while paused with old pods left. The
// rollout (maxSurge with minReadySeconds) finishes with no event after the new pods are
// Ready: the controller requeues itself while nodes hold both revisions.
func TestProgressingConditionFollowsTheRollout(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	ds := newDS("agent")
	ds.Spec.MinReadySeconds = 2
	ru := rollingUpdate(ds)
	ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
	ds, _ = e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	waitProgressing := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		e.daemonSets().WaitFor(t, ds.Name, fmt.Sprintf("condition Progressing %s/%s", status, reason), func(ds *appsv1alpha1.DaemonSet) bool {
			c := dsCondition(ds, conditionProgressing)
			return c != nil && string(c.Status) == string(status) && c.Reason == reason
		})
	}
	waitProgressing(metav1.ConditionTrue, reasonComplete)

	// Every Progressing condition the DaemonSet showed, with the hash it showed it for.
	var mu sync.Mutex
	var seen []string
	e.observeDS(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) {
		if c := dsCondition(ds, conditionProgressing); c != nil {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ds.Status.DaemonSetHash+":"+string(c.Status)+"/"+c.Reason)
		}
	})
	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, ds.Status.DaemonSetHash)
	e.waitForSettled(t, ds.Name, nodes)
	waitProgressing(metav1.ConditionTrue, reasonComplete)
	// The watch delivers in order: once it has shown the completion, it has shown every
	// condition written before.
	err := framework.WaitFor(e.Ctx, waitTimeout, "the watch to show the completed rollout", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, h2+":True/"+reasonComplete), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Contains(seen, h2+":True/"+reasonRollingUpdate) {
		t.Errorf("Progressing never read True/%s during the rollout to %s; seen: %v", reasonRollingUpdate, h2, seen)
	}
	mu.Unlock()

	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) {
		rollingUpdate(ds).Paused = ptr.To(true)
		ds.Spec.Template.Spec.Containers[0].Image = image3
	})
	e.waitForNewHash(t, ds.Name, h2)
	waitProgressing(metav1.ConditionFalse, reasonPaused)
	if pods := daemonPods(e.GetPods(t, nil), ds.UID); !onePerNode(pods, nodes, h2) {
		t.Errorf("paused: %s; want the old pods left at %s", describePods(pods), h2)
	}

	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Paused = ptr.To(false) })
	e.waitForSettled(t, ds.Name, nodes)
	waitProgressing(metav1.ConditionTrue, reasonComplete)
}
