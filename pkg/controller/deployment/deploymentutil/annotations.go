package deploymentutil

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations the controller writes on Deployments and their ReplicaSets. kubectl reads
// them (rollout history / undo), so the strings are part of the compatibility contract.
const (
	// RevisionAnnotation holds a ReplicaSet's revision, and on the Deployment the revision
	// of its current new ReplicaSet.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists, comma-separated, the revisions a reused ReplicaSet
	// had before (a rollback bumps an old ReplicaSet to a new revision).
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation records the Deployment's spec.replicas at the last scale of
	// the ReplicaSet; a mismatch tells the controller a scaling event happened.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation records spec.replicas + maxSurge at the last scale; proportional
	// scaling uses it as the denominator of each ReplicaSet's share.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// RollbackToAnnotation is the legacy extensions/v1beta1 rollback request.
	RollbackToAnnotation = appsv1.DeprecatedRollbackTo
	// RevisionHistoryMaxChars bounds RevisionHistoryAnnotation so that annotations of a
	// ReplicaSet rolled back to many times stay small.
	RevisionHistoryMaxChars = 2000

	// lastAppliedConfigAnnotation is kubectl apply's record; copying it onto ReplicaSets
	// would make kubectl treat them as applied objects.
	lastAppliedConfigAnnotation = corev1.LastAppliedConfigAnnotation
)

// SkipCopyAnnotation reports whether the Deployment annotation key must not be copied onto
// its ReplicaSets (nor replaced on rollback): it is either kubectl apply's bookkeeping or
// one the controller maintains separately on each object.
func SkipCopyAnnotation(key string) bool {
	switch key {
	case lastAppliedConfigAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
		DesiredReplicasAnnotation, MaxReplicasAnnotation, RollbackToAnnotation:
		return true
	}
	return false
}

// Revision returns the integer in obj's revision annotation: 0 when the annotation is
// missing, an error when it does not parse.
func Revision(obj metav1.Object) (int64, error) {
	if obj == nil {
		return 0, nil
	}
	v, ok := obj.GetAnnotations()[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// MaxRevision returns the highest revision in rsList (0 if none). Unparsable revisions are
// ignored: a hand-edited annotation must not block rollouts.
func MaxRevision(rsList []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range rsList {
		if rs == nil {
			continue
		}
		if v, err := Revision(rs); err == nil && v > highest {
			highest = v
		}
	}
	return highest
}

// LastRevision returns the second-highest revision in rsList (0 if none): the revision a
// rollback "to 0" (the previous one) goes to. When two ReplicaSets share the highest
// revision, that revision is also the second-highest.
func LastRevision(rsList []*appsv1.ReplicaSet) int64 {
	var highest, second int64
	for _, rs := range rsList {
		if rs == nil {
			continue
		}
		v, err := Revision(rs)
		if err != nil {
			continue
		}
		if v >= highest {
			second, highest = highest, v
		} else if v > second {
			second = v
		}
	}
	return second
}

// CopyDeploymentAnnotationsToReplicaSet copies every annotation of d not on the skip list
// onto rs when it is missing or different there, and reports whether rs changed. It never
// removes annotations from rs. This is how kubernetes.io/change-cause reaches the
// ReplicaSet, where kubectl rollout history reads it.
func CopyDeploymentAnnotationsToReplicaSet(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	for k, v := range d.Annotations {
		if SkipCopyAnnotation(k) {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// SetNewReplicaSetRevision raises rs's revision annotation to newRevision when it is lower,
// and reports whether rs changed. A ReplicaSet that already had a revision is being reused
// (rollback, or an undo through kubectl), so its previous revision is appended to the
// revision-history annotation: oldest entries are dropped until the list fits in
// RevisionHistoryMaxChars, and if even the previous revision alone does not fit it is not
// recorded. An existing revision that does not parse, or a newRevision that does not parse,
// leaves rs untouched: the controller cannot tell which is newer.
func SetNewReplicaSetRevision(rs *appsv1.ReplicaSet, newRevision string) bool {
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	oldRevision, hadRevision := rs.Annotations[RevisionAnnotation]
	var oldRev int64
	if oldRevision != "" {
		if oldRev, err = strconv.ParseInt(oldRevision, 10, 64); err != nil {
			return false
		}
	}
	if oldRev >= newRev {
		return false
	}
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[RevisionAnnotation] = newRevision
	if hadRevision && oldRevision != "" {
		if history, ok := appendRevisionHistory(rs.Annotations[RevisionHistoryAnnotation], oldRevision); ok {
			rs.Annotations[RevisionHistoryAnnotation] = history
		}
	}
	return true
}

// appendRevisionHistory appends revision to the comma-separated history, dropping the
// oldest entries until the result fits in RevisionHistoryMaxChars. It reports false when
// revision alone does not fit.
func appendRevisionHistory(history, revision string) (string, bool) {
	var entries []string
	if history != "" {
		entries = strings.Split(history, ",")
	}
	entries = append(entries, revision)
	// Length of strings.Join(entries, ","), maintained while dropping from the front.
	length := len(history) + len(revision)
	if history != "" {
		length++
	}
	for length > RevisionHistoryMaxChars && len(entries) > 1 {
		length -= len(entries[0]) + 1
		entries = entries[1:]
	}
	if length > RevisionHistoryMaxChars {
		return "", false
	}
	return strings.Join(entries, ","), true
}

// DesiredReplicasFromAnnotation returns rs's desired-replicas annotation and whether it is
// present and a valid int32.
func DesiredReplicasFromAnnotation(rs *appsv1.ReplicaSet) (int32, bool) {
	return int32Annotation(rs, DesiredReplicasAnnotation)
}

// MaxReplicasFromAnnotation returns rs's max-replicas annotation and whether it is present
// and a valid int32.
func MaxReplicasFromAnnotation(rs *appsv1.ReplicaSet) (int32, bool) {
	return int32Annotation(rs, MaxReplicasAnnotation)
}

func int32Annotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	if rs == nil {
		return 0, false
	}
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// SetReplicasAnnotations sets rs's desired-replicas and max-replicas annotations and
// reports whether either changed.
func SetReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if !ReplicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false
	}
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[DesiredReplicasAnnotation] = strconv.FormatInt(int64(desired), 10)
	rs.Annotations[MaxReplicasAnnotation] = strconv.FormatInt(int64(maxReplicas), 10)
	return true
}

// ReplicasAnnotationsNeedUpdate reports whether rs's desired-replicas or max-replicas
// annotation differs from desired / maxReplicas (a missing annotation differs).
func ReplicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.FormatInt(int64(desired), 10) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.FormatInt(int64(maxReplicas), 10)
}

// SetDeploymentRevision sets d's revision annotation and reports whether it changed.
func SetDeploymentRevision(d *appsv1.Deployment, revision string) bool {
	if cur, ok := d.Annotations[RevisionAnnotation]; ok && cur == revision {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// SetDeploymentAnnotationsTo makes d's annotations those of the ReplicaSet it rolls back
// to: every copyable annotation of d is replaced by the ReplicaSet's copyable ones, while
// the skip-list annotations of d (revision, last-applied configuration, ...) are kept, since
// they describe the Deployment rather than the template.
func SetDeploymentAnnotationsTo(d *appsv1.Deployment, rollbackTo *appsv1.ReplicaSet) {
	annotations := map[string]string{}
	for k, v := range d.Annotations {
		if SkipCopyAnnotation(k) {
			annotations[k] = v
		}
	}
	for k, v := range rollbackTo.Annotations {
		if !SkipCopyAnnotation(k) {
			annotations[k] = v
		}
	}
	d.Annotations = annotations
}
