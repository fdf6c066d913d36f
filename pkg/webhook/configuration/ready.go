package configuration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
)

// ReadyCheckName is the name of the writer's readiness check.
const ReadyCheckName = "webhook-configuration"

// errNoCABundle is the outcome of a sync that could not write because the certificate
// provider knows no CA yet.
var errNoCABundle = errors.New("waiting for the CA bundle")

// reportedProblem is the outcome of a sync that found its object wrong in a way the writer
// must not or cannot repair (a CRD someone else manages, or one whose manifest asks for no
// conversion webhook). Readiness reports it; the key is not retried, since only a change of
// the object can help and that queues the key again.
type reportedProblem struct {
	msg string
}

func (p *reportedProblem) Error() string { return p.msg }

// syncOutcomes remembers how the last sync of each key ended.
type syncOutcomes struct {
	mu   sync.Mutex
	last map[string]error
	// recorded is closed, and replaced, at every record: a waiter wakes on the outcome
	// it waits for instead of polling.
	recorded chan struct{}
}

func (o *syncOutcomes) record(key string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last = map[string]error{}
	}
	o.last[key] = err
	if o.recorded != nil {
		close(o.recorded)
		o.recorded = nil
	}
}

// nextRecord returns a channel closed at the next record.
func (o *syncOutcomes) nextRecord() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.recorded == nil {
		o.recorded = make(chan struct{})
	}
	return o.recorded
}

// problems lists, for each key, why its configuration is not known to be right.
func (o *syncOutcomes) problems(keys []string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, key := range keys {
		err, synced := o.last[key]
		switch {
		case !synced:
			out = append(out, key+": not written yet")
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", key, err))
		}
	}
	sort.Strings(out)
	return out
}

// ReadyCheck is the readiness check "webhook-configuration": it passes once the last sync
// of every key succeeded, that is once the API server has been told where the webhooks
// and the conversion webhook are and which CA to trust: both configurations written, and
// every present CRD that converts through a webhook carrying bosun's clientConfig and CA.
// Until then admission requests and conversions may not reach this replica, or be refused
// for an unknown certificate. A CRD the writer must leave alone (someone else's) fails it
// with the reason, since its conversions do not come here.
func (w *Writer) ReadyCheck() healthz.HealthChecker {
	keys := make([]string, 0, len(w.targets))
	for key := range w.targets {
		keys = append(keys, key)
	}
	return healthz.NamedCheck(ReadyCheckName, func(*http.Request) error {
		if problems := w.outcomes.problems(keys); len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	})
}

// WaitForConversionWritten waits until every CRD whose conversion the writer keeps has
// been looked at once with a final outcome (written, absent, or someone else's), and,
// when the writer updated one, until crdStorageSwap has passed since that update; or
// until ctx ends, and reports which. Writing a CRD makes the API server replace the
// storage of its objects: it goes on serving new requests from the old one until it has
// seen the new CRD, and ends the old one's watches about a second later. An informer
// whose watch is ended that way misses every change until it has listed again, serving
// stale objects meanwhile (an admission webhook would then judge by them). Admission
// caches start after this instead.
func (w *Writer) WaitForConversionWritten(ctx context.Context) bool {
	var keys []string
	for key, t := range w.targets {
		if _, isCRD := t.(*crdTarget); isCRD {
			keys = append(keys, key)
		}
	}
	for {
		// Taken before the check, so that a record between the two wakes the wait.
		recorded := w.outcomes.nextRecord()
		if w.outcomes.settled(keys) {
			break
		}
		select {
		case <-ctx.Done():
			return false
		case <-recorded:
		}
	}
	last := w.crdWrites.lastAt()
	if last.IsZero() {
		return true
	}
	timer := time.NewTimer(time.Until(last.Add(crdStorageSwap)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// crdStorageSwap bounds how long after a CRD update kube-apiserver may still serve its
// objects from the storage it had before, whose watches it then ends: it acts on the
// update once its own informer delivers it, and ends the old storage's watches about a
// second later (measured: 1.04 s after the write on an idle kube-apiserver 1.36).
var crdStorageSwap = 3 * time.Second

// crdWrites remembers when the writer last updated a CRD.
type crdWrites struct {
	mu   sync.Mutex
	last time.Time
}

func (c *crdWrites) note(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.last) {
		c.last = t
	}
}

func (c *crdWrites) lastAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// settled reports whether the last sync of every key ended with the object right or with
// a problem only a person can fix.
func (o *syncOutcomes) settled(keys []string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, key := range keys {
		err, synced := o.last[key]
		var problem *reportedProblem
		if !synced || (err != nil && !errors.As(err, &problem)) {
			return false
		}
	}
	return true
}
