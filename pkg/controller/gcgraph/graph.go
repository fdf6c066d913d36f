package gcgraph

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UIDToNode is the graph's index: a concurrency-safe map from UID to node.
type UIDToNode struct {
	mu    sync.RWMutex
	nodes map[types.UID]*Node
}

// NewUIDToNode returns an empty graph.
func NewUIDToNode() *UIDToNode {
	return &UIDToNode{nodes: map[types.UID]*Node{}}
}

// Read returns the node for uid.
func (g *UIDToNode) Read(uid types.UID) (*Node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

// Write stores n under its UID, replacing any node there.
func (g *UIDToNode) Write(n *Node) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nodes[n.identity.UID] = n
}

// Delete removes the node for uid.
func (g *UIDToNode) Delete(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.nodes, uid)
}

// Len returns the number of nodes.
func (g *UIDToNode) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// Nodes returns a snapshot of all nodes, in no particular order.
func (g *UIDToNode) Nodes() []*Node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]*Node, 0, len(g.nodes))
	for _, n := range g.nodes {
		out = append(out, n)
	}
	return out
}

// LinkToOwners adds n as a dependent of the owner named by each of refs that is present
// in the graph, and returns the refs whose owner is absent; the caller decides what to do
// about those (the collector creates virtual nodes for them).
func (g *UIDToNode) LinkToOwners(n *Node, refs []metav1.OwnerReference) (absent []metav1.OwnerReference) {
	for _, ref := range refs {
		owner, ok := g.Read(ref.UID)
		if !ok {
			absent = append(absent, ref)
			continue
		}
		owner.AddDependent(n)
	}
	return absent
}

// UnlinkFromOwners removes n from the dependents of the owner named by each of refs.
func (g *UIDToNode) UnlinkFromOwners(n *Node, refs []metav1.OwnerReference) {
	for _, ref := range refs {
		if owner, ok := g.Read(ref.UID); ok {
			owner.DeleteDependent(n)
		}
	}
}

// Remove deletes n from the graph and from the dependents of its owners.
func (g *UIDToNode) Remove(n *Node) {
	g.Delete(n.identity.UID)
	g.UnlinkFromOwners(n, n.Owners())
}
