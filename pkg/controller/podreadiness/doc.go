// Package podreadiness implements pod-readiness-controller, which satisfies the readiness
// gate KruisePodReady: every pod that has the gate and no KruisePodReady condition gets the
// condition, True, through the pods/status subresource.
//
// The gate is how OpenKruise's workloads take a pod out of service without touching its
// containers: a lifecycle hook with markPodNotReady (CloneSet, Advanced DaemonSet) or a
// ContainerRecreateRequest with unreadyGracePeriodSeconds turns the condition False with a
// not-ready mark in its message, and True again when the last mark goes (package
// kruisepod). Those writers only ever change a condition that is there; this controller
// writes the first one, once per pod, so that a gated pod can become Ready at all. The
// mutating pod webhook adds the gate to the new pods of every apps.kruise.io controller
// (to every pod with feature KruisePodReadinessGate), and only while this controller is
// enabled.
//
// The controller watches pods through the shared pod informer, and its handlers queue only
// the pods that have the gate, no such condition and no deletion timestamp, so that the
// cluster's other pods cost one check per event. One sync handles one pod: read from the
// cache, checked again, and its status written with the cached resourceVersion. On a
// conflict the live pod is read and checked again, so a condition another writer set in
// the meantime (a not-ready mark, say) is never overwritten. A pod that is gone or being
// deleted is left alone.
//
// It records no events, as OpenKruise's controller of the same name does not, and never
// touches the pod's Ready condition: the kubelet recomputes it from the gates.
package podreadiness
