package podtemplate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errorsOf renders errs as "<type> <field>" lines, in order.
func errorsOf(errs field.ErrorList) string {
	var lines []string
	for _, e := range errs {
		lines = append(lines, e.Type.String()+" "+e.Field)
	}
	return strings.Join(lines, "\n")
}

func TestValidate(t *testing.T) {
	path := field.NewPath("spec", "template")
	for _, tc := range []struct {
		name     string
		template corev1.PodTemplateSpec
		want     string
	}{
		{name: "valid", template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}},
		{name: "no containers", want: "Required value spec.template.spec.containers"},
		{name: "init container sharing a name", template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "c", Image: "i"}},
			Containers:     []corev1.Container{{Name: "c", Image: " "}, {Name: "Bad", Image: "i"}, {Image: "i"}},
		}}, want: "Duplicate value spec.template.spec.containers[0].name\n" +
			"Required value spec.template.spec.containers[0].image\n" +
			"Invalid value spec.template.spec.containers[1].name\n" +
			"Required value spec.template.spec.containers[2].name"},
		{name: "bad labels, annotations and node selector", template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "-"}, Annotations: map[string]string{"-b": ""}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}, NodeSelector: map[string]string{"-k": "v"}},
		}, want: "Invalid value spec.template.metadata.labels\n" +
			"Invalid value spec.template.metadata.annotations\n" +
			"Invalid value spec.template.spec.nodeSelector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(Validate(&tc.template, path)); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestValidateVolumes(t *testing.T) {
	specPath := field.NewPath("spec", "template", "spec")
	claim := func(name string, i int) AddedVolume {
		return AddedVolume{Name: name, Path: field.NewPath("spec", "volumeClaimTemplates").Index(i).Child("metadata", "name")}
	}
	for _, tc := range []struct {
		name  string
		spec  corev1.PodSpec
		added []AddedVolume
		want  string
	}{
		{name: "mounts of a template volume and of an added one", spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "cache"}},
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{
				{Name: "cache", MountPath: "/cache"}, {Name: "data", MountPath: "/data"}}}},
			InitContainers: []corev1.Container{{Name: "i", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		}, added: []AddedVolume{claim("data", 0)}},
		{name: "a mount of nothing", spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {MountPath: "/x"}, {Name: "data"}}}},
		}, want: "Not found spec.template.spec.containers[0].volumeMounts[0].name\n" +
			"Required value spec.template.spec.containers[0].volumeMounts[1].name\n" +
			"Not found spec.template.spec.containers[0].volumeMounts[2].name\n" +
			"Required value spec.template.spec.containers[0].volumeMounts[2].mountPath"},
		{name: "names: duplicates, invalid, empty; a claim named like a template volume", spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "data"}, {Name: "data"}, {Name: "Bad_Name"}, {}},
		}, added: []AddedVolume{claim("data", 0), claim("", 1)},
			want: "Duplicate value spec.template.spec.volumes[1].name\n" +
				"Invalid value spec.template.spec.volumes[2].name\n" +
				"Required value spec.template.spec.volumes[3].name\n" +
				"Duplicate value spec.volumeClaimTemplates[0].metadata.name\n" +
				"Required value spec.volumeClaimTemplates[1].metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(ValidateVolumes(&tc.spec, specPath, tc.added)); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
