package imagelistpulljob

import (
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestListJobEvents(t *testing.T) {
	listJob := newListJob("list", []string{"nginx"})
	f := newFixture(t, listJob)

	f.c.addListJob(f.ctx, listJob)
	f.c.updateListJob(f.ctx, listJob, listJob)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/list"}) {
		t.Errorf("add and update queued %v, want [ns/list]", got)
	}

	f.queue.Reset()
	f.c.expectations.ExpectCreations(f.ctx, "ns/list", 1)
	f.c.deleteListJob(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/list", Obj: listJob})
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/list"}) {
		t.Errorf("delete queued %v, want [ns/list]", got)
	}
	if _, _, exists := f.c.expectations.Get("ns/list"); exists {
		t.Error("a deleted list job keeps its expectations: one created again under its name would wait for them")
	}
}

func TestChildEvents(t *testing.T) {
	listJob := newListJob("list", []string{"nginx"})
	other := newListJob("other", []string{"nginx"})
	f := newFixture(t, listJob, other)
	child := newChildOf(listJob, "child", "nginx", "h", t0)
	child.ResourceVersion = "1"
	key := "ns/list"

	// An add counts as one expected creation.
	f.c.expectations.ExpectCreations(f.ctx, key, 1)
	f.c.addJob(f.ctx, child)
	if !f.c.expectations.Satisfied(f.ctx, key) {
		t.Error("the add of a child did not count as its creation")
	}
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{key}) {
		t.Errorf("add queued %v, want [%s]", got, key)
	}

	// An update setting deletionTimestamp, then the delete, count as one deletion.
	f.c.expectations.ExpectDeletions(f.ctx, key, []string{"ns/child", "ns/child2"})
	deleting := child.DeepCopy()
	deleting.ResourceVersion = "2"
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	f.c.updateJob(f.ctx, child, deleting)
	f.c.deleteJob(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/child", Obj: deleting})
	if _, del, _ := f.c.expectations.Get(key); del != 1 {
		t.Errorf("%d deletions still expected, want 1 (child2's)", del)
	}

	// A child moving to another list job queues both.
	f.queue.Reset()
	moved := deleting.DeepCopy()
	moved.ResourceVersion = "3"
	moved.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(other, controllerKind)}
	f.c.updateJob(f.ctx, deleting, moved)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/list", "ns/other"}) {
		t.Errorf("a change of controller queued %v, want both list jobs", got)
	}

	// Resyncs and objects no list job of the cache controls queue nothing.
	f.queue.Reset()
	f.c.updateJob(f.ctx, moved, moved)
	for _, ref := range []metav1.OwnerReference{
		{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob", Name: "list", UID: "uid-old", Controller: ptr.To(true)},
		{APIVersion: "example.com/v1", Kind: "ImageListPullJob", Name: "list", UID: listJob.UID, Controller: ptr.To(true)},
		{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob", Name: "list", UID: listJob.UID},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "list", UID: listJob.UID, Controller: ptr.To(true)},
	} {
		stranger := child.DeepCopy()
		stranger.OwnerReferences = []metav1.OwnerReference{ref}
		f.c.addJob(f.ctx, stranger)
		f.c.deleteJob(f.ctx, stranger)
	}
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("queued %v, want nothing", got)
	}
}

// Children are found by the UID in their controller reference, of either version.
func TestIndexByControllerUID(t *testing.T) {
	for _, tc := range []struct {
		ref  *metav1.OwnerReference
		want []string
	}{
		{&metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob", UID: "u1", Controller: ptr.To(true)}, []string{"u1"}},
		{&metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImageListPullJob", UID: "u2", Controller: ptr.To(true)}, []string{"u2"}},
		{&metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob", UID: "u3"}, nil},
		{&metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", UID: "u4", Controller: ptr.To(true)}, nil},
		{nil, nil},
	} {
		job := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "j", UID: types.UID("j")}}
		if tc.ref != nil {
			job.OwnerReferences = []metav1.OwnerReference{*tc.ref}
		}
		got, err := indexByControllerUID(job)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("index of a job controlled by %+v = %v, %v; want %v", tc.ref, got, err, tc.want)
		}
	}
}
