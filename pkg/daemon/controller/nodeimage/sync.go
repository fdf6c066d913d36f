package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/nodeimage/nodeimageutil"
)

// syncNodeImage brings the pulls in line with the NodeImage's spec and writes its status.
func (c *Controller) syncNodeImage(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("nodeImage", key)
	ctx = klog.NewContext(ctx, logger)

	nodeImage, err := c.nodeImages.Get(key)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("NodeImage is gone, stopping every pull")
		c.stopPools()
		c.nodeImageUID = ""
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading NodeImage %s from the cache: %w", key, err)
	}
	if nodeImage.UID != c.nodeImageUID {
		// A new NodeImage of the same name: nothing of the old one's pulls applies.
		c.stopPools()
		c.nodeImageUID = nodeImage.UID
		c.writer.observe(nodeImage.Status.DeepCopy())
	}

	syncErr := c.syncPools(ctx, nodeImage)

	status, unfinished := c.buildStatus(nodeImage)
	limited, err := c.writeStatus(ctx, nodeImage, status)
	if err != nil {
		return errors.Join(syncErr, err)
	}
	if unfinished || limited {
		c.enqueue(unfinishedRequeue + rand.N(unfinishedRequeueJitter))
	} else {
		c.enqueue(finishedRequeue + rand.N(finishedRequeueJitter))
	}
	return syncErr
}

// syncPools keeps one pool per image of the spec and one worker per tag still to pull.
func (c *Controller) syncPools(ctx context.Context, nodeImage *appsv1beta1.NodeImage) error {
	for name, pool := range c.pools {
		if _, ok := nodeImage.Spec.Images[name]; !ok {
			klog.FromContext(ctx).V(2).Info("Image removed from spec, stopping its pulls", "image", name)
			pool.stop()
			delete(c.pools, name)
		}
	}
	// New pulls wait for the runtime; the pulls already running retry on their own.
	canStart := c.runtime.Runtime() != nil
	var errs []error
	waitingForRuntime := false
	owner := nodeImageReference(nodeImage)
	for _, name := range sortedKeys(nodeImage.Spec.Images) {
		imageSpec := nodeImage.Spec.Images[name]
		pool := c.pools[name]
		if pool == nil {
			pool = newImagePool(name)
			c.pools[name] = pool
		}
		credentials, err := c.secrets.credentials(ctx, imageSpec.PullSecrets)
		startTags := canStart
		if err != nil {
			// Without its secrets, an image's new pulls could only fail.
			errs = append(errs, fmt.Errorf("resolving the pull secrets of image %s: %w", name, err))
			startTags = false
		} else {
			pool.setPullConfig(credentials, imageSpec.SandboxConfig)
		}
		if c.syncTags(ctx, pool, imageSpec.Tags, nodeImage.Status.ImageStatuses[name].Tags, owner, startTags) && !canStart {
			waitingForRuntime = true
		}
	}
	if waitingForRuntime {
		errs = append(errs, errRuntimeUnavailable)
	}
	return errors.Join(errs...)
}

// syncTags stops the workers of tags gone from spec, done, or of another version, and
// starts one for every tag still to pull that has none. A tag is done when its status
// answers the spec's version and has a completion time; a worker whose result has not
// reached the cache yet is kept, since it is the newer truth. It returns whether a tag
// still to pull was left without a worker because start is false.
func (c *Controller) syncTags(ctx context.Context, pool *imagePool, tags []appsv1beta1.ImageTagSpec,
	statuses []appsv1beta1.ImageTagStatus, owner *corev1.ObjectReference, start bool) (leftUnstarted bool) {
	logger := klog.FromContext(ctx)
	wanted := map[string]bool{}
	for _, tag := range tags {
		wanted[tag.Tag] = true
		w := pool.workers[tag.Tag]
		if w != nil && w.spec.Version != tag.Version {
			logger.V(2).Info("Tag version changed, restarting its pull", "image", pool.name, "tag", tag.Tag, "from", w.spec.Version, "to", tag.Version)
			w.cancel()
			delete(pool.workers, tag.Tag)
			w = nil
		}
		if status := nodeimageutil.FindTagStatus(statuses, tag.Tag); status != nil && status.Version == tag.Version && status.CompletionTime != nil {
			if w != nil {
				// Our result was observed, or someone else (the manager) finished the tag.
				w.cancel()
				delete(pool.workers, tag.Tag)
			}
			continue
		}
		if w == nil {
			if !start {
				leftUnstarted = true
				continue
			}
			pool.workers[tag.Tag] = c.startWorker(ctx, pool, tag, owner)
		}
	}
	for tag, w := range pool.workers {
		if !wanted[tag] {
			logger.V(2).Info("Tag removed from spec, stopping its pull", "image", pool.name, "tag", tag)
			w.cancel()
			delete(pool.workers, tag)
		}
	}
	return leftUnstarted
}

// stopPools stops every pull.
func (c *Controller) stopPools() {
	for name, pool := range c.pools {
		pool.stop()
		delete(c.pools, name)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
