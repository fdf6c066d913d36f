package informers

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
)

var someManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}

func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"a": "b"}, ManagedFields: someManagedFields},
		Spec:       corev1.PodSpec{NodeName: "n1"},
	}
	wantPod := pod.DeepCopy()
	wantPod.ManagedFields = nil

	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "t", "managedFields": []any{map[string]any{"manager": "x"}}},
		"spec":     map[string]any{"x": int64(1)},
	}}
	wantU := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "t"},
		"spec":     map[string]any{"x": int64(1)},
	}}

	partial := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "m", ManagedFields: someManagedFields}}
	wantPartial := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "m"}}

	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod.DeepCopy()}

	tests := []struct {
		name string
		in   any
		want any
	}{
		{name: "typed object", in: pod, want: wantPod},
		{name: "unstructured", in: u, want: wantU},
		{name: "partial object metadata", in: partial, want: wantPartial},
		{name: "tombstone passes through unchanged", in: tombstone, want: cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod.DeepCopy()}},
		{name: "no metadata passes through", in: &metav1.Status{Message: "m"}, want: &metav1.Status{Message: "m"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StripManagedFields(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResyncPeriod(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want time.Duration
	}{{0, 12 * time.Hour}, {0.5, 18 * time.Hour}, {0.25, 15 * time.Hour}} {
		if got := scaleResync(12*time.Hour, tc.r); got != tc.want {
			t.Errorf("scaleResync(12h, %v) = %v, want %v", tc.r, got, tc.want)
		}
	}
	seen := map[time.Duration]bool{}
	for range 100 {
		got := ResyncPeriod(DefaultMinResyncPeriod)
		if got < 12*time.Hour || got >= 24*time.Hour {
			t.Fatalf("ResyncPeriod(12h) = %v, want in [12h, 24h)", got)
		}
		seen[got] = true
	}
	if len(seen) < 2 {
		t.Error("ResyncPeriod is not randomised")
	}
}

func TestFactoriesStripManagedFields(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ManagedFields: someManagedFields}}
	typed := NewSharedInformerFactory(fake.NewClientset(pod), time.Hour)
	podLister := typed.Core().V1().Pods().Lister()
	typed.Start(ctx.Done())
	typed.WaitForCacheSync(ctx.Done())
	got, err := podLister.Pods("ns").Get("p")
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagedFields != nil {
		t.Errorf("typed factory cached managedFields: %v", got.ManagedFields)
	}

	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ManagedFields: someManagedFields},
	}
	md := NewMetadataInformerFactory(metadatafake.NewSimpleMetadataClient(scheme, cm), 0)
	informer := md.ForResource(gvr)
	md.Start(ctx.Done())
	md.WaitForCacheSync(ctx.Done())
	obj, err := informer.Lister().ByNamespace("ns").Get("c")
	if err != nil {
		t.Fatal(err)
	}
	if mf := obj.(*metav1.PartialObjectMetadata).ManagedFields; mf != nil {
		t.Errorf("metadata factory cached managedFields: %v", mf)
	}
}
