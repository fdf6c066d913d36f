package cloneset

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
)

func TestPodEventsObserveExpectationsByName(t *testing.T) {
	cs := newCS(2)
	revision := revisionOf(t, cs, 1)
	f := newFixture(t, fixtureOption{}, cs, revision)
	k := key(cs)
	f.c.scaleExpectations.Expect(k, expectations.Create, podsResource, "cs-aaaaa")
	f.c.scaleExpectations.Expect(k, expectations.Delete, podsResource, "cs-bbbbb")

	// A pod of another name does not meet the expectation, though its CloneSet is queued.
	f.c.addPod(f.ctx, newPod(cs, "xxxxx", revision))
	if len(f.c.scaleExpectations.Pending(k)) != 2 {
		t.Errorf("pending = %v after an unexpected pod", f.c.scaleExpectations.Pending(k))
	}
	f.c.addPod(f.ctx, newPod(cs, "aaaaa", revision))
	// A graceful delete shows first as an update with a deletion timestamp.
	old := newPod(cs, "bbbbb", revision)
	deleting := old.DeepCopy()
	deleting.ResourceVersion = "11"
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	f.c.updatePod(f.ctx, old, deleting)
	if met, _ := f.c.scaleExpectations.Satisfied(k); !met {
		t.Errorf("pending = %v, want every expectation met", f.c.scaleExpectations.Pending(k))
	}
	if keys := f.queue.AddedKeys(); !slices.Equal(keys, []string{k}) {
		t.Errorf("queued %v, want %s", keys, k)
	}
}

func TestPodOfAnotherOwnerIsIgnored(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	f := newFixture(t, fixtureOption{}, cs, revision)
	foreign := newPod(cs, "aaaaa", revision)
	foreign.OwnerReferences[0].UID = "other-uid" // a CloneSet of the same name, deleted and re-created
	f.c.addPod(f.ctx, foreign)
	apps := newPod(cs, "bbbbb", revision)
	apps.OwnerReferences[0].APIVersion = "apps/v1" // kind CloneSet, but not apps.kruise.io
	f.c.addPod(f.ctx, apps)
	if keys := f.queue.AddedKeys(); len(keys) != 0 {
		t.Errorf("queued %v for pods of other owners", keys)
	}
}

func TestOrphanPodQueuesSelectingCloneSets(t *testing.T) {
	cs := newCS(1)
	other := newCS(1)
	other.Name, other.UID = "other", "uid-other"
	other.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	f := newFixture(t, fixtureOption{}, cs, other)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: testNamespace, Labels: map[string]string{"app": "cs"}}}
	f.c.addPod(f.ctx, orphan)
	if keys := f.queue.AddedKeys(); !slices.Equal(keys, []string{key(cs)}) {
		t.Errorf("queued %v, want only %s", keys, key(cs))
	}
}

func TestOrphansAreNeverAdopted(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	orphan := newPod(cs, "aaaaa", revision)
	orphan.OwnerReferences = nil
	f := newFixture(t, fixtureOption{}, cs, revision, orphan)
	f.sync(cs)
	if patches := f.podPatches(); len(patches) != 0 {
		t.Errorf("patched %v; orphans are not adopted", patches)
	}
	if created := f.createdPods(); len(created) != 1 {
		t.Errorf("created %d pods, want the one replica the orphan does not count for", len(created))
	}
}

func TestPodThatLeftTheSelectorIsReleasedAndReplaced(t *testing.T) {
	cs := newCS(1)
	revision := revisionOf(t, cs, 1)
	pod := withLabel(newPod(cs, "aaaaa", revision), "app", "elsewhere")
	f := newFixture(t, fixtureOption{}, cs, revision, pod)
	f.sync(cs)
	patches := f.podPatches()["cs-aaaaa"]
	if len(patches) != 1 {
		t.Fatalf("patches = %v, want the release", f.podPatches())
	}
	want := `{"metadata":{"uid":"uid-cs-aaaaa","ownerReferences":[{"$patch":"delete","uid":"uid-cs"}]}}`
	if patches[0] != want {
		t.Errorf("release patch = %s, want %s", patches[0], want)
	}
	if created := f.createdPods(); len(created) != 1 {
		t.Errorf("created %d pods, want the replacement", len(created))
	}
}

func TestClaimEventsObserveExpectations(t *testing.T) {
	cs := withDataClaims(newCS(1))
	f := newFixture(t, fixtureOption{}, cs)
	k := key(cs)
	claim := claimFor(cs, "aaaaa")
	f.c.scaleExpectations.Expect(k, expectations.Create, claimsResource, claim.Name)
	f.c.addClaim(f.ctx, claim)
	if met, _ := f.c.scaleExpectations.Satisfied(k); !met {
		t.Errorf("pending = %v after the claim was added", f.c.scaleExpectations.Pending(k))
	}
	f.c.scaleExpectations.Expect(k, expectations.Delete, claimsResource, claim.Name)
	deleting := claim.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	f.c.updateClaim(f.ctx, claim, deleting)
	if met, _ := f.c.scaleExpectations.Satisfied(k); !met {
		t.Errorf("pending = %v after the claim started going", f.c.scaleExpectations.Pending(k))
	}
	f.c.scaleExpectations.Expect(k, expectations.Delete, claimsResource, claim.Name)
	f.c.deleteClaim(f.ctx, cache.DeletedFinalStateUnknown{Key: key(claim), Obj: claim})
	if met, _ := f.c.scaleExpectations.Satisfied(k); !met {
		t.Errorf("pending = %v after the claim's tombstone", f.c.scaleExpectations.Pending(k))
	}
	// An unrelated update queues nothing.
	f.queue.Reset()
	f.c.updateClaim(f.ctx, claim, claim.DeepCopy())
	if keys := f.queue.AddedKeys(); len(keys) != 0 {
		t.Errorf("queued %v for a claim update", keys)
	}
}

func TestCloneSetDeleteForgetsExpectations(t *testing.T) {
	cs := newCS(1)
	f := newFixture(t, fixtureOption{}, cs)
	k := key(cs)
	f.c.scaleExpectations.Expect(k, expectations.Create, podsResource, "cs-aaaaa")
	f.c.deleteCloneSet(f.ctx, cache.DeletedFinalStateUnknown{Key: k, Obj: cs})
	if met, _ := f.c.scaleExpectations.Satisfied(k); !met {
		t.Error("expectations survived the CloneSet's deletion")
	}
	if keys := f.queue.AddedKeys(); !slices.Equal(keys, []string{k}) {
		t.Errorf("queued %v, want %s", keys, k)
	}

	// A re-create under the same name (another UID) also starts afresh.
	f.c.scaleExpectations.Expect(k, expectations.Create, podsResource, "cs-aaaaa")
	recreated := cs.DeepCopy()
	recreated.UID = types.UID("uid-cs-2")
	f.c.updateCloneSet(f.ctx, cs, recreated)
	if met, _ := f.c.scaleExpectations.Satisfied(k); !met {
		t.Error("expectations survived a re-create under the same name")
	}
}

func TestPodTurningReadyRequeuesAfterMinReadySeconds(t *testing.T) {
	cs := newCS(1)
	cs.Spec.MinReadySeconds = 30
	revision := revisionOf(t, cs, 1)
	f := newFixture(t, fixtureOption{}, cs, revision)
	old := notReady(newPod(cs, "aaaaa", revision))
	cur := newPod(cs, "aaaaa", revision)
	cur.ResourceVersion = "11"
	f.c.updatePod(f.ctx, old, cur)
	delayed := f.queue.Delayed()
	if len(delayed) != 1 || delayed[0].Delay != 30*time.Second {
		t.Errorf("delayed = %v, want the CloneSet after 30s", delayed)
	}
}

func TestGoneCloneSetIsForgotten(t *testing.T) {
	cs := newCS(1)
	f := newFixture(t, fixtureOption{})
	f.c.scaleExpectations.Expect(key(cs), expectations.Create, podsResource, "cs-aaaaa")
	f.sync(cs)
	if met, _ := f.c.scaleExpectations.Satisfied(key(cs)); !met {
		t.Error("a sync of a gone CloneSet kept its expectations")
	}
}
