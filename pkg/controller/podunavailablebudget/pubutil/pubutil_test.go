package pubutil

import (
	"encoding/json"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// readyPod is a running, Ready pod with one container "app" running image, whose status
// reports imageID.
func readyPod(image, imageID string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: image, ImageID: imageID}},
		},
	}
}

func withAnnotations(pod *corev1.Pod, kv ...string) *corev1.Pod {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		pod.Annotations[kv[i]] = kv[i+1]
	}
	return pod
}

func inPlaceState(t *testing.T, lastImageIDs map[string]string) string {
	t.Helper()
	statuses := map[string]map[string]string{}
	for name, id := range lastImageIDs {
		statuses[name] = map[string]string{"imageID": id}
	}
	raw, err := json.Marshal(map[string]any{"revision": "r2", "lastContainerStatuses": statuses})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestRelatedBudget(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"untagged", nil, ""},
		{"old key only", map[string]string{policyv1beta1.PodRelatedPubAnnotation: "old"}, "old"},
		{"new key only", map[string]string{policyv1beta1.PodRelatedPubAnnotationNew: "new"}, "new"},
		{"new wins", map[string]string{policyv1beta1.PodRelatedPubAnnotation: "old", policyv1beta1.PodRelatedPubAnnotationNew: "new"}, "new"},
		{"empty new falls back", map[string]string{policyv1beta1.PodRelatedPubAnnotation: "old", policyv1beta1.PodRelatedPubAnnotationNew: ""}, "old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			if got := RelatedBudget(pod); got != tt.want {
				t.Errorf("RelatedBudget = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRelatedBudgetAnnotations(t *testing.T) {
	got := RelatedBudgetAnnotations("pub")
	want := map[string]string{"kruise.io/related-pub": "pub", "pub.kruise.io/related-pub": "pub"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got[k], v)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: got}}
	if RelatedBudget(pod) != "pub" {
		t.Errorf("a pod carrying RelatedBudgetAnnotations does not name its budget")
	}
}

func TestPodPredicates(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name                           string
		pod                            *corev1.Pod
		noProtect, active, unavailable bool
		available                      bool
	}{
		{name: "ready running", pod: readyPod("nginx", "docker.io/library/nginx@"+digestA), active: true, available: true},
		{name: "no-protect true", pod: withAnnotations(readyPod("nginx", ""), policyv1beta1.PodPubNoProtectionAnnotation, "true"), noProtect: true, active: true, available: true},
		{name: "no-protect other value", pod: withAnnotations(readyPod("nginx", ""), policyv1beta1.PodPubNoProtectionAnnotation, "yes"), active: true, available: true},
		{name: "pending", pod: func() *corev1.Pod { p := readyPod("nginx", ""); p.Status.Phase = corev1.PodPending; return p }(), active: true},
		{name: "succeeded", pod: func() *corev1.Pod { p := readyPod("nginx", ""); p.Status.Phase = corev1.PodSucceeded; return p }()},
		{name: "failed", pod: func() *corev1.Pod { p := readyPod("nginx", ""); p.Status.Phase = corev1.PodFailed; return p }()},
		{name: "deleting", pod: func() *corev1.Pod { p := readyPod("nginx", ""); p.DeletionTimestamp = &now; return p }()},
		{name: "not ready", pod: func() *corev1.Pod {
			p := readyPod("nginx", "")
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			return p
		}(), active: true},
		{name: "no ready condition", pod: func() *corev1.Pod { p := readyPod("nginx", ""); p.Status.Conditions = nil; return p }(), active: true},
		{name: "unavailable label", pod: func() *corev1.Pod {
			p := readyPod("nginx", "")
			p.Labels = map[string]string{"unavailable-pod.kruise.io/drain": "true"}
			return p
		}(), active: true, unavailable: true},
		{name: "similar label is not the prefix", pod: func() *corev1.Pod {
			p := readyPod("nginx", "")
			p.Labels = map[string]string{"unavailable-pod.kruise.io": "x", "kruise.io/unavailable-pod": "x"}
			return p
		}(), active: true, available: true},
		{name: "digest not yet running", pod: readyPod("nginx@"+digestA, "docker.io/library/nginx@"+digestB), active: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NoProtect(tt.pod); got != tt.noProtect {
				t.Errorf("NoProtect = %v, want %v", got, tt.noProtect)
			}
			if got := IsActive(tt.pod); got != tt.active {
				t.Errorf("IsActive = %v, want %v", got, tt.active)
			}
			if got := HasUnavailableLabel(tt.pod); got != tt.unavailable {
				t.Errorf("HasUnavailableLabel = %v, want %v", got, tt.unavailable)
			}
			if got := IsAvailable(tt.pod); got != tt.available {
				t.Errorf("IsAvailable = %v, want %v", got, tt.available)
			}
		})
	}
}

func TestIsStateConsistent(t *testing.T) {
	twoContainers := func(image1, id1, image2, id2 string) *corev1.Pod {
		p := readyPod(image1, id1)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: image2})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "side", Image: image2, ImageID: id2})
		return p
	}
	tests := []struct {
		name string
		pod  func(t *testing.T) *corev1.Pod
		want bool
	}{
		{"tag image, no in-place update", func(*testing.T) *corev1.Pod { return readyPod("nginx:1.25", "sha256:whatever") }, true},
		{"digest image, same digest reported", func(*testing.T) *corev1.Pod {
			return readyPod("nginx@"+digestA, "docker-pullable://nginx@"+digestA)
		}, true},
		{"digest image with tag, same digest reported", func(*testing.T) *corev1.Pod {
			return readyPod("reg.example/nginx:1.25@"+digestA, "reg.example/nginx@"+digestA)
		}, true},
		{"digest image, other digest reported", func(*testing.T) *corev1.Pod {
			return readyPod("nginx@"+digestA, "docker-pullable://nginx@"+digestB)
		}, false},
		{"digest image, no status yet", func(*testing.T) *corev1.Pod {
			p := readyPod("nginx@"+digestA, "")
			p.Status.ContainerStatuses = nil
			return p
		}, false},
		{"all digests: in-place state is not consulted", func(t *testing.T) *corev1.Pod {
			p := readyPod("nginx@"+digestA, "nginx@"+digestA)
			return withAnnotations(p, appsv1beta1.InPlaceUpdateStateKey, inPlaceState(t, map[string]string{"app": "nginx@" + digestA}))
		}, true},
		{"mixed: digest container wrong", func(*testing.T) *corev1.Pod {
			return twoContainers("nginx@"+digestA, "nginx@"+digestB, "busybox:1", "id-busybox")
		}, false},
		{"mixed: digest container right, no in-place update", func(*testing.T) *corev1.Pod {
			return twoContainers("nginx@"+digestA, "nginx@"+digestA, "busybox:1", "id-busybox")
		}, true},
		{"in-place update not yet running the new image", func(t *testing.T) *corev1.Pod {
			p := readyPod("nginx:1.26", "id-old")
			p.Status.ContainerStatuses[0].Image = "nginx:1.25"
			return withAnnotations(p, appsv1beta1.InPlaceUpdateStateKey, inPlaceState(t, map[string]string{"app": "id-old"}))
		}, false},
		{"in-place update completed", func(t *testing.T) *corev1.Pod {
			p := readyPod("nginx:1.26", "id-new")
			return withAnnotations(p, appsv1beta1.InPlaceUpdateStateKey, inPlaceState(t, map[string]string{"app": "id-old"}))
		}, true},
		{"in-place update under the legacy key, not yet done", func(t *testing.T) *corev1.Pod {
			p := readyPod("nginx:1.26", "id-old")
			p.Status.ContainerStatuses[0].Image = "nginx:1.25"
			return withAnnotations(p, appsv1beta1.InPlaceUpdateStateKeyOld, inPlaceState(t, map[string]string{"app": "id-old"}))
		}, false},
		{"in-place update: new image resolves to the old image ID", func(t *testing.T) *corev1.Pod {
			p := readyPod("nginx:1.26", "id-same")
			return withAnnotations(p, appsv1beta1.InPlaceUpdateStateKey, inPlaceState(t, map[string]string{"app": "id-same"}))
		}, true},
		{"in-place update: only the updated container is checked", func(t *testing.T) *corev1.Pod {
			p := twoContainers("nginx:1.26", "id-new", "busybox:1", "id-busybox")
			return withAnnotations(p, appsv1beta1.InPlaceUpdateStateKey, inPlaceState(t, map[string]string{"app": "id-old"}))
		}, true},
		{"in-place update in grace period", func(t *testing.T) *corev1.Pod {
			p := readyPod("nginx:1.26", "id-new")
			return withAnnotations(p,
				appsv1beta1.InPlaceUpdateStateKey, inPlaceState(t, map[string]string{"app": "id-old"}),
				appsv1beta1.InPlaceUpdateGraceKey, "{}")
		}, false},
		{"unreadable in-place state", func(*testing.T) *corev1.Pod {
			return withAnnotations(readyPod("nginx:1.26", "id-new"), appsv1beta1.InPlaceUpdateStateKey, "{not json")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod(t)
			if got := IsStateConsistent(pod); got != tt.want {
				t.Errorf("IsStateConsistent = %v, want %v", got, tt.want)
			}
			if got := IsAvailable(pod); got != tt.want {
				t.Errorf("IsAvailable of a running Ready pod = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDesiredAvailable(t *testing.T) {
	intOrStr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	tests := []struct {
		name     string
		spec     policyv1beta1.PodUnavailableBudgetSpec
		expected int32
		want     int32
		wantErr  bool
	}{
		{name: "maxUnavailable 25% of 4", spec: policyv1beta1.PodUnavailableBudgetSpec{MaxUnavailable: intOrStr(intstr.FromString("25%"))}, expected: 4, want: 3},
		{name: "maxUnavailable 25% of 5 rounds up", spec: policyv1beta1.PodUnavailableBudgetSpec{MaxUnavailable: intOrStr(intstr.FromString("25%"))}, expected: 5, want: 3},
		{name: "maxUnavailable 1 of 3", spec: policyv1beta1.PodUnavailableBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}, expected: 3, want: 2},
		{name: "maxUnavailable larger than count floors at 0", spec: policyv1beta1.PodUnavailableBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(5))}, expected: 3, want: 0},
		{name: "maxUnavailable of 0 pods", spec: policyv1beta1.PodUnavailableBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}, expected: 0, want: 0},
		{name: "maxUnavailable 100%", spec: policyv1beta1.PodUnavailableBudgetSpec{MaxUnavailable: intOrStr(intstr.FromString("100%"))}, expected: 7, want: 0},
		{name: "minAvailable 50% of 4", spec: policyv1beta1.PodUnavailableBudgetSpec{MinAvailable: intOrStr(intstr.FromString("50%"))}, expected: 4, want: 2},
		{name: "minAvailable 50% of 5 rounds up", spec: policyv1beta1.PodUnavailableBudgetSpec{MinAvailable: intOrStr(intstr.FromString("50%"))}, expected: 5, want: 3},
		{name: "minAvailable literal ignores the count", spec: policyv1beta1.PodUnavailableBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(10))}, expected: 3, want: 10},
		{name: "invalid percent", spec: policyv1beta1.PodUnavailableBudgetSpec{MaxUnavailable: intOrStr(intstr.FromString("x%"))}, expected: 3, wantErr: true},
		{name: "neither", spec: policyv1beta1.PodUnavailableBudgetSpec{}, expected: 3, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DesiredAvailable(tt.spec, tt.expected)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("DesiredAvailable = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBoolAnnotation(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "false": false, "True": false, "": false, "1": false} {
		pub := pubWithAnnotations(ProtectNotReadyAnnotation, value)
		if got := BoolAnnotation(pub, ProtectNotReadyAnnotation); got != want {
			t.Errorf("BoolAnnotation(%q) = %v, want %v", value, got, want)
		}
	}
	if BoolAnnotation(pubWithAnnotations(), RetryDeniedEvictionsAnnotation) {
		t.Errorf("BoolAnnotation of an absent annotation is true")
	}
}
