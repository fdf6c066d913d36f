// Package features defines bosun's feature gates. Both binaries parse --feature-gates into
// DefaultMutableFeatureGate; controllers read DefaultFeatureGate.
//
// Gates that share a name with an upstream kube-controller-manager gate mean the same thing,
// so an operator's --feature-gates line carries over unchanged.
package features

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

const (
	// PodDeletionCost makes the controller.kubernetes.io/pod-deletion-cost annotation take part
	// in ranking pods for scale-down.
	PodDeletionCost featuregate.Feature = "PodDeletionCost"

	// DeploymentReplicaSetTerminatingReplicas makes ReplicaSet and Deployment status report
	// .status.terminatingReplicas.
	DeploymentReplicaSetTerminatingReplicas featuregate.Feature = "DeploymentReplicaSetTerminatingReplicas"

	// StaleControllerConsistencyReplicaSet makes the ReplicaSet controller wait until its pod
	// cache has observed its own writes before syncing again.
	StaleControllerConsistencyReplicaSet featuregate.Feature = "StaleControllerConsistencyReplicaSet"

	// LogarithmicScaleDown ranks pods of similar age in logarithmic buckets on scale-down.
	// It is GA upstream and cannot be switched off.
	LogarithmicScaleDown featuregate.Feature = "LogarithmicScaleDown"

	// AdvancedDaemonSetStrictMaxUnavailable makes the Advanced DaemonSet controller count the
	// replacement of old pods that are already unavailable against maxUnavailable. Without it
	// (OpenKruise's behaviour) such pods are replaced outside the budget, so two template
	// changes within minReadySeconds can take every pod of a DaemonSet down at once.
	AdvancedDaemonSetStrictMaxUnavailable featuregate.Feature = "AdvancedDaemonSetStrictMaxUnavailable"

	// PodUnavailableBudgetDeleteGate makes PodUnavailableBudgets protect pods against deletion
	// and eviction. OpenKruise's gate of the same name, on by default there too.
	PodUnavailableBudgetDeleteGate featuregate.Feature = "PodUnavailableBudgetDeleteGate"

	// PodUnavailableBudgetUpdateGate makes PodUnavailableBudgets protect pods against updates
	// that restart containers (image changes, in-place resizes). OpenKruise's gate of the same
	// name, off by default there too, since with it every pod update goes through the webhook.
	PodUnavailableBudgetUpdateGate featuregate.Feature = "PodUnavailableBudgetUpdateGate"

	// PodUnavailableBudgetDaemonSetReplicas counts an Advanced DaemonSet as expecting
	// status.desiredNumberScheduled pods. Without it (OpenKruise's behaviour) an Advanced
	// DaemonSet has no replica count, so a budget over its pods protects nothing unless
	// pub.kruise.io/protect-total-replicas is set.
	PodUnavailableBudgetDaemonSetReplicas featuregate.Feature = "PodUnavailableBudgetDaemonSetReplicas"

	// PodUnavailableBudgetOwnerChain resolves the workload of a pod through its whole chain of
	// controllers, so that a budget can target a workload that manages pods through
	// ReplicaSets of its own (a rollout controller, say). Without it (OpenKruise's behaviour)
	// only a Deployment above a ReplicaSet is followed, and such a budget covers no pod.
	PodUnavailableBudgetOwnerChain featuregate.Feature = "PodUnavailableBudgetOwnerChain"

	// KruiseDaemon enables the node agent's APIs: with it off the webhooks refuse every new
	// ContainerRecreateRequest and NodeImage (403), as OpenKruise's gate of the same name does.
	KruiseDaemon featuregate.Feature = "KruiseDaemon"

	// ImagePullJobGate enables ImagePullJobs: with it off the webhook refuses them (403).
	// OpenKruise ships it off; bosun ships it on, since running bosun's imagepulljob
	// controller is already an operator's choice (--controllers).
	ImagePullJobGate featuregate.Feature = "ImagePullJobGate"

	// PreDownloadImageForDaemonSetUpdate makes the Advanced DaemonSet controller pull the new
	// images of a rollout ahead of it: for each container whose image a new revision changes
	// it creates an ImagePullJob over the nodes of the pods still on older revisions, and
	// deletes those jobs once every pod is updated. OpenKruise's gate of the same name, off by
	// default there too. It needs the API server to serve apps.kruise.io ImagePullJobs;
	// without them it does nothing.
	PreDownloadImageForDaemonSetUpdate featuregate.Feature = "PreDownloadImageForDaemonSetUpdate"

	// PreDownloadImageForInPlaceUpdate makes the CloneSet controller pull the new images of
	// an in-place rollout ahead of it: once enough pods of a new revision are ready, it
	// creates, for each container whose image the revision changes, an ImagePullJob over the
	// nodes of the pods still on other revisions, and deletes those jobs once the CloneSet's
	// current revision is its update revision. OpenKruise's gate of the same name, off by
	// default there too. It needs the API server to serve apps.kruise.io ImagePullJobs;
	// without them it does nothing.
	PreDownloadImageForInPlaceUpdate featuregate.Feature = "PreDownloadImageForInPlaceUpdate"

	// TemplateNoDefaults stops the CloneSet's defaulting webhook from writing the core pod
	// and claim defaults into its templates (restartPolicy, dnsPolicy, probe timings, claim
	// phase, ...). OpenKruise's gate of the same name, off by default there too. The
	// template feeds the revision hash, so switching it changes the revision of CloneSets
	// whose template changes afterwards, as it does in OpenKruise.
	TemplateNoDefaults featuregate.Feature = "TemplateNoDefaults"

	// CloneSetShortHash makes the CloneSet controller label the pods it creates or updates
	// with controller-revision-hash set to the revision's hash alone instead of the full
	// revision name, so that long CloneSet names still fit a label value. OpenKruise's gate
	// of the same name, off by default there too. Pods are recognised by either form.
	CloneSetShortHash featuregate.Feature = "CloneSetShortHash"

	// PreparingUpdateAsUpdate makes the CloneSet controller count a pod held in
	// PreparingUpdate by an inPlaceUpdate hook as updated when it decides how many pods of
	// each revision to create or delete. OpenKruise's gate of the same name, off by default
	// there too.
	PreparingUpdateAsUpdate featuregate.Feature = "PreparingUpdateAsUpdate"

	// CloneSetPartitionRollback makes the CloneSet controller move pods back to the current
	// revision when the partition grows during a rollout. OpenKruise's gate of the same name,
	// off by default there too.
	CloneSetPartitionRollback featuregate.Feature = "CloneSetPartitionRollback"

	// RecreatePodWhenChangeVCTInCloneSetGate makes the CloneSet controller recreate, rather
	// than update in place, the pods of a revision whose volume claim templates differ from
	// the update revision's (InPlaceOnly CloneSets excepted). OpenKruise's gate of the same
	// name, off by default there too.
	RecreatePodWhenChangeVCTInCloneSetGate featuregate.Feature = "RecreatePodWhenChangeVCTInCloneSetGate"

	// KruisePodReadinessGate makes the mutating pod webhook add the KruisePodReady readiness
	// gate to every pod it admits, not only to those whose controller is in group
	// apps.kruise.io. OpenKruise's gate of the same name, off by default there too. Pods get
	// the gate only while pod-readiness-controller runs, which sets the condition.
	KruisePodReadinessGate featuregate.Feature = "KruisePodReadinessGate"
	// InPlaceUpdateEnvFromMetadata makes the CloneSet controller update in place a pod whose
	// template changes labels or annotations that a container's env reads through a
	// fieldRef: bosun-daemon restarts that container so that the kubelet gives it the new
	// values, and reports the containers' env in the pod's runtime-containers-meta
	// annotation, which the update waits for. Without it such a change only relabels the
	// pod, and the running containers keep their old env. OpenKruise's gate of the same
	// name, on by default there too; both binaries read it, and, as in OpenKruise, the
	// controller takes it as off while KruiseDaemon is off.
	InPlaceUpdateEnvFromMetadata featuregate.Feature = "InPlaceUpdateEnvFromMetadata"

	// ForceDeleteTimeoutExpectationFeatureGate is accepted so that OpenKruise's
	// --feature-gates line carries over, and ignored: the CloneSet controller always checks
	// expectations that waited too long against the API server and drops the stale ones.
	// The gate's name is OpenKruise's, which differs from its Go identifier there too.
	ForceDeleteTimeoutExpectationFeatureGate featuregate.Feature = "ForceDeleteTimeoutExpectationGate"
)

// defaultFeatureGates holds every gate bosun knows with its default and maturity.
var defaultFeatureGates = map[featuregate.Feature]featuregate.FeatureSpec{
	PodDeletionCost:                          {Default: true, PreRelease: featuregate.Beta},
	DeploymentReplicaSetTerminatingReplicas:  {Default: true, PreRelease: featuregate.Beta},
	StaleControllerConsistencyReplicaSet:     {Default: true, PreRelease: featuregate.Beta},
	LogarithmicScaleDown:                     {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	AdvancedDaemonSetStrictMaxUnavailable:    {Default: false, PreRelease: featuregate.Alpha},
	PodUnavailableBudgetDeleteGate:           {Default: true, PreRelease: featuregate.Beta},
	PodUnavailableBudgetUpdateGate:           {Default: false, PreRelease: featuregate.Alpha},
	PodUnavailableBudgetDaemonSetReplicas:    {Default: false, PreRelease: featuregate.Alpha},
	PodUnavailableBudgetOwnerChain:           {Default: false, PreRelease: featuregate.Alpha},
	KruiseDaemon:                             {Default: true, PreRelease: featuregate.Beta},
	ImagePullJobGate:                         {Default: true, PreRelease: featuregate.Beta},
	PreDownloadImageForDaemonSetUpdate:       {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForInPlaceUpdate:         {Default: false, PreRelease: featuregate.Alpha},
	TemplateNoDefaults:                       {Default: false, PreRelease: featuregate.Alpha},
	CloneSetShortHash:                        {Default: false, PreRelease: featuregate.Alpha},
	PreparingUpdateAsUpdate:                  {Default: false, PreRelease: featuregate.Alpha},
	CloneSetPartitionRollback:                {Default: false, PreRelease: featuregate.Alpha},
	RecreatePodWhenChangeVCTInCloneSetGate:   {Default: false, PreRelease: featuregate.Alpha},
	ForceDeleteTimeoutExpectationFeatureGate: {Default: false, PreRelease: featuregate.Alpha},
	InPlaceUpdateEnvFromMetadata:             {Default: true, PreRelease: featuregate.Beta},
	KruisePodReadinessGate:                   {Default: false, PreRelease: featuregate.Alpha},
}

// DefaultMutableFeatureGate is the gate --feature-gates writes into. Only the binaries'
// flag parsing should mutate it.
var DefaultMutableFeatureGate featuregate.MutableVersionedFeatureGate = NewFeatureGate()

// DefaultFeatureGate is the read-only view controllers consult.
var DefaultFeatureGate featuregate.FeatureGate = DefaultMutableFeatureGate

// NewFeatureGate returns a fresh gate with bosun's gates and the logging gates registered.
// The logging gates must be present because component-base's logging configuration
// consults them while being applied.
func NewFeatureGate() featuregate.MutableVersionedFeatureGate {
	gate := featuregate.NewFeatureGate()
	utilruntime.Must(gate.Add(defaultFeatureGates))
	utilruntime.Must(logsapi.AddFeatureGates(gate))
	return gate
}
