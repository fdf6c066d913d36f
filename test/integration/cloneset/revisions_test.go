package cloneset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Going back to an earlier template reuses its revision, renumbered as the
// newest; with revisionHistoryLimit 1 the current and the update revision stay, and one
// more. (That the names match OpenKruise's for the same templates is checked against
// OpenKruise's bytes by the unit tests of the revisions.)
func testRevisions(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	e.cloneSets().Create(t, newCloneSet("web", 2))
	first, _ := e.waitForSettled(t, "web")
	rev1 := first.Status.UpdateRevision
	e.setImage(t, "web", image2)
	rev2 := e.waitForNewRevision(t, "web", rev1).Status.UpdateRevision
	e.waitForSettled(t, "web")
	e.setImage(t, "web", image1)
	if back := e.waitForNewRevision(t, "web", rev2).Status.UpdateRevision; back != rev1 {
		t.Errorf("back at the first template, update revision %s, want %s again", back, rev1)
	}
	e.waitForSettled(t, "web")
	got := e.revisionsOf(t, "web")
	if want := map[string]int64{rev1: 3, rev2: 2}; !maps.Equal(got, want) {
		t.Errorf("revisions (name: number) %v, want %v: the rollback renumbers the first", got, want)
	}
	for name := range got {
		rev, err := e.Client.AppsV1().ControllerRevisions(e.Namespace).Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hash := strings.TrimPrefix(name, "web-"); rev.Labels["controller.kubernetes.io/hash"] != hash || rev.Labels["app"] != "web" {
			t.Errorf("revision %s labelled %v, want app=web and controller.kubernetes.io/hash=%s", name, rev.Labels, hash)
		}
	}

	// Every template change makes a revision; the partition keeps the pods at the first.
	cs := newCloneSet("limited", 1)
	cs.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	rolling(cs).Partition = percent("100%")
	e.cloneSets().Create(t, cs)
	settled, _ := e.waitForSettled(t, "limited")
	names := []string{settled.Status.UpdateRevision}
	for i := 2; i <= 4; i++ {
		e.setImage(t, "limited", fmt.Sprintf("registry.example/web:%d", i))
		names = append(names, e.waitForNewRevision(t, "limited", names[len(names)-1]).Status.UpdateRevision)
	}
	want := []string{names[0], names[2], names[3]}
	slices.Sort(want)
	var kept []string
	e.Await(t, fmt.Sprintf("the revisions of limited to be %v (current, one more, update)", want), func(context.Context) (bool, error) {
		kept = slices.Sorted(maps.Keys(e.revisionsOf(t, "limited")))
		return slices.Equal(kept, want), nil
	}, func() string { return fmt.Sprint(kept) })
	if s := e.cloneSets().Get(t, "limited").Status; s.CurrentRevision != names[0] || s.UpdateRevision != names[3] {
		t.Errorf("status names current %s and update %s, want %s and %s", s.CurrentRevision, s.UpdateRevision, names[0], names[3])
	}
}

// revisionsOf returns the revision numbers of the CloneSet's ControllerRevisions by name.
func (e *testEnv) revisionsOf(t *testing.T, name string) map[string]int64 {
	t.Helper()
	list, err := e.Client.AppsV1().ControllerRevisions(e.Namespace).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatalf("listing ControllerRevisions: %v", err)
	}
	out := map[string]int64{}
	for _, rev := range list.Items {
		out[rev.Name] = rev.Revision
	}
	return out
}

// What a conversion carries, through the API server: a v1alpha1 OnDelete
// CloneSet with a partition keeps it in v1beta1; excludePreparingDelete survives a v1alpha1
// read-modify-write; disablePVCReuse and enablePVCReuse mean the same in both directions.
// (Fuzzed round trips of every kind are the api suite's.)
func testConversion(t *testing.T, e *testEnv) {
	onDelete := newAlpha("ondelete")
	onDelete.Spec.Replicas = ptr.To[int32](0)
	onDelete.Spec.UpdateStrategy.Type = appsv1alpha1.OnDeleteCloneSetUpdateStrategyType
	onDelete.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
	e.alpha.Create(t, onDelete)
	if us := e.beta.Get(t, "ondelete").Spec.UpdateStrategy; us.Type != appsv1beta1.OnDeleteCloneSetUpdateStrategyType ||
		us.RollingUpdate == nil || us.RollingUpdate.Partition == nil || *us.RollingUpdate.Partition != intstr.FromInt32(2) {
		t.Errorf("v1alpha1 OnDelete with partition 2 reads in v1beta1 as %+v, want OnDelete with rollingUpdate.partition 2", us)
	}
	if us := e.alpha.Get(t, "ondelete").Spec.UpdateStrategy; us.Type != appsv1alpha1.OnDeleteCloneSetUpdateStrategyType ||
		us.Partition == nil || *us.Partition != intstr.FromInt32(2) {
		t.Errorf("v1alpha1 OnDelete with partition 2 reads back as %+v", us)
	}

	exclude := newCloneSet("exclude", 0)
	exclude.Spec.ScaleStrategy.ExcludePreparingDelete = true
	e.beta.Create(t, exclude)
	alpha := e.alpha.Update(t, "exclude", func(cs *appsv1alpha1.CloneSet) { cs.Spec.MinReadySeconds = 5 })
	if alpha.Labels[appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey] != "true" {
		t.Errorf("v1alpha1 view of excludePreparingDelete: labels %v, want %s=true", alpha.Labels, appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey)
	}
	if got := e.beta.Get(t, "exclude").Spec; !got.ScaleStrategy.ExcludePreparingDelete || got.MinReadySeconds != 5 {
		t.Errorf("after a v1alpha1 read-modify-write: excludePreparingDelete %v, minReadySeconds %d; want true and 5",
			got.ScaleStrategy.ExcludePreparingDelete, got.MinReadySeconds)
	}

	for _, disable := range []bool{true, false} {
		cs := newAlpha(fmt.Sprintf("alpha-disable-%v", disable))
		cs.Spec.Replicas = ptr.To[int32](0)
		cs.Spec.ScaleStrategy.DisablePVCReuse = disable
		e.alpha.Create(t, cs)
		if got := e.beta.Get(t, cs.Name).Spec.ScaleStrategy.EnablePVCReuse; got != !disable {
			t.Errorf("v1alpha1 disablePVCReuse %v reads in v1beta1 as enablePVCReuse %v", disable, got)
		}
	}
	for _, enable := range []bool{true, false} {
		cs := newCloneSet(fmt.Sprintf("beta-enable-%v", enable), 0)
		cs.Spec.ScaleStrategy.EnablePVCReuse = enable
		e.beta.Create(t, cs)
		if got := e.alpha.Get(t, cs.Name).Spec.ScaleStrategy.DisablePVCReuse; got != !enable {
			t.Errorf("v1beta1 enablePVCReuse %v reads in v1alpha1 as disablePVCReuse %v", enable, got)
		}
	}
}
