package garbagecollector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
)

func TestOwnerInAnotherNamespace(t *testing.T) {
	owner := object(configMapKind, "b", "p", "U")
	wrongNamespace := object(secretKind, "a", "s", "S", ownedBy(ref(owner, nil)))
	sameNamespace := object(secretKind, "b", "t", "T", ownedBy(ref(owner, nil)))
	otherCoordinates := object(secretKind, "b", "o", "O", ownedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "U"}))
	const wantEvent = `Warning OwnerRefInvalidNamespace ownerRef [v1/ConfigMap, namespace: a, name: p, uid: U] does not exist in namespace "a"`

	tests := []struct {
		name       string
		order      []*metav1.PartialObjectMetadata
		wantQueued []types.UID // dependents queued to attempt-to-delete by the last event
		wantEvents []string
	}{
		{name: "dependent first, then the owner is observed elsewhere", order: []*metav1.PartialObjectMetadata{wrongNamespace, owner},
			wantQueued: []types.UID{"S"}, wantEvents: []string{wantEvent}},
		{name: "owner first, then the dependent", order: []*metav1.PartialObjectMetadata{owner, wrongNamespace},
			wantQueued: []types.UID{"S"}, wantEvents: []string{wantEvent}},
		{name: "dependent in the owner's namespace", order: []*metav1.PartialObjectMetadata{sameNamespace, owner}},
		{name: "owner first, dependent in its namespace", order: []*metav1.PartialObjectMetadata{owner, sameNamespace}},
		{name: "dependent names the UID as another kind", order: []*metav1.PartialObjectMetadata{otherCoordinates, owner},
			wantQueued: []types.UID{"O"}},
		{name: "owner first, dependent names it as another kind", order: []*metav1.PartialObjectMetadata{owner, otherCoordinates},
			wantQueued: []types.UID{"O"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.observeAll(tc.order[:len(tc.order)-1]...)
			f.observe(objectAdded, tc.order[len(tc.order)-1])

			queued, _ := f.deletes.take()
			var got []types.UID
			for _, n := range queued {
				if n.Identity().UID != "U" {
					got = append(got, n.Identity().UID)
				}
			}
			if diff := cmp.Diff(tc.wantQueued, got); diff != "" {
				t.Errorf("dependents queued (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			n := f.node("U")
			if n.Virtual() {
				t.Error("the observed owner is still virtual")
			}
			if want := (gcgraph.Identity{APIVersion: "v1", Kind: "ConfigMap", Name: "p", UID: "U", Namespace: "b"}); n.Identity() != want {
				t.Errorf("owner identity = %v, want the observed %v", n.Identity(), want)
			}
			if len(n.Dependents()) != 1 {
				t.Errorf("owner has %d dependents, want 1", len(n.Dependents()))
			}
		})
	}
}

func TestDependentQueuesUnverifiedOwner(t *testing.T) {
	f := newFixture(t)
	owner := object(replicaSetKind, testNamespace, "rs", "RS")
	f.observe(objectAdded, object(podKind, testNamespace, "p", "P", ownedBy(blocking(owner))))
	n := f.node("RS")
	if !n.Virtual() || n.Identity().Namespace != testNamespace || n.Identity().Kind != "ReplicaSet" {
		t.Fatalf("owner node = %v (virtual %v), want a virtual ReplicaSet in the pod's namespace", n.Identity(), n.Virtual())
	}
	queued, _ := f.deletes.take()
	if diff := cmp.Diff([]types.UID{"RS"}, uids(queued)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

func TestOwnerReferenceChangesQueueOwners(t *testing.T) {
	a := object(replicaSetKind, testNamespace, "a", "A")
	b := object(replicaSetKind, testNamespace, "b", "B")
	tests := []struct {
		name       string
		before     []metav1.OwnerReference
		after      []metav1.OwnerReference
		wantQueued []types.UID
		wantOwners []types.UID // owners that list the pod as dependent afterwards
	}{
		{name: "blocking reference removed", before: []metav1.OwnerReference{blocking(a), ref(b, nil)}, after: []metav1.OwnerReference{ref(b, nil)},
			wantQueued: []types.UID{"A"}, wantOwners: []types.UID{"B"}},
		{name: "non-blocking reference removed", before: []metav1.OwnerReference{ref(a, ptr.To(false)), ref(b, nil)}, after: []metav1.OwnerReference{ref(b, nil)},
			wantOwners: []types.UID{"B"}},
		{name: "reference stops blocking", before: []metav1.OwnerReference{blocking(a)}, after: []metav1.OwnerReference{ref(a, ptr.To(false))},
			wantQueued: []types.UID{"A"}, wantOwners: []types.UID{"A"}},
		{name: "reference starts blocking", before: []metav1.OwnerReference{ref(a, nil)}, after: []metav1.OwnerReference{blocking(a)},
			wantOwners: []types.UID{"A"}},
		{name: "reference added", before: []metav1.OwnerReference{ref(a, nil)}, after: []metav1.OwnerReference{ref(a, nil), blocking(b)},
			wantOwners: []types.UID{"A", "B"}},
		{name: "nothing changed", before: []metav1.OwnerReference{blocking(a)}, after: []metav1.OwnerReference{blocking(a)},
			wantOwners: []types.UID{"A"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.observeAll(a, b, object(podKind, testNamespace, "p", "P", ownedBy(tc.before...)))
			f.observe(objectUpdated, object(podKind, testNamespace, "p", "P", ownedBy(tc.after...)))

			queued, _ := f.deletes.take()
			if diff := cmp.Diff(tc.wantQueued, uids(queued)); diff != "" {
				t.Errorf("owners queued (-want +got):\n%s", diff)
			}
			var owners []types.UID
			for _, uid := range []types.UID{"A", "B"} {
				for _, d := range f.node(uid).Dependents() {
					if d.Identity().UID == "P" {
						owners = append(owners, uid)
					}
				}
			}
			if diff := cmp.Diff(tc.wantOwners, owners); diff != "" {
				t.Errorf("owners listing the pod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.after, f.node("P").Owners()); diff != "" {
				t.Errorf("node owners (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForegroundDeletionIsLevelTriggered(t *testing.T) {
	rs := object(replicaSetKind, testNamespace, "rs", "RS")
	p1 := object(podKind, testNamespace, "p1", "P1", ownedBy(blocking(rs)))
	p2 := object(podKind, testNamespace, "p2", "P2", ownedBy(blocking(rs)))
	rsDeleting := object(replicaSetKind, testNamespace, "rs", "RS", deleting(metav1.FinalizerDeleteDependents))

	tests := []struct {
		name   string
		before []*metav1.PartialObjectMetadata
		events []changeType // events about rsDeleting, in order
		// wantQueued lists, per event, the UIDs queued to attempt-to-delete.
		wantQueued [][]types.UID
	}{
		{name: "update that sets the finalizer, then one that keeps it",
			before: []*metav1.PartialObjectMetadata{rs, p1, p2}, events: []changeType{objectUpdated, objectUpdated},
			wantQueued: [][]types.UID{{"P1", "P2", "RS"}, {"RS"}}},
		{name: "edge missed: only updates whose previous state already had the finalizer",
			before: []*metav1.PartialObjectMetadata{rs, p1, p2, rsDeleting}, events: []changeType{objectUpdated},
			wantQueued: [][]types.UID{{"RS"}}},
		{name: "first observed already deleting, after its dependents (relist)",
			before: []*metav1.PartialObjectMetadata{p1, p2}, events: []changeType{objectAdded, objectUpdated},
			wantQueued: [][]types.UID{{"P1", "P2", "RS"}, {"RS"}}},
		{name: "first observed already deleting, before its dependents",
			before: nil, events: []changeType{objectAdded},
			wantQueued: [][]types.UID{{"RS"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.observeAll(tc.before...)
			for i, typ := range tc.events {
				f.observe(typ, rsDeleting)
				queued, _ := f.deletes.take()
				if diff := cmp.Diff(tc.wantQueued[i], uids(queued)); diff != "" {
					t.Errorf("event %d: queued (-want +got):\n%s", i, diff)
				}
			}
			n := f.node("RS")
			if !n.BeingDeleted() || !n.DeletingDependents() {
				t.Errorf("owner beingDeleted=%v deletingDependents=%v, want both", n.BeingDeleted(), n.DeletingDependents())
			}
			if orphans, _ := f.orphans.take(); len(orphans) != 0 {
				t.Errorf("queued to attempt-to-orphan: %v", orphans)
			}
		})
	}
}

func TestOrphanDeletionIsLevelTriggered(t *testing.T) {
	f := newFixture(t)
	rs := object(replicaSetKind, testNamespace, "rs", "RS")
	f.observeAll(rs, object(podKind, testNamespace, "p", "P", ownedBy(blocking(rs))))
	// Both finalizers: orphaning wins, as the API server orphans when asked to.
	orphaning := object(replicaSetKind, testNamespace, "rs", "RS", deleting(metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents))
	for i := range 2 {
		f.observe(objectUpdated, orphaning)
		orphans, _ := f.orphans.take()
		if diff := cmp.Diff([]types.UID{"RS"}, uids(orphans)); diff != "" {
			t.Errorf("event %d: queued to attempt-to-orphan (-want +got):\n%s", i, diff)
		}
		if deletes, _ := f.deletes.take(); len(deletes) != 0 {
			t.Errorf("event %d: queued to attempt-to-delete: %v", i, deletes)
		}
	}
	if f.node("RS").DeletingDependents() {
		t.Error("an orphaning owner must not be marked deletingDependents")
	}
}

func TestVirtualDelete(t *testing.T) {
	asConfigMap := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "U"}
	asDeployment := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "U"}
	configMapID := gcgraph.IdentityFromRef(asConfigMap, testNamespace)
	deploymentID := gcgraph.IdentityFromRef(asDeployment, testNamespace)
	dep1 := object(secretKind, testNamespace, "s1", "S1", ownedBy(asConfigMap))
	dep2 := object(secretKind, testNamespace, "s2", "S2", ownedBy(asDeployment))

	tests := []struct {
		name    string
		objects []*metav1.PartialObjectMetadata
		deleted gcgraph.Identity
		// wantNode is the identity of the node left for U; nil when removed.
		wantNode        *gcgraph.Identity
		wantVirtual     bool
		wantQueued      []types.UID
		wantRateLimited []types.UID
		wantAbsent      bool
	}{
		{name: "dependents disagree: the verified candidate is dropped, the next one checked",
			objects: []*metav1.PartialObjectMetadata{dep1, dep2}, deleted: configMapID,
			wantNode: &deploymentID, wantVirtual: true, wantQueued: []types.UID{"S1"}, wantRateLimited: []types.UID{"U"}, wantAbsent: true},
		{name: "dependents agree: the virtual owner goes",
			objects: []*metav1.PartialObjectMetadata{dep1}, deleted: configMapID,
			wantQueued: []types.UID{"S1"}, wantAbsent: true},
		{name: "observed owner with other coordinates stays",
			objects: []*metav1.PartialObjectMetadata{dep1, dep2, object(configMapKind, testNamespace, "cm", "U")}, deleted: deploymentID,
			wantNode: &configMapID, wantQueued: []types.UID{"S2"}, wantAbsent: true},
		{name: "observed owner verified gone",
			objects: []*metav1.PartialObjectMetadata{dep1, object(configMapKind, testNamespace, "cm", "U")}, deleted: configMapID,
			wantQueued: []types.UID{"S1"}, wantAbsent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.observeAll(tc.objects...)
			if err := f.c.processGraphChange(f.ctx, &graphChange{typ: objectDeleted, virtual: true, identity: tc.deleted}); err != nil {
				t.Fatal(err)
			}
			n, ok := f.c.graph.Read("U")
			switch {
			case tc.wantNode == nil && ok:
				t.Errorf("node %v left in the graph, want it removed", n.Identity())
			case tc.wantNode != nil && !ok:
				t.Errorf("node removed, want %v", *tc.wantNode)
			case tc.wantNode != nil:
				if n.Identity() != *tc.wantNode || n.Virtual() != tc.wantVirtual {
					t.Errorf("node = %v virtual=%v, want %v virtual=%v", n.Identity(), n.Virtual(), *tc.wantNode, tc.wantVirtual)
				}
			}
			queued, rateLimited := f.deletes.take()
			if diff := cmp.Diff(tc.wantQueued, uids(queued)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRateLimited, uids(rateLimited)); diff != "" {
				t.Errorf("queued rate-limited (-want +got):\n%s", diff)
			}
			if len(rateLimited) == 1 && rateLimited[0] != n {
				t.Error("the node re-queued is not the one in the graph")
			}
			if got := f.c.absentOwners.Has(tc.deleted); got != tc.wantAbsent {
				t.Errorf("absent-owner cache holds %v: %v, want %v", tc.deleted, got, tc.wantAbsent)
			}
		})
	}
}

func TestRemovalQueuesDependentsAndWaitingOwners(t *testing.T) {
	f := newFixture(t)
	rs := object(replicaSetKind, testNamespace, "rs", "RS", deleting(metav1.FinalizerDeleteDependents))
	other := object(replicaSetKind, testNamespace, "other", "OTHER")
	pod := object(podKind, testNamespace, "p", "P", ownedBy(blocking(rs), ref(other, nil)))
	cm := object(configMapKind, testNamespace, "c", "C", ownedBy(ref(pod, nil)))
	f.observeAll(rs, other, pod, cm)

	f.observe(objectDeleted, pod)

	if _, ok := f.c.graph.Read("P"); ok {
		t.Error("deleted pod still in the graph")
	}
	if n := f.node("RS").DependentsCount(); n != 0 {
		t.Errorf("owner still has %d dependents", n)
	}
	queued, _ := f.deletes.take()
	if diff := cmp.Diff([]types.UID{"C", "RS"}, uids(queued)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
	if !f.c.absentOwners.Has(gcgraph.Identity{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "P", Namespace: testNamespace}) {
		t.Error("the deleted owner is not remembered as absent")
	}
	// A delete of an object the graph does not know changes nothing.
	f.observe(objectDeleted, object(podKind, testNamespace, "ghost", "G"))
	if queued, _ := f.deletes.take(); len(queued) != 0 {
		t.Errorf("deleting an unknown object queued %v", queued)
	}
}

func TestClusterScopedDependentOfUnverifiedOwner(t *testing.T) {
	f := newFixture(t)
	// A cluster-scoped object names a ConfigMap; the virtual owner gets no namespace.
	f.observe(objectAdded, object(clusterRoleKind, "", "cr", "CR", ownedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "U"})))
	f.deletes.take()
	// A namespaced object naming the same UID is suspect: the owner may be namespaced.
	f.observe(objectAdded, object(secretKind, testNamespace, "s", "S", ownedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "U"})))
	queued, _ := f.deletes.take()
	if diff := cmp.Diff([]types.UID{"S"}, uids(queued)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}
