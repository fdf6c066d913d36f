package refmanager

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
