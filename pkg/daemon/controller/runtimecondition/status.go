package runtimecondition

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// report writes the condition when the node's copy differs, and records an event when the
// status differs from what this reporter wrote last.
func (c *Controller) report(ctx context.Context) error {
	available, lastErr := c.runtime.State()
	want := corev1.NodeCondition{Type: ConditionType, Status: corev1.ConditionTrue, Reason: ReasonRuntimeAnswering,
		Message: "bosun-daemon reaches " + c.runtime.Describe()}
	if !available {
		message := "bosun-daemon has not reached a container runtime yet"
		if lastErr != nil {
			message = lastErr.Error()
		}
		want = corev1.NodeCondition{Type: ConditionType, Status: corev1.ConditionFalse, Reason: ReasonRuntimeUnavailable, Message: message}
	}

	node, err := c.client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", c.nodeName, err)
	}
	current := findCondition(node.Status.Conditions, ConditionType)
	if current == nil || current.Status != want.Status || current.Reason != want.Reason || current.Message != want.Message {
		now := metav1.NewTime(c.clock.Now())
		want.LastHeartbeatTime, want.LastTransitionTime = now, now
		if current != nil && current.Status == want.Status {
			want.LastTransitionTime = current.LastTransitionTime
		}
		if err := c.patch(ctx, want); err != nil {
			return err
		}
	}
	if c.reported != want.Status {
		ref := &corev1.ObjectReference{Kind: "Node", Name: c.nodeName, UID: types.UID(c.nodeName)}
		if available {
			c.recorder.Event(ref, corev1.EventTypeNormal, EventRuntimeAvailable, want.Message)
		} else if c.reported != "" || current == nil || current.Status != corev1.ConditionFalse {
			// A restarted agent whose runtime is still missing says so once more only when
			// the node did not already show it.
			c.recorder.Event(ref, corev1.EventTypeWarning, EventRuntimeUnavailable, want.Message)
		}
		c.reported = want.Status
	}
	return nil
}

// patch merges condition into the node's conditions by type, leaving the kubelet's alone.
func (c *Controller) patch(ctx context.Context, condition corev1.NodeCondition) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{condition}}})
	if err != nil {
		return err
	}
	var lastErr error
	err = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 4}, func(ctx context.Context) (bool, error) {
		_, lastErr = c.client.CoreV1().Nodes().Patch(ctx, c.nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return lastErr == nil, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("patching condition %s of node %s: %w", ConditionType, c.nodeName, lastErr)
	}
	return err
}

func findCondition(conditions []corev1.NodeCondition, conditionType corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conditions {
		if conditions[i].Type == conditionType {
			return &conditions[i]
		}
	}
	return nil
}
