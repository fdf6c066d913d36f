package garbagecollector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"
)

// Scenario 5: a dependent with a blocking reference to an owner deleted in the foreground and
// a reference to a solid owner does not hold the first: the collector drops the waiting
// owner's reference, and the owner goes.
func TestSolidOwnerDoesNotBlockWaitingOwner(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	deleted := e.ReplicationControllers().Create(e.t, newRC("deleted"))
	remaining := e.ReplicationControllers().Create(e.t, newRC("remaining"))
	pod := e.Pods().Create(e.t, newPod("pod", rcRef(deleted, ptr.To(true)), rcRef(remaining, nil)))
	// Pods and ReplicationControllers come through different watches: make sure the
	// collector knows the dependent when the owner's deletion arrives.
	e.waitInGraph(pod.UID, deleted.UID, remaining.UID)

	e.ReplicationControllers().DeleteWith(e.t, deleted.Name, foreground)
	e.ReplicationControllers().WaitForGone(e.t, deleted.Name)
	got := e.Pods().Get(e.t, pod.Name)
	if !slices.Equal(ownerUIDs(got), []types.UID{remaining.UID}) {
		t.Errorf("pod's owners = %v, want only %s's %s", got.OwnerReferences, remaining.Name, remaining.UID)
	}
	if got.DeletionTimestamp != nil {
		t.Errorf("the pod, which has a solid owner, is being deleted")
	}
}

// Scenario 6: dependents whose reference does not block (blockOwnerDeletion unset, or false)
// do not hold an owner deleted in the foreground, even while they exist.
func TestNonBlockingOwnerRefDoesNotBlock(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	rc := e.ReplicationControllers().Create(e.t, newRC("owner"))
	unset := e.Pods().Create(e.t, heldPod("unset", rcRef(rc, nil)))
	notBlocking := e.Pods().Create(e.t, heldPod("false", rcRef(rc, ptr.To(false))))
	e.waitInGraph(unset.UID, notBlocking.UID, rc.UID)

	e.ReplicationControllers().DeleteWith(e.t, rc.Name, foreground)
	e.ReplicationControllers().WaitForGone(e.t, rc.Name)
	for _, name := range []string{unset.Name, notBlocking.Name} {
		e.Pods().Get(e.t, name) // held by the unknown finalizer, whatever the collector did
	}
}

// Scenario 7: a dependent with a blocking reference holds its owner, deleted in the
// foreground, for as long as it exists.
func TestBlockingOwnerRefDoesBlock(t *testing.T) {
	e := setup(t)
	rc := e.ReplicationControllers().Create(e.t, newRC("owner"))
	pod := e.Pods().Create(e.t, heldPod("pod", rcRef(rc, ptr.To(true))))
	e.startCollector(collectorOptions{})
	// The collector must know the dependent when the owner's deletion arrives.
	e.waitInGraph(pod.UID, rc.UID)

	e.ReplicationControllers().DeleteWith(e.t, rc.Name, foreground)
	e.waitPodsDeleting(pod.Name) // the collector deleted the dependent; the finalizer holds it
	e.observe()
	got := e.ReplicationControllers().Get(e.t, rc.Name)
	if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, finalizerForeground) {
		t.Errorf("the owner has deletionTimestamp %v and finalizers %v, want it deleting with %s while its blocking dependent exists",
			got.DeletionTimestamp, got.Finalizers, finalizerForeground)
	}
	e.Pods().Get(e.t, pod.Name)
}

// Scenario 8: an object with an unknown finalizer deleted in the foreground twice: each time
// the collector removes foregroundDeletion (it has no dependents), and only the unknown
// finalizer remains; once that is removed the object goes.
func TestDoubleDeletionWithFinalizer(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	pod := e.Pods().Create(e.t, heldPod("lucy"))
	onlyUnknown := func(ctx context.Context) (bool, error) {
		got, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Equal(got.Finalizers, []string{unknownFinalizer}), nil
	}
	for round := 1; round <= 2; round++ {
		if err := e.Client.CoreV1().Pods(e.Namespace).Delete(e.Ctx, pod.Name, foreground); err != nil {
			t.Fatalf("deletion %d: %v", round, err)
		}
		e.waitFor(fmt.Sprintf("only finalizer %s after deletion %d", unknownFinalizer, round), waitTimeout, onlyUnknown)
		// The collector may have been quicker than the first look: its writes tell.
		e.waitFor(fmt.Sprintf("the collector's write %d to the pod", round), waitTimeout, func(context.Context) (bool, error) {
			return len(e.collectorWrites("pods", e.Namespace, pod.Name)) >= round, nil
		})
	}
	e.releasePod(pod.Name)
	e.Pods().WaitForGone(e.t, pod.Name)
	if writes := e.collectorWrites("pods", e.Namespace, pod.Name); len(writes) != 2 {
		t.Errorf("the collector wrote the pod %d times, want twice (once per foreground deletion):%s", len(writes), describe(writes))
	}
}

// collectorWrites returns the successful writes the collector's process made to one object.
func (e *env) collectorWrites(resource, ns, name string) []auditv1.Event {
	return e.requests(e.byProcess(func(ev *auditv1.Event) bool {
		return about(resource, ns, name)(ev) && slices.Contains([]string{"patch", "update"}, ev.Verb) && responseCode(*ev) < 300
	}))
}

// Scenario 15 (e2e "should not be blocked by dependency circle"): pods 1→2→3→1, each owning
// the next with a blocking reference; deleting pod 1 in the foreground deletes all three.
func TestNotBlockedByDependencyCircle(t *testing.T) {
	// Upstream's e2e allows 90 s, plus a resync period for a collector that missed an event.
	const circleTimeout = 90*time.Second + 30*time.Second
	e := setup(t)
	e.startCollector(collectorOptions{})
	pods := []*corev1.Pod{e.Pods().Create(e.t, newPod("pod1")), e.Pods().Create(e.t, newPod("pod2")), e.Pods().Create(e.t, newPod("pod3"))}
	// pod1 owns pod2, pod2 owns pod3, pod3 owns pod1.
	for i, pod := range pods {
		owner := pods[(i+2)%3]
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q,"blockOwnerDeletion":true}]}}`, owner.Name, owner.UID)
		if _, err := e.Client.CoreV1().Pods(e.Namespace).Patch(e.Ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitGraph("the circle in the collector's graph", func(g *dotGraph) bool {
		return g.edges[dotEdge{pods[0].UID, pods[2].UID}] && g.edges[dotEdge{pods[1].UID, pods[0].UID}] && g.edges[dotEdge{pods[2].UID, pods[1].UID}]
	}, pods[0].UID)

	if err := e.Client.CoreV1().Pods(e.Namespace).Delete(e.Ctx, pods[0].Name, foreground); err != nil {
		t.Fatal(err)
	}
	e.waitFor("all three pods to be deleted", circleTimeout, func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
}

// Scenario 16 (e2e "should keep the rc around until all its pods are deleted if the
// deleteOptions says so"): a ReplicationController deleted in the foreground stays, with
// foregroundDeletion, until the last of its pods is gone, then goes.
func TestKeepOwnerUntilDependentsGone(t *testing.T) {
	const pods = 10
	e := setup(t)
	rc := e.ReplicationControllers().Create(e.t, newRC("owner"))
	var names []string
	var uids []types.UID
	for i := range pods {
		// What holds each pod stands for a kubelet still stopping its containers.
		pod := e.Pods().Create(e.t, heldPod(fmt.Sprintf("pod-%d", i), rcRef(rc, ptr.To(true))))
		names, uids = append(names, pod.Name), append(uids, pod.UID)
	}
	e.startCollector(collectorOptions{})
	e.waitInGraph(append(uids, rc.UID)...)

	e.ReplicationControllers().DeleteWith(e.t, rc.Name, foreground)
	e.waitPodsDeleting(names...)
	expectDeletingWithForeground := func(when string) {
		t.Helper()
		e.observe()
		got := e.ReplicationControllers().Get(e.t, rc.Name)
		if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, finalizerForeground) {
			t.Fatalf("%s: the owner has deletionTimestamp %v and finalizers %v, want it kept with %s",
				when, got.DeletionTimestamp, got.Finalizers, finalizerForeground)
		}
	}
	expectDeletingWithForeground("while all pods terminate")

	for _, name := range names[:pods-1] {
		e.releasePod(name)
	}
	for _, name := range names[:pods-1] {
		e.Pods().WaitForGone(e.t, name)
	}
	expectDeletingWithForeground("while one pod terminates")

	e.releasePod(names[pods-1])
	e.Pods().WaitForGone(e.t, names[pods-1])
	e.ReplicationControllers().WaitForGone(e.t, rc.Name)
}

// Scenario 18: owners in the middle of a foreground deletion are finished however the
// collector came to know about them.
func TestStuckForegroundRegressions(t *testing.T) {
	// ownerWithPods creates a ReplicationController with n blocking pods, held by the
	// unknown finalizer when hold is set.
	ownerWithPods := func(e *env, n int, hold bool) (*corev1.ReplicationController, []*corev1.Pod) {
		rc := e.ReplicationControllers().Create(e.t, newRC("owner"))
		var pods []*corev1.Pod
		for i := range n {
			pod := newPod(fmt.Sprintf("pod-%d", i), rcRef(rc, ptr.To(true)))
			if hold {
				pod.Finalizers = []string{unknownFinalizer}
			}
			pods = append(pods, e.Pods().Create(e.t, pod))
		}
		return rc, pods
	}
	uidsOf := func(rc *corev1.ReplicationController, pods []*corev1.Pod) []types.UID {
		uids := []types.UID{rc.UID}
		for _, pod := range pods {
			uids = append(uids, pod.UID)
		}
		return uids
	}

	// The collector is killed (SIGKILL) after it deleted the dependents, while they
	// terminate; the restarted collector finishes the owner once they are gone.
	t.Run("restarted mid-foreground", func(t *testing.T) {
		e := setup(t)
		rc, pods := ownerWithPods(e, 2, true)
		gc := e.startCollector(collectorOptions{})
		e.waitInGraph(uidsOf(rc, pods)...)
		e.ReplicationControllers().DeleteWith(e.t, rc.Name, foreground)
		e.waitPodsDeleting(pods[0].Name, pods[1].Name)

		gc.Restart()
		for _, pod := range pods {
			e.releasePod(pod.Name)
		}
		e.ReplicationControllers().WaitForGone(e.t, rc.Name)
	})

	// The owner is deleted in the foreground while no collector runs: the collector's
	// first sight of it (its initial list) already carries deletionTimestamp and
	// foregroundDeletion.
	t.Run("first observed deleting", func(t *testing.T) {
		e := setup(t)
		rc, pods := ownerWithPods(e, 2, false)
		e.ReplicationControllers().DeleteWith(e.t, rc.Name, foreground)
		if got := e.ReplicationControllers().Get(e.t, rc.Name); !slices.Contains(got.Finalizers, finalizerForeground) {
			t.Fatalf("the API server did not add %s: finalizers %v", finalizerForeground, got.Finalizers)
		}
		e.startCollector(collectorOptions{})
		for _, pod := range pods {
			e.Pods().WaitForGone(e.t, pod.Name)
		}
		e.ReplicationControllers().WaitForGone(e.t, rc.Name)
	})

	// The collector sees the owner's foreground deletion in an update whose old object
	// already had deletionTimestamp and foregroundDeletion, so there is no edge to see. A
	// proxy makes that happen: it adds both to an earlier, ordinary update of the owner
	// (the collector marks the owner and finds nothing to delete, since the owner is alive),
	// and the real deletion then arrives as an update from that state.
	t.Run("edge missed", func(t *testing.T) {
		e := setup(t)
		rc, pods := ownerWithPods(e, 1, false)
		var (
			mu       sync.Mutex
			armed    bool
			injected = make(chan struct{})
		)
		rewrite := func(eventType string, obj map[string]any) bool {
			meta, _ := obj["metadata"].(map[string]any)
			if eventType != "MODIFIED" || meta == nil || meta["namespace"] != e.Namespace || meta["name"] != rc.Name {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			if !armed {
				return false
			}
			armed = false
			finalizers, _ := meta["finalizers"].([]any)
			meta["finalizers"] = append(finalizers, finalizerForeground)
			meta["deletionTimestamp"] = time.Now().UTC().Format(time.RFC3339)
			meta["deletionGracePeriodSeconds"] = 0
			close(injected)
			return true
		}
		proxy := newAPIProxy(t, e.CP, proxyOptions{rewriteWatchOf: "replicationcontrollers", rewrite: rewrite})
		e.startCollector(collectorOptions{kubeconfig: proxy.kubeconfig})
		e.waitInGraph(uidsOf(rc, pods)...)
		// The graph may know the owner from its pod's reference (or the initial list) before the
		// collector watches ReplicationControllers; a patch made before the watch would then
		// never arrive as an event to rewrite.
		proxy.waitRewriting(t, waitTimeout)

		mu.Lock()
		armed = true
		mu.Unlock()
		if _, err := e.Client.CoreV1().ReplicationControllers(e.Namespace).Patch(e.Ctx, rc.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"touched":"true"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-injected:
		case <-time.After(waitTimeout):
			t.Fatal("the collector's watch of ReplicationControllers never delivered the owner's update")
		}
		e.waitGraph("the collector to mark the owner deletingDependents", func(g *dotGraph) bool {
			return g.flag(rc.UID, "deletingDependents")
		}, rc.UID)
		e.caughtUp()
		if got := e.Pods().Get(e.t, pods[0].Name); got.DeletionTimestamp != nil {
			t.Fatalf("the collector deleted a dependent of a live owner")
		}

		e.ReplicationControllers().DeleteWith(e.t, rc.Name, foreground)
		skipUnderUpstream(t, "upstream acts on foregroundDeletion only on the edge where the previous object lacked it "+
			"(kubernetes issues #77081, #115570), and the owner stays with foregroundDeletion forever")
		e.Pods().WaitForGone(e.t, pods[0].Name)
		e.ReplicationControllers().WaitForGone(e.t, rc.Name)
	})
}
