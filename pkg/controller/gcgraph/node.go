package gcgraph

import (
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node is one object in the ownership graph.
type Node struct {
	identity Identity

	ownersLock sync.RWMutex
	// owners is replaced wholesale, never modified in place, so a slice handed out by
	// Owners stays valid.
	owners []metav1.OwnerReference

	dependentsLock sync.RWMutex
	dependents     map[*Node]struct{}

	beingDeleted       atomic.Bool
	deletingDependents atomic.Bool
	virtual            atomic.Bool
}

// NewNode returns an observed node for id with the given owner references.
func NewNode(id Identity, owners []metav1.OwnerReference) *Node {
	return &Node{identity: id, owners: owners, dependents: map[*Node]struct{}{}}
}

// NewVirtualNode returns a node known only from someone's owner reference.
func NewVirtualNode(id Identity) *Node {
	n := NewNode(id, nil)
	n.virtual.Store(true)
	return n
}

// Identity returns the node's identity.
func (n *Node) Identity() Identity { return n.identity }

// String renders the node as its identity. Nodes are the garbage collector's queue items
// and are logged as such; without it a logger would print the locks and the dependents map
// while the graph builder changes them.
func (n *Node) String() string { return n.identity.String() }

// WithIdentity returns a copy of n (owners, dependents and flags) with identity id. The
// graph builder writes the copy into UIDToNode when an object's observed identity differs
// from the one a virtual node was created with.
func (n *Node) WithIdentity(id Identity) *Node {
	c := NewNode(id, n.Owners())
	for _, d := range n.Dependents() {
		c.dependents[d] = struct{}{}
	}
	c.beingDeleted.Store(n.beingDeleted.Load())
	c.deletingDependents.Store(n.deletingDependents.Load())
	c.virtual.Store(n.virtual.Load())
	return c
}

// Owners returns the owner references last observed on the object. Do not modify it.
func (n *Node) Owners() []metav1.OwnerReference {
	n.ownersLock.RLock()
	defer n.ownersLock.RUnlock()
	return n.owners
}

// SetOwners replaces the owner references; the node keeps owners, so the caller must not
// modify it afterwards.
func (n *Node) SetOwners(owners []metav1.OwnerReference) {
	n.ownersLock.Lock()
	defer n.ownersLock.Unlock()
	n.owners = owners
}

// AddDependent records that d names n as an owner.
func (n *Node) AddDependent(d *Node) {
	n.dependentsLock.Lock()
	defer n.dependentsLock.Unlock()
	n.dependents[d] = struct{}{}
}

// DeleteDependent forgets d as a dependent of n.
func (n *Node) DeleteDependent(d *Node) {
	n.dependentsLock.Lock()
	defer n.dependentsLock.Unlock()
	delete(n.dependents, d)
}

// Dependents returns a snapshot of n's dependents, in no particular order.
func (n *Node) Dependents() []*Node {
	n.dependentsLock.RLock()
	defer n.dependentsLock.RUnlock()
	out := make([]*Node, 0, len(n.dependents))
	for d := range n.dependents {
		out = append(out, d)
	}
	return out
}

// DependentsCount returns the number of dependents.
func (n *Node) DependentsCount() int {
	n.dependentsLock.RLock()
	defer n.dependentsLock.RUnlock()
	return len(n.dependents)
}

// BlockingDependents returns the dependents whose reference to n has
// blockOwnerDeletion: true; foreground deletion of n waits for them.
func (n *Node) BlockingDependents() []*Node {
	var blocking []*Node
	for _, d := range n.Dependents() {
		for _, ref := range d.Owners() {
			if ref.UID == n.identity.UID && IsBlocking(ref) {
				blocking = append(blocking, d)
				break
			}
		}
	}
	return blocking
}

// MarkBeingDeleted records that the object has a deletionTimestamp.
func (n *Node) MarkBeingDeleted() { n.beingDeleted.Store(true) }

// BeingDeleted reports whether the object has a deletionTimestamp.
func (n *Node) BeingDeleted() bool { return n.beingDeleted.Load() }

// MarkDeletingDependents records that the object is being deleted in the foreground and
// its dependents are being deleted. It reports whether the flag was newly set, so that
// dependents are fanned out to the workers only once.
func (n *Node) MarkDeletingDependents() bool { return !n.deletingDependents.Swap(true) }

// DeletingDependents reports whether the object's dependents are being deleted in the
// foreground.
func (n *Node) DeletingDependents() bool { return n.deletingDependents.Load() }

// MarkObserved records that the object has been seen through an informer.
func (n *Node) MarkObserved() { n.virtual.Store(false) }

// Virtual reports whether the node is known only from owner references.
func (n *Node) Virtual() bool { return n.virtual.Load() }
