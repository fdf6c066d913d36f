package configuration

import (
	"context"
	"errors"
	"fmt"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// sync brings the object named key (a webhook configuration or a CRD's conversion
// webhook) to what it should be and records the outcome for the readiness check.
func (w *Writer) sync(ctx context.Context, key string) error {
	err := w.syncTarget(ctx, key)
	w.outcomes.record(key, err)
	var problem *reportedProblem
	switch {
	case errors.Is(err, errNoCABundle):
		// Not a failure to back off from: the provider's Resync usually comes first, and
		// this covers a missed one.
		w.queue.AddAfter(key, caBundleWait)
		return nil
	case errors.As(err, &problem):
		// Only a person can fix it; the fix changes the object, and its informer event
		// queues the key again. Readiness keeps saying what is wrong until then.
		return nil
	}
	return err
}

func (w *Writer) syncTarget(ctx context.Context, key string) error {
	t, ok := w.targets[key]
	if !ok {
		// Only the handlers and Resync queue keys, and both filter; a retry cannot help.
		klog.FromContext(ctx).Error(nil, "Not an object the writer manages; dropping the key", "key", key)
		return nil
	}
	return t.sync(ctx, w.caBundle)
}

// target is one object the writer keeps: a webhook configuration, or the conversion
// webhook of a CRD.
type target interface {
	// sync makes the object what it should be, trusting what caBundle returns; it returns
	// errNoCABundle when that is nothing yet, and a *reportedProblem when the object is
	// wrong in a way the writer must not or cannot repair.
	sync(ctx context.Context, caBundle func() []byte) error
}

// configuration is what configTarget needs of the two webhook configuration types.
type configuration[T any] interface {
	metav1.Object
	DeepCopy() T
}

// configTarget is a target for one configuration type: the same steps for both, with
// what differs between the types (the webhooks' type, the cache, the client) given as
// fields.
type configTarget[T configuration[T]] struct {
	name       string
	registered bool
	desired    func(caBundle []byte) T
	cache      interface {
		Get(name string) (T, error)
	}
	client interface {
		Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
		Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
		Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	}
	// webhooks returns a copy of the configuration's webhooks with the API server's
	// defaults filled in, for comparison.
	webhooks func(T) any
	// setWebhooks replaces dst's webhooks with a copy of src's.
	setWebhooks func(dst, src T)
}

// sync makes the configuration what Desired says: deleted when bosun has no webhooks of
// its type, otherwise created or updated, once the CA bundle is known.
func (t *configTarget[T]) sync(ctx context.Context, caBundle func() []byte) error {
	logger := klog.FromContext(ctx).WithValues("webhookConfiguration", t.name)
	ctx = klog.NewContext(ctx, logger)
	if !t.registered {
		return t.remove(ctx)
	}
	ca := caBundle()
	if len(ca) == 0 {
		// Without a CA bundle the API server would not trust the server; the webhooks
		// would fail (or, failing open, be skipped) until the next write.
		logger.V(2).Info("No CA bundle yet; looking again later", "after", caBundleWait)
		return errNoCABundle
	}
	return t.ensure(ctx, ca)
}

func (t *configTarget[T]) ensure(ctx context.Context, caBundle []byte) error {
	logger := klog.FromContext(ctx)
	desired := t.desired(caBundle)

	live, err := t.cache.Get(t.name)
	if apierrors.IsNotFound(err) {
		if _, err := t.client.Create(ctx, desired, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Another replica created it first; the informer will show it, and the
				// retry compares with it.
				return fmt.Errorf("%w: creating webhook configuration %s: %w", queue.ErrRequeue, t.name, err)
			}
			return fmt.Errorf("creating webhook configuration %s: %w", t.name, err)
		}
		logger.Info("Created webhook configuration")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading webhook configuration %s from the cache: %w", t.name, err)
	}
	if !isManaged(live) {
		logger.Error(nil, "Webhook configuration exists but is not managed by bosun; leaving it alone",
			"managedBy", live.GetLabels()[managedByLabel], "wantLabel", managedByLabel+"="+managedByBosun)
		return nil
	}

	webhooksMatch := apiequality.Semantic.DeepEqual(t.webhooks(live), t.webhooks(desired))
	labelsMatch := hasLabels(live.GetLabels(), desired.GetLabels())
	if webhooksMatch && labelsMatch {
		logger.V(4).Info("Webhook configuration is up to date")
		return nil
	}
	// On top of the live object: its resourceVersion makes a concurrent write conflict
	// rather than be lost, and whatever bosun does not own (other labels, annotations)
	// stays as users set it.
	updated := live.DeepCopy()
	t.setWebhooks(updated, desired)
	labels := maps.Clone(updated.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.GetLabels())
	updated.SetLabels(labels)
	if _, err := t.client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			// Another replica or a user wrote since the cache saw it; the retry compares
			// with the newer object, which is likely already right.
			return fmt.Errorf("%w: updating webhook configuration %s: %w", queue.ErrRequeue, t.name, err)
		}
		return fmt.Errorf("updating webhook configuration %s: %w", t.name, err)
	}
	logger.Info("Updated webhook configuration", "webhooksChanged", !webhooksMatch, "labelsChanged", !labelsMatch)
	return nil
}

func (t *configTarget[T]) remove(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	live, err := t.cache.Get(t.name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading webhook configuration %s from the cache: %w", t.name, err)
	}
	if !isManaged(live) {
		logger.Error(nil, "bosun has no webhooks of this type, but a configuration of its name exists that bosun does not manage; leaving it alone",
			"managedBy", live.GetLabels()[managedByLabel])
		return nil
	}
	// The preconditions keep the delete from removing an object someone replaced, or
	// took over by relabelling it, after the cache saw it.
	err = t.client.Delete(ctx, t.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
		UID:             ptr.To(live.GetUID()),
		ResourceVersion: ptr.To(live.GetResourceVersion()),
	}})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: deleting webhook configuration %s: %w", queue.ErrRequeue, t.name, err)
	case err != nil:
		return fmt.Errorf("deleting webhook configuration %s: %w", t.name, err)
	}
	logger.Info("Deleted webhook configuration: bosun has no webhooks of its type")
	return nil
}

// isManaged reports whether bosun manages obj.
func isManaged(obj metav1.Object) bool {
	return obj.GetLabels()[managedByLabel] == managedByBosun
}

// hasLabels reports whether have holds every label in want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
