package daemonset

import (
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validDaemonSet is a defaulted DaemonSet that passes validation.
func validDaemonSet() *appsv1alpha1.DaemonSet {
	ds := &appsv1alpha1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", ResourceVersion: "1"},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent", "tier": "node"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}},
				},
			},
		},
	}
	SetDefaults(ds)
	return ds
}

type wantError struct {
	path string
	typ  field.ErrorType
}

// checkErrors fails unless errs holds exactly the wanted errors, in any order.
func checkErrors(t *testing.T, errs field.ErrorList, want []wantError) {
	t.Helper()
	remaining := append([]wantError(nil), want...)
	for _, err := range errs {
		found := false
		for i, w := range remaining {
			if w.path == err.Field && w.typ == err.Type {
				remaining = append(remaining[:i], remaining[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			t.Errorf("unexpected error: %v", err)
		}
	}
	for _, w := range remaining {
		t.Errorf("missing error %s at %s; got %v", w.typ, w.path, errs)
	}
}

// up is the v1beta1 form of a v1alpha1 DaemonSet, the form validation judges.
func up(ds *appsv1alpha1.DaemonSet) *appsv1beta1.DaemonSet {
	hub := &appsv1beta1.DaemonSet{}
	appsv1alpha1.ConvertDaemonSetToV1beta1(ds.DeepCopy(), hub)
	return hub
}

func rollingUpdate(ds *appsv1alpha1.DaemonSet) *appsv1alpha1.RollingUpdateDaemonSet {
	return ds.Spec.UpdateStrategy.RollingUpdate
}

func TestValidate(t *testing.T) {
	const ru = "spec.updateStrategy.rollingUpdate"
	tests := []struct {
		name   string
		mutate func(*appsv1alpha1.DaemonSet)
		want   []wantError
	}{
		{name: "valid", mutate: func(*appsv1alpha1.DaemonSet) {}},
		// The API server generates the name before it calls validating webhooks.
		{name: "generateName without name", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Name, ds.GenerateName = "", "agent-" },
			want: []wantError{{"metadata.name", field.ErrorTypeRequired}}},
		{name: "name not a DNS subdomain", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Name = "Agent_1" },
			want: []wantError{{"metadata.name", field.ErrorTypeInvalid}}},
		{name: "no name", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Name = "" },
			want: []wantError{{"metadata.name", field.ErrorTypeRequired}}},
		{name: "bad metadata label", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Labels = map[string]string{"a b": "c"} },
			want: []wantError{{"metadata.labels", field.ErrorTypeInvalid}}},

		// Selector.
		{name: "selector with expressions only", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"agent"}}}}
		}},
		{name: "no selector", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Selector = nil },
			want: []wantError{{"spec.selector", field.ErrorTypeRequired}}},
		{name: "empty selector", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} },
			want: []wantError{{"spec.selector", field.ErrorTypeInvalid}}},
		{name: "malformed selector", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}
		}, want: []wantError{{"spec.selector.matchExpressions[0].values", field.ErrorTypeRequired}}},
		{name: "selector not matching the template", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"app": "other"} },
			want: []wantError{{"spec.template.metadata.labels", field.ErrorTypeInvalid}}},

		// Template.
		{name: "restartPolicy Always", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }},
		{name: "restartPolicy OnFailure", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			want: []wantError{{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported}}},
		{name: "activeDeadlineSeconds", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64(60)) },
			want: []wantError{{"spec.template.spec.activeDeadlineSeconds", field.ErrorTypeForbidden}}},
		{name: "no containers", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers = nil },
			want: []wantError{{"spec.template.spec.containers", field.ErrorTypeRequired}}},
		{name: "container without image", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "" },
			want: []wantError{{"spec.template.spec.containers[0].image", field.ErrorTypeRequired}}},
		{name: "container name not a DNS label", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Name = "Agent" },
			want: []wantError{{"spec.template.spec.containers[0].name", field.ErrorTypeInvalid}}},
		{name: "container name shared with an init container", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "agent", Image: "busybox"}}
		}, want: []wantError{{"spec.template.spec.containers[0].name", field.ErrorTypeDuplicate}}},
		{name: "bad template annotation", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Annotations = map[string]string{"-bad": ""} },
			want: []wantError{{"spec.template.metadata.annotations", field.ErrorTypeInvalid}}},
		{name: "bad node selector", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge node"}
		},
			want: []wantError{{"spec.template.spec.nodeSelector", field.ErrorTypeInvalid}}},

		// Update strategy.
		{name: "OnDelete", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.OnDeleteDaemonSetStrategyType}
		}},
		{name: "unknown strategy type", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Recreate" },
			want: []wantError{{"spec.updateStrategy.type", field.ErrorTypeNotSupported}}},
		{name: "RollingUpdate without rollingUpdate", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			want: []wantError{{ru, field.ErrorTypeRequired}}},
		{name: "unknown rollingUpdateType", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Type = "Blue" },
			want: []wantError{{ru + ".rollingUpdateType", field.ErrorTypeNotSupported}}},
		{name: "maxSurge with maxUnavailable 0%", mutate: func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).MaxSurge, rollingUpdate(ds).MaxUnavailable = intOrStr(intstr.FromString("25%")), intOrStr(intstr.FromString("0%"))
		}},
		{name: "maxUnavailable 100%", mutate: func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).MaxUnavailable = intOrStr(intstr.FromString("100%"))
		}},
		{name: "both maxSurge and maxUnavailable", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).MaxSurge = intOrStr(intstr.FromInt32(1)) },
			want: []wantError{{ru + ".maxSurge", field.ErrorTypeInvalid}}},
		{name: "both zero", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).MaxUnavailable = intOrStr(intstr.FromInt32(0)) },
			want: []wantError{{ru + ".maxUnavailable", field.ErrorTypeRequired}}},
		{name: "both unset", mutate: func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).MaxUnavailable, rollingUpdate(ds).MaxSurge = nil, nil
		},
			want: []wantError{{ru + ".maxUnavailable", field.ErrorTypeRequired}}},
		{name: "negative maxUnavailable", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).MaxUnavailable = intOrStr(intstr.FromInt32(-1)) },
			want: []wantError{{ru + ".maxUnavailable", field.ErrorTypeInvalid}}},
		{name: "maxUnavailable over 100%", mutate: func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).MaxUnavailable = intOrStr(intstr.FromString("101%"))
		},
			want: []wantError{{ru + ".maxUnavailable", field.ErrorTypeInvalid}}},
		{name: "maxSurge not a percentage", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).MaxSurge = intOrStr(intstr.FromString("one")) },
			want: []wantError{{ru + ".maxSurge", field.ErrorTypeInvalid}}},
		{name: "InPlaceIfPossible with maxUnavailable", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Type = appsv1alpha1.InplaceRollingUpdateType }},
		{name: "InPlaceIfPossible with maxSurge", mutate: func(ds *appsv1alpha1.DaemonSet) {
			r := rollingUpdate(ds)
			r.Type, r.MaxSurge, r.MaxUnavailable = appsv1alpha1.InplaceRollingUpdateType, intOrStr(intstr.FromInt32(1)), intOrStr(intstr.FromInt32(0))
		}, want: []wantError{{ru + ".maxSurge", field.ErrorTypeInvalid}}},
		{name: "partition 50%", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Partition = intOrStr(intstr.FromString("50%")) }},
		{name: "partition 3", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Partition = intOrStr(intstr.FromInt32(3)) }},
		{name: "partition 120%", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Partition = intOrStr(intstr.FromString("120%")) },
			want: []wantError{{ru + ".partition", field.ErrorTypeInvalid}}},
		{name: "negative partition", mutate: func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Partition = intOrStr(intstr.FromInt32(-2)) },
			want: []wantError{{ru + ".partition", field.ErrorTypeInvalid}}},
		{name: "node selector", mutate: func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}},
		{name: "malformed node selector", mutate: func(ds *appsv1alpha1.DaemonSet) {
			rollingUpdate(ds).Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "not ok"}}
		}, want: []wantError{{ru + ".selector.matchLabels", field.ErrorTypeInvalid}}},

		// Other fields.
		{name: "negative minReadySeconds", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.MinReadySeconds = -1 },
			want: []wantError{{"spec.minReadySeconds", field.ErrorTypeInvalid}}},
		{name: "revisionHistoryLimit 0", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.RevisionHistoryLimit = int32Ptr(0) }},
		{name: "negative revisionHistoryLimit", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.RevisionHistoryLimit = int32Ptr(-1) },
			want: []wantError{{"spec.revisionHistoryLimit", field.ErrorTypeInvalid}}},
		{name: "burstReplicas is not validated", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.BurstReplicas = intOrStr(intstr.FromString("lots")) }},
		{name: "preDelete and preNormal hooks", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Lifecycle = &appsv1alpha1.Lifecycle{
				PreDelete: &appsv1alpha1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true},
				PreNormal: &appsv1alpha1.LifecycleHook{FinalizersHandler: []string{"example.com/ready"}},
			}
		}},
		{name: "inPlaceUpdate hook", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Lifecycle = &appsv1alpha1.Lifecycle{InPlaceUpdate: &appsv1alpha1.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
		}, want: []wantError{{"spec.lifecycle.inPlaceUpdate", field.ErrorTypeForbidden}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := validDaemonSet()
			tt.mutate(ds)
			checkErrors(t, Validate(up(ds)), tt.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1alpha1.DaemonSet)
		want   []wantError
	}{
		{name: "no change", mutate: func(*appsv1alpha1.DaemonSet) {}},
		{name: "mutable fields change", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.Containers[0].Image = "registry.example/agent:2"
			ds.Spec.Template.Labels["tier"] = "system"
			ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.OnDeleteDaemonSetStrategyType}
			ds.Spec.Lifecycle = &appsv1alpha1.Lifecycle{PreDelete: &appsv1alpha1.LifecycleHook{FinalizersHandler: []string{"example.com/hold"}}}
			ds.Spec.BurstReplicas = intOrStr(intstr.FromInt32(5))
			ds.Spec.MinReadySeconds = 30
			ds.Spec.RevisionHistoryLimit = int32Ptr(3)
			ds.Labels = map[string]string{"team": "infra"}
		}},
		{name: "selector changes", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Selector.MatchLabels["tier"] = "node" },
			want: []wantError{{"spec.selector", field.ErrorTypeInvalid}}},
		{name: "selector rewritten as an equivalent expression", mutate: func(ds *appsv1alpha1.DaemonSet) {
			ds.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"agent"}}}}
		}, want: []wantError{{"spec.selector", field.ErrorTypeInvalid}}},
		{name: "new spec is validated in full", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want: []wantError{{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported}}},
		{name: "new metadata is validated", mutate: func(ds *appsv1alpha1.DaemonSet) { ds.Annotations = map[string]string{"/bad": "x"} },
			want: []wantError{{"metadata.annotations", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldDS := validDaemonSet()
			newDS := oldDS.DeepCopy()
			tt.mutate(newDS)
			checkErrors(t, ValidateUpdate(up(newDS), up(oldDS)), tt.want)
		})
	}
}
