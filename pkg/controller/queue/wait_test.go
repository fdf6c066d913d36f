package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// conflict is the error the API server returns for a write from a stale copy.
func conflict() error {
	return apierrors.NewConflict(podsResource, "p", errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// multiError wraps several errors the way errors.Join does; empty, it wraps none.
type multiError []error

func (m multiError) Error() string   { return fmt.Sprint([]error(m)) }
func (m multiError) Unwrap() []error { return m }

func TestIsNormalWait(t *testing.T) {
	behind := &CacheBehindError{Resource: "pods", Observed: "19", Written: "20"}
	tests := []struct {
		name       string
		err        error
		wantReason string // "" for a failure
	}{
		{name: "nil", err: nil},
		{name: "plain error", err: errors.New("boom")},
		{name: "conflict", err: conflict(), wantReason: WaitConflict},
		{name: "conflict wrapped with %w", err: fmt.Errorf("updating status of DaemonSet ns/ds: %w", conflict()), wantReason: WaitConflict},
		{name: "conflict wrapped twice", err: fmt.Errorf("rolling update: %w", fmt.Errorf("patching pod: %w", conflict())), wantReason: WaitConflict},
		{name: "conflict formatted with %v is lost", err: fmt.Errorf("updating status: %v", conflict())},
		{name: "joined conflicts", err: errors.Join(conflict(), fmt.Errorf("patching: %w", conflict())), wantReason: WaitConflict},
		{name: "conflict joined with a failure", err: errors.Join(conflict(), errors.New("quota exceeded"))},
		{name: "aggregate of conflicts", err: utilerrors.NewAggregate([]error{conflict(), conflict()}), wantReason: WaitConflict},
		{name: "aggregate with a failure", err: utilerrors.NewAggregate([]error{conflict(), apierrors.NewNotFound(podsResource, "p")})},
		{name: "wrapped aggregate of conflicts", err: fmt.Errorf("deleting pods: %w", utilerrors.NewAggregate([]error{conflict()})), wantReason: WaitConflict},
		// AlreadyExists shares the 409 status code with a conflict but is not one.
		{name: "already exists", err: apierrors.NewAlreadyExists(podsResource, "p")},
		{name: "not found", err: apierrors.NewNotFound(podsResource, "p")},
		{name: "cache behind", err: behind, wantReason: WaitCacheBehind},
		{name: "cache behind wrapped", err: fmt.Errorf("syncing ns/rs: %w", behind), wantReason: WaitCacheBehind},
		{name: "cache behind joined with a conflict", err: errors.Join(behind, conflict()), wantReason: WaitCacheBehind},
		{name: "ErrRequeue", err: ErrRequeue, wantReason: WaitRequeued},
		{name: "wrapped ErrRequeue", err: fmt.Errorf("%w: owner not observed yet", ErrRequeue), wantReason: WaitRequeued},
		// The sync said so: ErrRequeue decides whatever else the error carries.
		{name: "ErrRequeue with its cause", err: fmt.Errorf("%w: creating configuration: %w", ErrRequeue, errors.New("boom")), wantReason: WaitRequeued},
		{name: "nothing wrapped", err: multiError{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reason, wait := IsNormalWait(tc.err)
			if reason != tc.wantReason || wait != (tc.wantReason != "") {
				t.Errorf("IsNormalWait(%v) = (%q, %v), want (%q, %v)", tc.err, reason, wait, tc.wantReason, tc.wantReason != "")
			}
		})
	}
}

func TestCacheBehindErrorMessage(t *testing.T) {
	err := &CacheBehindError{Resource: "replicasets.apps", Observed: "30", Written: "31"}
	want := "the replicasets.apps cache is at resourceVersion 30, behind this controller's own write at 31; waiting for it to catch up"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

// logged is one captured log line, reduced to what the worker loop decides.
type logged struct {
	typ       ktesting.LogType
	verbosity int
	message   string
	reason    any
}

// processOnce runs one item through ProcessNextItem after failures earlier failures of it,
// with sync returning err, and returns what was logged and the item's failures afterwards.
func processOnce(t *testing.T, failures int, err error) ([]logged, int) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(10), ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	// An hour of backoff keeps the item out of the queue for the rest of the test.
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour))
	defer q.ShutDown()
	for range failures {
		q.AddRateLimited("item")
	}
	q.Add("item")
	ProcessNextItem(ctx, q, func(context.Context, string) error { return err })

	var lines []logged
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		line := logged{typ: entry.Type, verbosity: entry.Verbosity, message: entry.Message}
		kv := entry.ParameterKVList
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "reason" {
				line.reason = kv[i+1]
			}
		}
		lines = append(lines, line)
	}
	return lines, q.NumRequeues("item")
}

func TestProcessNextItemLogsWaitsAsInfo(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		err      error
		want     logged
	}{
		{name: "failure", err: errors.New("quota exceeded"),
			want: logged{typ: ktesting.LogError, message: "Sync failed; retrying with backoff"}},
		{name: "wrapped conflict", err: fmt.Errorf("updating status: %w", conflict()),
			want: logged{typ: ktesting.LogInfo, verbosity: 4, message: "Waiting to sync item again", reason: WaitConflict}},
		{name: "cache behind", err: &CacheBehindError{Resource: "pods", Observed: "1", Written: "2"},
			want: logged{typ: ktesting.LogInfo, verbosity: 4, message: "Waiting to sync item again", reason: WaitCacheBehind}},
		{name: "ErrRequeue", err: ErrRequeue,
			want: logged{typ: ktesting.LogInfo, verbosity: 4, message: "Waiting to sync item again", reason: WaitRequeued}},
		{name: "conflict just before the limit", failures: PersistentWaitRequeues - 1, err: conflict(),
			want: logged{typ: ktesting.LogInfo, verbosity: 4, message: "Waiting to sync item again", reason: WaitConflict}},
		{name: "conflict that persists", failures: PersistentWaitRequeues, err: conflict(),
			want: logged{typ: ktesting.LogError, message: "Sync still waiting after many retries; retrying with backoff", reason: WaitConflict}},
		{name: "cache that stays behind", failures: PersistentWaitRequeues + 5, err: &CacheBehindError{Resource: "pods", Observed: "1", Written: "2"},
			want: logged{typ: ktesting.LogError, message: "Sync still waiting after many retries; retrying with backoff", reason: WaitCacheBehind}},
		{name: "ErrRequeue never becomes an error", failures: PersistentWaitRequeues + 5, err: ErrRequeue,
			want: logged{typ: ktesting.LogInfo, verbosity: 4, message: "Waiting to sync item again", reason: WaitRequeued}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines, failuresAfter := processOnce(t, tc.failures, tc.err)
			if len(lines) != 1 || lines[0] != tc.want {
				t.Errorf("logged %+v, want exactly %+v", lines, tc.want)
			}
			// Waits and failures alike are retried with the item's backoff.
			if failuresAfter != tc.failures+1 {
				t.Errorf("item failures after the sync = %d, want %d (requeued with rate limiting)", failuresAfter, tc.failures+1)
			}
		})
	}
}
