package gcgraph

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func ref(apiVersion, kind, name string, uid types.UID, blocking *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, BlockOwnerDeletion: blocking}
}

func uidsOf(nodes []*Node) []types.UID {
	out := make([]types.UID, len(nodes))
	for i, n := range nodes {
		out[i] = n.Identity().UID
	}
	slices.Sort(out)
	return out
}

func TestIdentity(t *testing.T) {
	id := Identity{APIVersion: "v1", Kind: "ConfigMap", Name: "p", UID: "U", Namespace: "b"}
	if got, want := id.String(), "[v1/ConfigMap, namespace: b, name: p, uid: U]"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := fmt.Sprint(NewVirtualNode(id)), "[v1/ConfigMap, namespace: b, name: p, uid: U]"; got != want {
		t.Errorf("a node prints as %q, want its identity %q", got, want)
	}
	tests := []struct {
		name string
		ref  metav1.OwnerReference
		want bool
	}{
		{"same coordinates, flags ignored", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "p", UID: "U", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, true},
		{"other apiVersion", ref("v2", "ConfigMap", "p", "U", nil), false},
		{"other kind", ref("v1", "Pod", "p", "U", nil), false},
		{"other name", ref("v1", "ConfigMap", "q", "U", nil), false},
		{"other uid", ref("v1", "ConfigMap", "p", "V", nil), false},
	}
	for _, tc := range tests {
		if got := id.MatchesRef(tc.ref); got != tc.want {
			t.Errorf("%s: MatchesRef = %v, want %v", tc.name, got, tc.want)
		}
	}
	want := `ownerRef [v1/ConfigMap, namespace: a, name: p, uid: U] does not exist in namespace "a"`
	if got := InvalidNamespaceMessage(ref("v1", "ConfigMap", "p", "U", nil), "a"); got != want {
		t.Errorf("InvalidNamespaceMessage = %q, want %q", got, want)
	}
}

func TestIdentityLess(t *testing.T) {
	// Ascending: kind, then apiVersion, namespace, name, uid.
	ordered := []Identity{
		{Kind: "A", APIVersion: "v2", Namespace: "z", Name: "z", UID: "z"},
		{Kind: "B", APIVersion: "v1", Namespace: "z", Name: "z", UID: "z"},
		{Kind: "B", APIVersion: "v2", Namespace: "", Name: "z", UID: "z"},
		{Kind: "B", APIVersion: "v2", Namespace: "a", Name: "b", UID: "z"},
		{Kind: "B", APIVersion: "v2", Namespace: "a", Name: "z", UID: "a"},
		{Kind: "B", APIVersion: "v2", Namespace: "a", Name: "z", UID: "b"},
	}
	for i := range ordered {
		for j := range ordered {
			if got, want := ordered[i].Less(ordered[j]), i < j; got != want {
				t.Errorf("%v.Less(%v) = %v, want %v", ordered[i], ordered[j], got, want)
			}
		}
	}
}

func TestNodeFlagsAndBlockingDependents(t *testing.T) {
	owner := NewNode(Identity{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Namespace: "ns"}, nil)
	blocking := NewNode(Identity{Kind: "Pod", UID: "p1"}, []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "rs", "rs", ptr.To(true))})
	nonBlocking := NewNode(Identity{Kind: "Pod", UID: "p2"}, []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "rs", "rs", ptr.To(false))})
	unset := NewNode(Identity{Kind: "Pod", UID: "p3"}, []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "rs", "rs", nil)})
	blocksOther := NewNode(Identity{Kind: "Pod", UID: "p4"}, []metav1.OwnerReference{
		ref("apps/v1", "ReplicaSet", "rs", "rs", nil), ref("v1", "ConfigMap", "cm", "cm", ptr.To(true)),
	})
	for _, d := range []*Node{blocking, nonBlocking, unset, blocksOther} {
		owner.AddDependent(d)
	}
	owner.AddDependent(blocking) // a set: no duplicate
	if got := owner.DependentsCount(); got != 4 {
		t.Errorf("DependentsCount = %d, want 4", got)
	}
	if got := uidsOf(owner.BlockingDependents()); !slices.Equal(got, []types.UID{"p1"}) {
		t.Errorf("BlockingDependents = %v, want [p1]", got)
	}
	owner.DeleteDependent(blocking)
	if got := owner.BlockingDependents(); len(got) != 0 {
		t.Errorf("after DeleteDependent: BlockingDependents = %v", uidsOf(got))
	}

	if owner.BeingDeleted() || owner.DeletingDependents() || owner.Virtual() {
		t.Error("a new node has no flags set")
	}
	owner.MarkBeingDeleted()
	if !owner.MarkDeletingDependents() {
		t.Error("first MarkDeletingDependents must report a change")
	}
	if owner.MarkDeletingDependents() {
		t.Error("second MarkDeletingDependents must not report a change")
	}
	if !owner.BeingDeleted() || !owner.DeletingDependents() {
		t.Error("flags not set")
	}

	v := NewVirtualNode(Identity{Kind: "Thing", UID: "v"})
	v.AddDependent(blocking)
	if !v.Virtual() {
		t.Error("virtual node not virtual")
	}
	c := v.WithIdentity(Identity{Kind: "Other", UID: "v"})
	if c.Identity().Kind != "Other" || v.Identity().Kind != "Thing" || !c.Virtual() || c.DependentsCount() != 1 {
		t.Errorf("WithIdentity copy wrong: %+v", c.Identity())
	}
	c.MarkObserved()
	if c.Virtual() || !v.Virtual() {
		t.Error("marking the copy observed must not touch the original")
	}
}

func TestUIDToNodeLinking(t *testing.T) {
	g := NewUIDToNode()
	owner := NewNode(Identity{Kind: "ReplicaSet", UID: "rs"}, nil)
	g.Write(owner)
	refs := []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "rs", "rs", nil), ref("v1", "ConfigMap", "cm", "cm", nil)}
	pod := NewNode(Identity{Kind: "Pod", UID: "p", Namespace: "ns"}, refs)
	g.Write(pod)
	absent := g.LinkToOwners(pod, pod.Owners())
	if len(absent) != 1 || absent[0].UID != "cm" {
		t.Errorf("absent = %v, want the ConfigMap ref", absent)
	}
	if got := uidsOf(owner.Dependents()); !slices.Equal(got, []types.UID{"p"}) {
		t.Errorf("owner dependents = %v", got)
	}
	if n, ok := g.Read("p"); !ok || n != pod || g.Len() != 2 {
		t.Error("Read/Len wrong")
	}
	g.Remove(pod)
	if _, ok := g.Read("p"); ok || owner.DependentsCount() != 0 {
		t.Error("Remove must delete the node and unlink it from its owners")
	}
	g.Delete("rs")
	if g.Len() != 0 {
		t.Error("Delete left the node")
	}
}

func TestConcurrentReaders(t *testing.T) {
	g := NewUIDToNode()
	owner := NewNode(Identity{Kind: "ReplicaSet", UID: "rs"}, nil)
	g.Write(owner)
	var wg sync.WaitGroup
	wg.Go(func() { // the single writer
		for i := range 200 {
			d := NewNode(Identity{Kind: "Pod", UID: types.UID(fmt.Sprint(i))}, []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "rs", "rs", ptr.To(true))})
			g.Write(d)
			g.LinkToOwners(d, d.Owners())
			d.SetOwners(nil)
			owner.MarkDeletingDependents()
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 200 {
				_ = owner.BlockingDependents()
				_ = owner.DeletingDependents()
				_, _ = g.Read("rs")
				_ = g.Nodes()
			}
		})
	}
	wg.Wait()
}

func TestDiffOwnerRefs(t *testing.T) {
	a := ref("v1", "A", "a", "a", ptr.To(true))
	b := ref("v1", "B", "b", "b", nil)
	c := ref("v1", "C", "c", "c", nil)
	aUnblocked := ref("v1", "A", "a", "a", ptr.To(false))
	added, removed, changed := DiffOwnerRefs([]metav1.OwnerReference{a, b}, []metav1.OwnerReference{aUnblocked, c})
	if diff := cmp.Diff([]metav1.OwnerReference{c}, added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{b}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if len(changed) != 1 || !changed[0].Unblocked() {
		t.Errorf("changed = %v, want a's ref, unblocked", changed)
	}
	if _, _, changed := DiffOwnerRefs([]metav1.OwnerReference{b}, []metav1.OwnerReference{b}); len(changed) != 0 {
		t.Error("identical refs reported as changed")
	}
	if (RefChange{Old: b, New: a}).Unblocked() {
		t.Error("a change to blocking is not an unblock")
	}
}

func TestPartitionDependents(t *testing.T) {
	owner := Identity{APIVersion: "v1", Kind: "ConfigMap", Name: "p", UID: "U", Namespace: "b"}
	dep := func(uid types.UID, ns string, refs ...metav1.OwnerReference) *Node {
		return NewNode(Identity{Kind: "Secret", UID: uid, Namespace: ns}, refs)
	}
	good := ref("v1", "ConfigMap", "p", "U", nil)
	wrongKind := ref("v1", "Pod", "p", "U", nil)
	deps := []*Node{
		dep("match", "b", good),
		dep("wrong-kind", "b", wrongKind),
		dep("other-namespace", "a", good),
		dep("both", "b", good, wrongKind),
	}
	matching, nonMatching := PartitionDependents(deps, owner)
	if got := uidsOf(matching); !slices.Equal(got, []types.UID{"both", "match"}) {
		t.Errorf("matching = %v", got)
	}
	if got := uidsOf(nonMatching); !slices.Equal(got, []types.UID{"both", "other-namespace", "wrong-kind"}) {
		t.Errorf("nonMatching = %v", got)
	}
	// A cluster-scoped owner matches dependents in any namespace.
	owner.Namespace = ""
	matching, _ = PartitionDependents([]*Node{dep("x", "a", good)}, owner)
	if len(matching) != 1 {
		t.Error("cluster-scoped owner: dependent in any namespace should match")
	}
}

func TestAlternateIdentity(t *testing.T) {
	dep := func(ns string, refs ...metav1.OwnerReference) *Node {
		return NewNode(Identity{Kind: "Secret", UID: types.UID("dep-" + ns), Namespace: ns}, refs)
	}
	absent := Identity{APIVersion: "v1", Kind: "ConfigMap", Name: "p", UID: "U", Namespace: "a"}
	asCM := ref("v1", "ConfigMap", "p", "U", nil)
	asPod := ref("v1", "Pod", "p", "U", nil)
	asBar := ref("v1", "Bar", "p", "U", nil)

	tests := []struct {
		name   string
		deps   []*Node
		absent Identity
		want   *Identity
	}{
		{name: "only agreeing refs: none", deps: []*Node{dep("a", asCM)}, absent: absent},
		{
			name: "first after absent by kind", deps: []*Node{dep("a", asPod), dep("a", asBar)}, absent: absent,
			want: &Identity{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "U", Namespace: "a"},
		},
		{
			name: "wraps to the first overall", deps: []*Node{dep("a", asBar)}, absent: absent,
			want: &Identity{APIVersion: "v1", Kind: "Bar", Name: "p", UID: "U", Namespace: "a"},
		},
		{
			name: "same coordinates from another namespace is an alternative", deps: []*Node{dep("c", asCM)}, absent: absent,
			want: &Identity{APIVersion: "v1", Kind: "ConfigMap", Name: "p", UID: "U", Namespace: "c"},
		},
		{
			name:   "cluster-scoped absent: same kind from a namespaced dependent is the same identity",
			deps:   []*Node{dep("c", ref("v1", "PersistentVolume", "pv", "U", nil))},
			absent: Identity{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv", UID: "U"},
		},
		{
			name:   "cluster-scoped absent: other name of the same kind stays cluster-scoped",
			deps:   []*Node{dep("c", ref("v1", "PersistentVolume", "pv2", "U", nil))},
			absent: Identity{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv", UID: "U"},
			want:   &Identity{APIVersion: "v1", Kind: "PersistentVolume", Name: "pv2", UID: "U"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AlternateIdentity(tc.deps, tc.absent)
			switch {
			case tc.want == nil && ok:
				t.Errorf("got %v, want none", got)
			case tc.want != nil && (!ok || got != *tc.want):
				t.Errorf("got %v (%v), want %v", got, ok, *tc.want)
			}
		})
	}
}

func TestAbsentOwnerCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := NewAbsentOwnerCache(2)
	a, b, d := Identity{UID: "a"}, Identity{UID: "b"}, Identity{UID: "d"}
	c.Add(a)
	c.Add(b)
	_ = c.Has(a) // refresh a: b is now least recently used
	c.Add(d)
	if !c.Has(a) || c.Has(b) || !c.Has(d) || c.Len() != 2 {
		t.Errorf("after eviction: a=%v b=%v d=%v len=%d; want true false true 2", c.Has(a), c.Has(b), c.Has(d), c.Len())
	}
	// Namespace is part of the identity.
	c.Add(Identity{UID: "n", Namespace: "x"})
	if c.Has(Identity{UID: "n"}) {
		t.Error("namespace must be part of the key")
	}
	if NewAbsentOwnerCache(AbsentOwnerCacheSize) == nil || AbsentOwnerCacheSize != 500 {
		t.Error("default size")
	}
}
