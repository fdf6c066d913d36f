package advanceddaemonset

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestStatusCounters(t *testing.T) {
	ds := newDS()
	ds.Spec.MinReadySeconds = 600
	h := hashOf(ds)
	ineligible := newNode("n4")
	ineligible.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}
	// n1: updated, ready for an hour (available); n2: old and not ready; n3: updated, ready
	// for a minute (not yet available); n4: misscheduled; n5: no pod.
	recent := newPod("p3", ds, h, "n3")
	recent.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-time.Minute))
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1),
		newNode("n1"), newNode("n2"), newNode("n3"), ineligible, newNode("n5"),
		newPod("p1", ds, h, "n1"), notReady(newPod("p2", ds, "old", "n2")), recent, newPod("p4", ds, h, "n4"))
	v := f.c.newView(ds, []*corev1.Node{newNode("n1"), newNode("n2"), newNode("n3"), ineligible, newNode("n5")},
		[]*corev1.Pod{newPod("p1", ds, h, "n1"), notReady(newPod("p2", ds, "old", "n2")), recent, newPod("p4", ds, h, "n4")}, h)
	status := calculateStatus(v)
	want := appsv1beta1.DaemonSetStatus{
		DesiredNumberScheduled: 4, CurrentNumberScheduled: 3, NumberMisscheduled: 1,
		NumberReady: 2, NumberAvailable: 1, NumberUnavailable: 3, UpdatedNumberScheduled: 2, UpdateRevision: h,
	}
	status.Conditions = nil
	if !reflect.DeepEqual(status, want) {
		t.Errorf("status =\n%+v\nwant\n%+v", status, want)
	}

	// Ready but not yet available pods bring the DaemonSet back when they become available.
	var again requeue
	if err := f.c.updateStatus(f.ctx, v, true, &again); err != nil {
		t.Fatal(err)
	}
	if !again.set || again.delay != 9*time.Minute {
		t.Errorf("requeue = %+v, want after 9m", again)
	}
	if written := f.lastStatus(); written == nil || written.ObservedGeneration != ds.Generation {
		t.Errorf("written status = %+v", written)
	}
}

func TestStatusWriteSkippedWhenUnchanged(t *testing.T) {
	ds := newDS()
	f := newFixture(t, fixtureOption{}, ds, revisionOf(t, ds, 1), newNode("n1"), newPod("p1", ds, hashOf(ds), "n1"))
	v := f.c.newView(ds, []*corev1.Node{newNode("n1")}, []*corev1.Pod{newPod("p1", ds, hashOf(ds), "n1")}, hashOf(ds))
	status := calculateStatus(v)
	status.ObservedGeneration = ds.Generation
	ds.Status = status
	f.sync(ds)
	if f.lastStatus() != nil {
		t.Errorf("status written although unchanged: %+v", f.lastStatus())
	}
}

func TestProgressingTransitions(t *testing.T) {
	old := newDS()
	old.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(1))
	ds, _, _ := rolled(t, old, "img:v2")
	nodes := []*corev1.Node{newNode("a"), newNode("b"), newNode("c")}
	f := newFixture(t, fixtureOption{})
	h := hashOf(ds)

	rolling := f.c.newView(ds, nodes, []*corev1.Pod{
		newPod("pa", old, "old", "a"), newPod("pb", old, "old", "b"), newPod("pc", ds, h, "c"),
	}, h)
	cond := progressingCondition(rolling)
	if cond.Status != corev1.ConditionTrue || cond.Reason != ReasonRollingUpdate || cond.Message != "1 of 2 pods updated to revision "+h {
		t.Errorf("rolling: %+v", cond)
	}
	conds := setProgressing(nil, cond)

	// Only the partitioned pod is left on the old revision: the rollout is complete.
	f.clock.Step(time.Minute)
	done := f.c.newView(ds, nodes, []*corev1.Pod{
		newPod("pa", old, "old", "a"), newPod("pb", ds, h, "b"), newPod("pc", ds, h, "c"),
	}, h)
	cond = progressingCondition(done)
	if cond.Reason != ReasonRolloutComplete || cond.Message != "2 pods updated to revision "+h+" and available; 1 pods kept on old revisions by partition or rolling selector" {
		t.Errorf("complete: %+v", cond)
	}
	conds = setProgressing(conds, cond)
	if len(conds) != 1 || !conds[0].LastTransitionTime.Equal(ptr.To(metav1.NewTime(t0))) {
		t.Errorf("a reason change under the same status moved the transition time: %+v", conds)
	}

	// Message changes under the same reason are recorded; the transition time stays.
	again := setProgressing(conds, appsv1.DaemonSetCondition{Type: Progressing, Status: corev1.ConditionTrue, Reason: ReasonRolloutComplete, Message: "other", LastTransitionTime: metav1.NewTime(t0.Add(time.Hour))})
	if again[0].Message != "other" || !again[0].LastTransitionTime.Equal(ptr.To(metav1.NewTime(t0))) {
		t.Errorf("message update: %+v", again)
	}

	// Paused with old pods: False.
	paused := ds.DeepCopy()
	paused.Spec.UpdateStrategy.RollingUpdate.Paused = ptr.To(true)
	cond = progressingCondition(f.c.newView(paused, nodes, []*corev1.Pod{
		newPod("pa", old, "old", "a"), newPod("pb", old, "old", "b"), newPod("pc", ds, h, "c"),
	}, h))
	conds = setProgressing(conds, cond)
	if conds[0].Status != corev1.ConditionFalse || conds[0].Reason != ReasonRolloutPaused || !conds[0].LastTransitionTime.Equal(ptr.To(metav1.NewTime(t0.Add(time.Minute)))) {
		t.Errorf("paused: %+v", conds)
	}
}

func TestMixedRevisionsAlwaysRequeue(t *testing.T) {
	old := newDS()
	old.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
	old.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	ds, _, _ := rolled(t, old, "img:v2")
	f := newFixture(t, fixtureOption{}, ds)
	h := hashOf(ds)
	v := f.c.newView(ds, []*corev1.Node{newNode("a")}, []*corev1.Pod{
		newPod("pa", old, "old", "a"), notReady(newPod("na", ds, h, "a")),
	}, h)
	var again requeue
	if err := f.c.updateStatus(f.ctx, v, true, &again); err != nil {
		t.Fatal(err)
	}
	if !again.set || again.delay != mixedRevisionRecheck {
		t.Errorf("requeue = %+v, want after %v", again, mixedRevisionRecheck)
	}
}
