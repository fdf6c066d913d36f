package nodeimageutil

import (
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

func TestCountTagPhase(t *testing.T) {
	var status appsv1beta1.NodeImageStatus
	for _, phase := range []appsv1beta1.ImagePullPhase{
		appsv1beta1.ImagePhaseWaiting,
		appsv1beta1.ImagePhasePulling, appsv1beta1.ImagePhasePulling,
		appsv1beta1.ImagePhaseSucceeded, appsv1beta1.ImagePhaseSucceeded, appsv1beta1.ImagePhaseSucceeded,
		appsv1beta1.ImagePhaseFailed,
		"", "Unknown",
	} {
		CountTagPhase(&status, phase)
	}
	want := appsv1beta1.NodeImageStatus{Waiting: 1, Pulling: 2, Succeeded: 3, Failed: 1}
	if status.Waiting != want.Waiting || status.Pulling != want.Pulling || status.Succeeded != want.Succeeded ||
		status.Failed != want.Failed || status.Desired != 0 {
		t.Errorf("counters %+v, want %+v", status, want)
	}
}

func TestFindTagStatus(t *testing.T) {
	statuses := []appsv1beta1.ImageTagStatus{{Tag: "1.0"}, {Tag: "latest", Version: 2}}
	if got := FindTagStatus(statuses, "latest"); got != &statuses[1] {
		t.Errorf("FindTagStatus(latest) = %v, want the entry itself", got)
	}
	if got := FindTagStatus(statuses, "2.0"); got != nil {
		t.Errorf("FindTagStatus(2.0) = %v, want nil", got)
	}
	if got := FindTagStatus(nil, "1.0"); got != nil {
		t.Errorf("FindTagStatus of no statuses = %v, want nil", got)
	}
}

// A tag owner reference names an ImagePullJob by group and kind in any version of the
// group, and a job by UID as well: tags older writers gave jobs through v1alpha1
// references stay theirs.
func TestImagePullJobReferences(t *testing.T) {
	const uid = "uid-job"
	for _, tc := range []struct {
		name        string
		ref         corev1.ObjectReference
		isJob       bool
		refersToJob bool
	}{
		{"v1beta1", corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Name: "job", UID: uid}, true, true},
		{"v1alpha1", corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Name: "job", UID: uid}, true, true},
		{"a later version", corev1.ObjectReference{APIVersion: "apps.kruise.io/v1", Kind: "ImagePullJob", Name: "job", UID: uid}, true, true},
		{"another job", corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Name: "other", UID: "uid-other"}, true, false},
		{"another kind", corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob", Name: "job", UID: uid}, false, false},
		{"another group", corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "ImagePullJob", Name: "job", UID: uid}, false, false},
		{"no version", corev1.ObjectReference{Kind: "ImagePullJob", Name: "job", UID: uid}, false, false},
		{"unparseable version", corev1.ObjectReference{APIVersion: "apps.kruise.io/v1/x", Kind: "ImagePullJob", Name: "job", UID: uid}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsImagePullJobReference(tc.ref); got != tc.isJob {
				t.Errorf("IsImagePullJobReference(%+v) = %v, want %v", tc.ref, got, tc.isJob)
			}
			if got := RefersToImagePullJob(tc.ref, uid); got != tc.refersToJob {
				t.Errorf("RefersToImagePullJob(%+v, %s) = %v, want %v", tc.ref, uid, got, tc.refersToJob)
			}
		})
	}
}
