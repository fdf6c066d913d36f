package runtimecondition

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeSource struct {
	available bool
	err       error
}

func (s *fakeSource) Changed() <-chan struct{} { return nil }
func (s *fakeSource) State() (bool, error)     { return s.available, s.err }
func (s *fakeSource) Describe() string {
	return "containerd 2.0 at unix:///run/containerd/containerd.sock"
}

func TestReportsTheRuntimeOnTheNode(t *testing.T) {
	ctx := context.Background()
	kubeletReady := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}
	client := fake.NewSimpleClientset(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{kubeletReady}},
	})
	recorder := record.NewFakeRecorder(10)
	source := &fakeSource{err: errors.New("no CRI runtime socket found; tried unix:///run/containerd/containerd.sock")}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	r := New("n1", client, recorder, source)
	r.clock = clk

	condition := func() corev1.NodeCondition {
		t.Helper()
		node, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := findCondition(node.Status.Conditions, corev1.NodeReady); c == nil || c.Reason != "KubeletReady" {
			t.Errorf("the kubelet's Ready condition was touched: %+v", node.Status.Conditions)
		}
		c := findCondition(node.Status.Conditions, ConditionType)
		if c == nil {
			t.Fatalf("no %s condition: %+v", ConditionType, node.Status.Conditions)
		}
		return *c
	}
	events := func() []string {
		var got []string
		for {
			select {
			case e := <-recorder.Events:
				got = append(got, e)
			default:
				return got
			}
		}
	}

	if err := r.report(ctx); err != nil {
		t.Fatal(err)
	}
	c := condition()
	if c.Status != corev1.ConditionFalse || c.Reason != ReasonRuntimeUnavailable || !strings.Contains(c.Message, "no CRI runtime socket found") {
		t.Errorf("runtime missing: condition %+v", c)
	}
	if got := events(); len(got) != 1 || !strings.HasPrefix(got[0], "Warning "+EventRuntimeUnavailable+" no CRI runtime socket found") {
		t.Errorf("runtime missing: events %q", got)
	}

	// Nothing changed: no write, no event.
	if err := r.report(ctx); err != nil {
		t.Fatal(err)
	}
	if got := events(); len(got) != 0 {
		t.Errorf("unchanged state recorded %q", got)
	}

	source.available, source.err = true, nil
	clk.SetTime(clk.Now().Add(time.Minute))
	if err := r.report(ctx); err != nil {
		t.Fatal(err)
	}
	c = condition()
	if c.Status != corev1.ConditionTrue || c.Reason != ReasonRuntimeAnswering || !strings.Contains(c.Message, "containerd 2.0") ||
		!c.LastTransitionTime.Time.Equal(clk.Now()) {
		t.Errorf("runtime back: condition %+v", c)
	}
	if got := events(); len(got) != 1 || !strings.HasPrefix(got[0], "Normal "+EventRuntimeAvailable) {
		t.Errorf("runtime back: events %q", got)
	}
}
