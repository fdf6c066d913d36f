// Package nodeimageutil holds what the controllers of NodeImages derive from one: the
// counters the manager and the node agent's puller both write into the status, which must
// agree, and who owns a tag, which the NodeImage and ImagePullJob controllers must read
// alike. It is pure: no clients, no clock.
package nodeimageutil

import (
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ImagePullJobGroupKind is what a tag owner reference to an ImagePullJob names, whatever
// its version.
var ImagePullJobGroupKind = schema.GroupKind{Group: appsv1beta1.GroupName, Kind: "ImagePullJob"}

// IsImagePullJobReference reports whether ref names an apps.kruise.io ImagePullJob, in any
// version of the group: the tags that older bosun releases and OpenKruise before 1.9 added
// name their jobs in v1alpha1, and they are still the jobs' tags.
func IsImagePullJobReference(ref corev1.ObjectReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == ImagePullJobGroupKind.Group && ref.Kind == ImagePullJobGroupKind.Kind
}

// RefersToImagePullJob reports whether ref names the ImagePullJob with uid, in any version
// of the group. A reference is never rewritten just to change its version, so this is the
// one test of whether a job owns a tag.
func RefersToImagePullJob(ref corev1.ObjectReference, uid types.UID) bool {
	return ref.UID == uid && IsImagePullJobReference(ref)
}

// CountTagPhase adds one tag in phase to the status's counter of that phase (waiting,
// pulling, succeeded or failed). A tag in any other phase counts nowhere. Tags are counted
// by phase whatever their version: a status of an older version stays only while the new
// pull cannot start.
func CountTagPhase(status *appsv1beta1.NodeImageStatus, phase appsv1beta1.ImagePullPhase) {
	switch phase {
	case appsv1beta1.ImagePhaseWaiting:
		status.Waiting++
	case appsv1beta1.ImagePhasePulling:
		status.Pulling++
	case appsv1beta1.ImagePhaseSucceeded:
		status.Succeeded++
	case appsv1beta1.ImagePhaseFailed:
		status.Failed++
	}
}

// FindTagStatus returns the status of tag among statuses, or nil.
func FindTagStatus(statuses []appsv1beta1.ImageTagStatus, tag string) *appsv1beta1.ImageTagStatus {
	for i := range statuses {
		if statuses[i].Tag == tag {
			return &statuses[i]
		}
	}
	return nil
}
