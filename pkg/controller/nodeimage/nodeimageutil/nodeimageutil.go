// Package nodeimageutil holds what the NodeImage controller of the manager and the node
// agent's puller both derive from a NodeImage's tag statuses, so that the counters each
// writes into the status agree. It is pure: no clients, no clock.
package nodeimageutil

import (
	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

// CountTagPhase adds one tag in phase to the status's counter of that phase (waiting,
// pulling, succeeded or failed). A tag in any other phase counts nowhere. Tags are counted
// by phase whatever their version: a status of an older version stays only while the new
// pull cannot start.
func CountTagPhase(status *appsv1alpha1.NodeImageStatus, phase appsv1alpha1.ImagePullPhase) {
	switch phase {
	case appsv1alpha1.ImagePhaseWaiting:
		status.Waiting++
	case appsv1alpha1.ImagePhasePulling:
		status.Pulling++
	case appsv1alpha1.ImagePhaseSucceeded:
		status.Succeeded++
	case appsv1alpha1.ImagePhaseFailed:
		status.Failed++
	}
}

// FindTagStatus returns the status of tag among statuses, or nil.
func FindTagStatus(statuses []appsv1alpha1.ImageTagStatus, tag string) *appsv1alpha1.ImageTagStatus {
	for i := range statuses {
		if statuses[i].Tag == tag {
			return &statuses[i]
		}
	}
	return nil
}
