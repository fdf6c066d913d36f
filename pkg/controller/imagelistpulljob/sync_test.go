package imagelistpulljob

import (
	"errors"
	"slices"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

var images3 = []string{"nginx:1.25", "redis", "reg.io/team/app@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}

func TestCreatesOneChildPerImage(t *testing.T) {
	listJob := newListJob("list", images3, withTimeout(60))
	f := newFixture(t, listJob)
	f.sync("list")

	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	if got := f.listJob("list").Labels[hashLabel]; got != hash {
		t.Errorf("list job label %s = %q, want %q", hashLabel, got, hash)
	}
	children := f.children()
	if len(children) != len(images3) {
		t.Fatalf("%d children, want %d", len(children), len(images3))
	}
	for _, image := range images3 {
		child, ok := children[image]
		if !ok {
			t.Errorf("no child for %s", image)
			continue
		}
		if want := childName("list", image, hash); child.Name != want {
			t.Errorf("child of %s named %s, want %s", image, child.Name, want)
		}
		if child.Labels[hashLabel] != hash {
			t.Errorf("child of %s labelled %v, want %s=%s", image, child.Labels, hashLabel, hash)
		}
		want := metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob", Name: "list", UID: listJob.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		if len(child.OwnerReferences) != 1 || !apiequality.Semantic.DeepEqual(child.OwnerReferences[0], want) {
			t.Errorf("child of %s owner references %+v, want [%+v]", image, child.OwnerReferences, want)
		}
		if !apiequality.Semantic.DeepEqual(child.Spec.ImagePullJobTemplate, listJob.Spec.ImagePullJobTemplate) {
			t.Errorf("child of %s template %+v, want the list job's %+v", image, child.Spec.ImagePullJobTemplate, listJob.Spec.ImagePullJobTemplate)
		}
	}
	if events := f.events(); !slices.Contains(events, "Normal SuccessfulCreate Create 3 ImagePullJob") {
		t.Errorf("events %q, want Normal SuccessfulCreate Create 3 ImagePullJob", events)
	}
	status := f.listJob("list").Status
	if status.Desired != 3 || status.StartTime == nil || status.CompletionTime != nil || status.Completed != 0 {
		t.Errorf("status %+v, want desired 3, a start time, nothing completed", status)
	}
}

// Until the informer shows the children a sync created, the next sync creates none.
func TestWaitsForItsOwnCreates(t *testing.T) {
	f := newFixture(t, newListJob("list", images3))
	if err := f.c.syncListJob(f.ctx, "ns/list"); err != nil {
		t.Fatal(err)
	}
	// The list job's label and status reach the cache, the children do not.
	f.must(f.listJobs.Update(f.listJob("list")))
	f.client.ClearActions()
	if err := f.c.syncListJob(f.ctx, "ns/list"); err != nil {
		t.Fatal(err)
	}
	if n := f.countActions("create", "imagepulljobs"); n != 0 {
		t.Errorf("%d creates before the informer showed the first ones, want 0", n)
	}
	if d := f.queue.Delayed(); !slices.ContainsFunc(d, func(d queuetest.Delayed) bool { return d.Key == "ns/list" }) {
		t.Errorf("delayed %v, want ns/list looked at again in case an event is lost", d)
	}
	// Each child's add event counts as one expected creation.
	seen := 0
	for _, child := range f.children() {
		if f.c.expectations.Satisfied(f.ctx, "ns/list") {
			t.Errorf("expectations met with %d of 3 children seen", seen)
		}
		f.c.addJob(f.ctx, child)
		seen++
	}
	if !f.c.expectations.Satisfied(f.ctx, "ns/list") {
		t.Error("expectations not met once the informer showed every child")
	}
	f.observe()
	f.client.ClearActions()
	f.sync("list")
	if n := f.countActions("create", "imagepulljobs"); n != 0 {
		t.Errorf("%d creates with every child there, want 0", n)
	}
}

func TestRemovedImageDeletesItsChild(t *testing.T) {
	listJob := newListJob("list", images3)
	f := newFixture(t, listJob)
	f.sync("list")
	f.deliverChildAdds()
	removed := f.children()["redis"]

	listJob = f.listJob("list")
	listJob.Spec.Images = []string{images3[0], images3[2]}
	_, err := f.client.AppsV1beta1().ImageListPullJobs(testNamespace).Update(f.ctx, listJob, metav1.UpdateOptions{})
	f.must(err)
	f.observe()
	f.events()
	f.client.ClearActions()
	f.sync("list")

	if got := f.actions(); !slices.Equal(got, []string{"delete imagepulljobs", "update imagelistpulljobs/status"}) {
		t.Errorf("writes %v, want one delete and the status", got)
	}
	for _, a := range f.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			if d.GetName() != removed.Name {
				t.Errorf("deleted %s, want %s", d.GetName(), removed.Name)
			}
			if opts := d.GetDeleteOptions(); opts.Preconditions == nil || ptr.Deref(opts.Preconditions.UID, "") != removed.UID ||
				ptr.Deref(opts.PropagationPolicy, "") != metav1.DeletePropagationBackground {
				t.Errorf("delete options %+v, want the child's UID as precondition and background propagation", opts)
			}
		}
	}
	if _, ok := f.children()["redis"]; ok {
		t.Error("the child of the removed image is still there")
	}
	if events := f.events(); !slices.Contains(events, "Normal SuccessfulDelete Delete 1 ImagePullJob") {
		t.Errorf("events %q, want Normal SuccessfulDelete Delete 1 ImagePullJob", events)
	}
	if got := f.listJob("list").Status.Desired; got != 2 {
		t.Errorf("desired %d, want 2", got)
	}
}

// A changed template replaces every child: the new hash names and labels the new ones.
func TestTemplateChangeRecreatesChildren(t *testing.T) {
	f := newFixture(t, newListJob("list", images3))
	f.sync("list")

	listJob := f.listJob("list")
	listJob.Spec.PullPolicy.BackoffLimit = ptr.To[int32](1)
	_, err := f.client.AppsV1beta1().ImageListPullJobs(testNamespace).Update(f.ctx, listJob, metav1.UpdateOptions{})
	f.must(err)
	f.observe()
	f.deliverChildAdds()
	f.client.ClearActions()
	f.sync("list")

	newHash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	if got := f.listJob("list").Labels[hashLabel]; got != newHash {
		t.Errorf("list job label %q, want the new hash %q", got, newHash)
	}
	if c, d := f.countActions("create", "imagepulljobs"), f.countActions("delete", "imagepulljobs"); c != 3 || d != 3 {
		t.Errorf("%d creates and %d deletes, want 3 of each", c, d)
	}
	for image, child := range f.children() {
		if child.Name != childName("list", image, newHash) || child.Labels[hashLabel] != newHash || ptr.Deref(child.Spec.PullPolicy.BackoffLimit, 0) != 1 {
			t.Errorf("child of %s: %s labelled %v with backoffLimit %v, want the new template's", image, child.Name, child.Labels, child.Spec.PullPolicy.BackoffLimit)
		}
	}
}

// Children OpenKruise created (random names, another hash) from an equal template are
// kept and relabelled: a takeover pulls nothing again.
func TestEqualTemplateUnderAnotherHashIsRelabelled(t *testing.T) {
	listJob := newListJob("list", images3)
	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	listJob.Labels = map[string]string{hashLabel: "openkruise"}
	var objects []runtime.Object
	objects = append(objects, listJob)
	for i, image := range images3 {
		label := "openkruise"
		if i == 2 {
			label = "" // written before OpenKruise labelled children
		}
		objects = append(objects, newChildOf(listJob, "list-"+string(rune('a'+i)), image, label, t0))
	}
	f := newFixture(t, objects...)
	f.sync("list")

	if n := f.countActions("create", "imagepulljobs") + f.countActions("delete", "imagepulljobs"); n != 0 {
		t.Errorf("%d creates and deletes, want none", n)
	}
	if n := f.countActions("patch", "imagepulljobs"); n != 3 {
		t.Errorf("%d children patched, want 3", n)
	}
	for image, child := range f.children() {
		if child.Labels[hashLabel] != hash {
			t.Errorf("child of %s labelled %v, want %s", image, child.Labels, hash)
		}
	}
	if got := f.listJob("list").Labels[hashLabel]; got != hash {
		t.Errorf("list job label %q, want %q", got, hash)
	}
	// Relabelled, they count.
	f.setChildStatus("redis", startedStatus(2, 0, 2, 0))
	f.sync("list")
	if got := f.listJob("list").Status; got.Completed != 1 || got.Succeeded != 1 {
		t.Errorf("status %+v, want the relabelled child completed", got)
	}
}

// Of several children of one image the oldest stays; the others go.
func TestDuplicateChildrenKeepTheOldest(t *testing.T) {
	listJob := newListJob("list", []string{"nginx"})
	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	listJob.Labels = map[string]string{hashLabel: hash}
	oldest := newChildOf(listJob, "list-b", "nginx", hash, t0)
	younger := newChildOf(listJob, "list-a", "nginx", hash, t0.Add(time.Second))
	sameAge := newChildOf(listJob, "list-c", "nginx", hash, t0)
	f := newFixture(t, listJob, oldest, younger, sameAge)
	f.sync("list")

	var deleted []string
	for _, a := range f.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
		}
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, []string{"list-a", "list-c"}) {
		t.Errorf("deleted %v, want [list-a list-c]", deleted)
	}
	if n := f.countActions("create", "imagepulljobs"); n != 0 {
		t.Errorf("%d creates, want none", n)
	}
}

// Children of other owners, of a list job of the same name but another UID, and children
// being deleted are not this list job's.
func TestIgnoresOtherObjects(t *testing.T) {
	listJob := newListJob("list", []string{"nginx"})
	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	listJob.Labels = map[string]string{hashLabel: hash}
	stale := newListJob("list", []string{"nginx"})
	stale.UID = "uid-old"
	orphanOfOld := newChildOf(stale, "list-old", "nginx", hash, t0)
	foreign := newChildOf(listJob, "foreign", "nginx", hash, t0)
	foreign.OwnerReferences[0].APIVersion = "example.com/v1"
	foreign.OwnerReferences[0].UID = listJob.UID
	deleting := newChildOf(listJob, "deleting", "nginx", hash, t0)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	deleting.Finalizers = []string{appsv1beta1.ImagePullJobProtectionFinalizer}
	f := newFixture(t, listJob, orphanOfOld, foreign, deleting)
	f.sync("list")
	if got := f.actions(); !slices.Contains(got, "create imagepulljobs") || slices.Contains(got, "delete imagepulljobs") {
		t.Errorf("writes %v, want a create and no delete", got)
	}
}

func TestCompletesThenDeletedAfterTTL(t *testing.T) {
	f := newFixture(t, newListJob("list", images3, withTTL(30)))
	f.sync("list")
	for _, image := range images3 {
		f.setChildStatus(image, startedStatus(2, 0, 2, 0))
	}
	f.clock.Step(time.Minute)
	f.sync("list")
	status := f.listJob("list").Status
	if status.Completed != 3 || status.Succeeded != 3 || status.CompletionTime == nil || !status.CompletionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Fatalf("status %+v, want 3 completed and succeeded, completed at %v", status, t0.Add(time.Minute))
	}

	f.queue.Reset()
	f.client.ClearActions()
	f.clock.Step(10 * time.Second)
	f.sync("list")
	if got := f.actions(); len(got) != 0 {
		t.Errorf("writes %v before the ttl passed, want none", got)
	}
	if d := f.queue.Delayed(); !slices.Contains(d, queuetest.Delayed{Key: "ns/list", Delay: 20 * time.Second}) {
		t.Errorf("delayed %v, want ns/list after the remaining 20s", d)
	}

	f.clock.Step(20 * time.Second)
	f.sync("list")
	if !f.listJobGone("list") {
		t.Fatal("the list job is still there after its ttl")
	}
	for _, a := range f.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetResource().Resource == "imagelistpulljobs" {
			if ptr.Deref(d.GetDeleteOptions().PropagationPolicy, "") != metav1.DeletePropagationBackground {
				t.Errorf("deleted with %+v, want background propagation so the children go too", d.GetDeleteOptions())
			}
		}
	}
}

// A completed list job manages no children any more.
func TestCompletedListJobManagesNothing(t *testing.T) {
	listJob := newListJob("list", images3)
	listJob.Status = appsv1beta1.ImageListPullJobStatus{Desired: 3, Completed: 3, StartTime: &metav1.Time{Time: t0}, CompletionTime: &metav1.Time{Time: t0}}
	f := newFixture(t, listJob)
	f.sync("list")
	if got := f.actions(); len(got) != 0 {
		t.Errorf("writes %v, want none", got)
	}
}

func TestNeverCompletes(t *testing.T) {
	f := newFixture(t, newListJob("list", []string{"nginx"}, withNever()))
	f.sync("list")
	f.setChildStatus("nginx", startedStatus(2, 0, 2, 0))
	f.sync("list")
	if status := f.listJob("list").Status; status.Completed != 1 || status.CompletionTime != nil {
		t.Errorf("status %+v, want 1 completed and no completion time", status)
	}
}

func TestGoneOrDeletingListJob(t *testing.T) {
	f := newFixture(t)
	f.c.expectations.ExpectCreations(f.ctx, "ns/gone", 2)
	f.sync("gone")
	if _, _, exists := f.c.expectations.Get("ns/gone"); exists {
		t.Error("expectations of a list job that is gone are kept")
	}

	deleting := newListJob("list", images3)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	deleting.Finalizers = []string{"example.com/hold"}
	f.add(deleting)
	f.sync("list")
	if got := f.actions(); len(got) != 0 {
		t.Errorf("writes %v for a list job being deleted, want none", got)
	}
}

// Creates go in doubling batches and stop at the first failing batch; the children not
// created are no longer expected.
func TestCreatesStopAtAFailingBatch(t *testing.T) {
	images := []string{"a", "b", "c", "d", "e", "f", "g"}
	f := newFixture(t, newListJob("list", images))
	f.failing("create", "imagepulljobs", apierrors.NewForbidden(schema.GroupResource{Group: "apps.kruise.io", Resource: "imagepulljobs"}, "", errors.New("quota")),
		func(a clienttesting.Action) bool {
			return a.(clienttesting.CreateAction).GetObject().(*appsv1beta1.ImagePullJob).Spec.Image == "b"
		})
	if err := f.c.syncListJob(f.ctx, "ns/list"); !apierrors.IsForbidden(err) {
		t.Fatalf("sync returned %v, want the create failure", err)
	}
	// Batches of 1 (a) and 2 (b, c); b fails, so d..g are never tried.
	if n := f.countActions("create", "imagepulljobs"); n != 3 {
		t.Errorf("%d creates, want 3 (batches of 1 and 2)", n)
	}
	events := f.events()
	if !slices.Contains(events, "Normal SuccessfulCreate Create 2 ImagePullJob") || !hasEvent(events, "Warning FailedCreate Error creating:") {
		t.Errorf("events %q, want 2 created and a FailedCreate", events)
	}
	add, _, _ := f.c.expectations.Get("ns/list")
	if add != 2 {
		t.Errorf("expecting %d creations, want the 2 that happened", add)
	}
}

// A name held by an object the list job does not control gets the child a generated name;
// a name held by the child itself (the cache was behind) is no error.
func TestTakenNames(t *testing.T) {
	listJob := newListJob("list", []string{"nginx", "redis"})
	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	squatter := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: childName("list", "nginx", hash)},
		Spec: appsv1beta1.ImagePullJobSpec{Image: "busybox"}}
	f := newFixture(t, listJob, squatter)
	generated := 0
	f.client.PrependReactor("create", "imagepulljobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		job := action.(clienttesting.CreateAction).GetObject().(*appsv1beta1.ImagePullJob)
		if job.Name == "" && job.GenerateName != "" {
			generated++
			job.Name = job.GenerateName + "x7k2q"
		}
		return false, nil, nil
	})
	// The child of redis exists, unseen by the cache.
	_, err := f.client.AppsV1beta1().ImagePullJobs(testNamespace).Create(f.ctx, newChild(listJob, "redis", hash), metav1.CreateOptions{})
	f.must(err)
	if err := f.c.syncListJob(f.ctx, "ns/list"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	f.observe()
	children := f.children()
	if child := children["nginx"]; child == nil || child.Name != "list-x7k2q" || generated != 1 {
		t.Errorf("child of nginx %v (generated %d), want one named by the API server", child, generated)
	}
	if child := children["redis"]; child == nil || child.Name != childName("list", "redis", hash) {
		t.Errorf("child of redis %v, want the one that was there", child)
	}
}

func TestMaxActiveImages(t *testing.T) {
	f := newFixture(t, newListJob("list", images3, withAnnotation(MaxActiveImagesAnnotation, "2")))
	f.sync("list")
	if got := len(f.children()); got != 2 {
		t.Fatalf("%d children, want 2 under the limit", got)
	}
	f.deliverChildAdds()
	f.setChildStatus(images3[0], startedStatus(2, 1, 1, 0))
	f.sync("list")
	if got := len(f.children()); got != 2 {
		t.Fatalf("%d children with 2 running, want 2", got)
	}
	f.setChildStatus(images3[0], startedStatus(2, 0, 1, 1))
	f.sync("list")
	if _, ok := f.children()[images3[2]]; !ok {
		t.Errorf("children %v, want the third image's once the first completed", f.children())
	}

	// An invalid value limits nothing.
	g := newFixture(t, newListJob("list", images3, withAnnotation(MaxActiveImagesAnnotation, "0")))
	g.sync("list")
	if got := len(g.children()); got != 3 {
		t.Errorf("%d children with an invalid limit, want 3", got)
	}
}

func TestFailedDelete(t *testing.T) {
	listJob := newListJob("list", []string{"nginx"})
	hash := templateHash(&listJob.Spec.ImagePullJobTemplate)
	listJob.Labels = map[string]string{hashLabel: hash}
	f := newFixture(t, listJob, newChildOf(listJob, "list-old", "redis", hash, t0))
	f.failing("delete", "imagepulljobs", apierrors.NewInternalError(errors.New("etcd is away")), nil)
	if err := f.c.syncListJob(f.ctx, "ns/list"); err == nil {
		t.Fatal("sync succeeded, want the delete failure")
	}
	if events := f.events(); !hasEvent(events, "Warning FailedDelete Error deleting:") {
		t.Errorf("events %q, want a FailedDelete", events)
	}
	if _, del, _ := f.c.expectations.Get("ns/list"); del != 0 {
		t.Errorf("expecting %d deletions, want none after the delete failed", del)
	}
}

// The list job is labelled with a merge patch, not an update.
func TestLabelsListJobWithMergePatch(t *testing.T) {
	f := newFixture(t, newListJob("list", []string{"nginx"}))
	f.sync("list")
	for _, a := range f.client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetResource().Resource == "imagelistpulljobs" {
			if p.GetPatchType() != "application/merge-patch+json" {
				t.Errorf("patch type %s, want a merge patch", p.GetPatchType())
			}
			return
		}
	}
	t.Errorf("writes %v, want a patch of the list job", f.actions())
}
