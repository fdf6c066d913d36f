// Package gcgraph models ownership between API objects for the garbage collector,
// independent of the controller that maintains it.
//
// Each object is a Node identified by an Identity (apiVersion, kind, name, uid,
// namespace). A node records the ownerReferences last observed on its object and the set
// of nodes that name it as owner (its dependents). A virtual node is known only because
// some object's ownerReference names it; it has not been observed through an informer yet,
// and its namespace is provisionally its first dependent's.
//
// Concurrency: exactly one goroutine (the garbage collector's graph builder) mutates the
// graph; any number of workers read it. All Node accessors and UIDToNode methods are safe
// for those readers. Node identities never change: replacing a node's identity means
// writing a copy (Node.WithIdentity) into UIDToNode.
//
// Besides the model the package holds the pure rules the collector applies to it: owner
// reference diffs, coordinate matching, partitioning dependents by whether their
// reference agrees with an owner's observed identity, choosing an alternate identity for a
// virtual owner, the absent-owner LRU cache, and the DOT rendering of the graph served by
// the debug endpoint.
package gcgraph
