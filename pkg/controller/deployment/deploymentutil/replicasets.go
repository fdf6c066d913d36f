package deploymentutil

import (
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EqualIgnoreHash reports whether two pod templates are the same apart from the
// pod-template-hash label. The comparison is semantic (resource quantities by value, nil
// and empty maps and slices equal) because the API server normalises what it stores: a
// template read back from a ReplicaSet must still match the Deployment it came from. Its
// arguments are not modified; a nil template equals an empty one.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	return equality.Semantic.DeepEqual(withoutHash(a), withoutHash(b))
}

func withoutHash(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if t == nil {
		return &corev1.PodTemplateSpec{}
	}
	c := t.DeepCopy()
	delete(c.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return c
}

// FindNewReplicaSet returns the ReplicaSet of rsList whose template matches d's, or nil.
// The match is by template, never by name or hash, so a ReplicaSet renamed by a hash
// collision or reused by a rollback is still found. Should several match (possible after
// upgrades that changed the hash), the oldest wins so that every sync picks the same one.
// rsList is not reordered.
func FindNewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := nonNil(rsList)
	SortByCreation(sorted)
	for _, rs := range sorted {
		if EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// FindOldReplicaSets returns every ReplicaSet of rsList except newRS (which may be nil), in
// rsList's order.
func FindOldReplicaSets(rsList []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (allOld []*appsv1.ReplicaSet) {
	for _, rs := range rsList {
		if rs == nil || sameReplicaSet(rs, newRS) {
			continue
		}
		allOld = append(allOld, rs)
	}
	return allOld
}

// sameReplicaSet compares by UID, which survives updates (the controller replaces objects
// by the API's answers); objects without UIDs (never stored) fall back to their name.
func sameReplicaSet(a, b *appsv1.ReplicaSet) bool {
	if a == nil || b == nil {
		return false
	}
	if a == b {
		return true
	}
	if a.UID != "" || b.UID != "" {
		return a.UID == b.UID
	}
	return a.Namespace == b.Namespace && a.Name == b.Name
}

// FilterActive returns the ReplicaSets of rsList that want pods (spec.replicas > 0), in
// order; nil entries are dropped.
func FilterActive(rsList []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var active []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if rsReplicas(rs) > 0 {
			active = append(active, rs)
		}
	}
	return active
}

// ReplicaSetName returns "<deploymentName>-<hash>". A Deployment name may use the full 253
// characters of an object name, which would leave no room for the hash, so the name part is
// truncated until the whole fits (kubernetes issue #116447). A '.' left at the end of the
// truncated part is dropped too, because "x.-hash" is not a valid object name.
func ReplicaSetName(deploymentName, hash string) string {
	maxPrefix := validation.DNS1123SubdomainMaxLength - 1 - len(hash)
	if maxPrefix < 0 {
		maxPrefix = 0
	}
	prefix := deploymentName
	if len(prefix) > maxPrefix {
		prefix = strings.TrimRight(prefix[:maxPrefix], ".")
	}
	return prefix + "-" + hash
}

// rsReplicas returns rs's spec.replicas, counting a nil ReplicaSet or field as 0.
func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

// ReplicaCount returns Σ spec.replicas over rsList: the pods the ReplicaSets ask for.
func ReplicaCount(rsList []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rsList {
		n += rsReplicas(rs)
	}
	return n
}

// ActualReplicaCount returns Σ status.replicas over rsList: the pods that exist.
func ActualReplicaCount(rsList []*appsv1.ReplicaSet) int32 {
	return sumStatus(rsList, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas })
}

// ReadyReplicaCount returns Σ status.readyReplicas over rsList.
func ReadyReplicaCount(rsList []*appsv1.ReplicaSet) int32 {
	return sumStatus(rsList, func(s *appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas })
}

// AvailableReplicaCount returns Σ status.availableReplicas over rsList.
func AvailableReplicaCount(rsList []*appsv1.ReplicaSet) int32 {
	return sumStatus(rsList, func(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
}

func sumStatus(rsList []*appsv1.ReplicaSet, field func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range rsList {
		if rs != nil {
			n += field(&rs.Status)
		}
	}
	return n
}

// terminatingReplicaCount returns Σ status.terminatingReplicas over rsList. ReplicaSets the
// ReplicaSet controller never synced (observedGeneration 0, no field) are skipped: they have
// no pods yet. Any other ReplicaSet without the field makes the sum unknown (nil), because a
// partial sum would under-report pods that are still shutting down.
func terminatingReplicaCount(rsList []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rsList {
		switch {
		case rs == nil:
		case rs.Status.TerminatingReplicas == nil && rs.Status.ObservedGeneration == 0:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

func nonNil(rsList []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, 0, len(rsList))
	for _, rs := range rsList {
		if rs != nil {
			out = append(out, rs)
		}
	}
	return out
}

// createdBefore orders ReplicaSets oldest first; equal creation times (one-second
// resolution) fall back to the name so that the order is total and stable across syncs.
func createdBefore(a, b *appsv1.ReplicaSet) bool {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

// SortByCreation sorts rsList in place, oldest first, name breaking ties. rsList must not
// contain nil.
func SortByCreation(rsList []*appsv1.ReplicaSet) {
	sort.SliceStable(rsList, func(i, j int) bool { return createdBefore(rsList[i], rsList[j]) })
}

// SortByRevision sorts rsList in place by revision ascending; when either revision is
// missing-as-equal or unparsable, or both are equal, creation time (then name) decides.
// This is the order in which cleanup considers old ReplicaSets. rsList must not contain nil.
func SortByRevision(rsList []*appsv1.ReplicaSet) {
	sort.SliceStable(rsList, func(i, j int) bool {
		ri, erri := Revision(rsList[i])
		rj, errj := Revision(rsList[j])
		if erri != nil || errj != nil || ri == rj {
			return createdBefore(rsList[i], rsList[j])
		}
		return ri < rj
	})
}
