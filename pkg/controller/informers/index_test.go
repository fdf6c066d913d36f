package informers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAddIndexAddsAnIndexOnce(t *testing.T) {
	informer := NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods().Informer()
	calls := map[string]int{}
	byNode := func(obj any) ([]string, error) {
		calls["first"]++
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}
	if err := AddIndex(informer, "node", byNode); err != nil {
		t.Fatal(err)
	}
	// A second controller adding an index of the same name finds the first one's.
	if err := AddIndex(informer, "node", func(any) ([]string, error) { calls["second"]++; return nil, nil }); err != nil {
		t.Fatalf("adding the index again: %v", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	if err := informer.GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	got, err := informer.GetIndexer().ByIndex("node", "n1")
	if err != nil || len(got) != 1 {
		t.Fatalf("ByIndex(node, n1) = %v, %v; want the pod", got, err)
	}
	if calls["first"] == 0 || calls["second"] != 0 {
		t.Errorf("index functions called %v, want only the first one's", calls)
	}
}
