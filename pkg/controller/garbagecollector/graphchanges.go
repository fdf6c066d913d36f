package garbagecollector

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// Event reason recorded on a dependent whose owner reference names an object of another
// namespace.
const reasonOwnerRefInvalidNamespace = "OwnerRefInvalidNamespace"

// changeType is what happened to an object.
type changeType int

const (
	objectAdded changeType = iota
	objectUpdated
	objectDeleted
)

func (t changeType) String() string {
	switch t {
	case objectAdded:
		return "add"
	case objectUpdated:
		return "update"
	default:
		return "delete"
	}
}

// graphChange is one item of the graph_changes queue: an informer event, or a virtual
// delete raised by a worker that found an identity absent. The previous state of an
// updated object is not kept: every decision is taken from the current state (level
// triggered), so a missed or merged event cannot make the collector miss a transition.
type graphChange struct {
	typ changeType
	// obj and kind describe the object of an informer event; informers deliver no type
	// information, so kind comes from the monitor.
	obj  metav1.Object
	kind schema.GroupVersionKind
	// virtual marks a delete raised by a worker; identity is what it verified absent.
	virtual  bool
	identity gcgraph.Identity
}

// String keeps log lines about queue items short.
func (ch *graphChange) String() string {
	if ch.virtual {
		return "virtual delete " + ch.identity.String()
	}
	return fmt.Sprintf("%s %s", ch.typ, identityOf(ch.obj, ch.kind))
}

// identityOf returns the identity of an object watched as kind.
func identityOf(obj metav1.Object, kind schema.GroupVersionKind) gcgraph.Identity {
	apiVersion, k := kind.ToAPIVersionAndKind()
	return gcgraph.Identity{APIVersion: apiVersion, Kind: k, Name: obj.GetName(), UID: obj.GetUID(), Namespace: obj.GetNamespace()}
}

// monitorHandlers returns the handlers of a monitor of kind: each event becomes a graph
// change, applied in order by the graph builder.
func (c *Controller) monitorHandlers(kind schema.GroupVersionKind) informers.Handlers {
	enqueue := func(ctx context.Context, typ changeType, obj any) {
		accessor, ok := queue.FromTombstone[metav1.Object](obj)
		if !ok {
			utilruntime.HandleErrorWithContext(ctx, nil, "Monitor event carries an object without metadata", "kind", kind, "type", fmt.Sprintf("%T", obj))
			return
		}
		c.graphChanges.Add(&graphChange{typ: typ, obj: accessor, kind: kind})
	}
	return informers.Handlers{
		Add:    func(ctx context.Context, obj any) { enqueue(ctx, objectAdded, obj) },
		Update: func(ctx context.Context, _, cur any) { enqueue(ctx, objectUpdated, cur) },
		Delete: func(ctx context.Context, obj any) { enqueue(ctx, objectDeleted, obj) },
	}
}

// raiseVirtualDelete asks the graph builder to treat id as deleted: a worker verified that
// no object with its coordinates exists.
func (c *Controller) raiseVirtualDelete(id gcgraph.Identity) {
	c.graphChanges.Add(&graphChange{typ: objectDeleted, virtual: true, identity: id})
}

// processGraphChange applies one change to the graph. It runs on the graph builder, the
// only goroutine that writes the graph; it never fails.
func (c *Controller) processGraphChange(ctx context.Context, ch *graphChange) error {
	if ch.virtual {
		c.applyVirtualDelete(ctx, ch.identity)
		return nil
	}
	id := identityOf(ch.obj, ch.kind)
	n, found := c.graph.Read(id.UID)
	if found && n.Virtual() {
		n = c.observe(ctx, n, id)
	}
	switch {
	case ch.typ != objectDeleted && !found:
		c.addNode(ctx, id, ch.obj)
	case ch.typ != objectDeleted:
		c.updateNode(ctx, n, ch.obj)
	case found:
		c.removeNode(ctx, n, id)
	}
	return nil
}

// observe handles the first informer event about an object the graph knew only from
// owner references. Dependents that referred to it by other coordinates, or from another
// namespace than the (namespaced) object's, are checked by attempt-to-delete; the node
// takes the observed identity. It returns the node now in the graph.
func (c *Controller) observe(ctx context.Context, n *gcgraph.Node, observed gcgraph.Identity) *gcgraph.Node {
	if n.Identity() != observed {
		_, mismatched := gcgraph.PartitionDependents(n.Dependents(), observed)
		for _, dep := range mismatched {
			if observed.Namespace != "" && dep.Identity().Namespace != observed.Namespace {
				c.reportInvalidNamespace(ctx, dep, observed.UID)
			}
			c.attemptToDelete.Add(dep)
		}
		klog.FromContext(ctx).V(2).Info("Observed an owner known only from references; taking its observed identity",
			"virtual", n.Identity(), "observed", observed)
		// Identities never change in place: workers may be reading the old node.
		n = n.WithIdentity(observed)
		c.graph.Write(n)
	}
	n.MarkObserved()
	return n
}

// addNode inserts a node for an object seen for the first time.
func (c *Controller) addNode(ctx context.Context, id gcgraph.Identity, obj metav1.Object) {
	n := gcgraph.NewNode(id, slices.Clone(obj.GetOwnerReferences()))
	if obj.GetDeletionTimestamp() != nil {
		n.MarkBeingDeleted()
		if hasFinalizer(obj, metav1.FinalizerDeleteDependents) {
			n.MarkDeletingDependents()
		}
	}
	c.graph.Write(n)
	c.linkToOwners(ctx, n, n.Owners())
	c.applyTransitions(ctx, n, obj)
}

// updateNode brings a node in line with its object's owner references and deletion
// state.
func (c *Controller) updateNode(ctx context.Context, n *gcgraph.Node, obj metav1.Object) {
	added, removed, changed := gcgraph.DiffOwnerRefs(n.Owners(), obj.GetOwnerReferences())
	if len(added)+len(removed)+len(changed) > 0 {
		// An owner deleted in the foreground may have been waiting for exactly this
		// dependent: once the reference stops blocking it, check it again.
		for _, ref := range removed {
			if gcgraph.IsBlocking(ref) {
				c.queueOwner(ref.UID)
			}
		}
		for _, change := range changed {
			if change.Unblocked() {
				c.queueOwner(change.New.UID)
			}
		}
		n.SetOwners(slices.Clone(obj.GetOwnerReferences()))
		c.linkToOwners(ctx, n, added)
		c.graph.UnlinkFromOwners(n, removed)
	}
	if obj.GetDeletionTimestamp() != nil {
		n.MarkBeingDeleted()
	}
	c.applyTransitions(ctx, n, obj)
}

// queueOwner queues the node of uid, if any, to attempt-to-delete.
func (c *Controller) queueOwner(uid types.UID) {
	if owner, ok := c.graph.Read(uid); ok {
		c.attemptToDelete.Add(owner)
	}
}

// applyTransitions queues the work an object being deleted with the orphan or
// foregroundDeletion finalizer calls for. It runs on every add and update of such an
// object, not only when the finalizer appears: the work is idempotent, and an owner whose
// transition was missed (collector restarted, relist) would otherwise wait forever.
func (c *Controller) applyTransitions(ctx context.Context, n *gcgraph.Node, obj metav1.Object) {
	if obj.GetDeletionTimestamp() == nil {
		return
	}
	switch {
	case hasFinalizer(obj, metav1.FinalizerOrphanDependents):
		c.attemptToOrphan.Add(n)
	case hasFinalizer(obj, metav1.FinalizerDeleteDependents):
		if n.MarkDeletingDependents() {
			// Fan out once; afterwards each dependent's own deletion events re-queue the
			// owner.
			dependents := n.Dependents()
			klog.FromContext(ctx).V(2).Info("Deleting dependents in the foreground", "owner", n.Identity(), "dependents", len(dependents))
			for _, dep := range dependents {
				c.attemptToDelete.Add(dep)
			}
		}
		c.attemptToDelete.Add(n)
	}
}

// linkToOwners records n as a dependent of the owner each of refs names, creating a
// virtual node (checked by a worker) for owners the graph does not know. When a reference
// may be invalid, n itself is queued so that a worker checks it against the live API.
func (c *Controller) linkToOwners(ctx context.Context, n *gcgraph.Node, refs []metav1.OwnerReference) {
	logger := klog.FromContext(ctx)
	absent := map[types.UID]bool{}
	for _, ref := range c.graph.LinkToOwners(n, refs) {
		absent[ref.UID] = true
		owner := gcgraph.NewVirtualNode(gcgraph.IdentityFromRef(ref, n.Identity().Namespace))
		owner.AddDependent(n)
		c.graph.Write(owner)
		logger.V(5).Info("Owner not in the graph; added a virtual node to verify it", "owner", owner.Identity(), "dependent", n.Identity())
		c.attemptToDelete.Add(owner)
	}
	for _, ref := range refs {
		if absent[ref.UID] {
			continue
		}
		owner, ok := c.graph.Read(ref.UID)
		if ok && c.suspectReference(ctx, n, owner, ref) {
			c.attemptToDelete.Add(n)
			return
		}
	}
}

// suspectReference reports whether ref, from n to owner, may not name an existing object,
// recording OwnerRefInvalidNamespace on n when it certainly does not.
func (c *Controller) suspectReference(ctx context.Context, n, owner *gcgraph.Node, ref metav1.OwnerReference) bool {
	logger := klog.FromContext(ctx)
	ownerID, id := owner.Identity(), n.Identity()
	switch {
	case ownerID.Namespace != "" && ownerID.Namespace != id.Namespace:
		// A namespaced owner can only own objects of its own namespace. A virtual owner's
		// namespace is only a guess, so only an observed one proves the reference wrong.
		if !owner.Virtual() {
			c.reportInvalidNamespace(ctx, n, ref.UID)
		}
		logger.V(2).Info("Object references an owner in another namespace", "item", id, "owner", ownerID)
		return true
	case !ownerID.MatchesRef(ref):
		logger.V(2).Info("Object references an owner by other coordinates than the owner's", "item", id, "owner", ownerID)
		return true
	case ownerID.Namespace == "" && owner.Virtual() && id.Namespace != "":
		// The unverified owner was first referenced by a cluster-scoped object; it may be a
		// namespaced object such a reference cannot name.
		return true
	}
	return false
}

// reportInvalidNamespace records OwnerRefInvalidNamespace on dep for its reference to
// ownerUID.
func (c *Controller) reportInvalidNamespace(ctx context.Context, dep *gcgraph.Node, ownerUID types.UID) {
	id := dep.Identity()
	for _, ref := range dep.Owners() {
		if ref.UID != ownerUID {
			continue
		}
		object := &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: id.APIVersion, Kind: id.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.Name, UID: id.UID},
		}
		klog.FromContext(ctx).V(2).Info("Owner reference names an object of another namespace", "item", id, "owner", ref.UID)
		c.recorder.Event(object, corev1.EventTypeWarning, reasonOwnerRefInvalidNamespace, gcgraph.InvalidNamespaceMessage(ref, id.Namespace))
		return
	}
}

// applyVirtualDelete handles a worker's finding that identity deleted does not exist.
func (c *Controller) applyVirtualDelete(ctx context.Context, deleted gcgraph.Identity) {
	n, found := c.graph.Read(deleted.UID)
	if !found {
		return
	}
	matching, mismatched := gcgraph.PartitionDependents(n.Dependents(), deleted)
	switch {
	case n.Virtual() && len(mismatched) > 0:
		// Dependents disagree about the owner's coordinates: what was verified absent is
		// one candidate, not the owner. Collect the dependents that named it, keep the
		// node, and let a worker verify the next candidate.
		c.queueDependentsOfAbsent(deleted, matching)
		if n.Identity() == deleted {
			if alt, ok := gcgraph.AlternateIdentity(mismatched, deleted); ok {
				replacement := n.WithIdentity(alt)
				c.graph.Write(replacement)
				klog.FromContext(ctx).V(2).Info("Owner not found; verifying the other coordinates dependents name it by",
					"absent", deleted, "next", alt)
				c.attemptToDelete.AddRateLimited(replacement)
			}
		}
	case !n.Virtual() && n.Identity() != deleted:
		// The object exists under other coordinates; only the dependents that named the
		// absent ones lost their owner.
		c.queueDependentsOfAbsent(deleted, matching)
	default:
		c.removeNode(ctx, n, deleted)
	}
}

// queueDependentsOfAbsent remembers absent as absent and queues deps, which named it,
// when there are any.
func (c *Controller) queueDependentsOfAbsent(absent gcgraph.Identity, deps []*gcgraph.Node) {
	if len(deps) == 0 {
		return
	}
	c.absentOwners.Add(absent)
	for _, dep := range deps {
		c.attemptToDelete.Add(dep)
	}
}

// removeNode removes n, whose object (identity deleted) is gone, from the graph. Its
// dependents lost an owner and its owners deleting dependents in the foreground may be
// done: all are checked again.
func (c *Controller) removeNode(ctx context.Context, n *gcgraph.Node, deleted gcgraph.Identity) {
	c.graph.Remove(n)
	dependents := n.Dependents()
	klog.FromContext(ctx).V(5).Info("Removed object from the graph", "item", deleted, "dependents", len(dependents))
	if len(dependents) > 0 {
		c.absentOwners.Add(deleted)
	}
	for _, dep := range dependents {
		c.attemptToDelete.Add(dep)
	}
	for _, ref := range n.Owners() {
		if owner, ok := c.graph.Read(ref.UID); ok && owner.DeletingDependents() {
			c.attemptToDelete.Add(owner)
		}
	}
}

// hasFinalizer reports whether obj carries finalizer.
func hasFinalizer(obj metav1.Object, finalizer string) bool {
	return slices.Contains(obj.GetFinalizers(), finalizer)
}
