// Package v1beta1 holds the policy.kruise.io/v1beta1 API types served by bosun: the
// PodUnavailableBudget, wire-compatible with OpenKruise v1beta1. It declares its own
// copy of every type. What v1beta1 changed: the annotations
// kruise.io/pub-protect-operations and pub.kruise.io/protect-total-replicas became
// spec.protectOperations and spec.protectTotalReplicas, and spec.ignoredPodSelector lets
// pods bypass the budget.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +groupName=policy.kruise.io
package v1beta1
