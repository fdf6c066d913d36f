package podutil

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func newPodInformer() cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
}

func TestPodControllerIndex(t *testing.T) {
	informer := newPodInformer()
	for range 2 {
		if err := AddPodControllerIndex(informer); err != nil {
			t.Fatalf("adding the index (twice must be a no-op): %v", err)
		}
	}
	owner := &metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: "u1"}
	controlledBy := func(kind, name, uid string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(controller)}}
	}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owned", OwnerReferences: controlledBy("ReplicaSet", "rs", "u1", true)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "non-controller-ref", OwnerReferences: controlledBy("ReplicaSet", "rs", "u1", false)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "same-name-old-uid", OwnerReferences: controlledBy("ReplicaSet", "rs", "u0", true)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other-kind", OwnerReferences: controlledBy("StatefulSet", "rs", "u1", true)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "other-ns-orphan"}},
	}
	for _, p := range pods {
		if err := informer.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		includeOrphans bool
		want           []string
	}{
		{includeOrphans: false, want: []string{"owned"}},
		{includeOrphans: true, want: []string{"non-controller-ref", "orphan", "owned"}},
	}
	for _, tc := range tests {
		got, err := PodsForOwner(informer.GetIndexer(), owner, "ReplicaSet", tc.includeOrphans)
		if err != nil {
			t.Fatal(err)
		}
		gotNames := names(got)
		slices.Sort(gotNames)
		if !slices.Equal(gotNames, tc.want) {
			t.Errorf("includeOrphans=%v: got %v, want %v", tc.includeOrphans, gotNames, tc.want)
		}
	}
	if got := PodControllerIndexKey("ns", &metav1.OwnerReference{Kind: "ReplicaSet", Name: "rs", UID: "u1"}); got != "ns/ReplicaSet/rs/u1" {
		t.Errorf("PodControllerIndexKey = %q", got)
	}
	if got := PodControllerIndexKey("ns", nil); got != "ns" {
		t.Errorf("orphan key = %q", got)
	}
}
