package daemonset

import (
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func intOrStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func int32Ptr(v int32) *int32 { return &v }

func TestSetDefaults(t *testing.T) {
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	standardDefaults := &appsv1alpha1.RollingUpdateDaemonSet{
		Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: intOrStr(one), MaxSurge: intOrStr(zero),
	}
	tests := []struct {
		name string
		in   appsv1alpha1.DaemonSetSpec
		want appsv1alpha1.DaemonSetSpec
	}{{
		name: "empty spec gets every default",
		in:   appsv1alpha1.DaemonSetSpec{},
		want: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromInt32(250)),
			RevisionHistoryLimit: int32Ptr(10),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType, RollingUpdate: standardDefaults,
			},
		},
	}, {
		name: "set values are kept",
		in: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromString("10%")),
			RevisionHistoryLimit: int32Ptr(0),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.InplaceRollingUpdateType, MaxUnavailable: intOrStr(intstr.FromString("20%")),
				},
			},
		},
		want: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromString("10%")),
			RevisionHistoryLimit: int32Ptr(0),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.InplaceRollingUpdateType, MaxUnavailable: intOrStr(intstr.FromString("20%")),
				},
			},
		},
	}, {
		name: "OnDelete gets no rollingUpdate",
		in: appsv1alpha1.DaemonSetSpec{
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.OnDeleteDaemonSetStrategyType},
		},
		want: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromInt32(250)),
			RevisionHistoryLimit: int32Ptr(10),
			UpdateStrategy:       appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.OnDeleteDaemonSetStrategyType},
		},
	}, {
		name: "Surging without limits becomes Standard with maxSurge 1 and maxUnavailable 0",
		in: appsv1alpha1.DaemonSetSpec{
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.DeprecatedSurgingRollingUpdateType},
			},
		},
		want: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromInt32(250)),
			RevisionHistoryLimit: int32Ptr(10),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.StandardRollingUpdateType, MaxSurge: intOrStr(one), MaxUnavailable: intOrStr(zero),
				},
			},
		},
	}, {
		name: "Surging keeps a set maxSurge",
		in: appsv1alpha1.DaemonSetSpec{
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.DeprecatedSurgingRollingUpdateType, MaxSurge: intOrStr(intstr.FromString("30%")),
				},
			},
		},
		want: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromInt32(250)),
			RevisionHistoryLimit: int32Ptr(10),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.StandardRollingUpdateType, MaxSurge: intOrStr(intstr.FromString("30%")), MaxUnavailable: intOrStr(zero),
				},
			},
		},
	}, {
		name: "only maxSurge set: maxUnavailable stays unset",
		in: appsv1alpha1.DaemonSetSpec{
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{MaxSurge: intOrStr(one)},
			},
		},
		want: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromInt32(250)),
			RevisionHistoryLimit: int32Ptr(10),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.StandardRollingUpdateType, MaxSurge: intOrStr(one),
				},
			},
		},
	}, {
		name: "partition and paused are not defaulted",
		in: appsv1alpha1.DaemonSetSpec{
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{}},
		},
		want: appsv1alpha1.DaemonSetSpec{
			BurstReplicas:        intOrStr(intstr.FromInt32(250)),
			RevisionHistoryLimit: int32Ptr(10),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType, RollingUpdate: standardDefaults,
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := &appsv1alpha1.DaemonSet{Spec: *tt.in.DeepCopy()}
			SetDefaults(ds)
			if diff := cmp.Diff(tt.want, ds.Spec); diff != "" {
				t.Errorf("defaulted spec (-want +got):\n%s", diff)
			}
			// Defaulting twice changes nothing: the webhook runs on every update.
			again := ds.DeepCopy()
			SetDefaults(again)
			if diff := cmp.Diff(ds, again); diff != "" {
				t.Errorf("second defaulting changed the object (-first +second):\n%s", diff)
			}
		})
	}
}
