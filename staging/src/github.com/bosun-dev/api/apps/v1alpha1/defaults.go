package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Default values of this group's fields. The SetDefaults_* functions below write them;
// controllers use the ones that are applied at run time instead of being written.
const (
	// DefaultDaemonSetBurstReplicas is the default spec.burstReplicas of a DaemonSet.
	DefaultDaemonSetBurstReplicas = 250
	// DefaultDaemonSetRevisionHistoryLimit is the default spec.revisionHistoryLimit of a
	// DaemonSet.
	DefaultDaemonSetRevisionHistoryLimit int32 = 10
	// DefaultDaemonSetMaxUnavailable is the maxUnavailable written when neither
	// maxUnavailable nor maxSurge is set.
	DefaultDaemonSetMaxUnavailable = 1

	// DefaultImagePullTimeoutSeconds is the default per-attempt pull timeout of an
	// ImagePullJob and of a NodeImage tag.
	DefaultImagePullTimeoutSeconds int32 = 600
	// DefaultImagePullBackoffLimit is the default number of pull retries of an ImagePullJob
	// and of a NodeImage tag.
	DefaultImagePullBackoffLimit int32 = 3
	// DefaultImagePullJobParallelism is the parallelism an ImagePullJob without
	// spec.parallelism runs with. The controller applies it; it is not written.
	DefaultImagePullJobParallelism = 1

	// DefaultCloneSetReplicas is the default spec.replicas of a CloneSet.
	DefaultCloneSetReplicas int32 = 1
	// DefaultCloneSetRevisionHistoryLimit is the default spec.revisionHistoryLimit of a
	// CloneSet.
	DefaultCloneSetRevisionHistoryLimit int32 = 10
	// DefaultCloneSetMaxUnavailable is the default maxUnavailable of a CloneSet's rolling
	// update.
	DefaultCloneSetMaxUnavailable = "20%"
)

// The functions in this file are the defaulting of this group. OpenKruise applies the same
// rules in its mutating admission webhooks (on CREATE and UPDATE); bosun calls these
// functions from its webhooks, and the generated RegisterDefaults registers them with a
// scheme. Defaults that depend on other objects or on the operation (for example a CRR's
// grace period taken from its pod, the CRR "active" label, or the ImagePullJob finalizer,
// which are CREATE-only) are left to the webhooks. Each function is idempotent.

// SetDefaults_DaemonSet defaults a DaemonSet:
//   - burstReplicas: 250;
//   - updateStrategy.type: RollingUpdate;
//   - for RollingUpdate: rollingUpdate becomes {} when nil; the deprecated Surging type
//     sets unset maxSurge to 1 and unset maxUnavailable to 0, then an empty or Surging
//     rollingUpdateType becomes Standard; when both maxUnavailable and maxSurge are still
//     unset they become 1 and 0;
//   - revisionHistoryLimit: 10.
//
// The pod template and partition are deliberately not defaulted: the template is part of
// the revision hash, which must stay equal to the one OpenKruise computes. The covers tag
// below keeps defaulter-gen from adding the core pod defaults to the template.
//
// +k8s:defaulter-gen=covers
func SetDefaults_DaemonSet(obj *DaemonSet) {
	spec := &obj.Spec
	if spec.BurstReplicas == nil {
		spec.BurstReplicas = intOrStringPtr(intstr.FromInt32(DefaultDaemonSetBurstReplicas))
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = RollingUpdateDaemonSetStrategyType
	}
	if spec.UpdateStrategy.Type == RollingUpdateDaemonSetStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &RollingUpdateDaemonSet{}
		}
		setDefaultsRollingUpdateDaemonSet(spec.UpdateStrategy.RollingUpdate)
	}
	if spec.RevisionHistoryLimit == nil {
		limit := DefaultDaemonSetRevisionHistoryLimit
		spec.RevisionHistoryLimit = &limit
	}
}

func setDefaultsRollingUpdateDaemonSet(ru *RollingUpdateDaemonSet) {
	// Surging predates maxSurge on Standard: it meant "surge one pod at a time", so it
	// is translated into the equivalent explicit limits before being renamed.
	if ru.Type == DeprecatedSurgingRollingUpdateType {
		if ru.MaxSurge == nil {
			ru.MaxSurge = intOrStringPtr(intstr.FromInt32(1))
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = intOrStringPtr(intstr.FromInt32(0))
		}
	}
	if ru.Type == "" || ru.Type == DeprecatedSurgingRollingUpdateType {
		ru.Type = StandardRollingUpdateType
	}
	if ru.MaxUnavailable == nil && ru.MaxSurge == nil {
		ru.MaxUnavailable = intOrStringPtr(intstr.FromInt32(DefaultDaemonSetMaxUnavailable))
		ru.MaxSurge = intOrStringPtr(intstr.FromInt32(0))
	}
}

// SetDefaults_ContainerRecreateRequest defaults a ContainerRecreateRequest: strategy
// becomes {} when nil and strategy.failurePolicy becomes Fail when empty.
//
// The admission webhook additionally, on CREATE only, sets the active label and takes
// strategy.terminationGracePeriodSeconds from the pod. The covers tag below keeps
// defaulter-gen from defaulting the copied container ports, which admission takes verbatim
// from the pod.
//
// +k8s:defaulter-gen=covers
func SetDefaults_ContainerRecreateRequest(obj *ContainerRecreateRequest) {
	if obj.Spec.Strategy == nil {
		obj.Spec.Strategy = &ContainerRecreateRequestStrategy{}
	}
	if obj.Spec.Strategy.FailurePolicy == "" {
		obj.Spec.Strategy.FailurePolicy = ContainerRecreateRequestFailurePolicyFail
	}
}

// SetDefaults_NodeImage defaults every tag of a NodeImage: createdAt becomes the current
// time when unset (all tags defaulted in one call share the same time), pullPolicy
// becomes {} when nil, and its timeoutSeconds and backoffLimit become 600 and 3 when
// unset. imagePullPolicy is deliberately not defaulted.
func SetDefaults_NodeImage(obj *NodeImage) {
	setDefaultsNodeImageAt(obj, metav1.Now())
}

func setDefaultsNodeImageAt(obj *NodeImage, now metav1.Time) {
	for name, image := range obj.Spec.Images {
		for i := range image.Tags {
			tag := &image.Tags[i]
			if tag.CreatedAt == nil {
				createdAt := now
				tag.CreatedAt = &createdAt
			}
			if tag.PullPolicy == nil {
				tag.PullPolicy = &ImageTagPullPolicy{}
			}
			if tag.PullPolicy.TimeoutSeconds == nil {
				tag.PullPolicy.TimeoutSeconds = int32Ptr(DefaultImagePullTimeoutSeconds)
			}
			if tag.PullPolicy.BackoffLimit == nil {
				tag.PullPolicy.BackoffLimit = int32Ptr(DefaultImagePullBackoffLimit)
			}
		}
		// Map values are copies; the tags share their backing array, but write the value
		// back so the function does not depend on that.
		obj.Spec.Images[name] = image
	}
}

// SetDefaults_ImagePullJob defaults an ImagePullJob: completionPolicy.type becomes Always,
// pullPolicy becomes {} when nil with timeoutSeconds 600 and backoffLimit 3 when unset,
// and imagePullPolicy becomes IfNotPresent.
//
// parallelism is not written (the controller treats unset as 1), and the deletion
// protection finalizer is added by the admission webhook on CREATE only.
func SetDefaults_ImagePullJob(obj *ImagePullJob) {
	spec := &obj.Spec
	if spec.CompletionPolicy.Type == "" {
		spec.CompletionPolicy.Type = Always
	}
	if spec.PullPolicy == nil {
		spec.PullPolicy = &PullPolicy{}
	}
	if spec.PullPolicy.TimeoutSeconds == nil {
		spec.PullPolicy.TimeoutSeconds = int32Ptr(DefaultImagePullTimeoutSeconds)
	}
	if spec.PullPolicy.BackoffLimit == nil {
		spec.PullPolicy.BackoffLimit = int32Ptr(DefaultImagePullBackoffLimit)
	}
	if spec.ImagePullPolicy == "" {
		spec.ImagePullPolicy = PullIfNotPresent
	}
}

// SetDefaults_ImageListPullJob defaults an ImageListPullJob like the template part of an
// ImagePullJob: completionPolicy.type becomes Always, pullPolicy becomes {} when nil with
// timeoutSeconds 600 and backoffLimit 3 when unset.
//
// imagePullPolicy is deliberately left empty: the child ImagePullJobs are defaulted on
// their own creation (to IfNotPresent), and an unset value keeps the list job's template,
// hence its hash, equal to the one OpenKruise computes.
func SetDefaults_ImageListPullJob(obj *ImageListPullJob) {
	spec := &obj.Spec
	if spec.CompletionPolicy.Type == "" {
		spec.CompletionPolicy.Type = Always
	}
	if spec.PullPolicy == nil {
		spec.PullPolicy = &PullPolicy{}
	}
	if spec.PullPolicy.TimeoutSeconds == nil {
		spec.PullPolicy.TimeoutSeconds = int32Ptr(DefaultImagePullTimeoutSeconds)
	}
	if spec.PullPolicy.BackoffLimit == nil {
		spec.PullPolicy.BackoffLimit = int32Ptr(DefaultImagePullBackoffLimit)
	}
}

// SetDefaults_CloneSet defaults a CloneSet:
//   - replicas: 1; revisionHistoryLimit: 10;
//   - updateStrategy.type: ReCreate; inPlaceUpdateStrategy {} when nil for the in-place
//     types;
//   - unless the type is OnDelete: partition, maxUnavailable and maxSurge 0, 20% and 0
//     when unset.
//
// OpenKruise also sets those three for OnDelete, which its v1alpha1 admission rejects
// anyway. bosun accepts OnDelete and leaves them unset, so that defaulting commutes with
// conversion: v1beta1 holds them in the rolling update, which it defaults only for type
// RollingUpdate.
//
// The pod template and the volume claim templates are not defaulted here: the admission
// webhook applies the core pod and claim defaults to them on creation, and on updates only
// when they change, because the template feeds the revision hash. The covers tag below
// keeps defaulter-gen from descending into the templates.
//
// +k8s:defaulter-gen=covers
func SetDefaults_CloneSet(obj *CloneSet) {
	spec := &obj.Spec
	if spec.Replicas == nil {
		spec.Replicas = int32Ptr(DefaultCloneSetReplicas)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = int32Ptr(DefaultCloneSetRevisionHistoryLimit)
	}
	us := &spec.UpdateStrategy
	switch us.Type {
	case "":
		us.Type = RecreateCloneSetUpdateStrategyType
	case InPlaceIfPossibleCloneSetUpdateStrategyType, InPlaceOnlyCloneSetUpdateStrategyType:
		if us.InPlaceUpdateStrategy == nil {
			us.InPlaceUpdateStrategy = &InPlaceUpdateStrategy{}
		}
	}
	if us.Type == OnDeleteCloneSetUpdateStrategyType {
		return
	}
	if us.Partition == nil {
		us.Partition = intOrStringPtr(intstr.FromInt32(0))
	}
	if us.MaxUnavailable == nil {
		us.MaxUnavailable = intOrStringPtr(intstr.FromString(DefaultCloneSetMaxUnavailable))
	}
	if us.MaxSurge == nil {
		us.MaxSurge = intOrStringPtr(intstr.FromInt32(0))
	}
}

func intOrStringPtr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func int32Ptr(v int32) *int32 { return &v }
