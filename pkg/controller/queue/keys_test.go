package queue

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestKeyFor(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	tests := []struct {
		name string
		obj  any
		want string
	}{
		{name: "namespaced", obj: pod, want: "ns/p"},
		{name: "cluster-scoped", obj: node, want: "n1"},
		{name: "tombstone yields its key", obj: cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: pod}, want: "ns/gone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KeyFor(tc.obj)
			if err != nil || got != tc.want {
				t.Errorf("KeyFor = (%q, %v), want %q", got, err, tc.want)
			}
		})
	}
	if _, err := KeyFor("not an object"); err == nil {
		t.Error("KeyFor(string) must fail")
	}
}

func TestKeyHelpers(t *testing.T) {
	if got := KeyForRef("", "n"); got != "n" {
		t.Errorf("KeyForRef cluster-scoped = %q", got)
	}
	if got := KeyForRef("ns", "n"); got != "ns/n" {
		t.Errorf("KeyForRef namespaced = %q", got)
	}
	if got := PodKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}); got != "ns/p" {
		t.Errorf("PodKey = %q", got)
	}
	ns, name, err := SplitKey("ns/n")
	if err != nil || ns != "ns" || name != "n" {
		t.Errorf("SplitKey = (%q, %q, %v)", ns, name, err)
	}
	if _, _, err := SplitKey("a/b/c"); err == nil {
		t.Error("SplitKey of a malformed key must fail")
	}
}

func TestFromTombstone(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, ok := FromTombstone[*corev1.Pod](pod); !ok || got != pod {
		t.Error("plain object not returned")
	}
	if got, ok := FromTombstone[*corev1.Pod](cache.DeletedFinalStateUnknown{Key: "p", Obj: pod}); !ok || got != pod {
		t.Error("tombstone not unwrapped")
	}
	if _, ok := FromTombstone[*corev1.Pod](cache.DeletedFinalStateUnknown{Key: "n", Obj: &corev1.Node{}}); ok {
		t.Error("tombstone of another type must not convert")
	}
	if _, ok := FromTombstone[*corev1.Pod](&corev1.Node{}); ok {
		t.Error("another type must not convert")
	}
}
