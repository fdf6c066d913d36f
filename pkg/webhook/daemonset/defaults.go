package daemonset

import (
	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// SetDefaults writes the defaults of a DaemonSet in place:
//
//   - burstReplicas 250 and revisionHistoryLimit 10 when unset;
//   - updateStrategy.type RollingUpdate when empty;
//   - for RollingUpdate, rollingUpdate {} when nil; the deprecated Surging type first gets
//     maxSurge 1 and maxUnavailable 0 where unset, then an empty or Surging
//     rollingUpdateType becomes Standard; when both maxUnavailable and maxSurge are still
//     unset they become 1 and 0.
//
// The pod template and partition are left alone on purpose: the template is hashed into
// the revision name, which must stay the one OpenKruise computes for the same object, and an
// unset partition already means 0.
//
// The rules live with the API types, so that the webhook, a scheme's defaulter and tests all
// apply the same ones; this function is the webhook's entry point to them.
func SetDefaults(ds *appsv1alpha1.DaemonSet) {
	appsv1alpha1.SetObjectDefaults_DaemonSet(ds)
}

// SetDefaultsV1beta1 writes the defaults of a v1beta1 DaemonSet in place: those of
// SetDefaults without the rewrite of Surging, which v1beta1 does not have. Defaulting a
// v1alpha1 object and converting it gives what converting it and defaulting gives, up to
// the reserved annotation of the conversion.
func SetDefaultsV1beta1(ds *appsv1beta1.DaemonSet) {
	appsv1beta1.SetObjectDefaults_DaemonSet(ds)
}
