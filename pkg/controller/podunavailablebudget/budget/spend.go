package budget

import (
	"context"
	"fmt"
	"time"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	"k8s.io/klog/v2"
)

// spendTimeout bounds one shared status write with its conflict retries. It is not any
// caller's deadline: the write serves every request in its batch.
const spendTimeout = 30 * time.Second

// spendRequest is one caller's change waiting for a shared status write.
type spendRequest struct {
	informerCopy *policyv1beta1.PodUnavailableBudget
	change       Change
	done         chan error
}

// spendQueue holds the requests for one budget that arrived while a write was in flight.
type spendQueue struct {
	pending  []*spendRequest
	draining bool
}

// Spend applies change to the budget's status like UpdateStatus, except that changes asked
// for the same budget while a write is in flight share the next write. Each change is
// applied in turn to the copy the previous ones left, on the freshest copy of every
// attempt, so the result is what one write per change, in that order, would have
// stored; but a burst of evictions costs a few writes instead of one per pod, and no
// request waits behind more than the write in flight and its own.
//
// It returns change's own error, or the write's error for a change that wanted to write.
// A caller whose ctx ends first gets ctx's error while its change may still be written
// with the batch: a webhook answers the API server in time, and the budget spent on a
// request that then failed comes back when the entry expires, as for any admitted pod
// that was not deleted.
func (c *Cache) Spend(ctx context.Context, client bosunclientset.Interface,
	informerCopy *policyv1beta1.PodUnavailableBudget, change Change) error {
	req := &spendRequest{informerCopy: informerCopy, change: change, done: make(chan error, 1)}
	key := keyOf(informerCopy)

	c.mu.Lock()
	q := c.queues[key]
	if q == nil {
		q = &spendQueue{}
		c.queues[key] = q
	}
	q.pending = append(q.pending, req)
	start := !q.draining
	q.draining = true
	c.mu.Unlock()

	if start {
		// The writer outlives the request that started it: it serves every request queued
		// behind it.
		writerCtx := klog.NewContext(context.Background(), klog.FromContext(ctx))
		go c.drain(writerCtx, client, key, q)
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the status write of PodUnavailableBudget %s/%s: %w", informerCopy.Namespace, informerCopy.Name, ctx.Err())
	}
}

// drain writes the queued requests in batches until none are left.
func (c *Cache) drain(ctx context.Context, client bosunclientset.Interface, key lockKey, q *spendQueue) {
	for {
		c.mu.Lock()
		batch := q.pending
		q.pending = nil
		if len(batch) == 0 {
			q.draining = false
			delete(c.queues, key)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.writeBatch(ctx, client, batch)
	}
}

// writeBatch applies a batch of changes in one status write and answers each request.
func (c *Cache) writeBatch(ctx context.Context, client bosunclientset.Interface, batch []*spendRequest) {
	ctx, cancel := context.WithTimeout(ctx, spendTimeout)
	defer cancel()

	informerCopy := batch[0].informerCopy
	for _, r := range batch[1:] {
		if newer(r.informerCopy, informerCopy) {
			informerCopy = r.informerCopy
		}
	}
	results := make([]error, len(batch))
	wanted := make([]bool, len(batch))
	_, err := c.UpdateStatus(ctx, client, informerCopy, func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		write := false
		for i, r := range batch {
			// Each change gets a copy, so a refused or write-less change leaves nothing
			// behind for the ones after it.
			trial := pub.DeepCopy()
			wanted[i], results[i] = r.change(trial)
			if results[i] == nil && wanted[i] {
				*pub = *trial
				write = true
			}
		}
		return write, nil
	})
	klog.FromContext(ctx).V(4).Info("Wrote a batch of PodUnavailableBudget changes", "podUnavailableBudget", klog.KObj(informerCopy),
		"changes", len(batch), "err", err)
	for i, r := range batch {
		switch {
		case results[i] != nil:
			r.done <- results[i]
		case wanted[i] && err != nil:
			r.done <- err
		default:
			r.done <- nil
		}
	}
}
