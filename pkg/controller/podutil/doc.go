// Package podutil holds the pod helpers shared by bosun's workload controllers: state
// predicates (active, terminating, ready, available), the next time a pod becomes
// available, the informer indexes controllers use to find their pods, and the ranking
// that decides which pods go first on scale-down.
package podutil
