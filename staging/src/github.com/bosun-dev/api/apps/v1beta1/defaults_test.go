package v1beta1

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// sameOrDiff reports whether want and got are semantically equal and, if not, both of
// them as JSON for the failure message.
func sameOrDiff(want, got any) (bool, string) {
	if equality.Semantic.DeepEqual(want, got) {
		return true, ""
	}
	w, _ := json.MarshalIndent(want, "", "  ")
	g, _ := json.MarshalIndent(got, "", "  ")
	return false, "want:\n" + string(w) + "\ngot:\n" + string(g)
}

func intStr(i int32) *intstr.IntOrString { v := intstr.FromInt32(i); return &v }

func strIntStr(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }

func i32(v int32) *int32 { return &v }

func boolPtr(v bool) *bool { return &v }

// podTemplateWithUndefaultedPort is a template that the core pod defaulting would change
// (it fills in the port protocol), so tests can tell whether it was defaulted.
func podTemplateWithUndefaultedPort() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "agent",
			Image: "agent:v1",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}
}

func TestSetDefaultsDaemonSet(t *testing.T) {
	tests := []struct {
		name string
		in   DaemonSetSpec
		want DaemonSetSpec
	}{{
		name: "empty spec gets a standard rolling update of one pod at a time",
		in:   DaemonSetSpec{},
		want: DaemonSetSpec{
			BurstReplicas: intStr(250),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type: RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{
					Type:           StandardRollingUpdateType,
					MaxUnavailable: intStr(1),
					MaxSurge:       intStr(0),
				},
			},
			RevisionHistoryLimit: i32(10),
		},
	}, {
		// v1beta1 has no Surging: defaulting must not turn it into a valid Standard update,
		// so that validation still rejects it.
		name: "Surging is not rewritten",
		in: DaemonSetSpec{UpdateStrategy: DaemonSetUpdateStrategy{
			RollingUpdate: &RollingUpdateDaemonSet{Type: "Surging", MaxUnavailable: intStr(0)},
		}},
		want: DaemonSetSpec{
			BurstReplicas: intStr(250),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type:          RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{Type: "Surging", MaxUnavailable: intStr(0)},
			},
			RevisionHistoryLimit: i32(10),
		},
	}, {
		// An unset scale strategy defers to the progressive-create-pod annotation, so it
		// must stay unset; an empty one must stay empty.
		name: "scaleStrategy is not defaulted",
		in: DaemonSetSpec{
			UpdateStrategy: DaemonSetUpdateStrategy{Type: OnDeleteDaemonSetStrategyType},
			ScaleStrategy:  &DaemonSetScaleStrategy{},
		},
		want: DaemonSetSpec{
			BurstReplicas:        intStr(250),
			UpdateStrategy:       DaemonSetUpdateStrategy{Type: OnDeleteDaemonSetStrategyType},
			RevisionHistoryLimit: i32(10),
			ScaleStrategy:        &DaemonSetScaleStrategy{},
		},
	}, {
		name: "only maxSurge set: maxUnavailable stays unset",
		in: DaemonSetSpec{UpdateStrategy: DaemonSetUpdateStrategy{
			RollingUpdate: &RollingUpdateDaemonSet{MaxSurge: strIntStr("10%")},
		}},
		want: DaemonSetSpec{
			BurstReplicas: intStr(250),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type: RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{
					Type:     StandardRollingUpdateType,
					MaxSurge: strIntStr("10%"),
				},
			},
			RevisionHistoryLimit: i32(10),
		},
	}, {
		name: "only maxUnavailable set: maxSurge stays unset",
		in: DaemonSetSpec{UpdateStrategy: DaemonSetUpdateStrategy{
			RollingUpdate: &RollingUpdateDaemonSet{MaxUnavailable: intStr(0)},
		}},
		want: DaemonSetSpec{
			BurstReplicas: intStr(250),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type: RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{
					Type:           StandardRollingUpdateType,
					MaxUnavailable: intStr(0),
				},
			},
			RevisionHistoryLimit: i32(10),
		},
	}, {
		name: "RollingUpdate type with nil rollingUpdate gets a defaulted one",
		in: DaemonSetSpec{UpdateStrategy: DaemonSetUpdateStrategy{
			Type: RollingUpdateDaemonSetStrategyType,
		}},
		want: DaemonSetSpec{
			BurstReplicas: intStr(250),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type: RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{
					Type:           StandardRollingUpdateType,
					MaxUnavailable: intStr(1),
					MaxSurge:       intStr(0),
				},
			},
			RevisionHistoryLimit: i32(10),
		},
	}, {
		name: "OnDelete gets no rollingUpdate and leaves an existing one alone",
		in: DaemonSetSpec{UpdateStrategy: DaemonSetUpdateStrategy{
			Type:          OnDeleteDaemonSetStrategyType,
			RollingUpdate: &RollingUpdateDaemonSet{Paused: boolPtr(true)},
		}},
		want: DaemonSetSpec{
			BurstReplicas: intStr(250),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type:          OnDeleteDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{Paused: boolPtr(true)},
			},
			RevisionHistoryLimit: i32(10),
		},
	}, {
		name: "OnDelete without rollingUpdate keeps it nil",
		in:   DaemonSetSpec{UpdateStrategy: DaemonSetUpdateStrategy{Type: OnDeleteDaemonSetStrategyType}},
		want: DaemonSetSpec{
			BurstReplicas:        intStr(250),
			UpdateStrategy:       DaemonSetUpdateStrategy{Type: OnDeleteDaemonSetStrategyType},
			RevisionHistoryLimit: i32(10),
		},
	}, {
		name: "explicit values, zeros included, are kept; partition and template are not defaulted",
		in: DaemonSetSpec{
			Template:      podTemplateWithUndefaultedPort(),
			BurstReplicas: strIntStr("10%"),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type: RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{
					Type:           InplaceRollingUpdateType,
					MaxUnavailable: strIntStr("50%"),
					Paused:         boolPtr(true),
				},
			},
			RevisionHistoryLimit: i32(0),
		},
		want: DaemonSetSpec{
			Template:      podTemplateWithUndefaultedPort(),
			BurstReplicas: strIntStr("10%"),
			UpdateStrategy: DaemonSetUpdateStrategy{
				Type: RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &RollingUpdateDaemonSet{
					Type:           InplaceRollingUpdateType,
					MaxUnavailable: strIntStr("50%"),
					Paused:         boolPtr(true),
				},
			},
			RevisionHistoryLimit: i32(0),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := &DaemonSet{Spec: *tc.in.DeepCopy()}
			SetDefaults_DaemonSet(ds)
			if same, d := sameOrDiff(tc.want, ds.Spec); !same {
				t.Fatalf("defaulted spec differs:\n%s", d)
			}
			again := ds.DeepCopy()
			SetDefaults_DaemonSet(again)
			if same, d := sameOrDiff(ds, again); !same {
				t.Fatalf("defaulting is not idempotent:\n%s", d)
			}
		})
	}
}

func TestSetDefaultsContainerRecreateRequest(t *testing.T) {
	tests := []struct {
		name string
		in   ContainerRecreateRequestSpec
		want ContainerRecreateRequestSpec
	}{{
		name: "nil strategy becomes one with failurePolicy Fail",
		in:   ContainerRecreateRequestSpec{PodName: "web-0", Containers: []ContainerRecreateRequestContainer{{Name: "app"}}},
		want: ContainerRecreateRequestSpec{
			PodName:    "web-0",
			Containers: []ContainerRecreateRequestContainer{{Name: "app"}},
			Strategy:   &ContainerRecreateRequestStrategy{FailurePolicy: ContainerRecreateRequestFailurePolicyFail},
		},
	}, {
		name: "empty failurePolicy in an existing strategy becomes Fail, other fields kept",
		in: ContainerRecreateRequestSpec{Strategy: &ContainerRecreateRequestStrategy{
			OrderedRecreate:           true,
			UnreadyGracePeriodSeconds: func() *int64 { v := int64(3); return &v }(),
		}},
		want: ContainerRecreateRequestSpec{Strategy: &ContainerRecreateRequestStrategy{
			FailurePolicy:             ContainerRecreateRequestFailurePolicyFail,
			OrderedRecreate:           true,
			UnreadyGracePeriodSeconds: func() *int64 { v := int64(3); return &v }(),
		}},
	}, {
		name: "Ignore is kept; the grace period is left to admission",
		in: ContainerRecreateRequestSpec{Strategy: &ContainerRecreateRequestStrategy{
			FailurePolicy: ContainerRecreateRequestFailurePolicyIgnore,
		}},
		want: ContainerRecreateRequestSpec{Strategy: &ContainerRecreateRequestStrategy{
			FailurePolicy: ContainerRecreateRequestFailurePolicyIgnore,
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crr := &ContainerRecreateRequest{Spec: *tc.in.DeepCopy()}
			SetDefaults_ContainerRecreateRequest(crr)
			if same, d := sameOrDiff(tc.want, crr.Spec); !same {
				t.Fatalf("defaulted spec differs:\n%s", d)
			}
			// The active label is CREATE-only admission work: defaulting, which also runs on
			// UPDATE, must never re-add it after completion removed it.
			if len(crr.Labels) != 0 {
				t.Fatalf("defaulting added labels %v", crr.Labels)
			}
		})
	}
}

func TestSetDefaultsNodeImage(t *testing.T) {
	now := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	tests := []struct {
		name string
		in   NodeImageSpec
		want NodeImageSpec
	}{{
		name: "no images: nothing to do",
		in:   NodeImageSpec{},
		want: NodeImageSpec{},
	}, {
		name: "bare tags get createdAt, a pull policy of 600 s and 3 retries",
		in: NodeImageSpec{Images: map[string]ImageSpec{
			"nginx":           {Tags: []ImageTagSpec{{Tag: "1.25"}, {Tag: "1.27"}}},
			"reg.io/team/app": {Tags: []ImageTagSpec{{Tag: "sha256:abc"}}},
		}},
		want: NodeImageSpec{Images: map[string]ImageSpec{
			"nginx": {Tags: []ImageTagSpec{
				{Tag: "1.25", CreatedAt: &now, PullPolicy: &ImageTagPullPolicy{TimeoutSeconds: i32(600), BackoffLimit: i32(3)}},
				{Tag: "1.27", CreatedAt: &now, PullPolicy: &ImageTagPullPolicy{TimeoutSeconds: i32(600), BackoffLimit: i32(3)}},
			}},
			"reg.io/team/app": {Tags: []ImageTagSpec{
				{Tag: "sha256:abc", CreatedAt: &now, PullPolicy: &ImageTagPullPolicy{TimeoutSeconds: i32(600), BackoffLimit: i32(3)}},
			}},
		}},
	}, {
		name: "explicit values are kept; ttl, deadline and imagePullPolicy are not defaulted",
		in: NodeImageSpec{Images: map[string]ImageSpec{
			"nginx": {Tags: []ImageTagSpec{{
				Tag:        "1.25",
				CreatedAt:  &earlier,
				PullPolicy: &ImageTagPullPolicy{TimeoutSeconds: i32(10), BackoffLimit: i32(0)},
				Version:    2,
			}, {
				Tag:        "1.26",
				PullPolicy: &ImageTagPullPolicy{TTLSecondsAfterFinished: i32(300)},
			}}},
		}},
		want: NodeImageSpec{Images: map[string]ImageSpec{
			"nginx": {Tags: []ImageTagSpec{{
				Tag:        "1.25",
				CreatedAt:  &earlier,
				PullPolicy: &ImageTagPullPolicy{TimeoutSeconds: i32(10), BackoffLimit: i32(0)},
				Version:    2,
			}, {
				Tag:        "1.26",
				CreatedAt:  &now,
				PullPolicy: &ImageTagPullPolicy{TimeoutSeconds: i32(600), BackoffLimit: i32(3), TTLSecondsAfterFinished: i32(300)},
			}}},
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ni := &NodeImage{Spec: *tc.in.DeepCopy()}
			setDefaultsNodeImageAt(ni, now)
			if same, d := sameOrDiff(tc.want, ni.Spec); !same {
				t.Fatalf("defaulted spec differs:\n%s", d)
			}
		})
	}
}

func TestSetDefaultsNodeImageUsesTheCurrentTime(t *testing.T) {
	ni := &NodeImage{Spec: NodeImageSpec{Images: map[string]ImageSpec{
		"nginx": {Tags: []ImageTagSpec{{Tag: "1.25"}, {Tag: "1.26"}}},
	}}}
	before := time.Now()
	SetDefaults_NodeImage(ni)
	after := time.Now()

	tags := ni.Spec.Images["nginx"].Tags
	for _, tag := range tags {
		if tag.CreatedAt == nil {
			t.Fatalf("tag %s has no createdAt", tag.Tag)
		}
		if got := tag.CreatedAt.Time; got.Before(before) || got.After(after) {
			t.Fatalf("tag %s createdAt %v is outside the call [%v, %v]", tag.Tag, got, before, after)
		}
	}
	if !tags[0].CreatedAt.Equal(tags[1].CreatedAt) {
		t.Fatalf("tags defaulted together got different times %v and %v", tags[0].CreatedAt, tags[1].CreatedAt)
	}
	if tags[0].CreatedAt == tags[1].CreatedAt {
		t.Fatalf("tags share one *metav1.Time; a later edit of one would change the other")
	}
}

func TestSetDefaultsImagePullJob(t *testing.T) {
	deadline := int64(1200)
	tests := []struct {
		name string
		in   ImagePullJobSpec
		want ImagePullJobSpec
	}{{
		name: "empty spec gets Always, 600 s, 3 retries and IfNotPresent; parallelism stays unset",
		in:   ImagePullJobSpec{Image: "nginx:1.25"},
		want: ImagePullJobSpec{Image: "nginx:1.25", ImagePullJobTemplate: ImagePullJobTemplate{
			CompletionPolicy: CompletionPolicy{Type: Always},
			PullPolicy:       &PullPolicy{TimeoutSeconds: i32(600), BackoffLimit: i32(3)},
			ImagePullPolicy:  PullIfNotPresent,
		}},
	}, {
		name: "explicit values are kept and only the missing ones filled",
		in: ImagePullJobSpec{Image: "nginx", ImagePullJobTemplate: ImagePullJobTemplate{
			Parallelism:      intStr(0),
			CompletionPolicy: CompletionPolicy{Type: Never},
			PullPolicy:       &PullPolicy{BackoffLimit: i32(0)},
			ImagePullPolicy:  PullAlways,
		}},
		want: ImagePullJobSpec{Image: "nginx", ImagePullJobTemplate: ImagePullJobTemplate{
			Parallelism:      intStr(0),
			CompletionPolicy: CompletionPolicy{Type: Never},
			PullPolicy:       &PullPolicy{TimeoutSeconds: i32(600), BackoffLimit: i32(0)},
			ImagePullPolicy:  PullAlways,
		}},
	}, {
		name: "an Always policy keeps its deadline and ttl",
		in: ImagePullJobSpec{Image: "nginx", ImagePullJobTemplate: ImagePullJobTemplate{
			CompletionPolicy: CompletionPolicy{ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: i32(5)},
			PullPolicy:       &PullPolicy{TimeoutSeconds: i32(60)},
		}},
		want: ImagePullJobSpec{Image: "nginx", ImagePullJobTemplate: ImagePullJobTemplate{
			CompletionPolicy: CompletionPolicy{Type: Always, ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: i32(5)},
			PullPolicy:       &PullPolicy{TimeoutSeconds: i32(60), BackoffLimit: i32(3)},
			ImagePullPolicy:  PullIfNotPresent,
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := &ImagePullJob{Spec: *tc.in.DeepCopy()}
			SetDefaults_ImagePullJob(job)
			if same, d := sameOrDiff(tc.want, job.Spec); !same {
				t.Fatalf("defaulted spec differs:\n%s", d)
			}
			// The deletion-protection finalizer is CREATE-only admission work; defaulting
			// also runs on UPDATE and must not re-add it while the job is being finalized.
			if len(job.Finalizers) != 0 {
				t.Fatalf("defaulting added finalizers %v", job.Finalizers)
			}
		})
	}
}

func TestSetDefaultsImageListPullJob(t *testing.T) {
	tests := []struct {
		name string
		in   ImageListPullJobSpec
		want ImageListPullJobSpec
	}{{
		// imagePullPolicy stays empty: the children are defaulted on their own creation,
		// and the list job's template hash must match the one OpenKruise computes.
		name: "empty template gets Always, 600 s and 3 retries, and no imagePullPolicy",
		in:   ImageListPullJobSpec{Images: []string{"nginx:1.25", "busybox"}},
		want: ImageListPullJobSpec{Images: []string{"nginx:1.25", "busybox"}, ImagePullJobTemplate: ImagePullJobTemplate{
			CompletionPolicy: CompletionPolicy{Type: Always},
			PullPolicy:       &PullPolicy{TimeoutSeconds: i32(600), BackoffLimit: i32(3)},
		}},
	}, {
		name: "explicit values are kept and only the missing ones filled",
		in: ImageListPullJobSpec{Images: []string{"nginx"}, ImagePullJobTemplate: ImagePullJobTemplate{
			Parallelism:      intStr(2),
			CompletionPolicy: CompletionPolicy{Type: Never},
			PullPolicy:       &PullPolicy{TimeoutSeconds: i32(60)},
			ImagePullPolicy:  PullAlways,
		}},
		want: ImageListPullJobSpec{Images: []string{"nginx"}, ImagePullJobTemplate: ImagePullJobTemplate{
			Parallelism:      intStr(2),
			CompletionPolicy: CompletionPolicy{Type: Never},
			PullPolicy:       &PullPolicy{TimeoutSeconds: i32(60), BackoffLimit: i32(3)},
			ImagePullPolicy:  PullAlways,
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := &ImageListPullJob{Spec: *tc.in.DeepCopy()}
			SetDefaults_ImageListPullJob(job)
			if same, d := sameOrDiff(tc.want, job.Spec); !same {
				t.Fatalf("defaulted spec differs:\n%s", d)
			}
			if len(job.Finalizers) != 0 {
				t.Fatalf("defaulting added finalizers %v", job.Finalizers)
			}
		})
	}
}

// TestSchemeDefaulting checks that the scheme's generated defaulter runs the functions
// above and nothing else: in particular it must not apply the core pod defaults to a
// DaemonSet template or to the ports copied into a CRR, because OpenKruise does not.
func TestSetDefaultsCloneSet(t *testing.T) {
	vct := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	rollingDefaults := func(policy CloneSetPodUpdateStrategyType, ipu *InPlaceUpdateStrategy) CloneSetUpdateStrategy {
		return CloneSetUpdateStrategy{Type: RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &RollingUpdateCloneSetStrategy{PodUpdatePolicy: policy, InPlaceUpdateStrategy: ipu,
				Partition: intStr(0), MaxUnavailable: strIntStr("20%"), MaxSurge: intStr(0)}}
	}
	tests := []struct {
		name string
		in   CloneSetSpec
		want CloneSetSpec
	}{{
		name: "empty spec gets one replica recreated by a rolling update, 20% at a time",
		in:   CloneSetSpec{},
		want: CloneSetSpec{Replicas: i32(1), RevisionHistoryLimit: i32(10),
			UpdateStrategy: rollingDefaults(RecreateCloneSetPodUpdateStrategyType, nil)},
	}, {
		name: "in-place policies get an empty in-place strategy",
		in: CloneSetSpec{UpdateStrategy: CloneSetUpdateStrategy{RollingUpdate: &RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: InPlaceIfPossibleCloneSetPodUpdateStrategyType}}},
		want: CloneSetSpec{Replicas: i32(1), RevisionHistoryLimit: i32(10),
			UpdateStrategy: rollingDefaults(InPlaceIfPossibleCloneSetPodUpdateStrategyType, &InPlaceUpdateStrategy{})},
	}, {
		name: "InPlaceOnly keeps its in-place strategy",
		in: CloneSetSpec{UpdateStrategy: CloneSetUpdateStrategy{Type: RollingUpdateCloneSetUpdateStrategyType,
			RollingUpdate: &RollingUpdateCloneSetStrategy{PodUpdatePolicy: InPlaceOnlyCloneSetPodUpdateStrategyType,
				InPlaceUpdateStrategy: &InPlaceUpdateStrategy{GracePeriodSeconds: 10}}}},
		want: CloneSetSpec{Replicas: i32(1), RevisionHistoryLimit: i32(10),
			UpdateStrategy: rollingDefaults(InPlaceOnlyCloneSetPodUpdateStrategyType, &InPlaceUpdateStrategy{GracePeriodSeconds: 10})},
	}, {
		name: "OnDelete gets no rolling update and leaves an existing one alone",
		in: CloneSetSpec{UpdateStrategy: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType,
			RollingUpdate: &RollingUpdateCloneSetStrategy{Partition: intStr(2)}}},
		want: CloneSetSpec{Replicas: i32(1), RevisionHistoryLimit: i32(10),
			UpdateStrategy: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType,
				RollingUpdate: &RollingUpdateCloneSetStrategy{Partition: intStr(2)}}},
	}, {
		name: "OnDelete without a rolling update keeps it nil",
		in:   CloneSetSpec{UpdateStrategy: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType}},
		want: CloneSetSpec{Replicas: i32(1), RevisionHistoryLimit: i32(10),
			UpdateStrategy: CloneSetUpdateStrategy{Type: OnDeleteCloneSetUpdateStrategyType}},
	}, {
		name: "explicit values, zeros included, are kept; templates and scale strategy are not defaulted",
		in: CloneSetSpec{Replicas: i32(0), RevisionHistoryLimit: i32(0), Template: podTemplateWithUndefaultedPort(),
			VolumeClaimTemplates: vct,
			UpdateStrategy: CloneSetUpdateStrategy{Type: RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &RollingUpdateCloneSetStrategy{PodUpdatePolicy: "Bogus", Partition: strIntStr("50%"),
					MaxUnavailable: intStr(0), MaxSurge: intStr(1), Paused: true}}},
		want: CloneSetSpec{Replicas: i32(0), RevisionHistoryLimit: i32(0), Template: podTemplateWithUndefaultedPort(),
			VolumeClaimTemplates: vct,
			UpdateStrategy: CloneSetUpdateStrategy{Type: RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &RollingUpdateCloneSetStrategy{PodUpdatePolicy: "Bogus", Partition: strIntStr("50%"),
					MaxUnavailable: intStr(0), MaxSurge: intStr(1), Paused: true}}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := &CloneSet{Spec: *tc.in.DeepCopy()}
			SetDefaults_CloneSet(cs)
			if same, d := sameOrDiff(tc.want, cs.Spec); !same {
				t.Fatalf("defaulted spec differs:\n%s", d)
			}
			again := cs.DeepCopy()
			SetDefaults_CloneSet(again)
			if same, d := sameOrDiff(cs, again); !same {
				t.Fatalf("defaulting is not idempotent:\n%s", d)
			}
		})
	}
}

func TestSchemeDefaulting(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("adding types to scheme: %v", err)
	}

	ds := &DaemonSet{Spec: DaemonSetSpec{Template: podTemplateWithUndefaultedPort()}}
	scheme.Default(ds)
	want := &DaemonSet{Spec: DaemonSetSpec{Template: podTemplateWithUndefaultedPort()}}
	SetDefaults_DaemonSet(want)
	if same, d := sameOrDiff(want, ds); !same {
		t.Errorf("scheme defaulting of a DaemonSet differs from SetDefaults_DaemonSet:\n%s", d)
	}

	crr := &ContainerRecreateRequest{Spec: ContainerRecreateRequestSpec{
		PodName:    "web-0",
		Containers: []ContainerRecreateRequestContainer{{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
	}}
	scheme.Default(crr)
	if got := crr.Spec.Containers[0].Ports[0].Protocol; got != "" {
		t.Errorf("scheme defaulting set the copied port protocol to %q", got)
	}
	if crr.Spec.Strategy == nil || crr.Spec.Strategy.FailurePolicy != ContainerRecreateRequestFailurePolicyFail {
		t.Errorf("scheme defaulting did not default the CRR strategy: %+v", crr.Spec.Strategy)
	}

	list := &ImagePullJobList{Items: []ImagePullJob{{Spec: ImagePullJobSpec{Image: "a"}}, {Spec: ImagePullJobSpec{Image: "b"}}}}
	scheme.Default(list)
	for _, job := range list.Items {
		if job.Spec.CompletionPolicy.Type != Always || job.Spec.ImagePullPolicy != PullIfNotPresent {
			t.Errorf("scheme defaulting of a list did not default item %s: %+v", job.Spec.Image, job.Spec)
		}
	}

	ilpj := &ImageListPullJob{Spec: ImageListPullJobSpec{Images: []string{"a"}}}
	scheme.Default(ilpj)
	if ilpj.Spec.CompletionPolicy.Type != Always || ilpj.Spec.PullPolicy == nil {
		t.Errorf("scheme defaulting did not default the ImageListPullJob: %+v", ilpj.Spec)
	}

	cs := &CloneSet{Spec: CloneSetSpec{Template: podTemplateWithUndefaultedPort()}}
	scheme.Default(cs)
	wantCS := &CloneSet{Spec: CloneSetSpec{Template: podTemplateWithUndefaultedPort()}}
	SetDefaults_CloneSet(wantCS)
	if same, d := sameOrDiff(wantCS, cs); !same {
		t.Errorf("scheme defaulting of a CloneSet differs from SetDefaults_CloneSet:\n%s", d)
	}

	ni := &NodeImage{Spec: NodeImageSpec{Images: map[string]ImageSpec{"nginx": {Tags: []ImageTagSpec{{Tag: "1"}}}}}}
	scheme.Default(ni)
	if tag := ni.Spec.Images["nginx"].Tags[0]; tag.CreatedAt == nil || tag.PullPolicy == nil {
		t.Errorf("scheme defaulting did not default the NodeImage tag: %+v", tag)
	}
}
