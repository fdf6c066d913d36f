package imagelistpulljob

import (
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bosun-dev/bosun/pkg/controller/imagelistpulljob"
	imagepulljobwebhook "github.com/bosun-dev/bosun/pkg/webhook/imagepulljob"
)

// MaxImages is the most images one list job may pull, OpenKruise's limit.
const MaxImages = 255

// Validate returns everything wrong with a list job, each error naming its field. It
// expects the object as the mutating webhook left it, but accepts the fields defaulting
// fills in when they are still empty.
func Validate(listJob *appsv1beta1.ImageListPullJob) field.ErrorList {
	fldPath := field.NewPath("spec")
	allErrs := validateImages(listJob.Spec.Images, fldPath.Child("images"))
	allErrs = append(allErrs, imagepulljobwebhook.ValidateTemplate(&listJob.Spec.ImagePullJobTemplate, fldPath)...)
	allErrs = append(allErrs, validateMaxActiveImages(listJob.Annotations)...)
	return allErrs
}

// validateImages checks that there are 1 to MaxImages images, each once and each a
// reference an ImagePullJob accepts.
func validateImages(images []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case len(images) == 0:
		allErrs = append(allErrs, field.Required(fldPath, "at least one image to pull"))
	case len(images) > MaxImages:
		allErrs = append(allErrs, field.TooMany(fldPath, len(images), MaxImages))
	}
	seen := sets.New[string]()
	for i, image := range images {
		if seen.Has(image) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), image))
			continue
		}
		seen.Insert(image)
		allErrs = append(allErrs, imagepulljobwebhook.ValidateImage(image, fldPath.Index(i))...)
	}
	return allErrs
}

// validateMaxActiveImages checks the value of the annotation limiting the running children.
func validateMaxActiveImages(annotations map[string]string) field.ErrorList {
	value, ok := annotations[imagelistpulljob.MaxActiveImagesAnnotation]
	if !ok {
		return nil
	}
	if _, err := imagelistpulljob.ParseMaxActiveImages(value); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key(imagelistpulljob.MaxActiveImagesAnnotation), value, "must be a positive integer")}
	}
	return nil
}
