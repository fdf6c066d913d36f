// Package replicaset implements bosun's ReplicaSet controller: it keeps the number of
// active pods selected by each apps/v1 ReplicaSet equal to spec.replicas and reports
// what it sees in the ReplicaSet's status.
//
// Informer handlers only enqueue ReplicaSet keys and adjust expectations; all work
// happens in syncReplicaSet, one key at a time per worker:
//
//  1. the ReplicaSet's pods are claimed (matching orphans adopted, non-matching pods
//     released) through a fresh refmanager.Manager;
//  2. if the expectations of the previous sync have been met, missing pods are created
//     in slow-start batches and surplus pods are deleted, the pods that share a node with
//     many pods of sibling ReplicaSets (same controller owner) first;
//  3. status (replica counts and the ReplicaFailure condition) is written when it
//     changed.
//
// With feature StaleControllerConsistencyReplicaSet (default on) a sync is also held
// back while the pod or ReplicaSet cache is older than the controller's own last writes
// for that ReplicaSet, so that a lagging informer cannot make it create pods twice.
//
// Behaviour follows upstream Kubernetes pkg/controller/replicaset (v1.36), including its
// known limits: no back-off for pods that fail right after creation (kubernetes issue
// #131116) and no cap on unschedulable pods beyond one burst per sync (#33041).
package replicaset
