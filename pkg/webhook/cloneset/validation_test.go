package cloneset

import (
	"math"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validAlpha is a valid v1alpha1 CloneSet as a user writes it: nothing defaulted.
func validAlpha() *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": "web"}
	return &appsv1alpha1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("cloneset-uid")},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.example/web:1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
	}
}

// defaultedAlpha is validAlpha as the defaulting webhook leaves it.
func defaultedAlpha() *appsv1alpha1.CloneSet {
	cs := validAlpha()
	SetDefaults(cs, true)
	return cs
}

// validBeta is the v1beta1 form of defaultedAlpha, the form validation judges.
func validBeta() *appsv1beta1.CloneSet {
	return up(defaultedAlpha())
}

func rollingUpdate(cs *appsv1beta1.CloneSet) *appsv1beta1.RollingUpdateCloneSetStrategy {
	return cs.Spec.UpdateStrategy.RollingUpdate
}

// errorLines is errs as users read them, one per line.
func errorLines(errs field.ErrorList) string {
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1beta1.CloneSet)
		want   []string
	}{
		{name: "valid", mutate: func(*appsv1beta1.CloneSet) {}},
		{name: "bad name", mutate: func(cs *appsv1beta1.CloneSet) { cs.Name = "Web" },
			want: []string{`metadata.name: Invalid value: "Web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{name: "negative replicas", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](-1) },
			want: []string{`spec.replicas: Invalid value: -1: must be greater than or equal to 0`}},
		{name: "no selector", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Selector = nil },
			want: []string{`spec.selector: Required value`}},
		{name: "empty selector", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Selector = &metav1.LabelSelector{} },
			want: []string{`spec.selector: Invalid value: {}: empty selector is invalid for cloneset`}},
		{name: "invalid selector", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, want: []string{`spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`}},
		{name: "selector not matching the template", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Labels = map[string]string{"app": "other"} },
			want: []string{"spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"}},
		{name: "restartPolicy Never", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want: []string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{name: "activeDeadlineSeconds", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			want: []string{`spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in cloneset is not Supported`}},
		{name: "no containers", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.Containers = nil },
			want: []string{`spec.template.spec.containers: Required value: a pod needs at least one container`}},
		{name: "a mount of no volume", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.VolumeClaimTemplates = nil },
			want: []string{`spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data"`}},
		{name: "a claim named like a template volume", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, want: []string{`spec.volumeClaimTemplates[0].metadata.name: Duplicate value: "data"`}},
		{name: "duplicate podsToDelete", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{"a", "b", "a"} },
			want: []string{`spec.scaleStrategy.podsToDelete[2]: Duplicate value: "a"`}},
		{name: "scaleStrategy.maxUnavailable not a number", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.ScaleStrategy.MaxUnavailable = intOrStr(intstr.FromString("one"))
		}, want: []string{`spec.scaleStrategy.maxUnavailable: Invalid value: "one": must be an integer or a percentage (e.g. '20%')`}},
		{name: "scaleStrategy.maxUnavailable negative", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.ScaleStrategy.MaxUnavailable = intOrStr(intstr.FromString("-5%"))
		}, want: []string{`spec.scaleStrategy.maxUnavailable: Invalid value: "-5%": must be greater than or equal to 0`}},
		{name: "unknown type", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy.Type = "Sideways" },
			want: []string{`spec.updateStrategy.type: Unsupported value: "Sideways": supported values: "OnDelete", "RollingUpdate"`}},
		{name: "unknown podUpdatePolicy", mutate: func(cs *appsv1beta1.CloneSet) { rollingUpdate(cs).PodUpdatePolicy = "Gently" },
			want: []string{`spec.updateStrategy.rollingUpdate.podUpdatePolicy: Unsupported value: "Gently": supported values: "InPlaceIfPossible", "InPlaceOnly", "ReCreate"`}},
		{name: "partition -1", mutate: func(cs *appsv1beta1.CloneSet) { rollingUpdate(cs).Partition = intOrStr(intstr.FromInt32(-1)) },
			want: []string{`spec.updateStrategy.rollingUpdate.partition: Invalid value: "-1": must be greater than or equal to 0`}},
		{name: "partition above replicas and above 100%", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).Partition = intOrStr(intstr.FromString("150%"))
		}},
		{name: "partition of fractional percent", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).Partition = intOrStr(intstr.FromString("12.5%"))
		}},
		{name: "partition not a percentage", mutate: func(cs *appsv1beta1.CloneSet) { rollingUpdate(cs).Partition = intOrStr(intstr.FromString("2")) },
			want: []string{`spec.updateStrategy.rollingUpdate.partition: Invalid value: "2": must be an integer or a percentage (e.g. '20%')`}},
		{name: "maxUnavailable 0 and maxSurge 0", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).MaxUnavailable = intOrStr(intstr.FromInt32(0))
		}, want: []string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "0": maxUnavailable and maxSurge should not both be less than 1`}},
		{name: "maxUnavailable 0% and maxSurge 0 of no replicas", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.Replicas = ptr.To[int32](0)
			rollingUpdate(cs).MaxUnavailable = intOrStr(intstr.FromString("0%"))
		}},
		{name: "maxUnavailable 0 and maxSurge 1", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).MaxUnavailable = intOrStr(intstr.FromInt32(0))
			rollingUpdate(cs).MaxSurge = intOrStr(intstr.FromInt32(1))
		}},
		{name: "maxSurge not a number", mutate: func(cs *appsv1beta1.CloneSet) { rollingUpdate(cs).MaxSurge = intOrStr(intstr.FromString("lots")) },
			want: []string{`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "lots": must be an integer or a percentage (e.g. '20%')`}},
		{name: "InPlaceOnly with maxSurge 1", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).PodUpdatePolicy = appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType
			rollingUpdate(cs).MaxSurge = intOrStr(intstr.FromInt32(1))
		}, want: []string{`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "1": can not use maxSurge with InPlaceOnly`}},
		{name: "InPlaceOnly with a maxSurge of 0%", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).PodUpdatePolicy = appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType
			rollingUpdate(cs).MaxSurge = intOrStr(intstr.FromString("0%"))
		}},
		{name: "OnDelete", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy = appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.OnDeleteCloneSetUpdateStrategyType}
		}},
		{name: "OnDelete with limits that could replace nothing", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy = appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.OnDeleteCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{MaxUnavailable: intOrStr(intstr.FromInt32(0))}}
		}, want: []string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "0": maxUnavailable and maxSurge should not both be less than 1`}},
		{name: "both priority kinds", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{
				WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}}},
				OrderPriority:  []appsv1beta1.UpdatePriorityOrderTerm{{OrderedKey: "rank"}},
			}
		}, want: []string{`spec.updateStrategy.rollingUpdate.priorityStrategy: Forbidden: only one of weightPriority and orderPriority can be used`}},
		{name: "bad priority terms", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{
				WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
					{Weight: 0, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}},
					{Weight: 101},
					{Weight: 1, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "-"}}},
				},
			}
		}, want: []string{
			`spec.updateStrategy.rollingUpdate.priorityStrategy.weightPriority[0].weight: Invalid value: 0: must be from 1 to 100`,
			`spec.updateStrategy.rollingUpdate.priorityStrategy.weightPriority[1].weight: Invalid value: 101: must be from 1 to 100`,
			`spec.updateStrategy.rollingUpdate.priorityStrategy.weightPriority[1].matchSelector: Required value: a term must select some pods`,
			`spec.updateStrategy.rollingUpdate.priorityStrategy.weightPriority[2].matchSelector.matchLabels: Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		}},
		{name: "empty order key", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{OrderPriority: []appsv1beta1.UpdatePriorityOrderTerm{{OrderedKey: "rank"}, {}}}
		}, want: []string{`spec.updateStrategy.rollingUpdate.priorityStrategy.orderPriority[1].orderedKey: Required value`}},
		{name: "scatter terms", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).ScatterStrategy = appsv1beta1.UpdateScatterStrategy{{Key: "zone", Value: "z1"}, {Key: "zone", Value: "z2"}, {Key: "zone", Value: "z1"}, {Value: "x"}}
		}, want: []string{
			`spec.updateStrategy.rollingUpdate.scatterStrategy[2]: Duplicate value: "zone=z1"`,
			`spec.updateStrategy.rollingUpdate.scatterStrategy[3].key: Required value`,
		}},
		{name: "pre-download fields", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{
				ImagePreDownloadParallelism:         intOrStr(intstr.FromInt32(-1)),
				ImagePreDownloadTimeoutSeconds:      ptr.To[int32](-2),
				ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](-3),
			}
		}, want: []string{
			`spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism: Invalid value: -1: must be greater than or equal to 0`,
			`spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadTimeoutSeconds: Invalid value: -2: must be greater than or equal to 0`,
			`spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadMinUpdatedReadyPods: Invalid value: -3: must be greater than or equal to 0`,
		}},
		{name: "pre-download parallelism as a percentage or a word", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{ImagePreDownloadParallelism: intOrStr(intstr.FromString("50%"))}
		}, want: []string{`spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism: Invalid value: "50%": must be an integer: a percentage is not supported`}},
		{name: "pre-download parallelism as a numeric string", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{ImagePreDownloadParallelism: intOrStr(intstr.FromString("5"))}
		}},
		{name: "pre-download carriers without fields are judged as their values", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Annotations = map[string]string{
				appsv1beta1.ImagePreDownloadParallelismKey:      "-1",
				appsv1beta1.ImagePreDownloadTimeoutSecondsKey:   "soon",
				appsv1beta1.ImagePreDownloadMinUpdatedReadyPods: "2",
			}
		}, want: []string{`metadata.annotations[apps.kruise.io/image-predownload-parallelism]: Invalid value: -1: must be greater than or equal to 0`}},
		{name: "a carried field is named at its annotation", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Annotations = map[string]string{appsv1beta1.ImagePreDownloadTimeoutSecondsKey: "-2"}
			rollingUpdate(cs).InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{ImagePreDownloadTimeoutSeconds: ptr.To[int32](-2)}
		}, want: []string{`metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]: Invalid value: -2: must be greater than or equal to 0`}},
		{name: "negative revisionHistoryLimit and minReadySeconds", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.RevisionHistoryLimit = ptr.To[int32](-1)
			cs.Spec.MinReadySeconds = -1
		}, want: []string{
			`spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0`,
			`spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0`,
		}},
		{name: "progressDeadlineSeconds equal to minReadySeconds", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.MinReadySeconds = 10
			cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
		}, want: []string{`spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds`}},
		{name: "negative progressDeadlineSeconds", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](-1) },
			want: []string{
				`spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0`,
				`spec.progressDeadlineSeconds: Invalid value: -1: must be greater than minReadySeconds`,
			}},
		{name: "progressDeadlineSeconds MaxInt32 (no deadline)", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.MinReadySeconds = math.MaxInt32
			cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32)
		}},
		{name: "progressDeadlineSeconds above minReadySeconds", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.MinReadySeconds = 10
			cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](11)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := validBeta()
			tc.mutate(cs)
			if got, want := errorLines(Validate(cs)), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	inPlaceOnly := func(cs *appsv1beta1.CloneSet) {
		rollingUpdate(cs).PodUpdatePolicy = appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType
		rollingUpdate(cs).InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{}
	}
	const forbidden = `spec: Forbidden: updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden`
	for _, tc := range []struct {
		name   string
		old    func(*appsv1beta1.CloneSet)
		mutate func(*appsv1beta1.CloneSet)
		want   []string
	}{
		{name: "every mutable field", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.Replicas = ptr.To[int32](7)
			cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			cs.Spec.Lifecycle = &appsv1beta1.Lifecycle{PreDelete: &appsv1beta1.LifecycleHook{FinalizersHandler: []string{"example.com/hold"}}}
			cs.Spec.ScaleStrategy.EnablePVCReuse = true
			rollingUpdate(cs).Partition = intOrStr(intstr.FromInt32(2))
			cs.Spec.MinReadySeconds = 5
			cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
			cs.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("fast")
			cs.Spec.RevisionHistoryLimit = ptr.To[int32](3)
		}},
		{name: "selector", mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.Selector.MatchLabels = map[string]string{"app": "web", "tier": "a"}
			cs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "a"}
		}, want: []string{forbidden}},
		{name: "InPlaceOnly: images may change", old: inPlaceOnly, mutate: func(cs *appsv1beta1.CloneSet) {
			inPlaceOnly(cs)
			cs.Spec.Template.Spec.Containers[0].Image = "registry.example/web:2"
			cs.Spec.Template.Labels["version"] = "2"
			cs.Spec.Template.Annotations = map[string]string{"note": "metadata may change too"}
		}},
		{name: "InPlaceOnly: nothing else may", old: inPlaceOnly, mutate: func(cs *appsv1beta1.CloneSet) {
			inPlaceOnly(cs)
			cs.Spec.Template.Spec.Containers[0].Image = "registry.example/web:2"
			cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			cs.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "side:1"})
		}, want: []string{
			`spec.template.spec.containers: Forbidden: may not change while pods are updated InPlaceOnly: only the images of containers may`,
		}},
		{name: "InPlaceOnly: fields of a kept container", old: inPlaceOnly, mutate: func(cs *appsv1beta1.CloneSet) {
			inPlaceOnly(cs)
			cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			cs.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			cs.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "z1"}
		}, want: []string{
			`spec.template.spec.containers[0].env: Forbidden: may not change while pods are updated InPlaceOnly: only the images of containers may`,
			`spec.template.spec.containers[0].imagePullPolicy: Forbidden: may not change while pods are updated InPlaceOnly: only the images of containers may`,
			`spec.template.spec.nodeSelector: Forbidden: may not change while pods are updated InPlaceOnly: only the images of containers may`,
		}},
		{name: "InPlaceOnly applies from the update that sets it", mutate: func(cs *appsv1beta1.CloneSet) {
			inPlaceOnly(cs)
			cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}, want: []string{
			`spec.template.spec.containers[0].env: Forbidden: may not change while pods are updated InPlaceOnly: only the images of containers may`,
		}},
		{name: "InPlaceIfPossible: anything may", mutate: func(cs *appsv1beta1.CloneSet) {
			rollingUpdate(cs).PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
			cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}},
		{name: "the new object is validated in full", mutate: func(cs *appsv1beta1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](-1) },
			want: []string{`spec.replicas: Invalid value: -1: must be greater than or equal to 0`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validBeta()
			if tc.old != nil {
				tc.old(old)
			}
			cs := old.DeepCopy()
			tc.mutate(cs)
			if got, want := errorLines(ValidateUpdate(cs, old)), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
