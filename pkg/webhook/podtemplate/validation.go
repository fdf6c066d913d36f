package podtemplate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks what no pod made from template could do without: its labels,
// annotations and node selector, and at least one container, each container (init ones
// included) with a name that is a DNS label unique in the pod, and an image. fldPath is the
// template's path. The rules a workload adds (its restart policy, a deadline) are its own.
func Validate(template *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	metaPath := fldPath.Child("metadata")
	allErrs := metav1validation.ValidateLabels(template.Labels, metaPath.Child("labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(template.Annotations, metaPath.Child("annotations"))...)

	specPath := fldPath.Child("spec")
	podSpec := &template.Spec
	allErrs = append(allErrs, metav1validation.ValidateLabels(podSpec.NodeSelector, specPath.Child("nodeSelector"))...)
	if len(podSpec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(specPath.Child("containers"), "a pod needs at least one container"))
	}
	names := sets.New[string]()
	allErrs = append(allErrs, validateContainers(podSpec.InitContainers, names, specPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateContainers(podSpec.Containers, names, specPath.Child("containers"))...)
	return allErrs
}

// validateContainers checks the names and images of containers; names holds the names seen
// so far, since init and regular containers share one namespace.
func validateContainers(containers []corev1.Container, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range containers {
		c := &containers[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		switch {
		case c.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case names.Has(c.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, c.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				allErrs = append(allErrs, field.Invalid(namePath, c.Name, msg))
			}
		}
		names.Insert(c.Name)
		if strings.TrimSpace(c.Image) == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("image"), ""))
		}
	}
	return allErrs
}

// AddedVolume is a volume that a workload adds to every pod it makes from its template (a
// CloneSet's claim templates), named at Path in the workload.
type AddedVolume struct {
	Name string
	Path *field.Path
}

// ValidateVolumes checks the volumes of a template's pod spec, at specPath, together with
// the volumes the workload adds: each named by a DNS label, no name twice, and every volume
// mount of every container naming one of them, with a mount path. A duplicate between the
// template and an added volume is reported at the added one.
func ValidateVolumes(podSpec *corev1.PodSpec, specPath *field.Path, added []AddedVolume) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	checkName := func(name string, namePath *field.Path) {
		switch {
		case name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case names.Has(name):
			allErrs = append(allErrs, field.Duplicate(namePath, name))
		default:
			for _, msg := range validation.IsDNS1123Label(name) {
				allErrs = append(allErrs, field.Invalid(namePath, name, msg))
			}
		}
		names.Insert(name)
	}
	volumesPath := specPath.Child("volumes")
	for i := range podSpec.Volumes {
		checkName(podSpec.Volumes[i].Name, volumesPath.Index(i).Child("name"))
	}
	for _, v := range added {
		checkName(v.Name, v.Path)
	}
	for _, group := range []struct {
		path       *field.Path
		containers []corev1.Container
	}{
		{specPath.Child("initContainers"), podSpec.InitContainers},
		{specPath.Child("containers"), podSpec.Containers},
	} {
		for i := range group.containers {
			mountsPath := group.path.Index(i).Child("volumeMounts")
			for j, mount := range group.containers[i].VolumeMounts {
				mountPath := mountsPath.Index(j)
				switch {
				case mount.Name == "":
					allErrs = append(allErrs, field.Required(mountPath.Child("name"), ""))
				case !names.Has(mount.Name):
					allErrs = append(allErrs, field.NotFound(mountPath.Child("name"), mount.Name))
				}
				if mount.MountPath == "" {
					allErrs = append(allErrs, field.Required(mountPath.Child("mountPath"), ""))
				}
			}
		}
	}
	return allErrs
}
