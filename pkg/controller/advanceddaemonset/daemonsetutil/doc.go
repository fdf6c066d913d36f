// Package daemonsetutil holds the pure functions of the Advanced DaemonSet controller:
// which nodes want a daemon pod, how a pod is bound to its node, the canonical revision
// data, whether a revision change can be applied to a pod in place, and the arithmetic of
// the rollout knobs (maxUnavailable, maxSurge, partition, burstReplicas). Nothing here
// reads a clock, a cache or the API server; callers pass what a function needs.
package daemonsetutil
