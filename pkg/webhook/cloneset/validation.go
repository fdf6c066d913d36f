package cloneset

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/webhook/podtemplate"
)

// The messages of the rules users meet most. Where OpenKruise has the rule (the update
// rule, the selector, the template, maxUnavailable with maxSurge, progressDeadlineSeconds)
// they are its words, so that what users search for finds the same answers.
const (
	// updateForbiddenMessage refuses an update of a field that may not change after
	// creation.
	updateForbiddenMessage = "updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden"
	emptySelectorMessage   = "empty selector is invalid for cloneset"
	selectorMismatch       = "`selector` does not match template `labels`"
	activeDeadlineMessage  = "activeDeadlineSeconds in cloneset is not Supported"
	bothBelowOneMessage    = "maxUnavailable and maxSurge should not both be less than 1"
	surgeInPlaceOnly       = "can not use maxSurge with InPlaceOnly"
	progressDeadlineBelow  = "must be greater than minReadySeconds"
	inPlaceOnlyChange      = "may not change while pods are updated InPlaceOnly: only the images of containers may"
	nonNegativeMessage     = "must be greater than or equal to 0"
)

// supportedUpdateTypes and supportedPodUpdatePolicies are the values v1beta1 accepts.
var (
	supportedUpdateTypes = []string{
		string(appsv1beta1.OnDeleteCloneSetUpdateStrategyType),
		string(appsv1beta1.RollingUpdateCloneSetUpdateStrategyType),
	}
	supportedPodUpdatePolicies = []string{
		string(appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType),
		string(appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType),
		string(appsv1beta1.RecreateCloneSetPodUpdateStrategyType),
	}
)

// Validate returns everything wrong with a CloneSet about to be created, each error naming
// its field. It judges the hub version: a v1alpha1 CloneSet is judged as its conversion.
// It expects the object as the mutating webhook left it (defaulted); fields the defaulting
// would have filled in are still accepted when empty, and count as their default.
//
// The pods scaleStrategy.podsToDelete names are looked up by the validating webhook, not
// here: this checks only that no name is listed twice.
func Validate(cs *appsv1beta1.CloneSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&cs.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSpec(&cs.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validatePreDownload(cs)...)
	return allErrs
}

// ValidateUpdate returns everything wrong with an update from old to cs: cs is validated in
// full, as on creation; only replicas, template, lifecycle, scaleStrategy, updateStrategy,
// minReadySeconds, progressDeadlineSeconds, volumeClaimTemplates and revisionHistoryLimit
// may change (the selector in particular is immutable: changing it would orphan the pods);
// and with podUpdatePolicy InPlaceOnly the pod spec of the template may change only in the
// images of its containers, since anything else could not be applied to running pods.
//
// Metadata update rules (immutable name, resourceVersion, ...) are left to the API server,
// which enforces them for every resource before calling admission.
func ValidateUpdate(cs, old *appsv1beta1.CloneSet) field.ErrorList {
	allErrs := Validate(cs)
	rest := cs.Spec.DeepCopy()
	rest.Replicas = old.Spec.Replicas
	rest.Template = old.Spec.Template
	rest.Lifecycle = old.Spec.Lifecycle
	rest.ScaleStrategy = old.Spec.ScaleStrategy
	rest.UpdateStrategy = old.Spec.UpdateStrategy
	rest.MinReadySeconds = old.Spec.MinReadySeconds
	rest.ProgressDeadlineSeconds = old.Spec.ProgressDeadlineSeconds
	rest.VolumeClaimTemplates = old.Spec.VolumeClaimTemplates
	rest.RevisionHistoryLimit = old.Spec.RevisionHistoryLimit
	// Whatever is left must not change, so that a field added to the type later is
	// immutable until someone decides otherwise.
	if !apiequality.Semantic.DeepEqual(rest, &old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), updateForbiddenMessage))
	}
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.PodUpdatePolicy == appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
		allErrs = append(allErrs, inPlaceOnlyErrors(&old.Spec.Template.Spec, &cs.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))...)
	}
	return allErrs
}

func validateSpec(spec *appsv1beta1.CloneSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	replicas := int(appsv1beta1.DefaultCloneSetReplicas)
	if spec.Replicas != nil {
		replicas = int(*spec.Replicas)
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	allErrs = append(allErrs, validateSelector(spec.Selector, spec.Template.Labels, fldPath)...)
	allErrs = append(allErrs, validateTemplate(&spec.Template, spec.VolumeClaimTemplates, fldPath)...)
	allErrs = append(allErrs, validateScaleStrategy(&spec.ScaleStrategy, fldPath.Child("scaleStrategy"))...)
	allErrs = append(allErrs, validateUpdateStrategy(&spec.UpdateStrategy, replicas, fldPath.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if deadline := spec.ProgressDeadlineSeconds; deadline != nil {
		deadlinePath := fldPath.Child("progressDeadlineSeconds")
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*deadline), deadlinePath)...)
		// MaxInt32 means no deadline at all; any other deadline within minReadySeconds
		// would expire before a single pod could become available.
		if *deadline != math.MaxInt32 && *deadline <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(deadlinePath, *deadline, progressDeadlineBelow))
		}
	}
	return allErrs
}

// validateSelector checks the pod selector and that the template's pods match it, without
// which the CloneSet would create pods it does not own, forever.
func validateSelector(selector *metav1.LabelSelector, templateLabels map[string]string, specPath *field.Path) field.ErrorList {
	fldPath := specPath.Child("selector")
	if selector == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	allErrs := metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
		// An empty selector selects every pod of the namespace.
		allErrs = append(allErrs, field.Invalid(fldPath, selector, emptySelectorMessage))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	parsed, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		// Unreachable after a successful validation; reported rather than ignored all the same.
		return field.ErrorList{field.Invalid(fldPath, selector, err.Error())}
	}
	if !parsed.Matches(labels.Set(templateLabels)) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("template", "metadata", "labels"), templateLabels, selectorMismatch))
	}
	return allErrs
}

// validateTemplate checks the pod template as the pods made from it will be: with one
// persistentVolumeClaim volume per claim template, named after it.
func validateTemplate(template *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim, specPath *field.Path) field.ErrorList {
	templatePath := specPath.Child("template")
	allErrs := podtemplate.Validate(template, templatePath)
	claimsPath := specPath.Child("volumeClaimTemplates")
	added := make([]podtemplate.AddedVolume, 0, len(claims))
	for i := range claims {
		added = append(added, podtemplate.AddedVolume{Name: claims[i].Name, Path: claimsPath.Index(i).Child("metadata", "name")})
	}
	podSpecPath := templatePath.Child("spec")
	allErrs = append(allErrs, podtemplate.ValidateVolumes(&template.Spec, podSpecPath, added)...)
	// A pod that stops for good would be replaced at once: the CloneSet keeps pods running.
	if policy := template.Spec.RestartPolicy; policy != "" && policy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(podSpecPath.Child("restartPolicy"), policy, []string{string(corev1.RestartPolicyAlways)}))
	}
	// A deadline would make every pod fail, and be replaced, once it runs out.
	if template.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(podSpecPath.Child("activeDeadlineSeconds"), activeDeadlineMessage))
	}
	return allErrs
}

func validateScaleStrategy(strategy *appsv1beta1.CloneSetScaleStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	namesPath := fldPath.Child("podsToDelete")
	seen := sets.New[string]()
	for i, name := range strategy.PodsToDelete {
		if seen.Has(name) {
			allErrs = append(allErrs, field.Duplicate(namesPath.Index(i), name))
		}
		seen.Insert(name)
	}
	if v := strategy.MaxUnavailable; v != nil {
		// Scaled against replicas by the controller; any replica count tells a value that
		// parses from one that does not, and its sign.
		allErrs = append(allErrs, validateScaled(v, 100, fldPath.Child("maxUnavailable"))...)
	}
	return allErrs
}

// validateScaled checks that an int-or-percent knob parses and is not negative once scaled
// against replicas.
func validateScaled(v *intstr.IntOrString, replicas int, fldPath *field.Path) field.ErrorList {
	n, err := clonesetutil.ScaledValue(v, replicas, true)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, v.String(), "must be an integer or a percentage (e.g. '20%')")}
	}
	if n < 0 {
		return field.ErrorList{field.Invalid(fldPath, v.String(), nonNegativeMessage)}
	}
	return nil
}

func validateUpdateStrategy(strategy *appsv1beta1.CloneSetUpdateStrategy, replicas int, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch strategy.Type {
	case "", appsv1beta1.RollingUpdateCloneSetUpdateStrategyType, appsv1beta1.OnDeleteCloneSetUpdateStrategyType:
		// Empty means RollingUpdate once defaulted.
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), strategy.Type, supportedUpdateTypes))
	}
	// An OnDelete CloneSet keeps a rolling update too (v1alpha1 writes its limits there):
	// maxUnavailable and maxSurge still pace the replacement of the pods podsToDelete names.
	if strategy.RollingUpdate != nil {
		allErrs = append(allErrs, validateRollingUpdate(strategy.RollingUpdate, replicas, fldPath.Child("rollingUpdate"))...)
	}
	return allErrs
}

func validateRollingUpdate(ru *appsv1beta1.RollingUpdateCloneSetStrategy, replicas int, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch ru.PodUpdatePolicy {
	case "", appsv1beta1.RecreateCloneSetPodUpdateStrategyType, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
		appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType:
		// Empty means ReCreate once defaulted.
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("podUpdatePolicy"), ru.PodUpdatePolicy, supportedPodUpdatePolicies))
	}
	if ru.Partition != nil {
		allErrs = append(allErrs, validateScaled(ru.Partition, replicas, fldPath.Child("partition"))...)
	}

	unavailablePath := fldPath.Child("maxUnavailable")
	surgePath := fldPath.Child("maxSurge")
	maxUnavailable := ru.MaxUnavailable
	if maxUnavailable == nil {
		maxUnavailable = ptrTo(intstr.FromString(appsv1beta1.DefaultCloneSetMaxUnavailable))
	}
	maxSurge := ru.MaxSurge
	if maxSurge == nil {
		maxSurge = ptrTo(intstr.FromInt32(0))
	}
	// Both rounded up, as the controller rounds them when the other is 0, the one case
	// the check below is about.
	unavailable, unavailableErr := clonesetutil.ScaledValue(maxUnavailable, replicas, true)
	if unavailableErr != nil {
		allErrs = append(allErrs, field.Invalid(unavailablePath, maxUnavailable.String(), "must be an integer or a percentage (e.g. '20%')"))
	}
	surge, surgeErr := clonesetutil.ScaledValue(maxSurge, replicas, true)
	if surgeErr != nil {
		allErrs = append(allErrs, field.Invalid(surgePath, maxSurge.String(), "must be an integer or a percentage (e.g. '20%')"))
	}
	// How the two limits combine says nothing useful while one of them is malformed.
	if unavailableErr == nil && surgeErr == nil {
		// An in-place update keeps the pod, so there is no second pod to surge with.
		if ru.PodUpdatePolicy == appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType && surge > 0 {
			allErrs = append(allErrs, field.Invalid(surgePath, maxSurge.String(), surgeInPlaceOnly))
		}
		// With neither a pod to spare nor one to add, no pod could ever be replaced.
		if replicas > 0 && unavailable < 1 && surge < 1 {
			allErrs = append(allErrs, field.Invalid(unavailablePath, maxUnavailable.String(), bothBelowOneMessage))
		}
	}

	if ps := ru.PriorityStrategy; ps != nil {
		allErrs = append(allErrs, validatePriorityStrategy(ps, fldPath.Child("priorityStrategy"))...)
	}
	allErrs = append(allErrs, validateScatterStrategy(ru.ScatterStrategy, fldPath.Child("scatterStrategy"))...)
	if ips := ru.InPlaceUpdateStrategy; ips != nil && ips.ImagePreDownloadParallelism != nil {
		// The other pre-download settings, and this one's sign, are checked with their
		// v1alpha1 annotations (validatePreDownload).
		if p := ips.ImagePreDownloadParallelism; p.Type == intstr.String && strings.HasSuffix(p.StrVal, "%") {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("inPlaceUpdateStrategy", "imagePreDownloadParallelism"), p.StrVal,
				"must be an integer: a percentage is not supported"))
		} else if _, ok := clonesetutil.ParallelismValue(p); !ok {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("inPlaceUpdateStrategy", "imagePreDownloadParallelism"), p.StrVal,
				"must be an integer"))
		}
	}
	return allErrs
}

func validatePriorityStrategy(ps *appsv1beta1.UpdatePriorityStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(ps.WeightPriority) > 0 && len(ps.OrderPriority) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath, "only one of weightPriority and orderPriority can be used"))
	}
	for i, term := range ps.WeightPriority {
		termPath := fldPath.Child("weightPriority").Index(i)
		if term.Weight < 1 || term.Weight > 100 {
			allErrs = append(allErrs, field.Invalid(termPath.Child("weight"), term.Weight, "must be from 1 to 100"))
		}
		selectorPath := termPath.Child("matchSelector")
		if len(term.MatchSelector.MatchLabels)+len(term.MatchSelector.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Required(selectorPath, "a term must select some pods"))
			continue
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&term.MatchSelector, metav1validation.LabelSelectorValidationOptions{}, selectorPath)...)
	}
	for i, term := range ps.OrderPriority {
		if term.OrderedKey == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("orderPriority").Index(i).Child("orderedKey"), ""))
		}
	}
	return allErrs
}

func validateScatterStrategy(terms appsv1beta1.UpdateScatterStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[appsv1beta1.UpdateScatterTerm]()
	for i, term := range terms {
		termPath := fldPath.Index(i)
		if term.Key == "" {
			allErrs = append(allErrs, field.Required(termPath.Child("key"), ""))
			continue
		}
		if seen.Has(term) {
			allErrs = append(allErrs, field.Duplicate(termPath, term.Key+"="+term.Value))
		}
		seen.Insert(term)
	}
	return allErrs
}

// preDownloadSetting is one image pre-download setting: the field of
// rollingUpdate.inPlaceUpdateStrategy and the v1alpha1 annotation that carries it.
type preDownloadSetting struct {
	field, annotation string
	// value returns the field's number when the field is set (ok false when it is not a
	// number, which validateRollingUpdate reports).
	value func(*appsv1beta1.InPlaceUpdateStrategy) (n int32, set, ok bool)
}

var preDownloadSettings = []preDownloadSetting{
	{"imagePreDownloadParallelism", appsv1beta1.ImagePreDownloadParallelismKey, func(s *appsv1beta1.InPlaceUpdateStrategy) (int32, bool, bool) {
		if s.ImagePreDownloadParallelism == nil {
			return 0, false, false
		}
		n, ok := clonesetutil.ParallelismValue(s.ImagePreDownloadParallelism)
		return n, true, ok
	}},
	{"imagePreDownloadTimeoutSeconds", appsv1beta1.ImagePreDownloadTimeoutSecondsKey, func(s *appsv1beta1.InPlaceUpdateStrategy) (int32, bool, bool) {
		if s.ImagePreDownloadTimeoutSeconds == nil {
			return 0, false, false
		}
		return *s.ImagePreDownloadTimeoutSeconds, true, true
	}},
	{"imagePreDownloadMinUpdatedReadyPods", appsv1beta1.ImagePreDownloadMinUpdatedReadyPods, func(s *appsv1beta1.InPlaceUpdateStrategy) (int32, bool, bool) {
		if s.ImagePreDownloadMinUpdatedReadyPods == nil {
			return 0, false, false
		}
		return *s.ImagePreDownloadMinUpdatedReadyPods, true, true
	}},
}

// validatePreDownload checks that the image pre-download settings the controller will use
// (clonesetutil.PreDownload) are not negative, wherever they come from: the field, or
// without it the v1alpha1 annotation. An error is named at the annotation when the value
// came from it (the annotation is there and says the same), so that a v1alpha1 client sees
// what it wrote. An annotation that does not parse is accepted, as v1alpha1 always accepted
// it, and ignored.
func validatePreDownload(cs *appsv1beta1.CloneSet) field.ErrorList {
	var strategy appsv1beta1.InPlaceUpdateStrategy
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		strategy = *ru.InPlaceUpdateStrategy
	}
	fieldPath := field.NewPath("spec", "updateStrategy", "rollingUpdate", "inPlaceUpdateStrategy")
	annotationsPath := field.NewPath("metadata", "annotations")
	var allErrs field.ErrorList
	for _, setting := range preDownloadSettings {
		carried, carriedOK := clonesetutil.PreDownloadAnnotation(cs, setting.annotation)
		n, set, ok := setting.value(&strategy)
		path := fieldPath.Child(setting.field)
		switch {
		case set && !ok:
			continue
		case set && carriedOK && carried == n:
			path = annotationsPath.Key(setting.annotation)
		case !set && carriedOK:
			n, path = carried, annotationsPath.Key(setting.annotation)
		case !set:
			continue
		}
		if n < 0 {
			allErrs = append(allErrs, field.Invalid(path, n, nonNegativeMessage))
		}
	}
	return allErrs
}

// inPlaceOnlyErrors returns one error per change from old to cur that is not the
// replacement of a container's image, at its path under fldPath.
func inPlaceOnlyErrors(old, cur *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, change := range podSpecChanges(old, cur) {
		if change.replaced && containerImage.MatchString(change.pointer) {
			continue
		}
		allErrs = append(allErrs, field.Forbidden(change.path(fldPath), inPlaceOnlyChange))
	}
	return allErrs
}

// containerImage is the pointer of a container's image in a pod spec.
var containerImage = regexp.MustCompile(`^/containers/[0-9]+/image$`)

// specChange is a member of a pod spec that differs between two versions of it, named by
// its JSON pointer and its segments; replaced says that both versions have it.
type specChange struct {
	pointer  string
	segments []pathSegment
	replaced bool
}

type pathSegment struct {
	name  string
	index int
	isIdx bool
}

func (c specChange) path(root *field.Path) *field.Path {
	p := root
	for _, s := range c.segments {
		if s.isIdx {
			p = p.Index(s.index)
		} else {
			p = p.Child(s.name)
		}
	}
	return p
}

// podSpecChanges compares two pod specs as JSON, in the order of their members: members
// present in one only, or of different value, at the deepest member where they differ (a
// list whose length changed is one change). A spec that does not encode counts as changed
// as a whole.
func podSpecChanges(old, cur *corev1.PodSpec) []specChange {
	var a, b any
	oldJSON, err1 := json.Marshal(old)
	curJSON, err2 := json.Marshal(cur)
	if err1 != nil || err2 != nil || json.Unmarshal(oldJSON, &a) != nil || json.Unmarshal(curJSON, &b) != nil {
		return []specChange{{pointer: "", replaced: true}}
	}
	var changes []specChange
	var walk func(a, b any, segments []pathSegment, aPresent, bPresent bool)
	walk = func(a, b any, segments []pathSegment, aPresent, bPresent bool) {
		if aPresent && bPresent && apiequality.Semantic.DeepEqual(a, b) {
			return
		}
		record := func() {
			changes = append(changes, specChange{pointer: pointerOf(segments), segments: append([]pathSegment(nil), segments...), replaced: aPresent && bPresent})
		}
		if !aPresent || !bPresent {
			record()
			return
		}
		switch av := a.(type) {
		case map[string]any:
			bv, ok := b.(map[string]any)
			if !ok {
				record()
				return
			}
			keys := sets.New[string]()
			for k := range av {
				keys.Insert(k)
			}
			for k := range bv {
				keys.Insert(k)
			}
			for _, k := range sets.List(keys) {
				ak, aok := av[k]
				bk, bok := bv[k]
				walk(ak, bk, append(segments, pathSegment{name: k}), aok, bok)
			}
		case []any:
			bv, ok := b.([]any)
			if !ok || len(av) != len(bv) {
				record()
				return
			}
			for i := range av {
				walk(av[i], bv[i], append(segments, pathSegment{index: i, isIdx: true}), true, true)
			}
		default:
			record()
		}
	}
	walk(a, b, nil, true, true)
	return changes
}

func pointerOf(segments []pathSegment) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		if s.isIdx {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.name))
		}
	}
	return b.String()
}

func ptrTo[T any](v T) *T { return &v }
