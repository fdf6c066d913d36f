// Package garbagecollector implements bosun's garbage collector: it deletes objects whose
// owners are gone, and carries out foreground and orphan deletion, for every resource the
// API server serves, built-in and custom.
//
// The collector keeps an ownership graph (package gcgraph) of every object it can watch.
// Three queues connect the parts:
//
//  1. Monitors, one per deletable resource found by discovery, turn informer events into
//     graph changes. A resource that another controller of the process already watches
//     through a typed informer (pods, ReplicaSets, Deployments) shares that informer; every
//     other resource is watched metadata-only, so the collector never caches a Secret's
//     data or a ConfigMap's contents. The set of monitors follows discovery every 30 s.
//  2. One goroutine, the graph builder, applies the graph changes in order. It is the only
//     writer of the graph. It links objects to their owners (creating virtual nodes for
//     owners it has not seen), and queues to attempt-to-delete every object whose owner
//     may be gone, and to attempt-to-orphan every owner being deleted with the orphan
//     finalizer. Foreground and orphan deletion are recognised from the object's state on
//     every event, never only from the transition between two events, so an owner whose
//     transition the collector missed (a restart, a relist) is still finished.
//  3. Attempt-to-delete workers classify an object's owner references against the live
//     API (dangling, waiting for foreground deletion, solid) and then do one of: nothing,
//     remove the dangling and waiting references, or delete the object with the matching
//     propagation policy. An object deleted in the foreground loses the foregroundDeletion
//     finalizer once no dependent blocks it any more. Attempt-to-orphan workers strip the
//     owner's reference from every dependent and then remove the orphan finalizer.
//
// Workers read the graph but confirm every decision with a live GET before they write,
// and writes carry preconditions (UID, resource version), so a stale graph costs a retry,
// never a wrong delete.
//
// The collector never blocks on a monitor that does not sync (a custom resource whose
// conversion webhook is broken): it waits up to 30 s at start-up and then works with what
// it has. It never touches finalizers other than orphan and foregroundDeletion.
//
// Behaviour follows upstream Kubernetes pkg/controller/garbagecollector (v1.36) with two
// deliberate differences: resources nobody else watches are cached metadata-only
// (upstream builds full typed informers for built-in kinds; kubernetes issues #115699,
// #112319), and foreground and orphan deletion are recognised by level rather than by
// edge (kubernetes issues #77081, #115570).
//
// attemptToDeleteItem (delete.go) makes its checks in upstream's order, one for one, on
// purpose. That order decides which API calls an object's state leads to and which write
// comes of it: an object already going without waiting on its dependents is left alone
// before any read; a missing or replaced object becomes a virtual delete before its owners
// are looked up; an object deleting its own dependents in the foreground has that finished
// before its references are judged; solid owners keep the object and only the dangling and
// waiting references are removed; owners waiting in the foreground, with dependents of the
// object left, make it go in the foreground (after unblocking them when a dependent waits
// too, to break a cycle); and anything else is deleted with the propagation its own orphan
// or foregroundDeletion finalizer asks for. Reordering the checks would change, for some
// state, what is read, patched or deleted. Keeping the order keeps the observable writes
// the same, so bosun's collector and upstream's can replace each other in a cluster (or run
// one after the other across an upgrade) without either undoing or repeating what the
// other did.
package garbagecollector
