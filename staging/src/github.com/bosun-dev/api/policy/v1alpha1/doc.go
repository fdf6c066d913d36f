// Package v1alpha1 holds the policy.kruise.io/v1alpha1 API types served by bosun: the
// PodUnavailableBudget, wire-compatible with OpenKruise v1alpha1.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:conversion-gen=github.com/bosun-dev/api/policy/v1beta1
// +groupName=policy.kruise.io
package v1alpha1
