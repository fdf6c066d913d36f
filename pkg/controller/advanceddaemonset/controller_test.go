package advanceddaemonset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestNodeHandlers(t *testing.T) {
	edge := newDS()
	edge.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
	other := newDS()
	other.Name, other.UID = "other", "uid-other"
	f := newFixture(t, fixtureOption{}, edge, other)

	f.c.addNode(f.ctx, newNode("plain"))
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/other"}) {
		t.Errorf("add plain node queued %v, want [ns/other]", got)
	}

	f.queue.Reset()
	before := newNode("n")
	before.ResourceVersion = "1"
	heartbeat := before.DeepCopy()
	heartbeat.ResourceVersion = "2"
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	before.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	f.c.updateNode(f.ctx, before, heartbeat)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("heartbeat queued %v", got)
	}

	labelled := before.DeepCopy()
	labelled.Labels["role"] = "edge"
	f.c.updateNode(f.ctx, before, labelled)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/ds"}) {
		t.Errorf("label change queued %v, want only the DaemonSet whose eligibility changed", got)
	}

	f.queue.Reset()
	unrelated := before.DeepCopy()
	unrelated.Labels["team"] = "x"
	f.c.updateNode(f.ctx, before, unrelated)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("irrelevant label change queued %v", got)
	}

	f.queue.Reset()
	ds := newDS()
	ds.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
	f.cacheAdd(ds)
	canary := before.DeepCopy()
	canary.Labels["canary"] = "true"
	f.c.updateNode(f.ctx, before, canary)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/ds"}) {
		t.Errorf("rolling selector change queued %v, want [ns/ds]", got)
	}
}

func TestPodHandlers(t *testing.T) {
	ds := newDS()
	f := newFixture(t, fixtureOption{}, ds)
	k := key(ds)

	f.c.expectations.ExpectCreations(f.ctx, k, 1)
	pod := newPod("p1", ds, "h", "n1")
	f.c.addPod(f.ctx, pod)
	if ok, _ := f.c.expectationsSatisfied(f.ctx, k); !ok {
		t.Error("creation not observed")
	}
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{k}) {
		t.Errorf("add queued %v", got)
	}

	// Deletion counts once, whether seen as a graceful update or a delete.
	f.c.expectations.ExpectDeletions(f.ctx, k, []string{"ns/p1"})
	deleting := pod.DeepCopy()
	deleting.ResourceVersion = "11"
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	f.c.updatePod(f.ctx, pod, deleting)
	f.c.deletePod(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: deleting})
	if _, del, _ := f.c.expectations.Get(k); del != 0 {
		t.Errorf("del = %d, want 0", del)
	}

	// An orphan wakes the DaemonSets that select it.
	f.queue.Reset()
	orphan := newPod("orphan", ds, "h", "n1")
	orphan.OwnerReferences = nil
	f.c.addPod(f.ctx, orphan)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{k}) {
		t.Errorf("orphan queued %v", got)
	}

	// A pod of an apps/v1 DaemonSet of the same name is not ours.
	f.queue.Reset()
	foreign := newPod("foreign", ds, "h", "n1")
	foreign.OwnerReferences[0].APIVersion = "apps/v1"
	f.c.addPod(f.ctx, foreign)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("apps/v1 DaemonSet pod queued %v", got)
	}

	// An in-place update is observed when the informer shows its version.
	updated := pod.DeepCopy()
	updated.ResourceVersion = "20"
	f.c.podUpdates.Expect(k, updated)
	f.c.updatePod(f.ctx, pod, updated)
	if ok, _ := f.c.expectationsSatisfied(f.ctx, k); !ok {
		t.Error("pod update not observed")
	}
}

func TestRevisionAndDaemonSetHandlers(t *testing.T) {
	ds := newDS()
	f := newFixture(t, fixtureOption{}, ds)
	revision := revisionOf(t, ds, 1)
	f.c.addRevision(f.ctx, revision)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/ds"}) {
		t.Errorf("owned revision queued %v", got)
	}
	f.queue.Reset()
	stranger := revision.DeepCopy()
	stranger.OwnerReferences[0].UID = "someone-else"
	f.c.addRevision(f.ctx, stranger)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("revision of another owner queued %v", got)
	}

	f.queue.Reset()
	f.c.expectations.ExpectCreations(f.ctx, "ns/ds", 3)
	f.c.deleteDaemonSet(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/ds", Obj: ds})
	if _, _, exists := f.c.expectations.Get("ns/ds"); exists {
		t.Error("expectations survived the DaemonSet's deletion")
	}
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/ds"}) {
		t.Errorf("delete queued %v", got)
	}
}

// Pods and revisions an older bosun or OpenKruise made name their DaemonSet in v1alpha1:
// they are the DaemonSet's all the same, matched by group, kind and UID.
func TestHandlersAcceptOlderOwnerReferences(t *testing.T) {
	ds := newDS()
	f := newFixture(t, fixtureOption{}, ds)
	k := key(ds)

	f.c.expectations.ExpectCreations(f.ctx, k, 1)
	f.c.addPod(f.ctx, withAlphaOwner(newPod("p1", ds, "h", "n1")))
	if ok, _ := f.c.expectationsSatisfied(f.ctx, k); !ok {
		t.Error("creation of a pod with a v1alpha1 owner reference not observed")
	}
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{k}) {
		t.Errorf("pod with a v1alpha1 owner reference queued %v, want [%s]", got, k)
	}

	f.queue.Reset()
	f.c.addRevision(f.ctx, withAlphaOwner(revisionOf(t, ds, 1)))
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{k}) {
		t.Errorf("revision with a v1alpha1 owner reference queued %v, want [%s]", got, k)
	}
}
