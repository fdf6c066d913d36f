package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget/budgettest"
)

// TestSpendBatchesConcurrentChanges spends a budget from many goroutines at once: exactly
// the budget is admitted, the stored status records exactly the admitted pods, and the
// changes share writes (fewer writes than admissions is what a burst of evictions needs).
// The first write is held until every other change has queued behind it, so that they all
// share the second write whatever the scheduler does.
func TestSpendBatchesConcurrentChanges(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	const budgetSize, spenders = 60, 200
	server := budgettest.NewServer(newPUB("", budgetSize))
	informer := server.Budget("ns", "pub")
	c := fastCache()

	// changesRun counts the changes applied so far: when the first write is sent, those of
	// its batch.
	var changesRun atomic.Int32
	counted := func(pod string) Change {
		change := spend(pod)
		return func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
			changesRun.Add(1)
			return change(pub)
		}
	}
	var firstWriteSeen atomic.Bool
	server.PrependReactor("update", "podunavailablebudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if firstWriteSeen.Swap(true) {
			return false, nil, nil
		}
		queuedBehind := spenders - int(changesRun.Load())
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			q := c.queues[keyOf(informer)]
			return q != nil && len(q.pending) == queuedBehind, nil
		}); err != nil {
			t.Errorf("the %d changes outside the first batch did not all queue behind its write: %v", queuedBehind, err)
		}
		// Not handled: the write goes on to the server's own reactor.
		return false, nil, nil
	})

	var wg sync.WaitGroup
	results := make([]error, spenders)
	start := make(chan struct{})
	for i := range spenders {
		wg.Go(func() {
			<-start
			results[i] = c.Spend(ctx, server, informer, counted(fmt.Sprintf("pod-%d", i)))
		})
	}
	close(start)
	wg.Wait()

	admitted := map[string]bool{}
	for i, err := range results {
		switch {
		case err == nil:
			admitted[fmt.Sprintf("pod-%d", i)] = true
		case !errors.Is(err, errDenied):
			t.Errorf("spender %d: unexpected error %v", i, err)
		}
	}
	stored := server.Budget("ns", "pub")
	if len(admitted) != budgetSize || stored.Status.UnavailableAllowed != 0 || len(stored.Status.DisruptedPods) != budgetSize {
		t.Fatalf("admitted %d, stored allowed %d, recorded %d; want %d, 0, %d",
			len(admitted), stored.Status.UnavailableAllowed, len(stored.Status.DisruptedPods), budgetSize, budgetSize)
	}
	for pod := range stored.Status.DisruptedPods {
		if !admitted[pod] {
			t.Errorf("%s recorded in disruptedPods but its request was refused", pod)
		}
	}
	writes, conflicts, _ := server.Counts()
	if conflicts != 0 {
		t.Errorf("%d conflicts within one process, want none", conflicts)
	}
	// One write for the first batch, and at most one for all the changes queued behind it
	// (none when the first batch spent the whole budget).
	if writes < 1 || writes > 2 {
		t.Errorf("%d admissions in %d status writes, want 1 or 2: the changes queued behind a write share the next one", len(admitted), writes)
	}
	// The writer answers before it looks for more work: give it a moment to find none.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queues) == 0 && len(c.locks) == 0, nil
	}); err != nil {
		t.Errorf("queues and locks left behind: %v", err)
	}
}

// TestSpendKeepsEachChangeApart has a refused change and a write-less one in the same
// batch as an admitted one: neither leaves anything in the stored status.
func TestSpendKeepsEachChangeApart(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 1))
	informer := server.Budget("ns", "pub")
	c := fastCache()

	refusing := func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		pub.Status.UnavailableAllowed = 100 // must not survive the refusal
		return false, errDenied
	}
	dryRun := func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		pub.Status.UnavailableAllowed = 50 // must not survive: nothing to write
		return false, nil
	}
	c.writeBatch(ctx, server, []*spendRequest{
		{informerCopy: informer, change: refusing, done: make(chan error, 1)},
		{informerCopy: informer, change: dryRun, done: make(chan error, 1)},
		{informerCopy: informer, change: spend("a"), done: make(chan error, 1)},
		{informerCopy: informer, change: spend("b"), done: make(chan error, 1)},
	})
	stored := server.Budget("ns", "pub")
	if stored.Status.UnavailableAllowed != 0 || len(stored.Status.DisruptedPods) != 1 {
		t.Errorf("stored allowed %d, recorded %v; want 0 and only a", stored.Status.UnavailableAllowed, stored.Status.DisruptedPods)
	}
	if _, ok := stored.Status.DisruptedPods["a"]; !ok {
		t.Errorf("a not recorded: %v", stored.Status.DisruptedPods)
	}
}

// TestSpendReportsTheWriteError gives every change that wanted to write the write's error,
// and the others their own answer.
func TestSpendReportsTheWriteError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 1))
	informer := server.Budget("ns", "pub")
	server.InjectConflicts(100)
	c := fastCache()

	admitting := &spendRequest{informerCopy: informer, change: spend("a"), done: make(chan error, 1)}
	refused := &spendRequest{informerCopy: informer, change: func(*policyv1beta1.PodUnavailableBudget) (bool, error) {
		return false, errDenied
	}, done: make(chan error, 1)}
	c.writeBatch(ctx, server, []*spendRequest{admitting, refused})
	if err := <-admitting.done; !apierrors.IsConflict(err) {
		t.Errorf("admitting change got %v, want the conflict that stopped the write", err)
	}
	if err := <-refused.done; !errors.Is(err, errDenied) {
		t.Errorf("refused change got %v, want its own refusal", err)
	}
}
