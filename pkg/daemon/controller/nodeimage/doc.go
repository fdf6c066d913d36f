// Package nodeimage will hold the node side of NodeImage: for the agent's own node's
// NodeImage it pulls the listed images and tags through the CRI (with pull secrets,
// timeouts, back-off and deadlines) and reports their progress and results in its status.
package nodeimage
