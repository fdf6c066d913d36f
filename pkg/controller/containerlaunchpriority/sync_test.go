package containerlaunchpriority

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

// keys returns the sorted keys of cm's data, nil without cm.
func keys(cm *corev1.ConfigMap) []string {
	if cm == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(cm.Data))
}

func completed(pod *corev1.Pod) bool {
	return pod.Annotations[kruisepod.LaunchPriorityCompletedAnnotation] == "true"
}

// The barrier opens one priority at a time as the containers before become ready, then
// the pod is marked completed and left alone.
func TestBarrierFollowsReadiness(t *testing.T) {
	f := newFixture(t, launchPod("web", 0, 10))
	f.sync("web")
	barrier := f.barrier("web")
	if got := keys(barrier); !slices.Equal(got, []string{"p_10"}) {
		t.Fatalf("barrier keys %v, want [p_10]", got)
	}
	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-web"}}
	if !slices.Equal(barrier.OwnerReferences, wantOwner) || barrier.Data["p_10"] != "true" {
		t.Errorf("barrier owners %+v, data %v; want owned by the pod, as OpenKruise writes it", barrier.OwnerReferences, barrier.Data)
	}
	if completed(f.pod("web")) {
		t.Error("pod marked completed while c0 still waits")
	}

	// Nothing changed: nothing to write.
	f.sync("web")
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes %v on a second sync, want none", w)
	}

	// c1 (priority 10) is ready: c0 may start, and that was the last priority.
	f.setReady("web", "c1", true)
	f.sync("web")
	if got := keys(f.barrier("web")); !slices.Equal(got, []string{"p_0", "p_10"}) {
		t.Errorf("barrier keys %v, want [p_0 p_10]", got)
	}
	if !completed(f.pod("web")) {
		t.Error("pod not marked completed once every priority may start")
	}
	if w := f.writes(); !slices.Equal(w, []string{"patch configmaps", "patch pods"}) {
		t.Errorf("writes %v, want the barrier patched, then the pod", w)
	}

	// A completed pod is left alone, even when a container restarts.
	f.setReady("web", "c0", false)
	f.sync("web")
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes %v for a completed pod, want none", w)
	}
}

// Containers of the same priority start together; the next priority waits for all of them.
func TestBarrierWaitsForEveryContainerOfAPriority(t *testing.T) {
	f := newFixture(t, launchPod("web", 5, 1, 5))
	f.sync("web")
	f.setReady("web", "c0", true)
	f.sync("web")
	if got := keys(f.barrier("web")); !slices.Equal(got, []string{"p_5"}) {
		t.Errorf("barrier keys %v with c2 (priority 5) not ready, want [p_5]", got)
	}
	f.setReady("web", "c2", true)
	f.sync("web")
	if got := keys(f.barrier("web")); !slices.Equal(got, []string{"p_1", "p_5"}) || !completed(f.pod("web")) {
		t.Errorf("barrier keys %v, completed %v; want [p_1 p_5], completed", got, completed(f.pod("web")))
	}
}

// The Ordered annotation's priorities are 0, -1, -2...
func TestBarrierWithNegativePriorities(t *testing.T) {
	f := newFixture(t, launchPod("web", 0, -1, -2))
	f.sync("web")
	f.setReady("web", "c0", true)
	f.sync("web")
	f.setReady("web", "c1", true)
	f.sync("web")
	if got := keys(f.barrier("web")); !slices.Equal(got, []string{"p_-1", "p_-2", "p_0"}) || !completed(f.pod("web")) {
		t.Errorf("barrier keys %v, completed %v; want all three, completed", got, completed(f.pod("web")))
	}
}

// With one priority left, the barrier is created complete and the pod marked at once.
func TestSinglePriorityCompletesAtOnce(t *testing.T) {
	f := newFixture(t, launchPod("web", 0, 10))
	f.setReady("web", "c1", true)
	f.sync("web")
	if got := keys(f.barrier("web")); !slices.Equal(got, []string{"p_0"}) || !completed(f.pod("web")) {
		t.Errorf("barrier keys %v, completed %v; want [p_0], completed", got, completed(f.pod("web")))
	}
	if w := f.writes(); !slices.Equal(w, []string{"create configmaps", "patch pods"}) {
		t.Errorf("writes %v, want one create and the mark", w)
	}
}

// A barrier written before (by OpenKruise, or an earlier sync the cache has not caught up
// with) is added to, not replaced.
func TestExistingBarrierIsPatched(t *testing.T) {
	pod := launchPod("web", 0, 10)
	pod.Status.ContainerStatuses[1].Ready = true
	existing := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-barrier", Namespace: ns, UID: "cm-1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-web"}}},
		Data: map[string]string{"p_10": "true"},
	}
	f := newFixture(t, pod, existing)
	f.sync("web")
	barrier := f.barrier("web")
	if got := keys(barrier); !slices.Equal(got, []string{"p_0", "p_10"}) || barrier.UID != "cm-1" {
		t.Errorf("barrier %s keys %v, want cm-1 with [p_0 p_10]", barrier.UID, got)
	}
	if w := f.writes(); !slices.Equal(w, []string{"patch configmaps", "patch pods"}) {
		t.Errorf("writes %v, want a patch of the barrier, then the mark", w)
	}
}

// A barrier left by an earlier pod of the same name holds keys this pod's containers must
// not see yet: it is replaced. One owned by no such pod is used as it is.
func TestBarrierOfAnEarlierPod(t *testing.T) {
	stale := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-barrier", Namespace: ns, UID: "cm-old",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-gone"}}},
		Data: map[string]string{"p_0": "true", "p_10": "true"},
	}
	f := newFixture(t, launchPod("web", 0, 10), stale)
	f.sync("web")
	barrier := f.barrier("web")
	if got := keys(barrier); !slices.Equal(got, []string{"p_10"}) || barrier.OwnerReferences[0].UID != "uid-web" {
		t.Errorf("barrier keys %v owned by %+v; want a new one with [p_10], owned by the pod", got, barrier.OwnerReferences)
	}
	if w := f.writes(); !slices.Equal(w, []string{"delete configmaps", "create configmaps"}) {
		t.Errorf("writes %v, want the stale barrier deleted, a new one created", w)
	}
	if completed(f.pod("web")) {
		t.Error("pod marked completed through the stale barrier")
	}

	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-barrier", Namespace: ns, UID: "cm-user"},
		Data:       map[string]string{"p_0": "true"},
	}
	f = newFixture(t, launchPod("web", 0, 10), foreign)
	f.sync("web")
	if barrier := f.barrier("web"); barrier.UID != "cm-user" || !slices.Equal(keys(barrier), []string{"p_0", "p_10"}) {
		t.Errorf("barrier %s keys %v, want the existing one with p_10 added", barrier.UID, keys(barrier))
	}
}

// Pods that do not wait are never written to, and neither are their barriers.
func TestPodsThatDoNotWait(t *testing.T) {
	done := launchPod("done", 0, 10)
	done.Annotations = map[string]string{kruisepod.LaunchPriorityCompletedAnnotation: "true"}
	ready := launchPod("ready", 0, 10)
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}
	deleting := launchPod("deleting", 0, 10)
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"x"}
	allReady := launchPod("all-ready", 0, 10)
	for i := range allReady.Status.ContainerStatuses {
		allReady.Status.ContainerStatuses[i].Ready = true
	}
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
	}
	f := newFixture(t, done, ready, deleting, allReady, plain)
	for _, name := range []string{"done", "ready", "deleting", "all-ready", "plain", "gone"} {
		f.sync(name)
		if w := f.writes(); len(w) != 0 {
			t.Errorf("%s: writes %v, want none", name, w)
		}
	}
}

// A failed write is returned for a retry, and nothing after it is done.
func TestFailedBarrierWrite(t *testing.T) {
	f := newFixture(t, launchPod("web", 0, 10))
	f.failOn("create", "configmaps", errors.New("quota"))
	err := f.trySync("web")
	if err == nil || !strings.Contains(err.Error(), "quota") || !strings.Contains(err.Error(), "web-barrier") {
		t.Errorf("sync error = %v, want the create failure naming the barrier", err)
	}
	if completed(f.pod("web")) {
		t.Error("pod marked completed after a failed write")
	}
}

// leftByEarlierPod looks at owners named after the pod only.
func TestLeftByEarlierPod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "now"}}
	ref := func(kind, name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: name, UID: uid}
	}
	for _, tt := range []struct {
		owners []metav1.OwnerReference
		want   bool
	}{
		{nil, false},
		{[]metav1.OwnerReference{ref("Pod", "web", "now")}, false},
		{[]metav1.OwnerReference{ref("Pod", "web", "before")}, true},
		{[]metav1.OwnerReference{ref("Pod", "web", "before"), ref("Pod", "web", "now")}, false},
		{[]metav1.OwnerReference{ref("Pod", "other", "before")}, false},
		{[]metav1.OwnerReference{ref("ReplicaSet", "web", "before")}, false},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tt.owners}}
		if got := leftByEarlierPod(cm, pod); got != tt.want {
			t.Errorf("owners %+v: leftByEarlierPod = %v, want %v", tt.owners, got, tt.want)
		}
	}
}
