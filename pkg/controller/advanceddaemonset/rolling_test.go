package advanceddaemonset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/features"
)

// rolloutView builds the view of ds (at revision "new") over nodes, each running one pod
// of revision "old" unless pods says otherwise.
func rolloutView(t *testing.T, ds *appsv1beta1.DaemonSet, nodes []*corev1.Node, pods ...*corev1.Pod) *view {
	t.Helper()
	f := newFixture(t, fixtureOption{})
	return f.c.newView(ds, nodes, pods, "new")
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, pod := range pods {
		out = append(out, pod.Name)
	}
	slices.Sort(out)
	return out
}

func TestRolloutNodesPartitionAndSelector(t *testing.T) {
	nodes := []*corev1.Node{newNode("a"), newNode("b"), newNode("c"), newNode("d")}
	nodes[1].Labels["canary"] = "true"
	ds := newDS()
	var pods []*corev1.Pod
	for _, node := range nodes {
		pods = append(pods, newPod("p-"+node.Name, ds, "old", node.Name))
	}

	ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(1))
	if got := rolloutNodes(rolloutView(t, ds, nodes, pods...)); !slices.Equal(got, []string{"d", "c", "b"}) {
		t.Errorf("partition 1: %v, want [d c b] (the smallest name keeps the old pod)", got)
	}
	ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromString("50%"))
	if got := rolloutNodes(rolloutView(t, ds, nodes, pods...)); !slices.Equal(got, []string{"d", "c"}) {
		t.Errorf("partition 50%%: %v, want [d c]", got)
	}
	ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(4))
	if got := rolloutNodes(rolloutView(t, ds, nodes, pods...)); len(got) != 0 {
		t.Errorf("partition 4: %v, want none", got)
	}

	// Updated nodes come first, so that the partition keeps the same old pods.
	ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(1))
	updatedPods := slices.Clone(pods)
	updatedPods[0] = newPod("p-a", ds, "new", "a")
	if got := rolloutNodes(rolloutView(t, ds, nodes, updatedPods...)); !slices.Equal(got, []string{"a", "d", "c"}) {
		t.Errorf("with a updated: %v, want [a d c]", got)
	}

	ds.Spec.UpdateStrategy.RollingUpdate.Partition = nil
	ds.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
	if got := rolloutNodes(rolloutView(t, ds, nodes, pods...)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("selector: %v, want [b]", got)
	}
}

func TestPodsToReplace(t *testing.T) {
	nodes := []*corev1.Node{newNode("a"), newNode("b"), newNode("c"), newNode("d")}
	ds := newDS()
	available := func() []*corev1.Pod {
		var pods []*corev1.Pod
		for _, node := range nodes {
			pods = append(pods, newPod("p-"+node.Name, ds, "old", node.Name))
		}
		return pods
	}
	all := []string{"d", "c", "b", "a"}

	tests := []struct {
		name           string
		pods           func() []*corev1.Pod
		maxUnavailable int
		strict         bool
		want           []string
	}{
		{"one at a time", available, 1, false, []string{"p-d"}},
		{"two at a time", available, 2, false, []string{"p-c", "p-d"}},
		{"budget used by a missing pod", func() []*corev1.Pod { return available()[:3] }, 1, false, nil},
		{"unavailable old pod replaced outside the budget", func() []*corev1.Pod {
			pods := available()
			notReady(pods[0])
			return pods
		}, 1, false, []string{"p-a", "p-d"}},
		{"strict: unavailable old pod uses the budget", func() []*corev1.Pod {
			pods := available()
			notReady(pods[0])
			return pods
		}, 1, true, []string{"p-a"}},
		{"strict: unavailable old pods capped", func() []*corev1.Pod {
			pods := available()
			notReady(pods[0])
			notReady(pods[1])
			notReady(pods[2])
			return pods
		}, 2, true, []string{"p-b", "p-c"}}, // nodes are walked from the largest name down
		{"interrupted in-place update finished within the budget", func() []*corev1.Pod {
			pods := available()
			inPlaceUpdateStarted(pods[0])
			return pods
		}, 2, false, []string{"p-a", "p-d"}},
		{"strict: interrupted in-place update finished within the budget", func() []*corev1.Pod {
			pods := available()
			inPlaceUpdateStarted(pods[0])
			return pods
		}, 2, true, []string{"p-a", "p-d"}},
		{"updating node counts", func() []*corev1.Pod {
			pods := available()
			pods[3] = notReady(newPod("n-d", ds, "new", "d"))
			return pods
		}, 1, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := rolloutView(t, ds, nodes, tc.pods()...)
			got := names(podsToReplace(v, all, tc.maxUnavailable, tc.strict))
			if !slices.Equal(got, tc.want) {
				t.Errorf("replace %v, want %v", got, tc.want)
			}
		})
	}
}

// inPlaceUpdateStarted gives pod the InPlaceUpdateReady gate and marks it as an in-place
// update starts, which takes it out of service, and returns it.
func inPlaceUpdateStarted(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: appsv1beta1.InPlaceUpdateReady})
	kruisepod.MarkInPlaceUpdateStarted(pod, metav1.NewTime(t0))
	return pod
}

func TestSurgePlan(t *testing.T) {
	nodes := []*corev1.Node{newNode("a"), newNode("b"), newNode("c")}
	ds := newDS()
	pods := []*corev1.Pod{
		newPod("old-a", ds, "old", "a"), newPod("new-a", ds, "new", "a"), // a: new available -> delete old
		notReady(newPod("old-b", ds, "old", "b")), // b: old unavailable -> create regardless
		newPod("old-c", ds, "old", "c"),           // c: candidate, within maxSurge
	}
	v := rolloutView(t, ds, nodes, pods...)
	creates, deletes := surgePlan(v, []string{"c", "b", "a"}, 1)
	if !slices.Equal(creates, []string{"b", "c"}) || !slices.Equal(names(deletes), []string{"old-a"}) {
		t.Errorf("creates %v deletes %v", creates, names(deletes))
	}
	// A surged pod that is not yet available uses up the budget.
	pods[1] = notReady(newPod("new-a", ds, "new", "a"))
	v = rolloutView(t, ds, nodes, pods...)
	creates, deletes = surgePlan(v, []string{"c", "b", "a"}, 1)
	if !slices.Equal(creates, []string{"b"}) || len(deletes) != 0 {
		t.Errorf("creates %v deletes %v, want [b] and none", creates, names(deletes))
	}
}

func TestStrictGateThroughSync(t *testing.T) {
	for _, strict := range []bool{false, true} {
		old := newDS()
		ds, r1, r2 := rolled(t, old, "img:v2")
		objects := []runtime.Object{ds, r1, r2}
		for i, name := range []string{"n1", "n2", "n3"} {
			pod := newPod("p"+name, old, hashOf(old), name)
			if i == 0 {
				notReady(pod)
			}
			objects = append(objects, newNode(name), pod)
		}
		f := newFixture(t, fixtureOption{gates: map[featuregate.Feature]bool{features.AdvancedDaemonSetStrictMaxUnavailable: strict}}, objects...)
		f.sync(ds)
		want := []string{"pn1", "pn3"}
		if strict {
			want = []string{"pn1"}
		}
		if got := f.deletedPods(); !slices.Equal(got, want) {
			t.Errorf("strict=%v: deleted %v, want %v", strict, got, want)
		}
	}
}

func TestPausedAndOnDeleteReplaceNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1beta1.DaemonSet)
		reason string
		status corev1.ConditionStatus
	}{
		{"paused", func(ds *appsv1beta1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Paused = ptr.To(true) }, ReasonRolloutPaused, corev1.ConditionFalse},
		{"OnDelete", func(ds *appsv1beta1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.OnDeleteDaemonSetStrategyType}
		}, ReasonOnDelete, corev1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := newDS()
			ds, r1, r2 := rolled(t, old, "img:v2")
			tc.mutate(ds)
			// A new node gets a pod of the current revision all the same.
			f := newFixture(t, fixtureOption{}, ds, r1, r2, newNode("n1"), newNode("n2"), newPod("p1", old, hashOf(old), "n1"))
			f.sync(ds)
			if len(f.deletedPods()) != 0 {
				t.Errorf("deleted %v", f.deletedPods())
			}
			if created := f.createdPods(); len(created) != 1 || created[0].Labels[appsv1beta1.ControllerRevisionHashLabelKey] != hashOf(ds) {
				t.Errorf("created %v, want one current pod on n2", f.createdNodes())
			}
			conds := f.lastStatus().Conditions
			if len(conds) != 1 || conds[0].Reason != tc.reason || conds[0].Status != tc.status {
				t.Errorf("conditions = %+v", conds)
			}
			if tc.reason == ReasonOnDelete && conds[0].Message != "1 pods wait to be deleted to update" {
				t.Errorf("message = %q", conds[0].Message)
			}
		})
	}
}
