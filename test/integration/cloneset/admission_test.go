package cloneset

import (
	"net/http"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// betaOf is the v1beta1 form of a v1alpha1 CloneSet as a v1beta1 client writes it: without
// what a conversion records for the way back.
func betaOf(cs *appsv1alpha1.CloneSet) *appsv1beta1.CloneSet {
	out := &appsv1beta1.CloneSet{}
	appsv1alpha1.ConvertCloneSetToV1beta1(cs.DeepCopy(), out)
	delete(out.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
	return out
}

// A v1alpha1 CloneSet with only a selector and a template reads back with OpenKruise's
// defaults, core pod defaults in its template included; read in v1beta1 it equals its
// twin created in v1beta1 (asking for claim reuse, v1alpha1's default).
func TestDefaulting(t *testing.T) {
	e := setup(t)
	e.startManager(t)

	cs := e.alpha.Create(t, newAlpha("defaults"))
	if got := ptr.Deref(cs.Spec.Replicas, -1); got != 1 {
		t.Errorf("replicas = %d, want 1", got)
	}
	if got := ptr.Deref(cs.Spec.RevisionHistoryLimit, -1); got != 10 {
		t.Errorf("revisionHistoryLimit = %d, want 10", got)
	}
	us := cs.Spec.UpdateStrategy
	if us.Type != appsv1alpha1.RecreateCloneSetUpdateStrategyType {
		t.Errorf("updateStrategy.type = %q, want ReCreate", us.Type)
	}
	if us.Partition == nil || *us.Partition != intstr.FromInt32(0) || us.MaxUnavailable == nil || *us.MaxUnavailable != intstr.FromString("20%") ||
		us.MaxSurge == nil || *us.MaxSurge != intstr.FromInt32(0) {
		t.Errorf("partition %v, maxUnavailable %v, maxSurge %v; want 0, 20%% and 0", us.Partition, us.MaxUnavailable, us.MaxSurge)
	}
	pod := cs.Spec.Template.Spec
	if pod.DNSPolicy != corev1.DNSClusterFirst || pod.RestartPolicy != corev1.RestartPolicyAlways || pod.SchedulerName != corev1.DefaultSchedulerName ||
		pod.Containers[0].ImagePullPolicy != corev1.PullAlways || pod.Containers[0].TerminationMessagePath != corev1.TerminationMessagePathDefault {
		t.Errorf("the pod template lacks the core defaults: %+v", pod)
	}

	// The one default the versions do not share: v1alpha1 reuses claims unless
	// disablePVCReuse, v1beta1 only with enablePVCReuse, and conversion keeps the meaning.
	twin := newBeta("defaults")
	twin.Name = "defaults-twin"
	twin.Spec.ScaleStrategy.EnablePVCReuse = true
	twin = e.beta.Create(t, twin)
	view := e.beta.Get(t, "defaults")
	if diff := cmp.Diff(view.Spec, twin.Spec); diff != "" {
		t.Errorf("the v1alpha1 CloneSet read in v1beta1 differs from its twin created in v1beta1 (-v1alpha1 +v1beta1):\n%s", diff)
	}
}

// Every rule refuses with a 422 in both versions, naming the field each version's client
// wrote; the objects OpenKruise refuses in one version only are accepted in both.
func TestValidationInBothVersions(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	// A pod no CloneSet controls.
	e.Pods().Create(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image1}}},
	})

	for _, tc := range []struct {
		name   string
		mutate func(*appsv1alpha1.CloneSet)
		// alpha and beta are texts the refusals carry in each version; empty when accepted.
		alpha, beta string
	}{
		{"empty selector", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Selector = &metav1.LabelSelector{} },
			"spec.selector: Invalid value: {}: empty selector is invalid for cloneset", "spec.selector: Invalid value: {}: empty selector is invalid for cloneset"},
		{"selector not matching the labels", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Labels = map[string]string{"app": "other"} },
			"`selector` does not match template `labels`", "`selector` does not match template `labels`"},
		{"restartPolicy Never", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			`spec.template.spec.restartPolicy: Unsupported value: "Never"`, `spec.template.spec.restartPolicy: Unsupported value: "Never"`},
		{"activeDeadlineSeconds", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) },
			"activeDeadlineSeconds in cloneset is not Supported", "activeDeadlineSeconds in cloneset is not Supported"},
		{"partition -1", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(-1)) },
			"spec.updateStrategy.partition", "spec.updateStrategy.rollingUpdate.partition"},
		{"maxUnavailable 0 with maxSurge 0", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(0))
		}, "spec.updateStrategy.maxUnavailable: Invalid value: \"0\": maxUnavailable and maxSurge should not both be less than 1",
			"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"0\": maxUnavailable and maxSurge should not both be less than 1"},
		{"InPlaceOnly with maxSurge 1", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
			cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		}, "spec.updateStrategy.maxSurge", "spec.updateStrategy.rollingUpdate.maxSurge"},
		{"duplicate podsToDelete", func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"foreign", "foreign"} },
			`spec.scaleStrategy.podsToDelete[1]: Duplicate value: "foreign"`, `spec.scaleStrategy.podsToDelete[1]: Duplicate value: "foreign"`},
		{"foreign podsToDelete", func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"foreign"} },
			"the pod is not controlled by this CloneSet", "the pod is not controlled by this CloneSet"},
		{"missing podsToDelete", func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"nowhere"} },
			"no such pod in the namespace of the CloneSet", "no such pod in the namespace of the CloneSet"},
		{"both priority kinds", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.PriorityStrategy = &appsv1alpha1.UpdatePriorityStrategy{
				WeightPriority: []appsv1alpha1.UpdatePriorityWeightTerm{{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}}},
				OrderPriority:  []appsv1alpha1.UpdatePriorityOrderTerm{{OrderedKey: "rank"}},
			}
		}, "only one of weightPriority and orderPriority can be used", "only one of weightPriority and orderPriority can be used"},
		{"duplicate scatter term", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.ScatterStrategy = appsv1alpha1.UpdateScatterStrategy{{Key: "zone", Value: "z1"}, {Key: "zone", Value: "z1"}}
		}, `spec.updateStrategy.scatterStrategy[1]: Duplicate value: "zone=z1"`, `spec.updateStrategy.rollingUpdate.scatterStrategy[1]: Duplicate value: "zone=z1"`},
		{"progressDeadlineSeconds within minReadySeconds", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.MinReadySeconds = 10
			cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
		}, "spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds", "spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds"},
		{"maxUnavailable 0 with maxSurge 1", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		}, "", ""},
		{"OnDelete", func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = appsv1alpha1.OnDeleteCloneSetUpdateStrategyType
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ToLower(strings.NewReplacer(" ", "-").Replace(tc.name))
			alpha := newAlpha(name)
			tc.mutate(alpha)
			beta := betaOf(alpha)
			beta.Name = name + "-beta"
			_, alphaErr := e.alpha.TryCreate(alpha)
			_, betaErr := e.beta.TryCreate(beta)
			if tc.alpha == "" {
				framework.MustSucceed(t, "creating it in v1alpha1", alphaErr)
				framework.MustSucceed(t, "creating it in v1beta1", betaErr)
				return
			}
			framework.ExpectRefused(t, "creating it in v1alpha1", alphaErr, http.StatusUnprocessableEntity, `admission webhook "vcloneset.kb.io" denied the request`, tc.alpha)
			framework.ExpectRefused(t, "creating it in v1beta1", betaErr, http.StatusUnprocessableEntity, `admission webhook "vcloneset.kb.io" denied the request`, tc.beta)
		})
	}
}

// The selector is immutable, with OpenKruise's message word for word; with InPlaceOnly
// the template may change only in its images; the same in both versions.
func TestUpdateRules(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	const forbidden = "spec: Forbidden: updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden"
	const inPlaceOnly = "may not change while pods are updated InPlaceOnly: only the images of containers may"

	alpha := newAlpha("rules")
	alpha.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	e.alpha.Create(t, alpha)

	_, err := e.alpha.TryUpdate("rules", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Selector.MatchLabels["tier"] = "a"
		cs.Spec.Template.Labels["tier"] = "a"
	})
	framework.ExpectRefused(t, "changing the selector in v1alpha1", err, http.StatusUnprocessableEntity, forbidden)
	_, err = e.beta.TryUpdate("rules", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Selector.MatchLabels["tier"] = "a"
		cs.Spec.Template.Labels["tier"] = "a"
	})
	framework.ExpectRefused(t, "changing the selector in v1beta1", err, http.StatusUnprocessableEntity, forbidden)

	_, err = e.alpha.TryUpdate("rules", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	})
	framework.ExpectRefused(t, "changing env under InPlaceOnly in v1alpha1", err, http.StatusUnprocessableEntity,
		"spec.template.spec.containers[0].env: Forbidden: "+inPlaceOnly)
	_, err = e.beta.TryUpdate("rules", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	})
	framework.ExpectRefused(t, "changing env under InPlaceOnly in v1beta1", err, http.StatusUnprocessableEntity,
		"spec.template.spec.containers[0].env: Forbidden: "+inPlaceOnly)

	updated := e.beta.Update(t, "rules", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = image2
		cs.Spec.Template.Labels["version"] = "2"
		cs.Spec.Replicas = ptr.To[int32](3)
	})
	if got := updated.Spec.Template.Spec.Containers[0].Image; got != image2 {
		t.Errorf("image %q after an image update, want %q", got, image2)
	}
}

// The pods an update adds to podsToDelete must exist, not be terminating and be the
// CloneSet's own: the API server answers after a live lookup of each.
func TestPodsToDelete(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	cs := e.beta.Create(t, newBeta("deleter"))
	owned := func(name string, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "deleter"}, Finalizers: finalizers,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: cs.Name, UID: cs.UID,
					Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image1}}},
		}
	}
	e.Pods().Create(t, owned("deleter-aaaaa"))
	e.Pods().Create(t, owned("deleter-bbbbb", "example.com/hold"))
	e.Pods().Delete(t, "deleter-bbbbb") // terminating until its finalizer goes

	e.alpha.Update(t, "deleter", func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"deleter-aaaaa"} })
	_, err := e.alpha.TryUpdate("deleter", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.ScaleStrategy.PodsToDelete = append(cs.Spec.ScaleStrategy.PodsToDelete, "deleter-bbbbb", "deleter-zzzzz")
	})
	framework.ExpectRefused(t, "adding a terminating and a missing pod", err, http.StatusUnprocessableEntity,
		`spec.scaleStrategy.podsToDelete[1]: Invalid value: "deleter-bbbbb": the pod is already terminating`,
		`spec.scaleStrategy.podsToDelete[2]: Invalid value: "deleter-zzzzz": no such pod in the namespace of the CloneSet`)

	// A name already listed is not looked up again: the pod may be gone by now.
	e.Pods().DeleteWith(t, "deleter-aaaaa", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	e.Pods().WaitForGone(t, "deleter-aaaaa")
	e.beta.Update(t, "deleter", func(cs *appsv1beta1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](2) })
}

// A v1beta1 write whose pre-download annotation disagrees with its field loses the
// annotation, with a warning; v1alpha1 readers then see the field's value in it.
func TestStaleCarrierRemovedWithWarning(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	cs := newBeta("carrier")
	cs.Annotations = map[string]string{appsv1beta1.ImagePreDownloadParallelismKey: "4", "example.com/team": "web"}
	cs.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{
		PodUpdatePolicy:       appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
		InPlaceUpdateStrategy: &appsv1beta1.InPlaceUpdateStrategy{ImagePreDownloadParallelism: ptr.To(intstr.FromInt32(5))},
	}
	e.warnings.take()
	created := e.beta.Create(t, cs)
	want := map[string]string{"example.com/team": "web"}
	if diff := cmp.Diff(want, created.Annotations); diff != "" {
		t.Errorf("annotations as stored (-want +got):\n%s", diff)
	}
	wantWarning := `metadata.annotations[apps.kruise.io/image-predownload-parallelism]: removed: "4" disagrees with spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism, which takes precedence`
	if got := e.warnings.take(); len(got) != 1 || got[0] != wantWarning {
		t.Errorf("warnings %q, want %q", got, wantWarning)
	}
	if got := e.alpha.Get(t, "carrier").Annotations[appsv1alpha1.ImagePreDownloadParallelismKey]; got != "5" {
		t.Errorf("v1alpha1 view has %s = %q, want \"5\"", appsv1alpha1.ImagePreDownloadParallelismKey, got)
	}
}

// A write that sets a reserved annotation of version conversion is a 400.
func TestReservedAnnotationRefused(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	cs := newBeta("reserved")
	cs.Annotations = map[string]string{appsv1alpha1.V1alpha1ConversionAnnotation: "{}"}
	_, err := e.beta.TryCreate(cs)
	framework.ExpectRefused(t, "creating a CloneSet with a reserved annotation", err, http.StatusBadRequest,
		"annotation conversion.bosun.dev/v1alpha1 is reserved for version conversion")
}
