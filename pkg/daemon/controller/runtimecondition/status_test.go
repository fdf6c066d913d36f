package runtimecondition

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestReportsTheRuntimeOnTheNode(t *testing.T) {
	f := newFixture(t, &fakeSource{err: errors.New("no CRI runtime socket found; tried unix:///run/containerd/containerd.sock")})

	if err := f.c.report(f.ctx); err != nil {
		t.Fatal(err)
	}
	c := f.condition()
	if c.Status != corev1.ConditionFalse || c.Reason != ReasonRuntimeUnavailable || !strings.Contains(c.Message, "no CRI runtime socket found") {
		t.Errorf("runtime missing: condition %+v", c)
	}
	if got := f.events(); len(got) != 1 || !strings.HasPrefix(got[0], "Warning "+EventRuntimeUnavailable+" no CRI runtime socket found") {
		t.Errorf("runtime missing: events %q", got)
	}

	// Nothing changed: no write, no event.
	before := f.patches()
	if err := f.c.report(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.events(); len(got) != 0 {
		t.Errorf("unchanged state recorded %q", got)
	}
	if f.patches() != before {
		t.Error("an unchanged condition was written again")
	}

	f.source.available, f.source.err = true, nil
	f.clock.SetTime(f.clock.Now().Add(time.Minute))
	if err := f.c.report(f.ctx); err != nil {
		t.Fatal(err)
	}
	c = f.condition()
	if c.Status != corev1.ConditionTrue || c.Reason != ReasonRuntimeAnswering || !strings.Contains(c.Message, "containerd 2.0") ||
		!c.LastTransitionTime.Time.Equal(f.clock.Now()) {
		t.Errorf("runtime back: condition %+v", c)
	}
	if got := f.events(); len(got) != 1 || !strings.HasPrefix(got[0], "Normal "+EventRuntimeAvailable) {
		t.Errorf("runtime back: events %q", got)
	}
}

// A restarted agent whose runtime is still missing, on a Node that already shows it, warns
// no second time; it still brings a changed message up to date, keeping the transition
// time.
func TestRestartedAgentDoesNotWarnAgain(t *testing.T) {
	since := time.Unix(500, 0)
	shown := corev1.NodeCondition{Type: ConditionType, Status: corev1.ConditionFalse, Reason: ReasonRuntimeUnavailable,
		Message: "an older error"}
	shown.LastTransitionTime.Time = since
	f := newFixture(t, &fakeSource{err: errors.New("connection refused")}, shown)

	if err := f.c.report(f.ctx); err != nil {
		t.Fatal(err)
	}
	c := f.condition()
	if c.Message != "connection refused" || !c.LastTransitionTime.Time.Equal(since) || !c.LastHeartbeatTime.Time.Equal(f.clock.Now()) {
		t.Errorf("condition %+v, want the new message, the old transition time and a heartbeat now", c)
	}
	if got := f.events(); len(got) != 0 {
		t.Errorf("events %q, want none: the Node already showed the runtime missing", got)
	}

	// The same restart on a Node that showed the runtime answering warns.
	shown.Status, shown.Reason = corev1.ConditionTrue, ReasonRuntimeAnswering
	g := newFixture(t, &fakeSource{err: errors.New("connection refused")}, shown)
	if err := g.c.report(g.ctx); err != nil {
		t.Fatal(err)
	}
	if got := g.events(); len(got) != 1 || !strings.HasPrefix(got[0], "Warning "+EventRuntimeUnavailable+" connection refused") {
		t.Errorf("events %q, want the warning", got)
	}
	if c := g.condition(); c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(g.clock.Now()) {
		t.Errorf("condition %+v, want False since now", c)
	}
}
