package imagepulljob

import (
	"encoding/json"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The template is judged in the hub version; the copy judged must hold every field the
// v1alpha1 object had, or a field could escape validation.
func TestHubTemplateKeepsEveryField(t *testing.T) {
	template := appsv1alpha1.ImagePullJobTemplate{
		PullSecrets: []string{"reg"},
		Selector: &appsv1alpha1.ImagePullJobNodeSelector{Names: []string{"n1"}, LabelSelector: metav1.LabelSelector{
			MatchLabels:      map[string]string{"a": "b"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists}},
		}},
		PodSelector: &appsv1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Parallelism: ptr.To(intstr.FromString("3")),
		PullPolicy:  &appsv1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](10), BackoffLimit: ptr.To[int32](1)},
		CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](20),
			TTLSecondsAfterFinished: ptr.To[int32](5)},
		SandboxConfig:   &appsv1alpha1.SandboxConfig{Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"}},
		ImagePullPolicy: appsv1alpha1.PullAlways,
	}
	hub := &appsv1beta1.ImagePullJob{}
	appsv1alpha1.ConvertImagePullJobToV1beta1(&appsv1alpha1.ImagePullJob{Spec: appsv1alpha1.ImagePullJobSpec{Image: "nginx", ImagePullJobTemplate: template}}, hub)
	want, _ := json.Marshal(template)
	got, _ := json.Marshal(hub.Spec.ImagePullJobTemplate)
	if string(got) != string(want) {
		t.Errorf("hub template\n%s, want\n%s", got, want)
	}
}
