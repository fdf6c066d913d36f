package budget

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// ConflictBackoff paces the attempts of UpdateStatus: at most four, about half a second
// apart, the same as OpenKruise so that a busy budget sees the same request rate whichever
// implementation serves it.
var ConflictBackoff = wait.Backoff{Steps: 4, Duration: 500 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// Cache is one per process, shared by the controller (across all its leadership terms) and
// the pod webhook. Its zero value is not usable; call NewCache.
type Cache struct {
	backoff wait.Backoff

	mu sync.Mutex
	// locks holds the mutex of every budget some caller is writing or waiting to write;
	// an entry goes away with its last user, so budgets that come and go leave nothing.
	locks map[lockKey]*budgetLock
	// written holds, by namespace/name, the budget as this process last wrote or read it
	// live. Only a copy with the same UID as the informer's is ever used.
	written map[types.NamespacedName]*policyv1beta1.PodUnavailableBudget
	// queues holds, by budget, the Spend requests waiting for the next shared write.
	queues map[lockKey]*spendQueue
}

type lockKey struct {
	uid types.UID
	// name is set only for a budget without UID (never true of a stored object), so that
	// such budgets do not all share one mutex.
	name types.NamespacedName
}

type budgetLock struct {
	mu    sync.Mutex
	users int
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		backoff: ConflictBackoff,
		locks:   map[lockKey]*budgetLock{},
		queues:  map[lockKey]*spendQueue{},
		written: map[types.NamespacedName]*policyv1beta1.PodUnavailableBudget{},
	}
}

// Forget drops the write-through copy of namespace/name, for when the budget is gone. Its
// mutex needs no forgetting: it exists only while a write is under way.
func (c *Cache) Forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, types.NamespacedName{Namespace: namespace, Name: name})
}

// Change edits pub, a deep copy it owns, for one attempt of UpdateStatus; it may be called
// several times, each time on a fresher copy. It returns write=false when there is nothing
// to write (UpdateStatus then returns the edited copy without writing it), and an error to
// abandon the update (UpdateStatus returns it unchanged, whatever it is).
type Change func(pub *policyv1beta1.PodUnavailableBudget) (write bool, err error)

// UpdateStatus applies change to the freshest copy of the budget informerCopy names and
// writes the status, retrying on conflicts (ConflictBackoff). Every attempt holds the
// budget's mutex; the waits between attempts do not. The first attempt starts from
// whichever of the write-through copy and informerCopy is newer; an attempt after a
// conflict reads the budget live. A successful write is remembered and returned.
//
// Errors of change are returned unchanged, even one that looks like a conflict: it is the
// change's verdict, not a reason to retry. API errors are wrapped so that
// apierrors.IsNotFound and IsConflict still recognise them; after the last conflicting
// attempt the error is a conflict. A budget that was deleted and re-created under the same
// name while this ran is reported NotFound: the caller meant the old one.
func (c *Cache) UpdateStatus(ctx context.Context, client bosunclientset.Interface,
	informerCopy *policyv1beta1.PodUnavailableBudget, change Change) (*policyv1beta1.PodUnavailableBudget, error) {
	backoff := c.backoff
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("updating status of PodUnavailableBudget %s/%s: %w", informerCopy.Namespace, informerCopy.Name, err)
		}
		pub, changeErr, err := c.attempt(ctx, client, informerCopy, change, attempt)
		switch {
		case changeErr != nil:
			return nil, changeErr
		case err == nil:
			return pub, nil
		case !apierrors.IsConflict(err):
			return nil, err
		case backoff.Steps <= 1:
			return nil, fmt.Errorf("giving up after %d conflicting attempts: %w", attempt, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("updating status of PodUnavailableBudget %s/%s after %d conflicts: %w",
				informerCopy.Namespace, informerCopy.Name, attempt, ctx.Err())
		case <-time.After(backoff.Step()):
		}
	}
}

// attempt is one read-modify-write of UpdateStatus, under the budget's mutex. It returns
// the change's error apart from the API's.
func (c *Cache) attempt(ctx context.Context, client bosunclientset.Interface,
	informerCopy *policyv1beta1.PodUnavailableBudget, change Change, attempt int) (_ *policyv1beta1.PodUnavailableBudget, changeErr, err error) {
	namespace, name := informerCopy.Namespace, informerCopy.Name
	budgets := client.PolicyV1beta1().PodUnavailableBudgets(namespace)
	unlock := c.lock(informerCopy)
	defer unlock()

	var base *policyv1beta1.PodUnavailableBudget
	if attempt == 1 {
		base = c.Freshest(informerCopy)
	} else {
		live, err := budgets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("reading PodUnavailableBudget %s/%s after a conflict: %w", namespace, name, err)
		}
		if live.UID != informerCopy.UID {
			return nil, nil, fmt.Errorf("reading PodUnavailableBudget %s/%s after a conflict: it was re-created: %w", namespace, name,
				apierrors.NewNotFound(policyv1beta1.Resource("podunavailablebudgets"), name))
		}
		c.remember(live)
		base = live
	}

	pub := base.DeepCopy()
	write, err := change(pub)
	if err != nil {
		return nil, err, nil
	}
	if !write {
		return pub, nil, nil
	}
	updated, err := budgets.UpdateStatus(ctx, pub, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) {
			klog.FromContext(ctx).V(4).Info("Conflict writing PodUnavailableBudget status",
				"podUnavailableBudget", klog.KObj(pub), "resourceVersion", pub.ResourceVersion, "attempt", attempt)
		}
		return nil, nil, fmt.Errorf("updating status of PodUnavailableBudget %s/%s: %w", namespace, name, err)
	}
	c.remember(updated)
	return updated, nil, nil
}

// Freshest returns the newer, by resourceVersion, of the write-through copy and
// informerCopy; informerCopy when the copy is of another budget (other UID) or either
// version is not a number. It copies nothing: callers must not mutate the result.
func (c *Cache) Freshest(informerCopy *policyv1beta1.PodUnavailableBudget) *policyv1beta1.PodUnavailableBudget {
	c.mu.Lock()
	written := c.written[types.NamespacedName{Namespace: informerCopy.Namespace, Name: informerCopy.Name}]
	c.mu.Unlock()
	if written == nil || written.UID != informerCopy.UID || !newer(written, informerCopy) {
		return informerCopy
	}
	return written
}

// remember stores pub as the write-through copy unless the stored one is newer.
func (c *Cache) remember(pub *policyv1beta1.PodUnavailableBudget) {
	key := types.NamespacedName{Namespace: pub.Namespace, Name: pub.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.written[key]; old != nil && old.UID == pub.UID && newer(old, pub) {
		return
	}
	c.written[key] = pub
}

// newer reports whether a's resourceVersion is a larger number than b's. Resource versions
// are opaque by contract, but every API server bosun supports issues increasing integers;
// should one not, nothing is newer and the caller keeps the informer's copy.
func newer(a, b *policyv1beta1.PodUnavailableBudget) bool {
	av, err := strconv.ParseUint(a.ResourceVersion, 10, 64)
	if err != nil {
		return false
	}
	bv, err := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if err != nil {
		return false
	}
	return av > bv
}

// lock takes the mutex of pub's UID and returns its release.
func (c *Cache) lock(pub *policyv1beta1.PodUnavailableBudget) (unlock func()) {
	key := keyOf(pub)
	c.mu.Lock()
	l := c.locks[key]
	if l == nil {
		l = &budgetLock{}
		c.locks[key] = l
	}
	l.users++
	c.mu.Unlock()

	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		c.mu.Lock()
		l.users--
		if l.users == 0 {
			delete(c.locks, key)
		}
		c.mu.Unlock()
	}
}

// keyOf is the key of a budget's lock and Spend queue: its UID, or, for a budget without
// one (only in tests), its namespace/name.
func keyOf(pub *policyv1beta1.PodUnavailableBudget) lockKey {
	if pub.UID == "" {
		return lockKey{name: types.NamespacedName{Namespace: pub.Namespace, Name: pub.Name}}
	}
	return lockKey{uid: pub.UID}
}
