package podunavailablebudget

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// chainLookup names the controller reference at which a handler's walk up a controller
// chain left the informer caches: a workload of a kind bosun does not cache, whose object
// and controllers only the API server can tell. The handlers run on the informer's
// goroutine and must not wait on the API server, so they queue the lookup instead; the
// queue merges the lookups of the many pods of one workload.
type chainLookup struct {
	namespace        string
	apiVersion, kind string
	name             string
	uid              types.UID
}

func (l chainLookup) ref() *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: l.apiVersion, Kind: l.kind, Name: l.name, UID: l.uid}
}

// enqueueChain queues the lookup of the chain starting at ref, in namespace.
func (c *Controller) enqueueChain(ctx context.Context, namespace string, ref *metav1.OwnerReference) {
	klog.FromContext(ctx).V(4).Info("Controller chain leaves the informer caches; looking it up in the background",
		"kind", ref.Kind, "workload", klog.KRef(namespace, ref.Name))
	c.chains.Add(chainLookup{namespace: namespace, apiVersion: ref.APIVersion, kind: ref.Kind, name: ref.Name, uid: ref.UID})
}

// syncChain looks up the controller chain that lookup starts, through the workload finder
// (live reads for the kinds bosun does not cache), and queues the budgets of its namespace
// whose targetRef names a workload of it. Selector budgets and the budgets the handler
// could decide from the caches were queued by the handler already.
func (c *Controller) syncChain(ctx context.Context, lookup chainLookup) error {
	logger := klog.FromContext(ctx).WithValues("kind", lookup.kind, "workload", klog.KRef(lookup.namespace, lookup.name))
	ctx = klog.NewContext(ctx, logger)
	chain, err := c.finder.Chain(ctx, lookup.namespace, lookup.ref())
	if err != nil {
		return fmt.Errorf("looking up the controller chain of %s %s: %w", lookup.kind, klog.KRef(lookup.namespace, lookup.name), err)
	}
	if len(chain) == 0 {
		logger.V(4).Info("Workload of a controller chain is gone")
		return nil
	}
	all, err := c.budgets.PodUnavailableBudgets(lookup.namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing the PodUnavailableBudgets of namespace %s: %w", lookup.namespace, err)
	}
	for _, pub := range all {
		for _, w := range chain {
			if targets(pub, w.GroupKind(), w.Name) {
				logger.V(4).Info("Controller chain leads to a budget's target", "target", klog.KRef(w.Namespace, w.Name),
					"targetKind", w.GroupKind(), "podUnavailableBudget", klog.KObj(pub))
				c.enqueue(pub.Namespace, pub.Name, 0)
				break
			}
		}
	}
	return nil
}
