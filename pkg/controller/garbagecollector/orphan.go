package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// attemptToOrphanWorker handles one item of attempt-to-orphan: an owner being deleted
// with the orphan finalizer. Its dependents lose their reference to it, then it loses the
// finalizer and the API server completes the delete.
func (c *Controller) attemptToOrphanWorker(ctx context.Context, owner *gcgraph.Node) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("owner", owner.Identity()))
	if err := c.orphanDependents(ctx, owner.Identity(), owner.Dependents()); err != nil {
		return err
	}
	if err := c.removeFinalizer(ctx, owner.Identity(), metav1.FinalizerOrphanDependents); err != nil {
		return fmt.Errorf("removing the %s finalizer from %s: %w", metav1.FinalizerOrphanDependents, owner.Identity(), err)
	}
	return nil
}

// orphanDependents removes the reference to owner from every dependent, all at once: an
// owner with thousands of dependents would otherwise hold its worker for minutes. A
// dependent already gone needs nothing.
func (c *Controller) orphanDependents(ctx context.Context, owner gcgraph.Identity, dependents []*gcgraph.Node) error {
	klog.FromContext(ctx).V(2).Info("Orphaning dependents", "dependents", len(dependents))
	ownerUIDs := []types.UID{owner.UID}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, dep := range dependents {
		wg.Go(func() {
			id := dep.Identity()
			body, err := refmanager.ReleasePatch(id.UID, ownerUIDs)
			if err == nil {
				err = c.patchOwnerRefs(ctx, id, body, func(obj metav1.Object) ([]byte, error) {
					return refmanager.ReleaseMergePatch(obj, ownerUIDs)
				})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("orphaning %s failed, %w", id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("failed to orphan dependents of owner %s, got errors: %s", owner, utilerrors.NewAggregate(errs).Error())
	}
	return nil
}

// finalizersPatch is a JSON merge patch replacing the finalizers (null when none remain),
// conditional on resourceVersion.
type finalizersPatch struct {
	Metadata finalizersPatchMeta `json:"metadata"`
}

type finalizersPatchMeta struct {
	ResourceVersion string   `json:"resourceVersion"`
	Finalizers      []string `json:"finalizers"`
}

// RemoveFinalizerPatch returns the JSON merge patch that leaves finalizers, the object's
// finalizers without the one removed, at resourceVersion.
func RemoveFinalizerPatch(resourceVersion string, finalizers []string) ([]byte, error) {
	if len(finalizers) == 0 {
		finalizers = nil
	}
	body, err := json.Marshal(finalizersPatch{Metadata: finalizersPatchMeta{ResourceVersion: resourceVersion, Finalizers: finalizers}})
	if err != nil {
		return nil, fmt.Errorf("encoding finalizers patch: %w", err)
	}
	return body, nil
}

// removeFinalizer removes finalizer, and only it, from the object id. Each try reads the
// object and patches at the resourceVersion read; conflicts are retried with client-go's
// default backoff. An object already gone, or without the finalizer, needs nothing.
func (c *Controller) removeFinalizer(ctx context.Context, id gcgraph.Identity, finalizer string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj, err := c.getObject(ctx, id)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading the owner to remove finalizer %s: %w", finalizer, err)
		case obj.UID != id.UID:
			// Replaced under the same name: the owner this was about is gone.
			return nil
		case !slices.Contains(obj.Finalizers, finalizer):
			return nil
		}
		rest := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool { return f == finalizer })
		body, err := RemoveFinalizerPatch(obj.ResourceVersion, rest)
		if err != nil {
			return err
		}
		resource, namespaced, err := c.resourceFor(id.APIVersion, id.Kind)
		if err != nil {
			return err
		}
		_, err = c.resourceClient(resource, namespaceIf(namespaced, id.Namespace)).Patch(ctx, id.Name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("updateMaxRetries(%d) has reached. The garbage collector will retry later for owner %v", retry.DefaultBackoff.Steps, id)
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Finalizer no longer on the object", "finalizer", finalizer)
	}
	return err
}
