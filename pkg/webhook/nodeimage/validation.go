package nodeimage

import (
	"sort"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxImages is the most images one NodeImage may list.
const MaxImages = 256

// Validate returns what is wrong with a NodeImage as admitted (after defaulting): at most
// MaxImages images with non-empty names, and per image unique non-empty tags, each with a
// createdAt, a non-negative version, a pull policy with ttlSecondsAfterFinished, and an
// imagePullPolicy of Always, IfNotPresent or none.
func Validate(ni *appsv1beta1.NodeImage) field.ErrorList {
	var errs field.ErrorList
	imagesPath := field.NewPath("spec", "images")
	if n := len(ni.Spec.Images); n > MaxImages {
		errs = append(errs, field.TooMany(imagesPath, n, MaxImages))
	}
	names := make([]string, 0, len(ni.Spec.Images))
	for name := range ni.Spec.Images {
		names = append(names, name)
	}
	// Sorted so that the same object always gets the same answer.
	sort.Strings(names)
	for _, name := range names {
		imagePath := imagesPath.Key(name)
		if name == "" {
			errs = append(errs, field.Invalid(imagesPath, name, "image names must not be empty"))
		}
		errs = append(errs, validateImage(ni.Spec.Images[name], imagePath)...)
	}
	return errs
}

func validateImage(image appsv1beta1.ImageSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(image.Tags))
	for i, tag := range image.Tags {
		tagPath := path.Child("tags").Index(i)
		switch {
		case tag.Tag == "":
			errs = append(errs, field.Required(tagPath.Child("tag"), "tags must not be empty"))
		case seen[tag.Tag]:
			errs = append(errs, field.Duplicate(tagPath.Child("tag"), tag.Tag))
		}
		seen[tag.Tag] = true
		if tag.Version < 0 {
			errs = append(errs, field.Invalid(tagPath.Child("version"), tag.Version, "must be greater than or equal to 0"))
		}
		if tag.CreatedAt == nil {
			errs = append(errs, field.Required(tagPath.Child("createdAt"), ""))
		}
		switch tag.ImagePullPolicy {
		case "", appsv1beta1.PullAlways, appsv1beta1.PullIfNotPresent:
		default:
			errs = append(errs, field.NotSupported(tagPath.Child("imagePullPolicy"), tag.ImagePullPolicy,
				[]string{string(appsv1beta1.PullAlways), string(appsv1beta1.PullIfNotPresent)}))
		}
		errs = append(errs, validatePullPolicy(tag.PullPolicy, tagPath.Child("pullPolicy"))...)
	}
	return errs
}

func validatePullPolicy(policy *appsv1beta1.ImageTagPullPolicy, path *field.Path) field.ErrorList {
	// The webhook has defaulted the policy; only a request that skipped it lacks one.
	if policy == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	if policy.TTLSecondsAfterFinished == nil {
		// Without it a finished tag would stay in spec forever.
		return field.ErrorList{field.Required(path.Child("ttlSecondsAfterFinished"), "")}
	}
	return nil
}
