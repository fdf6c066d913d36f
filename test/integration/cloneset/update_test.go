package cloneset

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// statusLog keeps every status of a CloneSet observeCloneSet reported.
type statusLog struct {
	mu       sync.Mutex
	statuses []appsv1beta1.CloneSetStatus
}

func (l *statusLog) add(cs *appsv1beta1.CloneSet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses = append(l.statuses, cs.Status)
}

func (l *statusLog) all() []appsv1beta1.CloneSetStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.statuses)
}

// A recreate rollout of 4 ready pods with maxUnavailable 1 never leaves more
// than one of them unavailable; the status names two revisions until every pod is updated,
// then one; every pod replaced gets a SuccessfulUpdatePodReCreate event.
func testRecreateRollout(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	cs := newCloneSet("web", 4)
	rolling(cs).MaxUnavailable = intOrStr(1)
	cs = e.cloneSets().Create(t, cs)
	settled, before := e.waitForSettled(t, "web")
	oldRevision := settled.Status.UpdateRevision

	fewest := &extremeRecorder{smallest: true}
	e.observePods(t, func(pods []*corev1.Pod) {
		own := ownActive(pods, cs.UID)
		fewest.record(countPods(own, available), func() string { return describePodPtrs(own) })
	})
	statuses := &statusLog{}
	e.observeCloneSet(t, "web", statuses.add)

	e.setImage(t, "web", image2)
	newRevision := e.waitForNewRevision(t, "web", oldRevision).Status.UpdateRevision
	e.waitForSettled(t, "web")

	if n, when := fewest.get(); n < 3 {
		t.Errorf("only %d of 4 pods were available at one point, want at least 3 (maxUnavailable 1): %s", n, when)
	}
	sawTwo := false
	for _, s := range statuses.all() {
		if s.UpdateRevision != newRevision {
			continue
		}
		if s.CurrentRevision == oldRevision {
			sawTwo = true
		}
		if s.CurrentRevision == newRevision && s.UpdatedReplicas < 4 {
			t.Errorf("status %+v names the update revision current with %d of 4 pods updated", s, s.UpdatedReplicas)
		}
	}
	if !sawTwo {
		t.Errorf("no status named current revision %s and update revision %s during the rollout", oldRevision, newRevision)
	}
	events := e.csEvents(t, "web", "SuccessfulUpdatePodReCreate")
	for _, pod := range before {
		want := fmt.Sprintf("successfully patch pod %s specified-delete for update(revision %s)", pod.Name, newRevision)
		if !slices.ContainsFunc(events, func(ev corev1.Event) bool { return ev.Message == want }) {
			t.Errorf("no event %q", want)
		}
	}
}

// With maxSurge 1 and maxUnavailable 0 a rollout of 4 pods runs at most 5 and
// keeps at least 4 available.
func testSurge(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	cs := newCloneSet("web", 4)
	rolling(cs).MaxSurge, rolling(cs).MaxUnavailable = intOrStr(1), intOrStr(0)
	cs = e.cloneSets().Create(t, cs)
	settled, _ := e.waitForSettled(t, "web")

	most, fewest := &extremeRecorder{}, &extremeRecorder{smallest: true}
	e.observePods(t, func(pods []*corev1.Pod) {
		own := ownActive(pods, cs.UID)
		most.record(len(own), func() string { return describePodPtrs(own) })
		fewest.record(countPods(own, available), func() string { return describePodPtrs(own) })
	})
	e.setImage(t, "web", image2)
	e.waitForNewRevision(t, "web", settled.Status.UpdateRevision)
	e.waitForSettled(t, "web")

	if n, when := most.get(); n != 5 {
		t.Errorf("at most %d pods ran at once, want 5 (4 and a surge pod): %s", n, when)
	}
	if n, when := fewest.get(); n < 4 {
		t.Errorf("only %d pods were available at one point, want at least 4 (maxUnavailable 0): %s", n, when)
	}
}

// A partition keeps pods at the current revision: "99%" of 4 keeps 3, 2 keeps
// 2, and raising it again moves no pod back.
func testPartition(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	cs := newCloneSet("web", 4)
	rolling(cs).Partition = percent("99%")
	cs = e.cloneSets().Create(t, cs)
	settled, _ := e.waitForSettled(t, "web")
	oldRevision := settled.Status.UpdateRevision
	e.setImage(t, "web", image2)
	newRevision := e.waitForNewRevision(t, "web", oldRevision).Status.UpdateRevision

	expect := func(what string, updated int32) {
		t.Helper()
		e.cloneSets().WaitFor(t, "web", what, func(cs *appsv1beta1.CloneSet) bool {
			s := cs.Status
			return s.ObservedGeneration == cs.Generation && s.ExpectedUpdatedReplicas == 4-partitionOf(cs) &&
				s.UpdatedReplicas == updated && s.UpdatedAvailableReplicas == updated && s.AvailableReplicas == 4
		})
		e.settle(t)
		pods := activePods(e.GetPods(t, nil), cs.UID)
		if n := countPods(pods, func(p *corev1.Pod) bool { return revisionOf(p) == newRevision }); len(pods) != 4 || n != int(updated) {
			t.Errorf("%s: %d of %d pods at the update revision, want %d of 4: %s", what, n, len(pods), updated, describePodPtrs(pods))
		}
	}
	expect(`partition "99%": 1 pod updated, expectedUpdatedReplicas 1`, 1)
	e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy.RollingUpdate.Partition = intOrStr(2) })
	expect("partition 2: 2 pods updated, expectedUpdatedReplicas 2", 2)
	e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy.RollingUpdate.Partition = percent("99%") })
	expect(`partition "99%" again: expectedUpdatedReplicas 1, still 2 pods updated`, 2)
}

// partitionOf is the CloneSet's partition in pods: an integer, or "99%" of 4, which is 3.
func partitionOf(cs *appsv1beta1.CloneSet) int32 {
	p := cs.Spec.UpdateStrategy.RollingUpdate.Partition
	if p.String() == "99%" {
		return 3
	}
	return p.IntVal
}

// A paused update moves no pod and adds no surge pod; scaling goes on, with
// the partition's share created at the current revision.
func testPaused(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	cs := newCloneSet("web", 2)
	r := rolling(cs)
	r.MaxSurge, r.MaxUnavailable, r.Paused = intOrStr(1), intOrStr(0), true
	cs = e.cloneSets().Create(t, cs)
	settled, before := e.waitForSettled(t, "web")
	oldRevision := settled.Status.UpdateRevision

	most := &extremeRecorder{}
	e.observePods(t, func(pods []*corev1.Pod) {
		own := ownActive(pods, cs.UID)
		most.record(len(own), func() string { return describePodPtrs(own) })
	})
	e.setImage(t, "web", image2)
	newRevision := e.waitForNewRevision(t, "web", oldRevision).Status.UpdateRevision
	e.settle(t)
	pods := activePods(e.GetPods(t, nil), cs.UID)
	if !slices.Equal(podNames(pods), podNames(before)) || countPods(pods, func(p *corev1.Pod) bool { return revisionOf(p) == oldRevision }) != 2 {
		t.Errorf("paused, the pods changed: %s", describePodPtrs(pods))
	}
	if n, when := most.get(); n != 2 {
		t.Errorf("paused, %d pods ran at once, want 2 (no surge): %s", n, when)
	}
	if s := e.cloneSets().Get(t, "web").Status; s.UpdatedReplicas != 0 || s.CurrentRevision != oldRevision {
		t.Errorf("paused: status %+v, want no pod updated and current revision %s", s, oldRevision)
	}

	// 2→5 with a partition of 4: two more pods at the current revision, one at the update
	// revision.
	e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Replicas = ptr.To[int32](5)
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = intOrStr(4)
	})
	e.waitForPods(t, cs, "5 pods", func(pods []*corev1.Pod) bool { return len(pods) == 5 })
	e.settle(t)
	pods = activePods(e.GetPods(t, nil), cs.UID)
	old := countPods(pods, func(p *corev1.Pod) bool { return revisionOf(p) == oldRevision })
	updated := countPods(pods, func(p *corev1.Pod) bool { return revisionOf(p) == newRevision })
	if len(pods) != 5 || old != 4 || updated != 1 {
		t.Errorf("paused, scaled 2→5 with partition 4: %d pods at %s and %d at %s, want 4 and 1: %s", old, oldRevision, updated, newRevision, describePodPtrs(pods))
	}
}

// With OnDelete nothing is updated until deleted; the replacement of a
// deleted pod is at the update revision; the other pods stay, ready.
func testOnDelete(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	cs := newCloneSet("web", 3)
	cs.Spec.UpdateStrategy = appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.OnDeleteCloneSetUpdateStrategyType}
	cs = e.cloneSets().Create(t, cs)
	settled, before := e.waitForSettled(t, "web")
	oldRevision := settled.Status.UpdateRevision
	e.setImage(t, "web", image2)
	newRevision := e.waitForNewRevision(t, "web", oldRevision).Status.UpdateRevision
	e.settle(t)
	uids := map[string]types.UID{}
	for _, pod := range before {
		uids[pod.Name] = pod.UID
	}
	unchanged := func(pods []*corev1.Pod) []string {
		var problems []string
		for _, pod := range pods {
			if uids[pod.Name] != pod.UID || revisionOf(pod) != oldRevision || !available(pod) {
				problems = append(problems, podDetails(pod))
			}
		}
		return problems
	}
	if problems := unchanged(activePods(e.GetPods(t, nil), cs.UID)); len(problems) > 0 {
		t.Errorf("OnDelete: pods changed with the template: %v", problems)
	}

	victim := before[0].Name
	e.Pods().DeleteWith(t, victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	pods := e.waitForPods(t, cs, "a replacement for "+victim, func(pods []*corev1.Pod) bool {
		return len(pods) == 3 && !slices.Contains(podNames(pods), victim) && countPods(pods, available) == 3
	})
	var kept []*corev1.Pod
	for _, pod := range pods {
		if _, old := uids[pod.Name]; old {
			kept = append(kept, pod)
		} else if revisionOf(pod) != newRevision {
			t.Errorf("the replacement %s is at %s, want the update revision %s", pod.Name, revisionOf(pod), newRevision)
		}
	}
	if problems := unchanged(kept); len(kept) != 2 || len(problems) > 0 {
		t.Errorf("OnDelete: the pods not deleted changed: %v", problems)
	}
}

// A weight priority updates the pods it weighs more first; a scatter strategy
// spreads the pods of its term among the others (weighted first here, so that without the
// scatter the first two would both be of the term).
func testPriorityAndScatter(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	tierA := map[string]string{"tier": "a"}
	z1 := map[string]string{"zone": "z1"}

	prio := newCloneSet("prio", 4)
	r := rolling(prio)
	r.Partition, r.MaxUnavailable = intOrStr(2), intOrStr(2)
	r.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: tierA}},
	}}
	prio = e.cloneSets().Create(t, prio)

	scatter := newCloneSet("scatter", 6)
	r = rolling(scatter)
	r.Partition, r.MaxUnavailable = intOrStr(4), intOrStr(2)
	r.PriorityStrategy = &appsv1beta1.UpdatePriorityStrategy{WeightPriority: []appsv1beta1.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: z1}},
	}}
	r.ScatterStrategy = appsv1beta1.UpdateScatterStrategy{{Key: "zone", Value: "z1"}}
	scatter = e.cloneSets().Create(t, scatter)

	_, prioPods := e.waitForSettled(t, "prio")
	_, scatterPods := e.waitForSettled(t, "scatter")
	first := []string{prioPods[1].Name, prioPods[2].Name}
	for _, name := range first {
		e.patchPod(t, name, `{"metadata":{"labels":{"tier":"a"}}}`)
	}
	var zoned []string
	for i, pod := range scatterPods {
		if i%2 == 0 {
			e.patchPod(t, pod.Name, `{"metadata":{"labels":{"zone":"z1"}}}`)
			zoned = append(zoned, pod.Name)
		}
	}
	e.settle(t) // the controller has seen the labels
	e.setImage(t, "prio", image2)
	e.setImage(t, "scatter", image2)

	// updatedOnes waits until the CloneSet has 2 pods updated and available, and returns
	// the pods of before that are gone.
	updatedOnes := func(cs *appsv1beta1.CloneSet, before []*corev1.Pod) []string {
		t.Helper()
		e.cloneSets().WaitFor(t, cs.Name, "2 pods updated and available", func(cs *appsv1beta1.CloneSet) bool {
			s := cs.Status
			return s.ObservedGeneration == cs.Generation && s.UpdatedAvailableReplicas == 2 && s.AvailableReplicas == *cs.Spec.Replicas
		})
		e.settle(t)
		now := podNames(activePods(e.GetPods(t, nil), cs.UID))
		var gone []string
		for _, pod := range before {
			if !slices.Contains(now, pod.Name) {
				gone = append(gone, pod.Name)
			}
		}
		return gone
	}
	if got := updatedOnes(prio, prioPods); !slices.Equal(got, first) {
		t.Errorf("weight priority on tier=a: pods %v were updated, want the tier=a pods %v", got, first)
	}
	got := updatedOnes(scatter, scatterPods)
	inZone := slices.DeleteFunc(slices.Clone(got), func(n string) bool { return !slices.Contains(zoned, n) })
	if len(got) != 2 || len(inZone) != 1 {
		t.Errorf("scatter on zone=z1 (pods %s): pods %v were updated first, want one of the zone and one other",
			strings.Join(zoned, ", "), got)
	}
}
