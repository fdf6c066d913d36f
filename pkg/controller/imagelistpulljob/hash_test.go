package imagelistpulljob

import (
	"strings"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// The expected values are what OpenKruise v1.9.0 computes for the same templates, built
// from its own apps/v1beta1 types: equal hashes are what lets either implementation take
// over the other's children without pulling again.
func TestTemplateHashEqualsOpenKruise(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template appsv1beta1.ImagePullJobTemplate
		want     string
	}{
		{"empty", appsv1beta1.ImagePullJobTemplate{}, "6b7d768b67"},
		{"defaulted", appsv1beta1.ImagePullJobTemplate{
			PullPolicy:       &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)},
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
		}, "7697cbbcb9"},
		{"every field", appsv1beta1.ImagePullJobTemplate{
			PullSecrets: []string{"reg"},
			Selector:    &appsv1beta1.ImagePullJobNodeSelector{Names: []string{"n1", "n2"}},
			Parallelism: ptr.To(intstr.FromInt32(2)),
			PullPolicy:  &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1)},
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, ActiveDeadlineSeconds: ptr.To[int64](1200),
				TTLSecondsAfterFinished: ptr.To[int32](30)},
			SandboxConfig:   &appsv1beta1.SandboxConfig{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
			ImagePullPolicy: appsv1beta1.PullAlways,
		}, "5c9f577dfc"},
		{"pod selector, never", appsv1beta1.ImagePullJobTemplate{
			PodSelector: &appsv1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn, Values: []string{"v"}}},
			}},
			PullPolicy:       &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)},
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Never},
		}, "567cbd768f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := templateHash(&tc.template); got != tc.want {
				t.Errorf("hash %s, want OpenKruise's %s", got, tc.want)
			}
		})
	}
}

func TestChildName(t *testing.T) {
	if got, want := childName("list", "nginx:1.25", "7697cbbcb9"), "list-"+fnvHex("nginx:1.25")+"-7697cbbcb9"; got != want {
		t.Errorf("childName = %s, want %s", got, want)
	}
	if childName("list", "nginx", "h") == childName("list", "redis", "h") {
		t.Error("two images give one name")
	}
	if childName("list", "nginx", "h1") == childName("list", "nginx", "h2") {
		t.Error("two templates give one name")
	}
	// The longest names, and a cut that ends in a dot, still make a valid object name.
	for _, name := range []string{
		strings.Repeat("a", 253),
		strings.Repeat("a", 229) + ".b" + strings.Repeat("c", 20),
		strings.Repeat("a", 228) + ".-b",
	} {
		got := childName(name, "nginx", "6b7d768b67")
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("childName of a %d-character name = %q: %v", len(name), got, errs)
		}
		if !strings.HasPrefix(got, strings.TrimRight(name[:maxNamePrefix], ".-")+"-") {
			t.Errorf("childName = %q, want it to start with the first %d characters of the list job's name", got, maxNamePrefix)
		}
	}
}

// fnvHex is the 8 hex digits of FNV-32a(s), computed independently of childName.
func fnvHex(s string) string {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= prime
	}
	const digits = "0123456789abcdef"
	out := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		out[i] = digits[h&0xf]
		h >>= 4
	}
	return string(out)
}
