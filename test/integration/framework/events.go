package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListEvents returns the events recorded on the object of kind and name in namespace ns. The
// events of a cluster-scoped object are in "default", which an empty ns stands for.
func (e *Env) ListEvents(ctx context.Context, ns, kind, name string) ([]corev1.Event, error) {
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	selector := fmt.Sprintf("involvedObject.kind=%s,involvedObject.name=%s", kind, name)
	list, err := e.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the events of %s %s: %w", kind, name, err)
	}
	return list.Items, nil
}

// GetEvents is ListEvents failing the test on error.
func (e *Env) GetEvents(t testing.TB, ns, kind, name string) []corev1.Event {
	t.Helper()
	events, err := e.ListEvents(e.Ctx, ns, kind, name)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// WaitForEvent waits until an event recorded on the object of kind and name in namespace ns
// (see ListEvents) satisfies match, described by what, and returns it. A failure lists the
// events seen on the object.
func (e *Env) WaitForEvent(t testing.TB, ns, kind, name, what string, match func(*corev1.Event) bool) corev1.Event {
	t.Helper()
	var found corev1.Event
	var seen []corev1.Event
	e.Await(t, fmt.Sprintf("%s on %s %s", what, kind, name), func(ctx context.Context) (bool, error) {
		events, err := e.ListEvents(ctx, ns, kind, name)
		if err != nil {
			return false, err
		}
		seen = events
		for i := range events {
			if match(&events[i]) {
				found = events[i]
				return true, nil
			}
		}
		return false, nil
	}, func() string { return DescribeEvents(seen) })
	return found
}

// DescribeEvents renders events for failure messages: type, reason, message and source.
func DescribeEvents(events []corev1.Event) string {
	if len(events) == 0 {
		return "no events"
	}
	lines := make([]string, 0, len(events))
	for _, ev := range events {
		lines = append(lines, fmt.Sprintf("%s %s %q from %s", ev.Type, ev.Reason, ev.Message, EventSource(&ev)))
	}
	return "events:\n  " + strings.Join(lines, "\n  ")
}

// EventSource is the component that recorded an event, through either events API.
func EventSource(ev *corev1.Event) string {
	if ev.Source.Component != "" {
		return ev.Source.Component
	}
	return ev.ReportingController
}
