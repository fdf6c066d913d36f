package crrutil

import (
	"encoding/json"
	"fmt"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
)

// ContainerStatusSnapshot returns the pod-side statuses of the request's restarted target
// containers: status.containerStatusSnapshot when it holds any, otherwise the list in the
// annotation crr.apps.kruise.io/sync-container-statuses. An annotation that does not parse
// counts as no statuses yet, as it did in v1alpha1: the manager writes the field on the
// pod's next change.
func ContainerStatusSnapshot(crr *appsv1beta1.ContainerRecreateRequest) []appsv1beta1.ContainerRecreateRequestSyncContainerStatus {
	if len(crr.Status.ContainerStatusSnapshot) > 0 {
		return crr.Status.ContainerStatusSnapshot
	}
	value := crr.Annotations[appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey]
	if value == "" {
		return nil
	}
	snapshot, err := ParseContainerStatusSnapshot(value)
	if err != nil {
		return nil
	}
	return snapshot
}

// ParseContainerStatusSnapshot reads the value of the annotation
// crr.apps.kruise.io/sync-container-statuses: a JSON list of container statuses.
func ParseContainerStatusSnapshot(value string) ([]appsv1beta1.ContainerRecreateRequestSyncContainerStatus, error) {
	var snapshot []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(value), &snapshot); err != nil {
		return nil, fmt.Errorf("parsing annotation %s: %w", appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey, err)
	}
	return snapshot, nil
}

// UnreadyAcquired returns when the manager made the request's pod not ready for its
// unready grace period: the lastTransitionTime of the PreRecreateGrace condition when it is
// True, otherwise the time in the annotation crr.apps.kruise.io/unready-acquired. recorded
// is false when the request records neither; err is set when only the annotation records it
// and its value is not an RFC 3339 time (the request then has a start that cannot be read,
// which the node agent reports by completing the request, as in v1alpha1).
func UnreadyAcquired(crr *appsv1beta1.ContainerRecreateRequest) (at time.Time, recorded bool, err error) {
	if grace := PreRecreateGrace(crr.Status.Conditions); grace != nil {
		return grace.LastTransitionTime.Time, true, nil
	}
	value := crr.Annotations[appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey]
	if value == "" {
		return time.Time{}, false, nil
	}
	at, err = ParseUnreadyAcquired(value)
	return at, true, err
}

// ParseUnreadyAcquired reads the value of the annotation crr.apps.kruise.io/unready-acquired:
// an RFC 3339 time.
func ParseUnreadyAcquired(value string) (time.Time, error) {
	return time.Parse(time.RFC3339, value)
}

// PreRecreateGrace returns a copy of the PreRecreateGrace condition in conds when it is
// True, nil otherwise.
func PreRecreateGrace(conds []metav1.Condition) *metav1.Condition {
	grace := conditions.Meta.Get(conds, appsv1beta1.ContainerRecreateRequestPreRecreateGraceType)
	if grace == nil || grace.Status != metav1.ConditionTrue {
		return nil
	}
	return grace
}

// PreRecreateGraceCondition is the condition the manager records when it makes the pod not
// ready at at. It holds exactly what the v1alpha1 annotation holds (the time, in seconds,
// as a condition is encoded), so that a v1alpha1 client reads it as the annotation alone.
func PreRecreateGraceCondition(at time.Time) metav1.Condition {
	return metav1.Condition{
		Type:               appsv1beta1.ContainerRecreateRequestPreRecreateGraceType,
		Status:             metav1.ConditionTrue,
		Reason:             appsv1beta1.ContainerRecreateRequestPreRecreateGraceType,
		LastTransitionTime: metav1.NewTime(at.UTC().Truncate(time.Second)),
	}
}
