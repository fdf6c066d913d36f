package cloneset

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const eventCreatedImagePullJob = "CreatedImagePullJob"

// With gate PreDownloadImageForInPlaceUpdate on (featureGatesUnderTest), an image change of
// a CloneSet of five pods updated in place in batches (partition 1) creates, before any pod
// is updated, an ImagePullJob for the new image over the pods still old, controlled by the
// CloneSet and with the parallelism of its in-place strategy, and labels the revision
// created; the job stays while the partition holds a pod back, and goes once the update
// revision is the current one. A CloneSet of three pods gets no job: its new revision is
// labelled ignored.
func testPreDownload(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	web := newCloneSet("web", 5)
	rolling(web).PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
	rolling(web).Partition = intOrStr(1)
	web = e.cloneSets().Create(t, web)
	small := newCloneSet("small", 3)
	rolling(small).PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
	e.cloneSets().Create(t, small)
	settled, _ := e.waitForSettled(t, "web")
	smallSettled, _ := e.waitForSettled(t, "small")
	e.settle(t)
	if jobs := e.ImagePullJobNames(t); len(jobs) != 0 {
		t.Errorf("ImagePullJobs %v after the first rollouts, want none", jobs)
	}

	changed := time.Now()
	e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = image2
		cs.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism: ptr.To(intstr.FromInt32(2)),
		}
	})
	e.setImage(t, "small", image2)
	revision := e.waitForNewRevision(t, "web", settled.Status.UpdateRevision).Status.UpdateRevision
	hash := revision[strings.LastIndex(revision, "-")+1:]
	job := e.WaitForImagePullJob(t, revision+"-web")
	if job.Spec.Image != image2 || job.Spec.Parallelism == nil || job.Spec.Parallelism.IntValue() != 2 {
		t.Errorf("job pulls %q with parallelism %v, want %q with 2", job.Spec.Image, job.Spec.Parallelism, image2)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != web.UID || ref.Kind != "CloneSet" || ref.APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("job controller ref = %+v, want CloneSet %s", ref, web.UID)
	}
	wantSelector := metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: appsv1beta1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{revision, hash},
		}},
	}
	if job.Spec.PodSelector == nil || !reflect.DeepEqual(job.Spec.PodSelector.LabelSelector, wantSelector) {
		t.Errorf("job podSelector = %+v, want %+v", job.Spec.PodSelector, wantSelector)
	}
	if want := map[string]string{"app": "web", "controller.kubernetes.io/hash": hash}; !maps.Equal(job.Labels, want) {
		t.Errorf("job labels %v, want %v", job.Labels, want)
	}
	e.waitForRevisionLabel(t, revision, appsv1beta1.ImagePreDownloadCreatedKey)
	e.waitForRevisionLabel(t, e.waitForNewRevision(t, "small", smallSettled.Status.UpdateRevision).Status.UpdateRevision,
		appsv1beta1.ImagePreDownloadIgnoredKey)

	// The partition keeps one pod old: the rollout is not complete, the job stays.
	e.cloneSets().WaitFor(t, "web", "four pods updated and available", func(cs *appsv1beta1.CloneSet) bool {
		s := cs.Status
		return s.ObservedGeneration == cs.Generation && s.UpdatedReplicas == 4 && s.UpdatedAvailableReplicas == 4 && s.AvailableReplicas == 5
	})
	e.settle(t)
	if _, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).Get(e.Ctx, job.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("ImagePullJob %s while a pod is still old: %v", job.Name, err)
	}
	if jobs := e.ImagePullJobNames(t); len(jobs) != 1 {
		t.Errorf("ImagePullJobs %v, want only %s (the small CloneSet gets none)", jobs, job.Name)
	}
	// The job came first: no pod of the CloneSet was written to after the change until it
	// existed.
	jobCreates := e.requestsSince(t, changed, "imagepulljobs", "create")
	podWrites := slices.DeleteFunc(e.requestsSince(t, changed, "pods", "update", "patch"), func(r framework.Request) bool {
		return !strings.HasPrefix(r.Name, "web-")
	})
	if len(jobCreates) != 1 || len(podWrites) == 0 || !allAfter(podWrites, jobCreates) {
		t.Errorf("job creates %s; pod writes %s; want one create, completed before the first pod write",
			describeRequests(jobCreates), describeRequests(podWrites))
	}

	e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) { cs.Spec.UpdateStrategy.RollingUpdate.Partition = intOrStr(0) })
	e.waitForSettled(t, "web")
	err := framework.WaitFor(e.Ctx, waitTimeout, "ImagePullJob "+job.Name+" to be deleted", func(ctx context.Context) (bool, error) {
		_, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(e.csEvents(t, "web", eventCreatedImagePullJob)); got != 1 {
		t.Errorf("%d %s events, want 1 (one changed container, one revision)", got, eventCreatedImagePullJob)
	}
	if got := len(e.csEvents(t, "small", eventCreatedImagePullJob)); got != 0 {
		t.Errorf("%d %s events on the small CloneSet, want none", got, eventCreatedImagePullJob)
	}
}

// waitForRevisionLabel waits until the ControllerRevision name carries label key "true".
func (e *testEnv) waitForRevisionLabel(t *testing.T, name, key string) {
	t.Helper()
	var labels map[string]string
	err := framework.WaitFor(e.Ctx, waitTimeout, "revision "+name+" labelled "+key, func(ctx context.Context) (bool, error) {
		rev, err := e.Client.AppsV1().ControllerRevisions(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		labels = rev.Labels
		return rev.Labels[key] == "true", nil
	})
	if err != nil {
		t.Fatalf("%v; its labels: %v", err, labels)
	}
}

// requestsSince returns the successful requests with one of verbs on the namespace's
// resource (not its subresources) that arrived after since, by arrival.
func (e *testEnv) requestsSince(t *testing.T, since time.Time, resource string, verbs ...string) []framework.Request {
	t.Helper()
	reqs, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.Namespace && ev.ObjectRef.Resource == resource &&
			ev.ObjectRef.Subresource == "" && ev.RequestReceivedTimestamp.After(since) &&
			ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300 && slices.Contains(verbs, ev.Verb)
	})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}
