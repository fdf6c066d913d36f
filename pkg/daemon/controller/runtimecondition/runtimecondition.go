// Package runtimecondition reports on the agent's Node whether bosun-daemon reaches the
// container runtime: a node condition that operators and tools can select on, and an event
// at every change. An agent that cannot find its runtime socket keeps running and says so
// here, instead of crash-looping where only its own logs would tell.
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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// ControllerName is the reporter's name: its client's User-Agent suffix and event source.
	ControllerName = "runtime-condition"

	// ConditionType is the Node condition the agent owns.
	ConditionType corev1.NodeConditionType = "BosunDaemonRuntimeReady"

	// Condition reasons.
	ReasonRuntimeAnswering   = "RuntimeAnswering"
	ReasonRuntimeUnavailable = "RuntimeUnavailable"

	// Event reasons, on the Node.
	EventRuntimeAvailable   = "ContainerRuntimeAvailable"
	EventRuntimeUnavailable = "ContainerRuntimeUnavailable"

	// resyncPeriod rewrites a condition someone else changed or removed, and retries a
	// write that failed.
	resyncPeriod = time.Minute
)

// Source is the runtime connection's state as the agent's monitor knows it.
type Source interface {
	// Changed receives a token when the runtime turns available or unavailable.
	Changed() <-chan struct{}
	// State returns whether the runtime answers, and why not.
	State() (available bool, lastErr error)
	// Describe names the runtime that answers.
	Describe() string
}

// Reporter writes ConditionType on its node and records events when it changes.
type Reporter struct {
	nodeName string
	client   kubernetes.Interface
	recorder record.EventRecorder
	source   Source
	clock    clock.PassiveClock

	// reported is the status last written, "" before the first write.
	reported corev1.ConditionStatus
}

// New returns a reporter for nodeName.
func New(nodeName string, client kubernetes.Interface, recorder record.EventRecorder, source Source) *Reporter {
	return &Reporter{nodeName: nodeName, client: client, recorder: recorder, source: source, clock: clock.RealClock{}}
}

// Run reports every change until ctx ends, and the current state every resyncPeriod.
func (r *Reporter) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(resyncPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.source.Changed():
		case <-ticker.C:
		}
		if err := r.report(ctx); err != nil {
			logger.Error(err, "Cannot report the container runtime's state on the node", "node", r.nodeName)
		}
	}
}

// report writes the condition when the node's copy differs, and records an event when the
// status differs from what this reporter wrote last.
func (r *Reporter) report(ctx context.Context) error {
	available, lastErr := r.source.State()
	want := corev1.NodeCondition{Type: ConditionType, Status: corev1.ConditionTrue, Reason: ReasonRuntimeAnswering,
		Message: "bosun-daemon reaches " + r.source.Describe()}
	if !available {
		message := "bosun-daemon has not reached a container runtime yet"
		if lastErr != nil {
			message = lastErr.Error()
		}
		want = corev1.NodeCondition{Type: ConditionType, Status: corev1.ConditionFalse, Reason: ReasonRuntimeUnavailable, Message: message}
	}

	node, err := r.client.CoreV1().Nodes().Get(ctx, r.nodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", r.nodeName, err)
	}
	current := findCondition(node.Status.Conditions, ConditionType)
	if current == nil || current.Status != want.Status || current.Reason != want.Reason || current.Message != want.Message {
		now := metav1.NewTime(r.clock.Now())
		want.LastHeartbeatTime, want.LastTransitionTime = now, now
		if current != nil && current.Status == want.Status {
			want.LastTransitionTime = current.LastTransitionTime
		}
		if err := r.patch(ctx, want); err != nil {
			return err
		}
	}
	if r.reported != want.Status {
		ref := &corev1.ObjectReference{Kind: "Node", Name: r.nodeName, UID: types.UID(r.nodeName)}
		if available {
			r.recorder.Event(ref, corev1.EventTypeNormal, EventRuntimeAvailable, want.Message)
		} else if r.reported != "" || current == nil || current.Status != corev1.ConditionFalse {
			// A restarted agent whose runtime is still missing says so once more only when
			// the node did not already show it.
			r.recorder.Event(ref, corev1.EventTypeWarning, EventRuntimeUnavailable, want.Message)
		}
		r.reported = want.Status
	}
	return nil
}

// patch merges condition into the node's conditions by type, leaving the kubelet's alone.
func (r *Reporter) patch(ctx context.Context, condition corev1.NodeCondition) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{condition}}})
	if err != nil {
		return err
	}
	var lastErr error
	err = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 4}, func(ctx context.Context) (bool, error) {
		_, lastErr = r.client.CoreV1().Nodes().Patch(ctx, r.nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return lastErr == nil, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("patching condition %s of node %s: %w", ConditionType, r.nodeName, lastErr)
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
