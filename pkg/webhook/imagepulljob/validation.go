package imagepulljob

import (
	"fmt"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob/jobutil"
	"github.com/bosun-dev/bosun/pkg/controller/imageref"
)

// Validate returns everything wrong with a job's spec, each error naming its field. It
// expects the object as the mutating webhook left it, but accepts the fields defaulting
// fills in when they are still empty.
func Validate(job *appsv1beta1.ImagePullJob) field.ErrorList {
	fldPath := field.NewPath("spec")
	allErrs := ValidateImage(job.Spec.Image, fldPath.Child("image"))
	return append(allErrs, ValidateTemplate(&job.Spec.ImagePullJobTemplate, fldPath)...)
}

// ValidateImage returns what is wrong with an image reference to pull: it must be set and
// parse as a reference.
func ValidateImage(image string, fldPath *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(fldPath, "the image to pull")}
	}
	if _, err := imageref.Parse(image); err != nil {
		return field.ErrorList{field.Invalid(fldPath, image, err.Error())}
	}
	return nil
}

// ValidateTemplate returns everything wrong with the part of a job spec that does not name
// the image, each error naming its field under fldPath (the spec holding the template
// inline). An ImageListPullJob's template is checked with it too, since every child job
// gets that template unchanged and would otherwise be refused at its own creation. The
// template is the hub version's: both versions have the same schema and rules.
func ValidateTemplate(template *appsv1beta1.ImagePullJobTemplate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, name := range template.PullSecrets {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("pullSecrets").Index(i), name, msg))
		}
	}
	allErrs = append(allErrs, validateSelectors(template, fldPath)...)
	allErrs = append(allErrs, validateParallelism(template.Parallelism, fldPath.Child("parallelism"))...)

	timeoutSeconds := appsv1beta1.DefaultImagePullTimeoutSeconds
	if pp := template.PullPolicy; pp != nil {
		if pp.TimeoutSeconds != nil {
			timeoutSeconds = *pp.TimeoutSeconds
			if timeoutSeconds <= 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("pullPolicy", "timeoutSeconds"), timeoutSeconds, "must be greater than 0"))
			}
		}
		if pp.BackoffLimit != nil && *pp.BackoffLimit < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("pullPolicy", "backoffLimit"), *pp.BackoffLimit, "must be greater than or equal to 0"))
		}
	}
	allErrs = append(allErrs, validateCompletionPolicy(&template.CompletionPolicy, timeoutSeconds, fldPath.Child("completionPolicy"))...)

	switch template.ImagePullPolicy {
	case "", appsv1beta1.PullAlways, appsv1beta1.PullIfNotPresent:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("imagePullPolicy"), template.ImagePullPolicy,
			[]string{string(appsv1beta1.PullAlways), string(appsv1beta1.PullIfNotPresent)}))
	}
	return allErrs
}

// ValidateUpdate returns the changes from old to job that are not allowed at all: the pull
// secrets are fixed at creation, since the controller has copied them for the nodes and
// would have to find and release copies the job no longer names.
func ValidateUpdate(job, old *appsv1beta1.ImagePullJob) field.ErrorList {
	if !sets.New(job.Spec.PullSecrets...).Equal(sets.New(old.Spec.PullSecrets...)) || len(job.Spec.PullSecrets) != len(old.Spec.PullSecrets) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "pullSecrets"), "field is immutable")}
	}
	return nil
}

// validateSelectors checks that the job chooses its nodes one way only: by NodeImage
// names, by NodeImage labels, or by pods.
func validateSelectors(spec *appsv1beta1.ImagePullJobTemplate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	opts := metav1validation.LabelSelectorValidationOptions{}
	if spec.Selector != nil && spec.PodSelector != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("podSelector"), "selector and podSelector are mutually exclusive"))
	}
	if sel := spec.Selector; sel != nil {
		selPath := fldPath.Child("selector")
		hasLabels := len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0
		if len(sel.Names) > 0 && hasLabels {
			allErrs = append(allErrs, field.Forbidden(selPath.Child("names"), "names and matchLabels/matchExpressions are mutually exclusive"))
		}
		seen := sets.New[string]()
		for i, name := range sel.Names {
			switch {
			case name == "":
				allErrs = append(allErrs, field.Required(selPath.Child("names").Index(i), "a NodeImage name"))
			case seen.Has(name):
				allErrs = append(allErrs, field.Duplicate(selPath.Child("names").Index(i), name))
			}
			seen.Insert(name)
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&sel.LabelSelector, opts, selPath)...)
	}
	if sel := spec.PodSelector; sel != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&sel.LabelSelector, opts, fldPath.Child("podSelector"))...)
	}
	return allErrs
}

// validateParallelism accepts integers, and strings holding one, that are not negative;
// percentages mean nothing for a job without a fixed node count.
func validateParallelism(p *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	n, err := jobutil.Parallelism(p)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, p.String(), err.Error())}
	}
	if n < 0 {
		return field.ErrorList{field.Invalid(fldPath, p.String(), "must be greater than or equal to 0")}
	}
	return nil
}

// validateCompletionPolicy checks the type, and that only jobs that complete have a
// deadline or a time to live, the deadline leaving room for at least one whole attempt.
func validateCompletionPolicy(cp *appsv1beta1.CompletionPolicy, timeoutSeconds int32, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch cp.Type {
	case "", appsv1beta1.Always:
		if cp.ActiveDeadlineSeconds != nil {
			if d := *cp.ActiveDeadlineSeconds; d <= 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), d, "must be greater than 0"))
			} else if d < int64(timeoutSeconds) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), d,
					fmt.Sprintf("must be greater than or equal to pullPolicy.timeoutSeconds (%d)", timeoutSeconds)))
			}
		}
		if cp.TTLSecondsAfterFinished != nil && *cp.TTLSecondsAfterFinished < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ttlSecondsAfterFinished"), *cp.TTLSecondsAfterFinished, "must be greater than or equal to 0"))
		}
	case appsv1beta1.Never:
		if cp.ActiveDeadlineSeconds != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("activeDeadlineSeconds"), "not allowed with type Never"))
		}
		if cp.TTLSecondsAfterFinished != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("ttlSecondsAfterFinished"), "not allowed with type Never"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), cp.Type,
			[]string{string(appsv1beta1.Always), string(appsv1beta1.Never)}))
	}
	return allErrs
}
