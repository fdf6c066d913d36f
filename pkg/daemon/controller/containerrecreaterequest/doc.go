// Package containerrecreaterequest will hold the node side of ContainerRecreateRequest:
// for the requests that target pods on the agent's node, it stops the named containers
// through the CRI (running preStop hooks first) so that the kubelet recreates them, in the
// requested order, and reports each container's progress in the request's status.
package containerrecreaterequest
