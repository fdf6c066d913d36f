package imagelistpulljob

import (
	"errors"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

func TestComputeStatus(t *testing.T) {
	listJob := newListJob("list", []string{"running", "failed", "done", "unstarted", "missing", "partial"})
	child := func(image string, status appsv1beta1.ImagePullJobStatus) *appsv1beta1.ImagePullJob {
		c := newChildOf(listJob, "child-"+image, image, "h", t0)
		c.Status = status
		return c
	}
	current := map[string]*appsv1beta1.ImagePullJob{
		"running":   child("running", startedStatus(3, 1, 1, 0)),
		"failed":    child("failed", startedStatus(2, 0, 1, 1)),
		"done":      child("done", startedStatus(2, 0, 2, 0)),
		"unstarted": child("unstarted", appsv1beta1.ImagePullJobStatus{Desired: 0}),
		"partial":   child("partial", startedStatus(3, 1, 0, 1)),
	}
	now := t0.Add(time.Minute)
	got := computeStatus(listJob, current, now)
	want := appsv1beta1.ImageListPullJobStatus{
		StartTime: &metav1.Time{Time: now},
		Desired:   6, Active: 2, Completed: 2, Succeeded: 1,
		FailedImageStatuses: []appsv1beta1.FailedImageStatus{
			{ImagePullJob: "child-failed", Name: "failed", Message: "Please check for details which nodes failed by 'kubectl get ImagePullJob child-failed'."},
			{ImagePullJob: "child-partial", Name: "partial", Message: "Please check for details which nodes failed by 'kubectl get ImagePullJob child-partial'."},
		},
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("status\n%+v, want\n%+v", got, want)
	}

	// The start time stays; every image completed completes the list job, unless Never.
	listJob.Spec.Images = []string{"failed", "done"}
	listJob.Status.StartTime = &metav1.Time{Time: t0}
	got = computeStatus(listJob, current, now)
	if !got.StartTime.Time.Equal(t0) || got.CompletionTime == nil || !got.CompletionTime.Time.Equal(now) || got.Completed != 2 {
		t.Errorf("status %+v, want started at t0 and completed now", got)
	}
	listJob.Spec.CompletionPolicy.Type = appsv1beta1.Never
	if got = computeStatus(listJob, current, now); got.CompletionTime != nil {
		t.Errorf("a Never list job completed: %+v", got)
	}
}

// failedImageStatuses follow spec.images, not the children's order.
func TestFailedImagesInSpecOrder(t *testing.T) {
	images := []string{"z", "m", "a", "q"}
	listJob := newListJob("list", images)
	current := map[string]*appsv1beta1.ImagePullJob{}
	for _, image := range images {
		c := newChildOf(listJob, "child-"+image, image, "h", t0)
		c.Status = startedStatus(1, 0, 0, 1)
		current[image] = c
	}
	for range 5 {
		got := computeStatus(listJob, current, t0).FailedImageStatuses
		for i, image := range images {
			if got[i].Name != image {
				t.Fatalf("failed images %+v, want the order %v", got, images)
			}
		}
	}
}

func TestUpdateStatusOnlyWhenChangedRetryingConflicts(t *testing.T) {
	listJob := newListJob("list", []string{"nginx"})
	f := newFixture(t, listJob)
	status := computeStatus(listJob, nil, t0)

	conflicts := 1
	f.client.PrependReactor("update", "imagelistpulljobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" && conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "imagelistpulljobs"}, "list", errors.New("modified"))
		}
		return false, nil, nil
	})
	if err := f.c.updateStatus(f.ctx, listJob, status); err != nil {
		t.Fatalf("updateStatus: %v", err)
	}
	if n := f.countActions("update", "imagelistpulljobs/status"); n != 2 {
		t.Errorf("%d status updates, want 2 (one conflict, one retry)", n)
	}
	if got := f.listJob("list").Status; !apiequality.Semantic.DeepEqual(got, status) {
		t.Errorf("written status %+v, want %+v", got, status)
	}

	f.client.ClearActions()
	if err := f.c.updateStatus(f.ctx, f.listJob("list"), status); err != nil {
		t.Fatal(err)
	}
	if got := f.actions(); len(got) != 0 {
		t.Errorf("writes %v for an unchanged status, want none", got)
	}
}

// The log line of a status write names the completion time only when there is one: a nil
// time printed as a value made the log say "<panic: runtime error: ...>".
func TestStatusLogWithoutCompletionTime(t *testing.T) {
	listJob := newListJob("list", []string{"nginx"})
	f := newFixture(t, listJob)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	status := computeStatus(listJob, nil, t0)
	status.Desired = 1
	if err := f.c.updateStatus(klog.NewContext(f.ctx, logger), listJob, status); err != nil {
		t.Fatal(err)
	}
	logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	if !strings.Contains(logged, "Updated the ImageListPullJob's status") || strings.Contains(logged, "panic") {
		t.Errorf("log = %q, want the status write logged without a panic", logged)
	}
}
