// Package controller is the home of bosun-daemon's own controllers, the node-side halves
// of the node agent's APIs. Each lives in a subpackage (containerrecreaterequest,
// nodeimage), is built on informers scoped to the agent's node, and acts on the container
// runtime through package cri only. The daemon's app wiring (pkg/daemon/app) starts them
// and nothing else: no controller logic lives there.
//
// They follow the same anatomy as the manager's controllers (docs/architecture.md).
package controller
