// Package controller is the home of bosun-daemon's own controllers: the node-side halves
// of the node agent's APIs, the report of the containers of OpenKruise workloads' pods
// (which in-place updates wait for), and the agent's report of its runtime on its Node.
// Each lives in a subpackage (containerrecreaterequest, nodeimage, containermeta,
// runtimecondition), is built on informers scoped to the agent's node (the runtime
// reporter, which starts before they synced, reads its Node directly), and acts on the
// container runtime through package cri only. The daemon's app wiring (pkg/daemon/app) starts them and nothing else: no
// controller logic lives there.
//
// They follow the same anatomy as the manager's controllers (docs/architecture.md); the
// runtime reporter, which has no informer and no work queue, says why in its doc.go.
package controller
