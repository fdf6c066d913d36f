// Package containermeta reports, on the pods of OpenKruise workloads on the agent's node,
// what the container runtime runs for them, and restarts the containers whose environment
// taken from the pod's labels or annotations is out of date while the pod is updated in
// place.
//
// The report is the pod annotation apps.kruise.io/runtime-containers-meta (OpenKruise's
// node agent writes the same): for each container in pod status that the runtime runs, its
// name, its container ID as pod status writes it, its restart count, the kubelet's hash of
// the spec it was created from (read from the container's io.kubernetes.container.hash
// annotation) and, with gate InPlaceUpdateEnvFromMetadata, the hash of the values its env
// vars that read a pod label or annotation through a fieldRef actually have
// (kruisepod.RunningEnvFromMetadataHash). Those values are read once per container, from the
// runtime spec of the runtime's verbose container status, or, when the runtime reports none,
// by running env in the container. The controllers compare the report with the pod's spec
// and metadata to tell when an in-place update has taken effect (kruisepod.ContainersUpdated).
//
// Pods reported on are those whose controller is of the apps.kruise.io group and those a
// SidecarSet injected (annotation kruise.io/sidecarset-hash). Such a pod is queued when its
// containers or the values its env should read change. One sync:
//
//  1. waits while the informer does not show this agent's last write to the pod yet;
//  2. reads the pod's containers from the CRI as the kubelet does, keeping the entry of a
//     container the report already names under the same ID, and reading the environment of
//     a running container that has no env hash yet (a failure is retried 3 s later);
//  3. writes the report when it changed (a patch of the pod's status subresource);
//  4. while the pod's InPlaceUpdateReady condition is False (an in-place update is under
//     way), stops each running container whose env hash differs from the one the pod's
//     labels and annotations give it now, as the kubelet would stop it (event Killing,
//     preStop hook, grace period; package containerstop): the kubelet starts it again with
//     the new values, and the new container's report completes the update.
//
// Pods already on the node without a report when the agent starts are not reported until
// something about them changes, so that a restarted agent does not write to every pod at
// once (as OpenKruise's agent). The agent never starts containers itself.
//
// Beyond OpenKruise: containers are matched to their statuses and to the report by name,
// not by position; the environment is read from the runtime spec, so that images without an
// env program and values spanning lines work; and the wait for the agent's own write ends in
// a requeue rather than in an event that may never come.
package containermeta
