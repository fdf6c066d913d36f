package expectations

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// A write that got no answer stays pending, marked, until the controller reads the child
// live: Confirm leaves it to the informer, Observe drops it; only expected writes are marked.
func TestNameStoreUnansweredWrites(t *testing.T) {
	s := NewNameStore(clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
	const key = "ns/cs"
	s.Unanswered(key, Create, "pods", "cs-a") // nothing expected: ignored
	if ok, _ := s.Satisfied(key); !ok || s.PendingUnanswered(key) != nil {
		t.Fatalf("an unexpected write was recorded: %v", s.PendingUnanswered(key))
	}
	s.Expect(key, Create, "pods", "cs-a")
	s.Expect(key, Create, "pods", "cs-b")
	s.Expect(key, Create, "pods", "cs-c")
	s.Unanswered(key, Create, "pods", "cs-b")
	s.Unanswered(key, Create, "pods", "cs-c")
	s.Unanswered(key, Delete, "pods", "cs-a") // not the expected action
	want := []Expected{{Create, "pods", "cs-b"}, {Create, "pods", "cs-c"}}
	if got := s.PendingUnanswered(key); !slices.Equal(got, want) {
		t.Fatalf("PendingUnanswered = %v, want %v", got, want)
	}
	if ok, _ := s.Satisfied(key); ok {
		t.Error("satisfied while unanswered writes are pending")
	}

	s.Confirm(key, Expected{Create, "pods", "cs-b"}) // there: waits for the informer
	s.Observe(key, Create, "pods", "cs-c")           // not there
	if got := s.PendingUnanswered(key); got != nil {
		t.Errorf("PendingUnanswered = %v after Confirm and Observe, want none", got)
	}
	want = []Expected{{Create, "pods", "cs-a"}, {Create, "pods", "cs-b"}}
	if got := s.Pending(key); !slices.Equal(got, want) {
		t.Errorf("Pending = %v, want %v", got, want)
	}
	s.Observe(key, Create, "pods", "cs-a")
	s.Observe(key, Create, "pods", "cs-b")
	if ok, _ := s.Satisfied(key); !ok {
		t.Errorf("not satisfied: %v", s.Pending(key))
	}
}

func TestAnswerLost(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("unexpected EOF"), true},
		{fmt.Errorf("creating pod: %w", io.ErrUnexpectedEOF), true},
		{apierrors.NewTimeoutError("the commit outlasted the request", 0), true},
		{apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("quota")), false},
		{apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "p"), false},
		{fmt.Errorf("creating pod: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil)), false},
	} {
		if got := AnswerLost(tc.err); got != tc.want {
			t.Errorf("AnswerLost(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
