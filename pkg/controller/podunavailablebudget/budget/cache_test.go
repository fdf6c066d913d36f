package budget

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget/budgettest"
)

func newPUB(rv string, allowed int32) *policyv1beta1.PodUnavailableBudget {
	return &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pub", UID: "uid-1", ResourceVersion: rv},
		Status:     policyv1beta1.PodUnavailableBudgetStatus{UnavailableAllowed: allowed},
	}
}

// fastCache is a cache whose retries do not wait, so tests of conflicts run quickly.
func fastCache() *Cache {
	c := NewCache()
	c.backoff = wait.Backoff{Steps: ConflictBackoff.Steps, Duration: time.Millisecond, Factor: 1}
	return c
}

var errDenied = errors.New("no budget left")

// spend is the webhook's change: take one from unavailableAllowed, or refuse.
func spend(pod string) Change {
	return func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		if pub.Status.UnavailableAllowed <= 0 {
			return false, errDenied
		}
		pub.Status.UnavailableAllowed--
		if pub.Status.DisruptedPods == nil {
			pub.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pub.Status.DisruptedPods[pod] = metav1.Now()
		return true, nil
	}
}

func TestConflictBackoff(t *testing.T) {
	want := wait.Backoff{Steps: 4, Duration: 500 * time.Millisecond, Factor: 1.0, Jitter: 0.1}
	if ConflictBackoff != want || NewCache().backoff != want {
		t.Errorf("ConflictBackoff = %+v, want %+v", ConflictBackoff, want)
	}
}

func TestFreshest(t *testing.T) {
	tests := []struct {
		name        string
		written     *policyv1beta1.PodUnavailableBudget
		informer    *policyv1beta1.PodUnavailableBudget
		wantWritten bool
	}{
		{name: "nothing written", informer: newPUB("10", 1)},
		{name: "written is newer", written: newPUB("11", 0), informer: newPUB("10", 1), wantWritten: true},
		{name: "written is newer numerically, not lexically", written: newPUB("100", 0), informer: newPUB("99", 1), wantWritten: true},
		{name: "informer is newer", written: newPUB("10", 0), informer: newPUB("11", 1)},
		{name: "same version", written: newPUB("10", 0), informer: newPUB("10", 1)},
		{name: "written is of another budget", written: func() *policyv1beta1.PodUnavailableBudget {
			p := newPUB("20", 0)
			p.UID = "uid-old"
			return p
		}(), informer: newPUB("10", 1)},
		{name: "written version not a number", written: newPUB("x20", 0), informer: newPUB("10", 1)},
		{name: "informer version not a number", written: newPUB("20", 0), informer: newPUB("abc", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			if tt.written != nil {
				c.remember(tt.written)
			}
			got := c.Freshest(tt.informer)
			if tt.wantWritten && got != tt.written {
				t.Errorf("Freshest = version %s, want the written copy %s", got.ResourceVersion, tt.written.ResourceVersion)
			}
			if !tt.wantWritten && got != tt.informer {
				t.Errorf("Freshest = version %s, want the informer copy %s", got.ResourceVersion, tt.informer.ResourceVersion)
			}
		})
	}
}

func TestForget(t *testing.T) {
	c := NewCache()
	c.remember(newPUB("20", 0))
	informer := newPUB("10", 1)
	if c.Freshest(informer) == informer {
		t.Fatalf("Freshest ignored the written copy")
	}
	c.Forget("ns", "pub")
	if c.Freshest(informer) != informer {
		t.Errorf("Freshest after Forget did not return the informer copy")
	}
}

func TestUpdateStatus(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 1))
	informer := server.Budget("ns", "pub")
	c := fastCache()

	got, err := c.UpdateStatus(ctx, server, informer, spend("a"))
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	stored := server.Budget("ns", "pub")
	if got.Status.UnavailableAllowed != 0 || stored.Status.UnavailableAllowed != 0 {
		t.Errorf("allowed: returned %d, stored %d, want 0", got.Status.UnavailableAllowed, stored.Status.UnavailableAllowed)
	}
	if _, ok := stored.Status.DisruptedPods["a"]; !ok {
		t.Errorf("stored disruptedPods %v lack pod a", stored.Status.DisruptedPods)
	}
	if got.ResourceVersion != stored.ResourceVersion {
		t.Errorf("returned version %s, stored %s", got.ResourceVersion, stored.ResourceVersion)
	}
	if informer.Status.UnavailableAllowed != 1 {
		t.Errorf("UpdateStatus mutated the informer copy")
	}
	if fresh := c.Freshest(informer); fresh.ResourceVersion != stored.ResourceVersion {
		t.Errorf("Freshest after a write = version %s, want the written %s", fresh.ResourceVersion, stored.ResourceVersion)
	}
	if len(c.locks) != 0 {
		t.Errorf("%d locks left after the write", len(c.locks))
	}
}

func TestUpdateStatusStartsFromWrittenCopy(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 3))
	informer := server.Budget("ns", "pub")
	c := fastCache()
	// The informer never catches up: every write after the first must start from the
	// written copy, or it would conflict.
	for i, pod := range []string{"a", "b", "c"} {
		if _, err := c.UpdateStatus(ctx, server, informer, spend(pod)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	writes, conflicts, gets := server.Counts()
	if writes != 3 || conflicts != 0 || gets != 0 {
		t.Errorf("writes %d, conflicts %d, gets %d; want 3, 0, 0", writes, conflicts, gets)
	}
	if _, err := c.UpdateStatus(ctx, server, informer, spend("d")); !errors.Is(err, errDenied) {
		t.Errorf("fourth spend: err = %v, want the change's denial", err)
	}
}

func TestUpdateStatusNoWrite(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 1))
	informer := server.Budget("ns", "pub")
	c := fastCache()
	got, err := c.UpdateStatus(ctx, server, informer, func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		pub.Status.UnavailableAllowed = 42
		return false, nil
	})
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	if got.Status.UnavailableAllowed != 42 {
		t.Errorf("returned allowed %d, want the edited copy (42)", got.Status.UnavailableAllowed)
	}
	if informer.Status.UnavailableAllowed != 1 {
		t.Errorf("the change edited the informer copy")
	}
	if writes, _, _ := server.Counts(); writes != 0 {
		t.Errorf("%d writes, want none", writes)
	}
	if c.Freshest(informer) != informer {
		t.Errorf("an unwritten change was remembered")
	}
}

func TestUpdateStatusChangeErrorsAreReturnedUnchanged(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 1))
	informer := server.Budget("ns", "pub")
	c := fastCache()
	// Even an error that looks like a conflict is the change's verdict, not a reason to retry.
	changeErr := apierrors.NewConflict(policyv1beta1.Resource("podunavailablebudgets"), "pub", errors.New("mine"))
	calls := 0
	_, err := c.UpdateStatus(ctx, server, informer, func(*policyv1beta1.PodUnavailableBudget) (bool, error) {
		calls++
		return false, changeErr
	})
	if err != changeErr {
		t.Errorf("err = %v, want the change's error itself", err)
	}
	if calls != 1 {
		t.Errorf("change called %d times, want 1", calls)
	}
}

func TestUpdateStatusRetriesConflictsFromLiveCopy(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 2))
	informer := server.Budget("ns", "pub")
	// Another process spends one unit the informer has not seen yet.
	other := server.Budget("ns", "pub")
	other.Status.UnavailableAllowed = 1
	server.Put(other)
	c := fastCache()

	var seen []int32
	got, err := c.UpdateStatus(ctx, server, informer, func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		seen = append(seen, pub.Status.UnavailableAllowed)
		return spend("a")(pub)
	})
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	if want := []int32{2, 1}; len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("attempts saw allowed %v, want %v (stale informer copy, then the live one)", seen, want)
	}
	if got.Status.UnavailableAllowed != 0 || server.Budget("ns", "pub").Status.UnavailableAllowed != 0 {
		t.Errorf("allowed after the retry: returned %d, stored %d, want 0", got.Status.UnavailableAllowed, server.Budget("ns", "pub").Status.UnavailableAllowed)
	}
	if writes, conflicts, gets := server.Counts(); writes != 1 || conflicts != 1 || gets != 1 {
		t.Errorf("writes %d, conflicts %d, gets %d; want 1, 1, 1", writes, conflicts, gets)
	}
}

func TestUpdateStatusGivesUpAfterFourConflicts(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 5))
	informer := server.Budget("ns", "pub")
	server.InjectConflicts(100)
	c := fastCache()
	calls := 0
	_, err := c.UpdateStatus(ctx, server, informer, func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		calls++
		return spend("a")(pub)
	})
	if !apierrors.IsConflict(err) {
		t.Fatalf("err = %v, want a conflict", err)
	}
	if !strings.Contains(err.Error(), "4 conflicting attempts") || !strings.Contains(err.Error(), "ns/pub") {
		t.Errorf("error %q does not say how often it tried and on which budget", err)
	}
	if calls != 4 {
		t.Errorf("change called %d times, want 4", calls)
	}
	if got := server.Budget("ns", "pub").Status.UnavailableAllowed; got != 5 {
		t.Errorf("stored allowed %d, want unchanged 5", got)
	}
}

func TestUpdateStatusNotFound(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer()
	c := fastCache()
	_, err := c.UpdateStatus(ctx, server, newPUB("10", 1), spend("a"))
	if !apierrors.IsNotFound(err) {
		t.Fatalf("err = %v, want NotFound", err)
	}
	if !strings.Contains(err.Error(), "ns/pub") {
		t.Errorf("error %q does not name the budget", err)
	}
}

func TestUpdateStatusReplacedBudgetIsNotFound(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	server := budgettest.NewServer(newPUB("", 1))
	informer := server.Budget("ns", "pub")
	// The budget is deleted and re-created under the same name with budget to spare.
	replacement := newPUB("", 5)
	replacement.UID = "uid-2"
	server.Put(replacement)
	c := fastCache()
	_, err := c.UpdateStatus(ctx, server, informer, spend("a"))
	if !apierrors.IsNotFound(err) {
		t.Fatalf("err = %v, want NotFound", err)
	}
	if got := server.Budget("ns", "pub").Status.UnavailableAllowed; got != 5 {
		t.Errorf("the replacement's allowed is %d, want untouched 5", got)
	}
}

func TestUpdateStatusCanceledContext(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	server := budgettest.NewServer(newPUB("", 1))
	_, err := fastCache().UpdateStatus(ctx, server, server.Budget("ns", "pub"), spend("a"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestConcurrentSpending has many goroutines of one process spend a budget from the same
// stale informer copy: exactly the budget is spent, and the lock plus the written copy
// keep every write free of conflicts.
func TestConcurrentSpending(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	const budgetSize, spenders = 30, 100
	server := budgettest.NewServer(newPUB("", budgetSize))
	informer := server.Budget("ns", "pub")
	c := fastCache()

	var wg sync.WaitGroup
	results := make([]error, spenders)
	for i := range spenders {
		wg.Go(func() {
			_, results[i] = c.UpdateStatus(ctx, server, informer, spend(string(rune('a'+i%26))+string(rune('a'+i/26))))
		})
	}
	wg.Wait()

	admitted := 0
	for i, err := range results {
		switch {
		case err == nil:
			admitted++
		case !errors.Is(err, errDenied):
			t.Errorf("spender %d: unexpected error %v", i, err)
		}
	}
	stored := server.Budget("ns", "pub")
	if admitted != budgetSize || stored.Status.UnavailableAllowed != 0 || len(stored.Status.DisruptedPods) != budgetSize {
		t.Errorf("admitted %d, stored allowed %d, recorded %d; want %d, 0, %d",
			admitted, stored.Status.UnavailableAllowed, len(stored.Status.DisruptedPods), budgetSize, budgetSize)
	}
	if _, conflicts, _ := server.Counts(); conflicts != 0 {
		t.Errorf("%d conflicts within one process, want none", conflicts)
	}
	if len(c.locks) != 0 {
		t.Errorf("%d locks left", len(c.locks))
	}
}

// TestConcurrentSpendingAcrossProcesses has two caches (two manager replicas) spend one
// budget: they conflict, and whatever each admits, the stored budget accounts for exactly
// the admitted requests.
func TestConcurrentSpendingAcrossProcesses(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	const budgetSize, spenders = 10, 40
	server := budgettest.NewServer(newPUB("", budgetSize))
	informer := server.Budget("ns", "pub")
	caches := []*Cache{fastCache(), fastCache()}

	var wg sync.WaitGroup
	results := make([]error, spenders)
	for i := range spenders {
		wg.Go(func() {
			_, results[i] = caches[i%2].UpdateStatus(ctx, server, informer, spend(string(rune('a'+i%26))+string(rune('a'+i/26))))
		})
	}
	wg.Wait()

	admitted := 0
	for i, err := range results {
		switch {
		case err == nil:
			admitted++
		case errors.Is(err, errDenied), apierrors.IsConflict(err):
		default:
			t.Errorf("spender %d: unexpected error %v", i, err)
		}
	}
	stored := server.Budget("ns", "pub")
	if admitted > budgetSize || int(stored.Status.UnavailableAllowed) != budgetSize-admitted || len(stored.Status.DisruptedPods) != admitted {
		t.Errorf("admitted %d, stored allowed %d, recorded %d; budget %d", admitted, stored.Status.UnavailableAllowed, len(stored.Status.DisruptedPods), budgetSize)
	}
}
