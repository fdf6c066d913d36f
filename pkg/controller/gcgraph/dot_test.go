package gcgraph

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// buildGraph: a ReplicaSet "rs" owning pods "p1", "p2" (p2 also names a missing
// ConfigMap "cm"), and an unrelated lone node "lone".
func buildGraph() *UIDToNode {
	g := NewUIDToNode()
	rs := NewNode(Identity{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Namespace: "ns"}, nil)
	rs.MarkBeingDeleted()
	g.Write(rs)
	rsRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}
	cmRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "cm"}
	for _, p := range []*Node{
		NewNode(Identity{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "p1", Namespace: "ns"}, []metav1.OwnerReference{rsRef}),
		NewNode(Identity{APIVersion: "v1", Kind: "Pod", Name: "web-2", UID: "p2", Namespace: "ns"}, []metav1.OwnerReference{rsRef, cmRef}),
	} {
		g.Write(p)
		g.LinkToOwners(p, p.Owners())
	}
	g.Write(NewNode(Identity{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "lone", Namespace: "ns"}, nil))
	return g
}

const wantFullDOT = `strict digraph full {
  // Node definitions.
  "cm" [
    label="uid=cm\nnamespace=\nConfigMap.v1/cfg\nmissingFromGraph\n"
    group=""
    version="v1"
    kind="ConfigMap"
    namespace=""
    name="cfg"
    uid="cm"
    missing="true"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "p1" [
    label="uid=p1\nnamespace=ns\nPod.v1/web-1\n"
    group=""
    version="v1"
    kind="Pod"
    namespace="ns"
    name="web-1"
    uid="p1"
    missing="false"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "p2" [
    label="uid=p2\nnamespace=ns\nPod.v1/web-2\n"
    group=""
    version="v1"
    kind="Pod"
    namespace="ns"
    name="web-2"
    uid="p2"
    missing="false"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "rs" [
    label="uid=rs\nnamespace=ns\nReplicaSet.v1.apps/web\nbeingDeleted\n"
    group="apps"
    version="v1"
    kind="ReplicaSet"
    namespace="ns"
    name="web"
    uid="rs"
    missing="false"
    beingDeleted="true"
    deletingDependents="false"
    virtual="false"
  ];
  // Edge definitions.
  "p1" -> "rs";
  "p2" -> "cm";
  "p2" -> "rs";
}
`

func TestWriteDOTFull(t *testing.T) {
	var sb strings.Builder
	if err := WriteDOT(&sb, buildGraph()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantFullDOT, sb.String()); diff != "" {
		t.Errorf("DOT (-want +got):\n%s", diff)
	}
}

func TestWriteDOTReachableFromUID(t *testing.T) {
	g := buildGraph()
	// A second, unrelated component that must not appear.
	other := NewNode(Identity{APIVersion: "v1", Kind: "Pod", Name: "x", UID: "x", Namespace: "ns"},
		[]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "y", UID: "y"}})
	g.Write(other)
	var sb strings.Builder
	if err := WriteDOT(&sb, g, "p1"); err != nil {
		t.Fatal(err)
	}
	// p1 -> rs -> p2 -> cm: the same output as the full graph without "x" and "y".
	if diff := cmp.Diff(wantFullDOT, sb.String()); diff != "" {
		t.Errorf("DOT (-want +got):\n%s", diff)
	}
}

func TestWriteDOTEmptyAndFlags(t *testing.T) {
	var sb strings.Builder
	if err := WriteDOT(&sb, NewUIDToNode()); err != nil {
		t.Fatal(err)
	}
	if sb.String() != "strict digraph full {\n}\n" {
		t.Errorf("empty graph = %q", sb.String())
	}
	g := NewUIDToNode()
	v := NewVirtualNode(Identity{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "t", Namespace: "ns"})
	v.MarkBeingDeleted()
	v.MarkDeletingDependents()
	d := NewNode(Identity{APIVersion: "v1", Kind: "Pod", Name: "d", UID: "d", Namespace: "ns"},
		[]metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "t"}})
	g.Write(v)
	g.Write(d)
	g.LinkToOwners(d, d.Owners())
	sb.Reset()
	if err := WriteDOT(&sb, g, "t"); err != nil {
		t.Fatal(err)
	}
	want := `label="uid=t\nnamespace=ns\nThing.v1.example.com/t\nbeingDeleted,deletingDependents,virtual\n"`
	if !strings.Contains(sb.String(), want) {
		t.Errorf("DOT missing %s in:\n%s", want, sb.String())
	}
}
