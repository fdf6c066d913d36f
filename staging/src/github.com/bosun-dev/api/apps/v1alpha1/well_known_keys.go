package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Well-known label, annotation, finalizer and condition names of the apps.kruise.io group.
// Their exact strings are part of the wire contract with OpenKruise: objects written by
// either implementation must be understood by the other, so never change them.

// Advanced DaemonSet and its pods and ControllerRevisions.
const (
	// ControllerRevisionHashLabelKey labels daemon pods and ControllerRevisions with the
	// revision hash; on a revision it equals the revision's own name suffix.
	ControllerRevisionHashLabelKey = "controller-revision-hash"

	// DaemonSetTemplateGenerationLabelKey labels daemon pods with the DaemonSet's template
	// generation. It is written only when the DaemonSet carries
	// DeprecatedTemplateGenerationAnnotationKey, and read to decide whether a pod is
	// updated.
	DaemonSetTemplateGenerationLabelKey = "pod-template-generation"

	// DeprecatedTemplateGenerationAnnotationKey is the DaemonSet annotation holding the
	// integer template generation that DaemonSetTemplateGenerationLabelKey refers to.
	DeprecatedTemplateGenerationAnnotationKey = "deprecated.daemonset.template.generation"

	// ProgressiveCreatePodAnnotation set to "true" on a DaemonSet makes its partition limit
	// pod creation too, not only updates (OpenKruise v1beta1 calls it
	// scaleStrategy.partitionedScaling).
	ProgressiveCreatePodAnnotation = "daemonset.kruise.io/progressive-create-pod"

	// InPlaceUpdateStateKey is the pod annotation holding, as JSON, the state of the pod's
	// last in-place update: revision, updateTimestamp, lastContainerStatuses, updateImages
	// and, optionally, updateEnvFromMetadata.
	InPlaceUpdateStateKey = "apps.kruise.io/inplace-update-state"

	// InPlaceUpdateStateKeyOld is the legacy spelling of InPlaceUpdateStateKey. Readers must
	// accept it; writers use InPlaceUpdateStateKey.
	InPlaceUpdateStateKeyOld = "inplace-update-state"

	// InPlaceUpdateGraceKey is the pod annotation that, while present, keeps a pod "in
	// grace" before its in-place update counts as done. The DaemonSet only reads it.
	InPlaceUpdateGraceKey = "apps.kruise.io/inplace-update-grace"

	// InPlaceUpdateReady is the readiness gate and pod condition type that keeps a pod not
	// ready while its in-place update is under way. It is added to every pod created while
	// rollingUpdateType is InPlaceIfPossible.
	InPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"

	// InPlaceUpdateStartedReason is the reason set on the InPlaceUpdateReady condition when
	// an in-place update starts (the condition then turns False).
	InPlaceUpdateStartedReason = "StartInPlaceUpdate"

	// ImagePreDownloadParallelismKey is the DaemonSet and CloneSet annotation setting the
	// parallelism of the ImagePullJobs created to pre-download a new revision's images
	// (default DefaultImagePreDownloadParallelism): a decimal integer. v1beta1 CloneSets
	// have the field inPlaceUpdateStrategy.imagePreDownloadParallelism instead.
	ImagePreDownloadParallelismKey = "apps.kruise.io/image-predownload-parallelism"

	// ImagePreDownloadTimeoutSecondsKey is the DaemonSet and CloneSet annotation setting the
	// pull timeout of pre-download ImagePullJobs (default
	// DefaultImagePreDownloadTimeoutSeconds): a decimal integer. v1beta1 CloneSets have the
	// field inPlaceUpdateStrategy.imagePreDownloadTimeoutSeconds instead.
	ImagePreDownloadTimeoutSecondsKey = "apps.kruise.io/image-predownload-timeout-seconds"

	// ImagePreDownloadMinUpdatedReadyPods is the CloneSet annotation setting how many pods
	// of a new revision must be ready before its images are pre-downloaded (default 0): a
	// decimal integer. v1beta1 CloneSets have the field
	// inPlaceUpdateStrategy.imagePreDownloadMinUpdatedReadyPods instead. (OpenKruise <= 1.8
	// also read a percentage of replicas here; such a value does not convert to the field
	// and stays in the annotation.) A DaemonSet ignores it.
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

	// KruisePodReadyUserAgentContainerRecreateRequest is the userAgent of the mark a
	// ContainerRecreateRequest with unreadyGracePeriodSeconds adds; its key is
	// "<namespace>/<request name>".
	KruisePodReadyUserAgentContainerRecreateRequest = "ContainerRecreateRequest"
)

// CloneSet.
const (
	// CloneSetScalingExcludePreparingDeleteKey, set to "true" on a CloneSet, leaves pods
	// held in PreparingDelete out of the count of pods (v1beta1 has the field
	// scaleStrategy.excludePreparingDelete instead).
	CloneSetScalingExcludePreparingDeleteKey = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"
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

	// ContainerRecreateRequestSyncContainerStatusesKey is the request annotation holding a
	// JSON list of ContainerRecreateRequestSyncContainerStatus: the pod-side status of the
	// target containers that started after the request was created.
	ContainerRecreateRequestSyncContainerStatusesKey = "crr.apps.kruise.io/sync-container-statuses"

	// ContainerRecreateRequestUnreadyAcquiredKey is both a request annotation and a request
	// finalizer. The annotation holds the RFC 3339 time the pod was marked not ready and is
	// immutable once set; the finalizer is held while the pod carries the request's
	// not-ready mark.
	ContainerRecreateRequestUnreadyAcquiredKey = "crr.apps.kruise.io/unready-acquired"

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
)
