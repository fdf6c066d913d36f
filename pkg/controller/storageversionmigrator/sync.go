package storageversionmigrator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// syncCRD brings one CRD a step further: nothing while it is not bosun's or has nothing to
// migrate, a wait while the API server cannot yet serve the pass or may still be catching
// up, otherwise the pass and, after a clean one, the trim of status.storedVersions.
func (c *Controller) syncCRD(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx).WithValues("crd", name)
	ctx = klog.NewContext(ctx, logger)

	obj, err := c.crds.Get(name)
	if apierrors.IsNotFound(err) {
		// Gone, or no longer labelled as bosun's (the informer selects on the label).
		c.forgetStorage(name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading CRD %s from the cache: %w", name, err)
	}
	crd, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("reading CRD %s from the cache: unexpected %T", name, obj)
	}
	if !isManaged(crd) {
		logger.V(2).Info("Not migrating a CRD bosun does not manage", "label", ManagedByLabel+"="+ManagedByValue)
		return nil
	}
	stored := storedVersions(crd)
	if !needsMigration(stored) {
		logger.V(4).Info("Nothing to migrate", "storedVersions", stored)
		return nil
	}
	if !storesTarget(crd) {
		c.forgetStorage(name)
		logger.V(2).Info("Waiting for v1beta1 to become the served storage version", "storedVersions", stored)
		return nil
	}
	seenAt := c.storageSeenAt(crd)
	if !isEstablished(crd) {
		logger.V(2).Info("Waiting for the CRD to be established", "storedVersions", stored)
		return nil
	}
	if !conversionConfigured(crd) {
		logger.V(2).Info("Waiting for the conversion webhook's caBundle", "storedVersions", stored)
		return nil
	}
	if remaining := seenAt.Add(c.settleDelay).Sub(c.clock.Now()); remaining > 0 {
		logger.V(2).Info("Waiting for every API server to store v1beta1", "storedVersions", stored, "remaining", remaining)
		c.queue.AddAfter(name, remaining)
		return nil
	}

	resource := migratedResource(crd)
	if resource.Group == "" || resource.Resource == "" {
		return fmt.Errorf("CRD %s names no group or plural resource", name)
	}
	logger.Info("Migrating storage to v1beta1", "resource", resource.String(), "storedVersions", stored)
	result, err := c.rewriteAll(ctx, name, resource)
	if err != nil {
		if ctx.Err() != nil {
			// Stopping, not failing: the next leader starts over.
			return err
		}
		c.recorder.Eventf(crd, corev1.EventTypeWarning, FailedReason, "Rewriting %s in %s failed, status.storedVersions stays %v: %v",
			resource.GroupResource(), TargetVersion, stored, err)
		return fmt.Errorf("rewriting %s in %s: %w", resource.GroupResource(), TargetVersion, err)
	}
	return c.trimStoredVersions(ctx, crd, stored, result)
}
