// Package daemonsetutil holds the pure functions of the Advanced DaemonSet controller:
// which nodes want a daemon pod, how a pod is bound to its node, which pod a node keeps
// and whether it runs the current revision, and the arithmetic of the rollout knobs
// (maxUnavailable, maxSurge, partition, burstReplicas). Nothing here reads a clock, a
// cache or the API server, or writes anything; callers pass what a function needs. What a
// DaemonSet shares with every OpenKruise workload (revision data, in-place updates,
// readiness gates and not-ready marks, lifecycle hooks) is in pkg/controller/kruisepod.
package daemonsetutil
