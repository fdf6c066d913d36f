package v1beta1

import corev1 "k8s.io/api/core/v1"

// Well-known label, annotation, finalizer and condition names of the apps.kruise.io group.
// Their exact strings are part of the wire contract with OpenKruise: objects written by
// either implementation must be understood by the other, so never change them.

// Advanced DaemonSet and its pods and ControllerRevisions.
const (
	// ControllerRevisionHashLabelKey labels daemon pods and ControllerRevisions with the
	// revision hash; on a revision it equals the revision's own name suffix. A CloneSet's
	// pods carry the whole revision name, <cloneset>-<hash>, in it (only <hash> with
	// feature gate CloneSetShortHash).
	ControllerRevisionHashLabelKey = "controller-revision-hash"

	// DaemonSetTemplateGenerationLabelKey labels daemon pods with the DaemonSet's template
	// generation. It is written only when the DaemonSet carries
	// DeprecatedTemplateGenerationAnnotationKey, and read to decide whether a pod is
	// updated.
	DaemonSetTemplateGenerationLabelKey = "pod-template-generation"

	// DeprecatedTemplateGenerationAnnotationKey is the DaemonSet annotation holding the
	// integer template generation that DaemonSetTemplateGenerationLabelKey refers to.
	DeprecatedTemplateGenerationAnnotationKey = "deprecated.daemonset.template.generation"

	// ProgressiveCreatePodAnnotation is the v1alpha1 form of
	// spec.scaleStrategy.partitionedScaling: "true" on a DaemonSet makes its partition
	// limit pod creation too. A DaemonSet without scaleStrategy may still carry it (for
	// example one written in v1alpha1), and then it decides.
	ProgressiveCreatePodAnnotation = "daemonset.kruise.io/progressive-create-pod"

	// InPlaceUpdateStateKey is the pod annotation holding, as JSON, the state of the pod's
	// last in-place update: revision, updateTimestamp, lastContainerStatuses, updateImages
	// and, optionally, updateEnvFromMetadata.
	InPlaceUpdateStateKey = "apps.kruise.io/inplace-update-state"

	// InPlaceUpdateStateKeyOld is the legacy spelling of InPlaceUpdateStateKey. Readers must
	// accept it; writers use InPlaceUpdateStateKey.
	InPlaceUpdateStateKeyOld = "inplace-update-state"

	// InPlaceUpdateGraceKey is the pod annotation that, while present, keeps a pod "in
	// grace" before its in-place update counts as done. The DaemonSet only reads it; the
	// CloneSet writes it, as JSON, while the pod waits for gracePeriodSeconds before its
	// containers are changed.
	InPlaceUpdateGraceKey = "apps.kruise.io/inplace-update-grace"

	// InPlaceUpdateGraceKeyOld is the legacy spelling of InPlaceUpdateGraceKey. Readers
	// must accept it; writers use InPlaceUpdateGraceKey.
	InPlaceUpdateGraceKeyOld = "inplace-update-grace"

	// InPlaceUpdateReady is the readiness gate and pod condition type that keeps a pod not
	// ready while its in-place update is under way. A DaemonSet adds it to every pod
	// created while rollingUpdateType is InPlaceIfPossible, a CloneSet to every pod.
	InPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"

	// InPlaceUpdateStartedReason is the reason set on the InPlaceUpdateReady condition when
	// an in-place update starts (the condition then turns False).
	InPlaceUpdateStartedReason = "StartInPlaceUpdate"

	// ImagePreDownloadParallelismKey is the DaemonSet and CloneSet annotation setting the
	// parallelism of the ImagePullJobs created to pre-download a new revision's images
	// (default DefaultImagePreDownloadParallelism). It is the v1alpha1 form of a
	// CloneSet's inPlaceUpdateStrategy.imagePreDownloadParallelism, which wins when set.
	ImagePreDownloadParallelismKey = "apps.kruise.io/image-predownload-parallelism"

	// ImagePreDownloadTimeoutSecondsKey is the DaemonSet and CloneSet annotation setting the
	// pull timeout of pre-download ImagePullJobs (default
	// DefaultImagePreDownloadTimeoutSeconds). It is the v1alpha1 form of a CloneSet's
	// inPlaceUpdateStrategy.imagePreDownloadTimeoutSeconds, which wins when set.
	ImagePreDownloadTimeoutSecondsKey = "apps.kruise.io/image-predownload-timeout-seconds"

	// ImagePreDownloadMinUpdatedReadyPods is the CloneSet annotation setting how many pods
	// of a new revision must be ready before its images are pre-downloaded (default 0).
	// It is the v1alpha1 form of inPlaceUpdateStrategy.imagePreDownloadMinUpdatedReadyPods,
	// which wins when set. (OpenKruise <= 1.8 also read a percentage of replicas here; such
	// a value does not convert to the field and stays in the annotation.) A DaemonSet
	// ignores it.
	ImagePreDownloadMinUpdatedReadyPods = "apps.kruise.io/image-predownload-min-updated-ready-pods"

	// ImagePreDownloadCreatedKey labels a ControllerRevision whose pre-download
	// ImagePullJobs have been created.
	ImagePreDownloadCreatedKey = "apps.kruise.io/pre-predownload-created"

	// ImagePreDownloadIgnoredKey labels a ControllerRevision for which pre-download was
	// judged useless (the whole DaemonSet is replaced at once).
	ImagePreDownloadIgnoredKey = "apps.kruise.io/image-predownload-ignored"

	// DefaultImagePreDownloadParallelism is used when ImagePreDownloadParallelismKey is
	// absent.
	DefaultImagePreDownloadParallelism = 1

	// DefaultImagePreDownloadTimeoutSeconds is used when ImagePreDownloadTimeoutSecondsKey
	// is absent.
	DefaultImagePreDownloadTimeoutSeconds = 300
)

// Pod lifecycle hooks (shared by the workloads of this group).
const (
	// LifecycleStateKey is the pod label holding the pod's LifecycleStateType, for example
	// PreparingDelete while a preDelete hook holds the pod.
	LifecycleStateKey = "lifecycle.apps.kruise.io/state"

	// LifecycleTimestampKey is the pod annotation holding the RFC 3339 time of the last
	// change of LifecycleStateKey.
	LifecycleTimestampKey = "lifecycle.apps.kruise.io/timestamp"
)

// The KruisePodReady readiness gate, through which several parties mark a pod not ready.
const (
	// KruisePodReadyConditionType is the readiness gate and pod condition type used to
	// mark a pod not ready on purpose. Its condition message is a JSON list of marks
	// {"userAgent": ..., "key": ...}; the condition is False while any mark remains.
	// OpenKruise injects the gate into every pod controlled from this group and starts the
	// condition True.
	KruisePodReadyConditionType corev1.PodConditionType = "KruisePodReady"

	// KruisePodReadyUserAgentLifecycle is the userAgent of the mark a preDelete hook with
	// markPodNotReady adds.
	KruisePodReadyUserAgentLifecycle = "Lifecycle"

	// KruisePodReadyKeyPreDeleteHook is the key of the mark a preDelete hook with
	// markPodNotReady adds.
	KruisePodReadyKeyPreDeleteHook = "preDeleteHook"

	// KruisePodReadyKeyPreUpdateHook is the key of the mark an inPlaceUpdate hook with
	// markPodNotReady adds while the pod waits in PreparingUpdate.
	KruisePodReadyKeyPreUpdateHook = "preUpdateHook"

	// KruisePodReadyUserAgentContainerRecreateRequest is the userAgent of the mark a
	// ContainerRecreateRequest with unreadyGracePeriodSeconds adds; its key is
	// "<namespace>/<request name>".
	KruisePodReadyUserAgentContainerRecreateRequest = "ContainerRecreateRequest"
)

// CloneSet and its pods, claims and ControllerRevisions.
const (
	// CloneSetInstanceID labels a CloneSet's pod and the claims made for it with the
	// pod's instance ID: 5 characters, the pod being named <cloneset>-<id> and each claim
	// <template>-<cloneset>-<id>.
	CloneSetInstanceID = "apps.kruise.io/cloneset-instance-id"

	// CloneSetScalingExcludePreparingDeleteKey, set to "true" on a CloneSet, leaves pods
	// held in PreparingDelete out of the count of pods. It is the v1alpha1 form of
	// spec.scaleStrategy.excludePreparingDelete; conversion keeps it, and it is honoured on
	// a v1beta1 object too.
	CloneSetScalingExcludePreparingDeleteKey = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"

	// CloneSetVolumeClaimTemplateHashAnnotationKey annotates a CloneSet's
	// ControllerRevision with a hash of the volume claim templates at that revision (the
	// decimal FNV-32a of the JSON of their names and specs, sorted by name; empty without
	// templates).
	CloneSetVolumeClaimTemplateHashAnnotationKey = "kruise.io/cloneset-volumeclaimtemplate-hash"

	// SpecifiedDeleteKey, with any value, on a pod of a CloneSet asks the CloneSet to
	// delete the pod and, unless replicas is lowered, to replace it.
	SpecifiedDeleteKey = "apps.kruise.io/specified-delete"

	// PodTemplateHashLabelKey labels a CloneSet's pods with the hash part of their
	// revision's name, the suffix after its last "-".
	PodTemplateHashLabelKey = "pod-template-hash"

	// RuntimeContainersMetaKey is the pod annotation in which the node agent reports, as
	// JSON, the containers the runtime runs and their hashes; in-place updates of
	// environment taken from pod metadata wait for it.
	RuntimeContainersMetaKey = "apps.kruise.io/runtime-containers-meta"
)

// ContainerRecreateRequest.
const (
	// ContainerRecreateRequestPodUIDKey labels a request with the UID of its pod. Set at
	// admission; immutable.
	ContainerRecreateRequestPodUIDKey = "crr.apps.kruise.io/pod-uid"

	// ContainerRecreateRequestNodeNameKey labels a request with the node of its pod. Set at
	// admission; immutable. The node agent watches only requests for its node.
	ContainerRecreateRequestNodeNameKey = "crr.apps.kruise.io/node-name"

	// ContainerRecreateRequestActiveKey labels an unfinished request with "true". It is set
	// at creation and removed after completion, so that node agents watch only active
	// requests.
	ContainerRecreateRequestActiveKey = "crr.apps.kruise.io/active"

	// ContainerRecreateRequestSyncContainerStatusesKey is the v1alpha1 form of
	// status.containerStatusSnapshot: a request annotation holding the same list as JSON.
	// A request without the status field may still carry it, and then it is read.
	ContainerRecreateRequestSyncContainerStatusesKey = "crr.apps.kruise.io/sync-container-statuses"

	// ContainerRecreateRequestUnreadyAcquiredKey is both a request finalizer and a request
	// annotation. The finalizer is held while the pod carries the request's not-ready mark.
	// The annotation is the v1alpha1 form of the PreRecreateGrace condition: the RFC 3339
	// time the pod was marked not ready; a request without the condition may still carry
	// it, and then it is read.
	ContainerRecreateRequestUnreadyAcquiredKey = "crr.apps.kruise.io/unready-acquired"

	// ContainerRecreateRequestPreRecreateGraceType is the type, and the reason, of the
	// request condition whose lastTransitionTime is when the pod was marked not ready
	// before its containers are stopped.
	ContainerRecreateRequestPreRecreateGraceType = "PreRecreateGrace"

	// VirtualKubeletLabelKey and VirtualKubeletLabelValue form the label copied onto a
	// request whose pod runs on a virtual-kubelet node (which has no node agent).
	VirtualKubeletLabelKey = "type"
	// VirtualKubeletLabelValue is the value paired with VirtualKubeletLabelKey.
	VirtualKubeletLabelValue = "virtual-kubelet"
)

// NodeImage and ImagePullJob.
const (
	// FakeNodeImageLabelKey on a NodeImage keeps the manager from deleting it when no node
	// of that name exists.
	FakeNodeImageLabelKey = "apps.kruise.io/fake-nodeimage"

	// PullingImageByAnnotationKey is the sandbox-config annotation the node agent adds to
	// every runtime PullImage call, with value PullingImageByAnnotationValue.
	PullingImageByAnnotationKey = "apps.kruise.io/pulling-image-by"
	// PullingImageByAnnotationValue is the value of PullingImageByAnnotationKey.
	PullingImageByAnnotationValue = "kruise-daemon"

	// ImagePullJobProtectionFinalizer is added to every ImagePullJob on creation and
	// removed once the job's copied secrets are released.
	ImagePullJobProtectionFinalizer = "apps.kruise.io/deletion-protection"

	// ImagePullSecretSourceKeyAnnotation is set on a secret copied for ImagePullJobs to
	// "<namespace>/<name>" of the source secret.
	ImagePullSecretSourceKeyAnnotation = "imagepulljobs.kruise.io/source-key"

	// ImagePullSecretReferencesAnnotation is set on a copied secret to the sorted,
	// comma-separated "<namespace>/<job>" list of the jobs using it; the copy is deleted
	// when the list becomes empty.
	ImagePullSecretReferencesAnnotation = "imagepulljobs.kruise.io/references"

	// ImagePullSecretModeAnnotation is set on a copied secret to ImagePullSecretModeBatch.
	ImagePullSecretModeAnnotation = "imagepulljobs.kruise.io/mode"
	// ImagePullSecretModeBatch marks secrets that ImagePullJobs created.
	ImagePullSecretModeBatch = "batch"

	// DefaultImagePullSecretNamespace is the namespace where pull secrets are copied for
	// the node agents, which read secrets only there.
	DefaultImagePullSecretNamespace = "kruise-daemon-config"

	// ConversionAnnotationPrefix starts the reserved annotations in which version
	// conversion records what the other API version of an object cannot hold
	// (conversion.bosun.dev/v1alpha1 on v1beta1 objects, conversion.bosun.dev/v1beta1 on
	// v1alpha1 objects). Only conversion writes them, for every kind of both groups; they
	// belong to the object they were written on and are never copied elsewhere.
	ConversionAnnotationPrefix = "conversion.bosun.dev/"
)
