package refmanager

import (
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestResolveControllerRef(t *testing.T) {
	web := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web"}}
	get := func(name string) (*appsv1.ReplicaSet, error) {
		if name == web.Name {
			return web, nil
		}
		return nil, errors.New("not found")
	}
	tests := []struct {
		name string
		ref  *metav1.OwnerReference
		want bool
	}{
		{"matching kind, name and uid", &metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", UID: "uid-web"}, true},
		{"no reference", nil, false},
		{"other kind", &metav1.OwnerReference{Kind: "StatefulSet", Name: "web", UID: "uid-web"}, false},
		{"no such owner", &metav1.OwnerReference{Kind: "ReplicaSet", Name: "api", UID: "uid-api"}, false},
		{"re-created under the same name", &metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", UID: types.UID("uid-old")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ResolveControllerRef(tc.ref, "ReplicaSet", get)
			if ok != tc.want || (ok && got != web) || (!ok && got != nil) {
				t.Errorf("ResolveControllerRef = %v, %v; want found=%v", got, ok, tc.want)
			}
		})
	}
}

func TestSelectingOwners(t *testing.T) {
	owner := func(name string, selector *metav1.LabelSelector) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.ReplicaSetSpec{Selector: selector}}
	}
	owners := []*appsv1.ReplicaSet{
		owner("app-web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		owner("tier-front", &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}),
		owner("empty", &metav1.LabelSelector{}),
		owner("nil", nil),
		owner("invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}),
		owner("app-api", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}),
	}
	selectorOf := func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }
	tests := []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"one match", map[string]string{"app": "web"}, []string{"app-web"}},
		{"overlapping selectors all match", map[string]string{"app": "web", "tier": "front"}, []string{"app-web", "tier-front"}},
		{"no labels match nothing, not even the empty selector", nil, nil},
		{"no match", map[string]string{"app": "db"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, rs := range SelectingOwners(owners, tc.labels, selectorOf) {
				got = append(got, rs.Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("SelectingOwners = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("SelectingOwners = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestCompareControllerRefs(t *testing.T) {
	ownerA := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "a", UID: "uid-a", Controller: ptr.To(true)}
	ownerB := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "b", UID: "uid-b", Controller: ptr.To(true)}
	notController := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "uid-c"}
	child := func(labels map[string]string, refs ...metav1.OwnerReference) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Labels: labels, OwnerReferences: refs}
	}
	web, other := map[string]string{"app": "web"}, map[string]string{"app": "other"}

	tests := []struct {
		name     string
		old, cur *metav1.ObjectMeta
		want     RefChange
	}{
		{name: "same controller", old: child(web, ownerA), cur: child(other, ownerA), want: RefChange{Current: &ownerA}},
		{name: "controller replaced", old: child(web, ownerA), cur: child(web, ownerB), want: RefChange{Former: &ownerA, Current: &ownerB}},
		{name: "released", old: child(web, ownerA), cur: child(web), want: RefChange{Former: &ownerA, Adoptable: true}},
		{name: "adopted", old: child(web), cur: child(web, ownerA), want: RefChange{Current: &ownerA}},
		{name: "orphan relabelled", old: child(web), cur: child(other), want: RefChange{Adoptable: true}},
		{name: "orphan unchanged", old: child(web, notController), cur: child(web, notController), want: RefChange{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareControllerRefs(tc.old, tc.cur)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("CompareControllerRefs = %+v, want %+v", got, tc.want)
			}
		})
	}
}
