package storageversionmigrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clienttesting "k8s.io/client-go/testing"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// Every object of each of the seven resources is sent back as it was listed, with its
// resourceVersion, through the status subresource and nothing else; then storedVersions
// is [v1beta1], with a Normal event and the metrics counted.
func TestPassRewritesEveryObjectThroughStatus(t *testing.T) {
	for _, name := range CRDNames {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, WithSettleDelay(0))
			f.addCRD(newCRD(name))
			resource := kinds[name].resource
			keys := f.addObjects(name, 3)
			originals := map[string]*unstructured.Unstructured{}
			list, err := f.client.Resource(resource).List(f.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				originals[key(list.Items[i].GetNamespace(), list.Items[i].GetName())] = list.Items[i].DeepCopy()
			}
			f.client.ClearActions()
			migratedBefore, passesBefore := migrated(t, name), passes(t, name)

			if err := f.sync(name); err != nil {
				t.Fatal(err)
			}

			var want []string
			for _, k := range keys {
				want = append(want, "update/status "+k+"@"+originals[k].GetResourceVersion())
			}
			if got := f.writes(resource); !slices.Equal(got, want) {
				t.Errorf("writes %v, want %v", got, want)
			}
			for _, a := range f.client.Actions() {
				update, ok := a.(clienttesting.UpdateAction)
				if !ok || a.GetResource() != resource {
					continue
				}
				sent := update.GetObject().(*unstructured.Unstructured)
				if original := originals[key(sent.GetNamespace(), sent.GetName())]; !reflect.DeepEqual(sent.Object, original.Object) {
					t.Errorf("sent %v, want the object as listed: %v", sent.Object, original.Object)
				}
			}
			if n := f.lists(resource); n != 1 {
				t.Errorf("%d LISTs, want 1", n)
			}
			if got := f.storedVersions(name); !slices.Equal(got, []string{"v1beta1"}) {
				t.Errorf("storedVersions %v, want [v1beta1]", got)
			}
			if e := f.events(); !hasEvent(e, "Normal "+MigratedReason, "3 rewritten", "[v1alpha1 v1beta1]") {
				t.Errorf("events %v, want a Normal %s naming 3 rewritten objects and the old stored versions", e, MigratedReason)
			}
			if got := migrated(t, name) - migratedBefore; got != 3 {
				t.Errorf("migrated objects counted %v, want 3", got)
			}
			if got := passes(t, name) - passesBefore; got != 1 {
				t.Errorf("passes timed %d, want 1", got)
			}
		})
	}
}

// pager serves the LISTs of one resource in pages, as the API server does and the fake
// client does not (and its cluster-wide list action does not even keep the limit and
// continue a reactor would need): it records every ListOptions, hands out continue tokens
// and refuses those it did not issue; expire decides which tokens have expired.
type pager struct {
	resource schema.GroupVersionResource
	expire   func(token string) bool

	mu     sync.Mutex
	calls  []metav1.ListOptions
	issued map[string]int
}

func newPager(resource schema.GroupVersionResource, expire func(token string) bool) *pager {
	return &pager{resource: resource, expire: expire, issued: map[string]int{}}
}

func (p *pager) wrap(inner dynamic.Interface) dynamic.Interface {
	return pagingClient{Interface: inner, p: p}
}

// continues returns the continue tokens of the LISTs so far, in order.
func (p *pager) continues() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var tokens []string
	for _, opts := range p.calls {
		tokens = append(tokens, opts.Continue)
	}
	return tokens
}

type pagingClient struct {
	dynamic.Interface
	p *pager
}

func (c pagingClient) Resource(resource schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	inner := c.Interface.Resource(resource)
	if resource != c.p.resource {
		return inner
	}
	return pagedResource{NamespaceableResourceInterface: inner, p: c.p}
}

type pagedResource struct {
	dynamic.NamespaceableResourceInterface
	p *pager
}

func (r pagedResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, opts)
	if len(p.calls) > 50 {
		// A pager that never reaches the last page would loop forever.
		return nil, apierrors.NewBadRequest("too many LISTs")
	}
	offset := 0
	if opts.Continue != "" {
		var ok bool
		if offset, ok = p.issued[opts.Continue]; !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("continue token %q was never issued", opts.Continue))
		}
		if p.expire != nil && p.expire(opts.Continue) {
			return nil, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
		}
	}
	all, err := r.NamespaceableResourceInterface.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all.Items, func(a, b unstructured.Unstructured) int {
		return compareKeys(key(a.GetNamespace(), a.GetName()), key(b.GetNamespace(), b.GetName()))
	})
	end := len(all.Items)
	if opts.Limit > 0 && offset+int(opts.Limit) < end {
		end = offset + int(opts.Limit)
	}
	page := all.DeepCopy()
	page.Items = page.Items[offset:end]
	if end < len(all.Items) {
		token := fmt.Sprintf("token-%d", len(p.issued))
		p.issued[token] = end
		page.SetContinue(token)
	}
	return page, nil
}

func compareKeys(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// More objects than fit a page are listed in pages of 500, each LIST carrying the continue
// token of the page before, and every object is rewritten once.
func TestPagesOf500(t *testing.T) {
	ds := kinds[dsCRD].resource
	p := newPager(ds, nil)
	f := newFixtureWrapping(t, p.wrap, WithSettleDelay(0))
	f.addCRD(newCRD(dsCRD))
	keys := f.addObjects(dsCRD, 1201)

	if err := f.sync(dsCRD); err != nil {
		t.Fatal(err)
	}
	for i, opts := range p.calls {
		if opts.Limit != 500 {
			t.Errorf("LIST %d with limit %d, want 500", i, opts.Limit)
		}
	}
	if got, want := p.continues(), []string{"", "token-0", "token-1"}; !slices.Equal(got, want) {
		t.Errorf("LISTs with continue %q, want %q", got, want)
	}
	if got := f.statusUpdates(ds); !slices.Equal(got, keys) {
		t.Errorf("%d status updates, want each of the %d objects once", len(got), len(keys))
	}
	if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1beta1"}) {
		t.Errorf("storedVersions %v, want [v1beta1]", got)
	}
}

// An expired continue token starts the list over; the pass then completes and every
// object is rewritten (those of the first pages twice, which is harmless).
func TestExpiredContinueStartsTheListOver(t *testing.T) {
	ds := kinds[dsCRD].resource
	expired := false
	p := newPager(ds, func(token string) bool {
		if token == "token-1" && !expired {
			expired = true
			return true
		}
		return false
	})
	f := newFixtureWrapping(t, p.wrap, WithSettleDelay(0))
	f.addCRD(newCRD(dsCRD))
	keys := f.addObjects(dsCRD, 1201)
	failuresBefore := failures(t, dsCRD)

	if err := f.sync(dsCRD); err != nil {
		t.Fatal(err)
	}
	if got, want := p.continues(), []string{"", "token-0", "token-1", "", "token-2", "token-3"}; !slices.Equal(got, want) {
		t.Errorf("LISTs with continue %q, want %q", got, want)
	}
	if got := slices.Compact(f.statusUpdates(ds)); !slices.Equal(got, keys) {
		t.Errorf("status updates of %d objects, want all %d", len(got), len(keys))
	}
	if got := len(f.statusUpdates(ds)); got != 1201+1000 {
		t.Errorf("%d status updates, want 2201 (the first two pages twice)", got)
	}
	if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1beta1"}) {
		t.Errorf("storedVersions %v, want [v1beta1]", got)
	}
	if got := failures(t, dsCRD) - failuresBefore; got != 0 {
		t.Errorf("errors counted %v, want none", got)
	}
}

// A list whose continue tokens keep expiring is given up after a few restarts, and the
// pass fails: storedVersions stay, a Warning event says why, the error is counted.
func TestContinueExpiringEveryTimeFailsThePass(t *testing.T) {
	ds := kinds[dsCRD].resource
	p := newPager(ds, func(string) bool { return true })
	f := newFixtureWrapping(t, p.wrap, WithSettleDelay(0))
	f.addCRD(newCRD(dsCRD))
	f.addObjects(dsCRD, 600)
	failuresBefore := failures(t, dsCRD)

	err := f.sync(dsCRD)
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("sync returned %v, want the expired list", err)
	}
	if _, wait := queue.IsNormalWait(err); wait {
		t.Errorf("sync error %v is a normal wait, want a failure", err)
	}
	if got := len(p.calls); got != 2*(maxListRestarts+1) {
		t.Errorf("%d LISTs, want %d (first page and expired continue, %d times)", got, 2*(maxListRestarts+1), maxListRestarts+1)
	}
	if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("storedVersions %v, want them kept", got)
	}
	if w := f.writes(CRDResource); len(w) != 0 {
		t.Errorf("writes to the CRD %v, want none", w)
	}
	if e := f.events(); !hasEvent(e, "Warning "+FailedReason, "continue parameter is too old") {
		t.Errorf("events %v, want a Warning %s with the error", e, FailedReason)
	}
	if got := failures(t, dsCRD) - failuresBefore; got != 1 {
		t.Errorf("errors counted %v, want 1", got)
	}
}

// An object changed (Conflict) or deleted (NotFound) between the list and its rewrite
// counts as done: the pass is clean and storedVersions are trimmed.
func TestConflictAndNotFoundCountAsDone(t *testing.T) {
	name := "containerrecreaterequests.apps.kruise.io"
	crr := kinds[name].resource
	f := newFixture(t, WithSettleDelay(0))
	f.addCRD(newCRD(name))
	keys := f.addObjects(name, 4)
	f.failStatusUpdates(crr, func() bool { return true }, map[string]func() error{
		keys[0]: conflict(crr, "obj-0000"),
		keys[1]: notFound(crr, "obj-0002"),
	})
	migratedBefore, failuresBefore := migrated(t, name), failures(t, name)

	if err := f.sync(name); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := f.statusUpdates(crr); !slices.Equal(got, keys) {
		t.Errorf("status updates of %v, want %v", got, keys)
	}
	if got := f.storedVersions(name); !slices.Equal(got, []string{"v1beta1"}) {
		t.Errorf("storedVersions %v, want [v1beta1]", got)
	}
	if e := f.events(); !hasEvent(e, "Normal "+MigratedReason, "2 rewritten, 2 changed or deleted meanwhile") {
		t.Errorf("events %v, want a Normal %s counting 2 rewritten and 2 skipped", e, MigratedReason)
	}
	if got := migrated(t, name) - migratedBefore; got != 2 {
		t.Errorf("migrated objects counted %v, want 2", got)
	}
	if got := failures(t, name) - failuresBefore; got != 0 {
		t.Errorf("errors counted %v, want none", got)
	}
}

// A rewrite that fails keeps storedVersions as they are, but not the other objects from
// being rewritten; the pass is a failure (Warning event, error counted, retried with
// backoff). The next clean pass trims storedVersions.
func TestFailedRewriteKeepsStoredVersions(t *testing.T) {
	name := "podunavailablebudgets.policy.kruise.io"
	pub := kinds[name].resource
	f := newFixture(t, WithSettleDelay(0))
	f.addCRD(newCRD(name))
	keys := f.addObjects(name, 4)
	failing := true
	f.failStatusUpdates(pub, func() bool { return failing }, map[string]func() error{keys[2]: internalError()})
	migratedBefore, failuresBefore, passesBefore := migrated(t, name), failures(t, name), passes(t, name)

	err := f.sync(name)
	if err == nil {
		t.Fatal("sync succeeded with a failed rewrite")
	}
	if _, wait := queue.IsNormalWait(err); wait {
		t.Errorf("sync error %v is a normal wait, want a failure", err)
	}
	if !apierrors.IsInternalError(err) {
		t.Errorf("sync error %v does not carry the API error", err)
	}
	if got := f.statusUpdates(pub); !slices.Equal(got, keys) {
		t.Errorf("status updates of %v, want every object tried: %v", got, keys)
	}
	if got := f.storedVersions(name); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("storedVersions %v after a failed pass, want them kept", got)
	}
	if w := f.writes(CRDResource); len(w) != 0 {
		t.Errorf("writes to the CRD %v after a failed pass, want none", w)
	}
	if e := f.events(); !hasEvent(e, "Warning "+FailedReason, keys[2], "etcd is unhappy") || hasEvent(e, "Normal "+MigratedReason) {
		t.Errorf("events %v, want only a Warning %s naming the object and the error", e, FailedReason)
	}
	if got := migrated(t, name) - migratedBefore; got != 3 {
		t.Errorf("migrated objects counted %v, want 3", got)
	}
	if got := failures(t, name) - failuresBefore; got != 1 {
		t.Errorf("errors counted %v, want 1", got)
	}
	if got := passes(t, name) - passesBefore; got != 1 {
		t.Errorf("passes timed %d, want 1", got)
	}

	failing = false
	f.client.ClearActions()
	if err := f.sync(name); err != nil {
		t.Fatalf("sync after the fault cleared: %v", err)
	}
	if got := f.storedVersions(name); !slices.Equal(got, []string{"v1beta1"}) {
		t.Errorf("storedVersions %v after a clean pass, want [v1beta1]", got)
	}
}

// Many failed rewrites make one error naming the first few and counting the rest.
func TestManyFailedRewritesAreSummed(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	f.addCRD(newCRD(niCRD))
	ni := kinds[niCRD].resource
	f.addObjects(niCRD, 8)
	f.client.PrependReactor("update", "nodeimages", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("conversion webhook unreachable")
	})

	err := f.sync(niCRD)
	if err == nil {
		t.Fatal("sync succeeded with every rewrite failing")
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("sync error %v joins no errors", err)
	}
	if got := len(joined.Unwrap()); got != maxReportedErrors+1 {
		t.Errorf("error joins %d errors, want %d and a count: %v", got, maxReportedErrors, err)
	}
	if !slices.ContainsFunc(joined.Unwrap(), func(e error) bool { return e.Error() == "and 3 more objects failed" }) {
		t.Errorf("error %v does not count the 3 further failures", err)
	}
	if got := f.storedVersions(niCRD); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("storedVersions %v, want them kept", got)
	}
	if got := len(f.statusUpdates(ni)); got != 8 {
		t.Errorf("%d status updates, want all 8 tried", got)
	}
}

// A LIST that fails fails the pass: nothing is rewritten, storedVersions stay.
func TestFailedListKeepsStoredVersions(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	f.addCRD(newCRD(dsCRD))
	ds := kinds[dsCRD].resource
	f.addObjects(dsCRD, 2)
	f.client.PrependReactor("list", "daemonsets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New(`conversion webhook for apps.kruise.io/v1beta1, Kind=DaemonSet failed`))
	})
	failuresBefore := failures(t, dsCRD)

	err := f.sync(dsCRD)
	if !apierrors.IsInternalError(err) {
		t.Fatalf("sync returned %v, want the LIST's error", err)
	}
	if w := f.writes(ds); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}
	if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("storedVersions %v, want them kept", got)
	}
	if e := f.events(); !hasEvent(e, "Warning "+FailedReason, "conversion webhook") {
		t.Errorf("events %v, want a Warning %s", e, FailedReason)
	}
	if got := failures(t, dsCRD) - failuresBefore; got != 1 {
		t.Errorf("errors counted %v, want 1", got)
	}
}

// A pass stopped by the end of the leadership term fails without a Warning: the next
// leader starts over.
func TestCancelledPassRecordsNoWarning(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	f.addCRD(newCRD(dsCRD))
	f.addObjects(dsCRD, 3)
	ctx, cancel := context.WithCancel(f.ctx)
	f.client.PrependReactor("update", "daemonsets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		cancel()
		return false, nil, nil
	})
	if err := f.c.syncCRD(ctx, dsCRD); !errors.Is(err, context.Canceled) {
		t.Fatalf("sync returned %v, want the cancellation", err)
	}
	if got := len(f.statusUpdates(kinds[dsCRD].resource)); got != 1 {
		t.Errorf("%d status updates, want the pass stopped after the first", got)
	}
	if e := f.events(); len(e) != 0 {
		t.Errorf("events %v, want none", e)
	}
	if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("storedVersions %v, want them kept", got)
	}
}
