// Package conditions reads and edits the condition lists of API status types with one set
// of rules for every controller: a lookup returns a copy, edits build a new slice (the old
// one may be shared with an informer's cache), and re-asserting a condition a status already
// has changes nothing, so that a repeating state never rewrites status or restarts a clock.
//
// Go generics cannot reach struct fields, so each condition type is described once, by an
// Accessors value in this package (ReplicaSet, Deployment, DaemonSet, CloneSet, Meta); a controller for a
// new type adds its own value here rather than a private copy of the helpers.
package conditions

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// Accessors tells the helpers where condition type C keeps the fields they compare. T is
// the type of its Type field.
type Accessors[C any, T comparable] struct {
	Type   func(*C) T
	Status func(*C) corev1.ConditionStatus
	Reason func(*C) string
	// TransitionTime points at the condition's lastTransitionTime, which Set carries over
	// when a condition changes its reason but not its status.
	TransitionTime func(*C) *metav1.Time
}

// Get returns a copy of the condition of type t in conds, or nil when there is none.
func (a Accessors[C, T]) Get(conds []C, t T) *C {
	for i := range conds {
		if a.Type(&conds[i]) == t {
			found := conds[i]
			return &found
		}
	}
	return nil
}

// Set returns conds with cond recorded in it:
//   - a condition of the same type, status and reason stays exactly as it is, message and
//     times included, and conds is returned unchanged;
//   - one of the same type and status but another reason is replaced by cond, which keeps
//     the old lastTransitionTime, because the status did not transition;
//   - otherwise cond replaces any condition of its type as given.
//
// A replaced or new condition goes to the end of the list. conds itself is never modified.
func (a Accessors[C, T]) Set(conds []C, cond C) []C {
	if current := a.Get(conds, a.Type(&cond)); current != nil && a.Status(current) == a.Status(&cond) {
		if a.Reason(current) == a.Reason(&cond) {
			return conds
		}
		*a.TransitionTime(&cond) = *a.TransitionTime(current)
	}
	return append(a.Remove(conds, a.Type(&cond)), cond)
}

// Remove returns a new slice holding conds without the conditions of type t. Conditions of
// other types, including ones other writers own, stay in their order.
func (a Accessors[C, T]) Remove(conds []C, t T) []C {
	var kept []C
	for i := range conds {
		if a.Type(&conds[i]) != t {
			kept = append(kept, conds[i])
		}
	}
	return kept
}

// ReplicaSet describes apps/v1 ReplicaSet conditions.
var ReplicaSet = Accessors[appsv1.ReplicaSetCondition, appsv1.ReplicaSetConditionType]{
	Type:           func(c *appsv1.ReplicaSetCondition) appsv1.ReplicaSetConditionType { return c.Type },
	Status:         func(c *appsv1.ReplicaSetCondition) corev1.ConditionStatus { return c.Status },
	Reason:         func(c *appsv1.ReplicaSetCondition) string { return c.Reason },
	TransitionTime: func(c *appsv1.ReplicaSetCondition) *metav1.Time { return &c.LastTransitionTime },
}

// Deployment describes apps/v1 Deployment conditions.
var Deployment = Accessors[appsv1.DeploymentCondition, appsv1.DeploymentConditionType]{
	Type:           func(c *appsv1.DeploymentCondition) appsv1.DeploymentConditionType { return c.Type },
	Status:         func(c *appsv1.DeploymentCondition) corev1.ConditionStatus { return c.Status },
	Reason:         func(c *appsv1.DeploymentCondition) string { return c.Reason },
	TransitionTime: func(c *appsv1.DeploymentCondition) *metav1.Time { return &c.LastTransitionTime },
}

// DaemonSet describes apps/v1 DaemonSet conditions, which the Advanced DaemonSet
// (apps.kruise.io) status reuses.
var DaemonSet = Accessors[appsv1.DaemonSetCondition, appsv1.DaemonSetConditionType]{
	Type:           func(c *appsv1.DaemonSetCondition) appsv1.DaemonSetConditionType { return c.Type },
	Status:         func(c *appsv1.DaemonSetCondition) corev1.ConditionStatus { return c.Status },
	Reason:         func(c *appsv1.DaemonSetCondition) string { return c.Reason },
	TransitionTime: func(c *appsv1.DaemonSetCondition) *metav1.Time { return &c.LastTransitionTime },
}

// CloneSet describes apps.kruise.io CloneSet conditions.
var CloneSet = Accessors[appsv1beta1.CloneSetCondition, appsv1beta1.CloneSetConditionType]{
	Type:           func(c *appsv1beta1.CloneSetCondition) appsv1beta1.CloneSetConditionType { return c.Type },
	Status:         func(c *appsv1beta1.CloneSetCondition) corev1.ConditionStatus { return c.Status },
	Reason:         func(c *appsv1beta1.CloneSetCondition) string { return c.Reason },
	TransitionTime: func(c *appsv1beta1.CloneSetCondition) *metav1.Time { return &c.LastTransitionTime },
}

// Meta describes metav1.Condition, the condition type of newer APIs (the v1beta1
// ContainerRecreateRequest status). Its status values are spelled like corev1's.
var Meta = Accessors[metav1.Condition, string]{
	Type:           func(c *metav1.Condition) string { return c.Type },
	Status:         func(c *metav1.Condition) corev1.ConditionStatus { return corev1.ConditionStatus(c.Status) },
	Reason:         func(c *metav1.Condition) string { return c.Reason },
	TransitionTime: func(c *metav1.Condition) *metav1.Time { return &c.LastTransitionTime },
}
