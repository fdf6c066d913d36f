package cloneset

import (
	"errors"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
)

func TestCalculateStatusCounts(t *testing.T) {
	cs := newCS(4)
	cs.Spec.MinReadySeconds = 600
	oldRevision := revisionOf(t, cs, 1)
	update := revisionOf(t, withImage(newCS(4), "img:v2"), 2)
	fresh := newPod(cs, "aaaaa", update) // ready an hour: available
	young := newPod(cs, "bbbbb", update)
	young.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-time.Minute)) // ready, not yet available
	preparing := newPod(cs, "ccccc", update)
	preparing.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStatePreparingNormal) // ready, never available
	old := newPod(cs, "ddddd", oldRevision)
	inPlace := newPod(cs, "fffff", oldRevision)
	inPlace.Status.Conditions[2].Status = corev1.ConditionFalse // in-place update under way: neither

	base := appsv1beta1.CloneSetStatus{UpdateRevision: update.Name, CurrentRevision: oldRevision.Name}
	status, recheck := calculateStatus(cs, base, []*corev1.Pod{fresh, young, preparing, old, inPlace}, metav1.NewTime(t0), false)
	want := appsv1beta1.CloneSetStatus{
		UpdateRevision: update.Name, CurrentRevision: oldRevision.Name,
		Replicas: 5, ReadyReplicas: 4, AvailableReplicas: 2,
		UpdatedReplicas: 3, UpdatedReadyReplicas: 3, UpdatedAvailableReplicas: 1,
		ExpectedUpdatedReplicas: 4,
	}
	if status.Replicas != want.Replicas || status.ReadyReplicas != want.ReadyReplicas || status.AvailableReplicas != want.AvailableReplicas ||
		status.UpdatedReplicas != want.UpdatedReplicas || status.UpdatedReadyReplicas != want.UpdatedReadyReplicas ||
		status.UpdatedAvailableReplicas != want.UpdatedAvailableReplicas || status.ExpectedUpdatedReplicas != want.ExpectedUpdatedReplicas ||
		status.CurrentRevision != want.CurrentRevision || recheck != 0 || len(status.Conditions) != 0 {
		t.Errorf("status =\n%+v\nwant\n%+v (recheck %v)", status, want, recheck)
	}

	// Every pod updated and the count right: the update revision becomes current.
	status, _ = calculateStatus(cs, base, []*corev1.Pod{fresh, young, preparing, newPod(cs, "ggggg", update)}, metav1.NewTime(t0), false)
	if status.CurrentRevision != update.Name {
		t.Errorf("current revision = %s, want %s once every pod is updated", status.CurrentRevision, update.Name)
	}
}

func TestProgressingCondition(t *testing.T) {
	now := metav1.NewTime(t0)
	progressing := func(status corev1.ConditionStatus, reason appsv1beta1.CloneSetConditionReason, since time.Time) []appsv1beta1.CloneSetCondition {
		return []appsv1beta1.CloneSetCondition{{
			Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: status, Reason: string(reason),
			LastUpdateTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
		}}
	}
	cs := func(mutate func(*appsv1beta1.CloneSet)) *appsv1beta1.CloneSet {
		c := newCS(2)
		c.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	rolling := appsv1beta1.CloneSetStatus{CurrentRevision: "r1", UpdateRevision: "r2", Replicas: 2, ExpectedUpdatedReplicas: 2}
	done := appsv1beta1.CloneSetStatus{CurrentRevision: "r2", UpdateRevision: "r2", Replicas: 2, UpdatedReplicas: 2, UpdatedAvailableReplicas: 2, ExpectedUpdatedReplicas: 2}
	for _, tc := range []struct {
		name        string
		cs          *appsv1beta1.CloneSet
		status      appsv1beta1.CloneSetStatus
		existing    []appsv1beta1.CloneSetCondition
		wantStatus  corev1.ConditionStatus
		wantReason  appsv1beta1.CloneSetConditionReason
		wantMessage string
		wantSince   time.Time
		wantRecheck time.Duration
	}{
		{"available", cs(nil), done, nil, corev1.ConditionTrue, appsv1beta1.CloneSetAvailable, "CloneSet is available", t0, 0},
		{"paused", cs(func(c *appsv1beta1.CloneSet) { c.Spec.UpdateStrategy.RollingUpdate.Paused = true }), rolling, nil,
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressPaused, "CloneSet is paused", t0, 0},
		{"partition available", cs(nil), func() appsv1beta1.CloneSetStatus {
			s := rolling
			s.ExpectedUpdatedReplicas, s.UpdatedAvailableReplicas = 1, 1
			return s
		}(), nil, corev1.ConditionTrue, appsv1beta1.CloneSetProgressPartitionAvailable, "CloneSet has been paused due to partition ready", t0, 0},
		{"progressing starts", cs(nil), rolling, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetAvailable, t0.Add(-10*time.Second)),
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, "CloneSet is progressing", t0, 61 * time.Second},
		{"progressing starts without a condition", cs(nil), rolling, nil,
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, "CloneSet is progressing", t0, 61 * time.Second},
		// OpenKruise's rule, kept: the deadline counts from the condition's last update, so a
		// rollout starting longer than the deadline after the CloneSet became available reads
		// exceeded at once.
		{"rollout long after availability", cs(nil), rolling, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetAvailable, t0.Add(-time.Hour)),
			corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, "CloneSet revision r2 has timed out progressing", t0, 0},
		{"progressing goes on", cs(nil), rolling, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-50*time.Second)),
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, "", t0.Add(-50 * time.Second), 11 * time.Second},
		{"deadline passed", cs(nil), rolling, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-61*time.Second)),
			corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, "CloneSet revision r2 has timed out progressing", t0, 0},
		{"deadline stays exceeded", cs(nil), rolling, progressing(corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, t0.Add(-time.Second)),
			corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, "", t0.Add(-time.Second), 0},
		{"exceeded, then available", cs(nil), done, progressing(corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, t0.Add(-time.Hour)),
			corev1.ConditionTrue, appsv1beta1.CloneSetAvailable, "CloneSet is available", t0, 0},
	} {
		status := tc.status
		status.Conditions = tc.existing
		conds, recheck := progressingCondition(tc.cs, status, now, false)
		cond := conditions.CloneSet.Get(conds, appsv1beta1.CloneSetConditionTypeProgressing)
		if cond == nil || cond.Status != tc.wantStatus || cond.Reason != string(tc.wantReason) || (tc.wantMessage != "" && cond.Message != tc.wantMessage) ||
			!cond.LastUpdateTime.Time.Equal(tc.wantSince) || recheck != tc.wantRecheck {
			t.Errorf("%s: condition %+v recheck %v; want %s %s %q since %v, recheck %v", tc.name, cond, recheck,
				tc.wantStatus, tc.wantReason, tc.wantMessage, tc.wantSince, tc.wantRecheck)
		}
	}

	// Without a deadline, or with MaxInt32, there is none.
	for _, deadline := range []*int32{nil, ptr.To[int32](math.MaxInt32)} {
		c := newCS(2)
		c.Spec.ProgressDeadlineSeconds = deadline
		status := rolling
		status.Conditions = progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0)
		if conds, _ := progressingCondition(c, status, now, false); len(conds) != 0 {
			t.Errorf("deadline %v: conditions %+v, want none", deadline, conds)
		}
	}
}

// With the deadline restarting on progress, a rollout that moved since the recorded status
// gets a new window, and out of an exceeded deadline; one that did not move times out as
// before.
func TestProgressingConditionRestartsOnProgress(t *testing.T) {
	now := metav1.NewTime(t0)
	cs := newCS(4)
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	cs.Status = appsv1beta1.CloneSetStatus{CurrentRevision: "r1", UpdateRevision: "r2", Replicas: 4, UpdatedReplicas: 1, ExpectedUpdatedReplicas: 4}
	progressing := func(s corev1.ConditionStatus, reason appsv1beta1.CloneSetConditionReason, since time.Time) []appsv1beta1.CloneSetCondition {
		return []appsv1beta1.CloneSetCondition{{
			Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: s, Reason: string(reason),
			LastUpdateTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since.Add(-time.Hour)),
		}}
	}
	moved := cs.Status
	moved.UpdatedReplicas = 2
	movedAvailable := cs.Status
	movedAvailable.UpdatedAvailableReplicas = 1
	newRevision := cs.Status
	newRevision.UpdateRevision = "r3"
	for _, tc := range []struct {
		name       string
		status     appsv1beta1.CloneSetStatus
		existing   []appsv1beta1.CloneSetCondition
		wantStatus corev1.ConditionStatus
		wantReason appsv1beta1.CloneSetConditionReason
		wantSince  time.Time
	}{
		{"another pod updated", moved, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-50*time.Second)),
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0},
		{"another updated pod available, past the deadline", movedAvailable, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-2*time.Minute)),
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0},
		{"progress lifts an exceeded deadline", moved, progressing(corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, t0.Add(-time.Minute)),
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0},
		{"a new revision long after availability", newRevision, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetAvailable, t0.Add(-time.Hour)),
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0},
		{"no progress keeps the window", cs.Status, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-50*time.Second)),
			corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-50 * time.Second)},
		{"no progress times out", cs.Status, progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-61*time.Second)),
			corev1.ConditionFalse, appsv1beta1.CloneSetProgressDeadlineExceeded, t0},
	} {
		status := tc.status
		status.Conditions = tc.existing
		conds, recheck := progressingCondition(cs, status, now, true)
		cond := conditions.CloneSet.Get(conds, appsv1beta1.CloneSetConditionTypeProgressing)
		if cond == nil || cond.Status != tc.wantStatus || cond.Reason != string(tc.wantReason) || !cond.LastUpdateTime.Time.Equal(tc.wantSince) {
			t.Errorf("%s: condition %+v; want %s %s since %v", tc.name, cond, tc.wantStatus, tc.wantReason, tc.wantSince)
			continue
		}
		if tc.wantStatus == corev1.ConditionTrue {
			if want := tc.wantSince.Add(61 * time.Second).Sub(t0); recheck != want {
				t.Errorf("%s: recheck after %v, want %v", tc.name, recheck, want)
			}
			if tc.existing[0].Status == corev1.ConditionTrue && !cond.LastTransitionTime.Equal(&tc.existing[0].LastTransitionTime) {
				t.Errorf("%s: lastTransitionTime moved to %v without a transition", tc.name, cond.LastTransitionTime)
			}
		}
	}
	// Off, as in OpenKruise, the same progress does not restart the window.
	status := moved
	status.Conditions = progressing(corev1.ConditionTrue, appsv1beta1.CloneSetProgressUpdated, t0.Add(-61*time.Second))
	if conds, _ := progressingCondition(cs, status, now, false); conditions.CloneSet.Get(conds, appsv1beta1.CloneSetConditionTypeProgressing).Reason != string(appsv1beta1.CloneSetProgressDeadlineExceeded) {
		t.Errorf("without restarts the deadline did not pass: %+v", conds)
	}
}

func TestFailureConditions(t *testing.T) {
	now := metav1.NewTime(t0)
	conds := failureCondition(nil, appsv1beta1.CloneSetConditionFailedScale, errors.New("first"), now)
	conds = failureCondition(conds, appsv1beta1.CloneSetConditionFailedScale, errors.New("second"), metav1.NewTime(t0.Add(time.Minute)))
	if len(conds) != 1 || conds[0].Message != "first" || conds[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions = %+v, want the first failure kept", conds)
	}
	if conds = failureCondition(conds, appsv1beta1.CloneSetConditionFailedScale, nil, now); len(conds) != 0 {
		t.Errorf("conditions after a success = %+v, want none", conds)
	}
}

func TestStatusChanged(t *testing.T) {
	base := appsv1beta1.CloneSetStatus{ObservedGeneration: 2, Replicas: 3, UpdateRevision: "r", CurrentRevision: "r", LabelSelector: "app=cs",
		CollisionCount: ptr.To[int32](0)}
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1beta1.CloneSetStatus)
		want   bool
	}{
		{"same", func(*appsv1beta1.CloneSetStatus) {}, false},
		{"older generation", func(s *appsv1beta1.CloneSetStatus) { s.ObservedGeneration = 1 }, false},
		{"newer generation", func(s *appsv1beta1.CloneSetStatus) { s.ObservedGeneration = 3 }, true},
		{"counter", func(s *appsv1beta1.CloneSetStatus) { s.UpdatedAvailableReplicas = 1 }, true},
		{"expected updated", func(s *appsv1beta1.CloneSetStatus) { s.ExpectedUpdatedReplicas = 1 }, true},
		{"revision", func(s *appsv1beta1.CloneSetStatus) { s.CurrentRevision = "q" }, true},
		{"collision count", func(s *appsv1beta1.CloneSetStatus) { s.CollisionCount = ptr.To[int32](1) }, true},
		{"selector", func(s *appsv1beta1.CloneSetStatus) { s.LabelSelector = "app=x" }, true},
		{"failed scale appears", func(s *appsv1beta1.CloneSetStatus) {
			s.Conditions = []appsv1beta1.CloneSetCondition{{Type: appsv1beta1.CloneSetConditionFailedScale, Status: corev1.ConditionTrue}}
		}, true},
		{"progressing appears", func(s *appsv1beta1.CloneSetStatus) {
			s.Conditions = []appsv1beta1.CloneSetCondition{{Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: corev1.ConditionTrue}}
		}, true},
	} {
		status := *base.DeepCopy()
		tc.mutate(&status)
		if got := statusChanged(base, status); got != tc.want {
			t.Errorf("%s: statusChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	withProgress := func(reason string, message string) appsv1beta1.CloneSetStatus {
		s := *base.DeepCopy()
		s.Conditions = []appsv1beta1.CloneSetCondition{{Type: appsv1beta1.CloneSetConditionTypeProgressing, Status: corev1.ConditionTrue, Reason: reason, Message: message}}
		return s
	}
	if statusChanged(withProgress("A", "x"), withProgress("A", "y")) || !statusChanged(withProgress("A", "x"), withProgress("B", "x")) {
		t.Error("a Progressing condition must count by status and reason only")
	}
}

func TestProgressDeadlineRequeues(t *testing.T) {
	cs := withImage(newCS(1), "img:v2")
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](30)
	cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	cs.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
	old := revisionOf(t, newCS(1), 1)
	cs.Status.CurrentRevision = old.Name
	f := newFixture(t, fixtureOption{}, cs, old, revisionOf(t, cs, 2), newPod(newCS(1), "aaaaa", old))
	f.sync(cs)
	status := f.lastStatus()
	cond := conditions.CloneSet.Get(status.Conditions, appsv1beta1.CloneSetConditionTypeProgressing)
	if cond == nil || cond.Reason != string(appsv1beta1.CloneSetProgressUpdated) {
		t.Fatalf("conditions = %+v, want CloneSetUpdated", status.Conditions)
	}
	delayed := f.queue.Delayed()
	if len(delayed) == 0 || delayed[len(delayed)-1].Delay != 31*time.Second {
		t.Errorf("requeued %v, want after the deadline and a second", delayed)
	}
}
