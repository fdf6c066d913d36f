package runtimecondition

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bosun-dev/bosun/pkg/controller/options"
)

const testNode = "n1"

// fakeSource is the runtime monitor's state, set by the test.
type fakeSource struct {
	available bool
	err       error
	changed   chan struct{}
}

func (s *fakeSource) Changed() <-chan struct{} { return s.changed }
func (s *fakeSource) State() (bool, error)     { return s.available, s.err }
func (s *fakeSource) Describe() string {
	return "containerd 2.0 at unix:///run/containerd/containerd.sock"
}

// fixture is the reporter on a fake clientset holding node n1 with the kubelet's Ready
// condition (and the given conditions), a fake clock and a fake recorder.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	recorder *record.FakeRecorder
	source   *fakeSource
	clock    *clocktesting.FakeClock
	c        *Controller
}

var kubeletReady = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}

func newFixture(t *testing.T, source *fakeSource, conditions ...corev1.NodeCondition) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode},
		Status:     corev1.NodeStatus{Conditions: append([]corev1.NodeCondition{kubeletReady}, conditions...)},
	})
	recorder := record.NewFakeRecorder(10)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c, err := NewController(testNode, client, recorder, source, options.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, client: client, recorder: recorder, source: source, clock: clk, c: c}
}

// condition returns the node's ConditionType, after checking that the kubelet's Ready
// condition is untouched.
func (f *fixture) condition() corev1.NodeCondition {
	f.t.Helper()
	node, err := f.client.CoreV1().Nodes().Get(f.ctx, testNode, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if c := findCondition(node.Status.Conditions, corev1.NodeReady); c == nil || c.Reason != "KubeletReady" {
		f.t.Errorf("the kubelet's Ready condition was touched: %+v", node.Status.Conditions)
	}
	c := findCondition(node.Status.Conditions, ConditionType)
	if c == nil {
		f.t.Fatalf("no %s condition: %+v", ConditionType, node.Status.Conditions)
	}
	return *c
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var got []string
	for {
		select {
		case e := <-f.recorder.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

// patches counts the writes of node status.
func (f *fixture) patches() int {
	n := 0
	for _, action := range f.client.Actions() {
		if action.GetVerb() == "patch" && action.GetSubresource() == "status" {
			n++
		}
	}
	return n
}
