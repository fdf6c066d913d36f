// Package v1beta1 holds the apps.kruise.io/v1beta1 API types served by bosun: the Advanced
// DaemonSet, CloneSet, ContainerRecreateRequest, NodeImage, ImagePullJob and
// ImageListPullJob. They are wire-compatible with OpenKruise v1beta1, field for field, so
// manifests and clients written for OpenKruise >= 1.9 work unchanged.
//
// The package declares its own copy of every type, including those whose shape equals
// apps/v1alpha1's, so that each version can evolve on its own. What v1beta1 changed:
//   - DaemonSet: the deprecated Surging rolling-update type is gone,
//     spec.scaleStrategy.partitionedScaling replaces the annotation
//     daemonset.kruise.io/progressive-create-pod, and status.updateRevision replaces
//     status.daemonSetHash;
//   - ContainerRecreateRequest: status.containerStatusSnapshot and status.conditions
//     replace the annotations crr.apps.kruise.io/sync-container-statuses and
//     crr.apps.kruise.io/unready-acquired;
//   - CloneSet: updateStrategy.type keeps RollingUpdate and OnDelete, and the way each pod
//     is updated (ReCreate, InPlaceIfPossible, InPlaceOnly) moves with the other rolling
//     update fields under updateStrategy.rollingUpdate; scaleStrategy.disablePVCReuse
//     becomes enablePVCReuse, the opposite (PVCs are no longer reused by default);
//     scaleStrategy.excludePreparingDelete replaces the label
//     apps.kruise.io/cloneset-scaling-exclude-preparing-delete, and the image
//     pre-download settings of the in-place update strategy replace the annotations
//     apps.kruise.io/image-predownload-*;
//   - NodeImage: pull secrets have a mode (bosun's apps/v1alpha1 has it as well).
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +groupName=apps.kruise.io
package v1beta1
