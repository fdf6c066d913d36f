// Package v1alpha1 holds the apps.kruise.io/v1alpha1 API types served by bosun: the
// Advanced DaemonSet, CloneSet, ContainerRecreateRequest, NodeImage, ImagePullJob and
// ImageListPullJob. They are wire-compatible with OpenKruise v1alpha1, field for field, so
// existing OpenKruise manifests work unchanged. The same kinds exist in apps/v1beta1, the
// hub version, to and from which this package converts.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:conversion-gen=github.com/bosun-dev/api/apps/v1beta1
// +groupName=apps.kruise.io
package v1alpha1
