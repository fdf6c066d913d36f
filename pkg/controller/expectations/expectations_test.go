package expectations

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestLifecycleWithFakeClock(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	s := NewWithClock(clk)
	const key = "ns/rs"

	if !s.Satisfied(ctx, key) {
		t.Fatal("no record: want satisfied")
	}
	s.ExpectCreations(ctx, key, 2)
	if s.Satisfied(ctx, key) {
		t.Fatal("after ExpectCreations(2): want unsatisfied")
	}
	s.CreationObserved(ctx, key)
	if s.Satisfied(ctx, key) {
		t.Fatal("after one observation of two: want unsatisfied")
	}
	s.CreationObserved(ctx, key)
	if !s.Satisfied(ctx, key) {
		t.Fatal("after two observations: want satisfied")
	}

	// Expiry: exactly 5m is not expired, 5m+1ns is.
	s.ExpectDeletions(ctx, key, 3)
	clk.SetTime(clk.Now().Add(ExpectationsTimeout))
	if s.Satisfied(ctx, key) {
		t.Fatal("at exactly the timeout: want unsatisfied")
	}
	clk.SetTime(clk.Now().Add(time.Nanosecond))
	if !s.Satisfied(ctx, key) {
		t.Fatal("5m+1ns after Set: want satisfied (expired)")
	}
	// Set resets the timestamp.
	s.ExpectCreations(ctx, key, 1)
	if s.Satisfied(ctx, key) {
		t.Fatal("a reset record must use a fresh timestamp")
	}
}

func TestOperations(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name             string
		ops              func(s *Store, key string)
		wantAdd, wantDel int64
		wantExists       bool
		wantSatisfied    bool
	}{
		{
			name: "lower without record creates nothing",
			ops: func(s *Store, k string) {
				s.Lower(ctx, k, 1, 1)
				s.CreationObserved(ctx, k)
				s.DeletionObserved(ctx, k)
			},
			wantSatisfied: true,
		},
		{
			name:          "raise without record creates nothing",
			ops:           func(s *Store, k string) { s.Raise(ctx, k, 3, 3) },
			wantSatisfied: true,
		},
		{
			name:       "raise on existing record",
			ops:        func(s *Store, k string) { s.Set(ctx, k, 1, 1); s.Raise(ctx, k, 2, 3) },
			wantAdd:    3,
			wantDel:    4,
			wantExists: true,
		},
		{
			name:          "negative counters count as met",
			ops:           func(s *Store, k string) { s.Set(ctx, k, 0, 1); s.Lower(ctx, k, 2, 1) },
			wantAdd:       -2,
			wantDel:       0,
			wantExists:    true,
			wantSatisfied: true,
		},
		{
			name:       "set replaces counters",
			ops:        func(s *Store, k string) { s.Set(ctx, k, 5, 5); s.ExpectDeletions(ctx, k, 2) },
			wantDel:    2,
			wantExists: true,
		},
		{
			name:          "delete drops the record",
			ops:           func(s *Store, k string) { s.ExpectCreations(ctx, k, 4); s.Delete(ctx, k) },
			wantSatisfied: true,
		},
		{
			name:       "deletions pending",
			ops:        func(s *Store, k string) { s.ExpectDeletions(ctx, k, 2); s.DeletionObserved(ctx, k) },
			wantDel:    1,
			wantExists: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			tc.ops(s, "k")
			add, del, exists := s.Get("k")
			if add != tc.wantAdd || del != tc.wantDel || exists != tc.wantExists {
				t.Errorf("Get = (%d, %d, %v), want (%d, %d, %v)", add, del, exists, tc.wantAdd, tc.wantDel, tc.wantExists)
			}
			if got := s.Satisfied(ctx, "k"); got != tc.wantSatisfied {
				t.Errorf("Satisfied = %v, want %v", got, tc.wantSatisfied)
			}
		})
	}
}

func TestConcurrentObservations(t *testing.T) {
	ctx := context.Background()
	s := New()
	const n = 200
	s.ExpectCreations(ctx, "k", n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { s.CreationObserved(ctx, "k") })
	}
	wg.Wait()
	if add, _, _ := s.Get("k"); add != 0 {
		t.Fatalf("add = %d after %d concurrent observations, want 0", add, n)
	}
}

func TestTrackedDeletionsCountOncePerPod(t *testing.T) {
	ctx := context.Background()
	tr := NewTracked(New())
	tr.ExpectDeletions(ctx, "ns/rs", []string{"ns/a", "ns/b", "ns/a"})
	if _, del, _ := tr.Get("ns/rs"); del != 2 {
		t.Fatalf("duplicates must count once: del = %d, want 2", del)
	}
	tr.DeletionObserved(ctx, "ns/rs", "ns/a") // graceful-delete update
	tr.DeletionObserved(ctx, "ns/rs", "ns/a") // final delete event
	tr.DeletionObserved(ctx, "ns/rs", "ns/c") // never expected
	if _, del, _ := tr.Get("ns/rs"); del != 1 {
		t.Fatalf("del = %d, want 1", del)
	}
	if got := tr.PendingDeletions("ns/rs"); len(got) != 1 || got[0] != "ns/b" {
		t.Fatalf("pending = %v, want [ns/b]", got)
	}
	if tr.Satisfied(ctx, "ns/rs") {
		t.Fatal("one deletion outstanding: want unsatisfied")
	}
	tr.DeletionObserved(ctx, "ns/rs", "ns/b")
	if !tr.Satisfied(ctx, "ns/rs") {
		t.Fatal("all deletions observed: want satisfied")
	}
}

func TestTrackedDeleteClearsKeysAndCounters(t *testing.T) {
	ctx := context.Background()
	tr := NewTracked(New())
	tr.ExpectDeletions(ctx, "k", []string{"ns/a"})
	tr.Delete(ctx, "k")
	if _, _, exists := tr.Get("k"); exists {
		t.Fatal("counters survived Delete")
	}
	if got := tr.PendingDeletions("k"); len(got) != 0 {
		t.Fatalf("pod keys survived Delete: %v", got)
	}
	// A late event for the old pod must not create or lower a new record.
	tr.ExpectCreations(ctx, "k", 1)
	tr.DeletionObserved(ctx, "k", "ns/a")
	if add, del, _ := tr.Get("k"); add != 1 || del != 0 {
		t.Fatalf("Get = (%d, %d), want (1, 0)", add, del)
	}
}

func TestTrackedCounters(t *testing.T) {
	ctx := context.Background()
	s := New()
	tr := NewTracked(s)
	if tr.Counters() != s {
		t.Fatal("Counters is not the wrapped store")
	}
	tr.ExpectDeletions(ctx, "k", []string{"ns/a"})
	tr.Counters().Raise(ctx, "k", 2, 0)
	if add, del, _ := tr.Get("k"); add != 2 || del != 1 {
		t.Errorf("Get = (%d, %d), want (2, 1): the raise and the tracked deletion", add, del)
	}
}

func BenchmarkConcurrentObservations(b *testing.B) {
	ctx := context.Background()
	s := New()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/rs-%d", i)
		s.ExpectCreations(ctx, keys[i], 1<<30)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := keys[i%len(keys)]
			s.CreationObserved(ctx, k)
			_ = s.Satisfied(ctx, k)
			i++
		}
	})
}
