package expectations

import (
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestNameStore(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := NewNameStore(clk)
	const key = "ns/cs"
	if ok, waited := s.Satisfied(key); !ok || waited != 0 {
		t.Fatalf("empty store: Satisfied = %v, %v", ok, waited)
	}
	s.Expect(key, Create, "pods", "cs-a")
	s.Expect(key, Create, "persistentvolumeclaims", "data-cs-a")
	s.Expect(key, Delete, "pods", "cs-b")
	clk.Step(time.Minute)
	if ok, waited := s.Satisfied(key); ok || waited != time.Minute {
		t.Errorf("Satisfied = %v, %v; want false after a minute", ok, waited)
	}
	want := []Expected{
		{Create, "persistentvolumeclaims", "data-cs-a"}, {Create, "pods", "cs-a"}, {Delete, "pods", "cs-b"},
	}
	if got := s.Pending(key); !slices.Equal(got, want) {
		t.Errorf("Pending = %v, want %v", got, want)
	}

	// Observations of other names, actions or keys change nothing.
	s.Observe(key, Delete, "pods", "cs-a")
	s.Observe(key, Create, "pods", "cs-x")
	s.Observe("ns/other", Create, "pods", "cs-a")
	if len(s.Pending(key)) != 3 {
		t.Errorf("unrelated observations met expectations: %v", s.Pending(key))
	}

	s.Observe(key, Create, "pods", "cs-a")
	s.Observe(key, Create, "pods", "cs-a") // twice counts once
	s.Observe(key, Create, "persistentvolumeclaims", "data-cs-a")
	if ok, _ := s.Satisfied(key); ok {
		t.Error("satisfied while a deletion is pending")
	}
	s.Observe(key, Delete, "pods", "cs-b")
	if ok, _ := s.Satisfied(key); !ok || s.Pending(key) != nil {
		t.Errorf("not satisfied after every observation: %v", s.Pending(key))
	}

	// A new expectation starts a new wait.
	s.Expect(key, Create, "pods", "cs-c")
	clk.Step(time.Second)
	if _, waited := s.Satisfied(key); waited != time.Second {
		t.Errorf("waited %v since the new expectation, want 1s", waited)
	}
	s.Forget(key)
	if ok, _ := s.Satisfied(key); !ok {
		t.Error("Forget left expectations")
	}
}
