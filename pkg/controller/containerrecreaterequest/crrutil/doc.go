// Package crrutil reads what a ContainerRecreateRequest records about its progress the
// same way for the manager's controller, the node agent and the admission webhook. Two
// values live in v1beta1 status fields but, in requests written by v1alpha1 clients (and
// by OpenKruise without conversion), only in their v1alpha1 annotations: the container
// statuses copied from the pod and the time the pod was made not ready. A request that
// carries only the annotation must behave as it did in v1alpha1, so every reader goes
// through the functions here; writers set only the status fields.
//
// It uses no client, no cache and no clock.
package crrutil
