package advanceddaemonset

import (
	"context"
	"reflect"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// preDownloadGate makes the controller pull a new revision's images ahead of the rollout.
	preDownloadGate = "PreDownloadImageForDaemonSetUpdate"
	// imagePullJobController runs beside the DaemonSet controller so that the jobs are
	// admitted (and given their deletion-protection finalizer) and released on deletion as
	// in a real installation.
	imagePullJobController = "imagepulljob-controller"

	eventCreatedImagePullJob = "CreatedImagePullJob"
)

// With the gate on, changing the image of a DaemonSet whose partition holds a pod back
// creates an ImagePullJob for the new image over the nodes of the pods still old, owned
// by the DaemonSet, and labels the new revision; the job goes once every pod is updated.
func TestPreDownloadCreatesImagePullJobUntilTheRolloutCompletes(t *testing.T) {
	e := setup(t)
	framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Controllers:  controllerUnderTest + "," + imagePullJobController,
		Webhooks:     true,
		FeatureGates: preDownloadGate + "=true",
	})
	// Registered after the manager started, so it runs while the manager and its
	// ImagePullJob webhook still answer.
	t.Cleanup(func() { e.removeImagePullJobs(t) })
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b", "c")
	ds := newDS("agent")
	rollingUpdate(ds).Partition = ptr.To(intstr.FromInt32(1))
	ds, _ = e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	h1 := ds.Status.DaemonSetHash
	if got := e.ImagePullJobNames(t); len(got) != 0 {
		t.Errorf("ImagePullJobs %v after the DaemonSet's first rollout, want none", got)
	}

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, h1)
	revisionName := ds.Name + "-" + h2
	jobName := revisionName + "-main"
	job := e.WaitForImagePullJob(t, jobName)
	if job.Spec.Image != image2 {
		t.Errorf("job pulls %q, want %q", job.Spec.Image, image2)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != ds.UID || ref.Kind != kindDaemonSet || ref.APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("job controller ref = %+v, want DaemonSet %s", ref, ds.UID)
	}
	wantSelector := metav1.LabelSelector{
		MatchLabels: map[string]string{"app": ds.Name},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: appsv1alpha1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn,
			Values: []string{revisionName, h2},
		}},
	}
	if job.Spec.PodSelector == nil || !reflect.DeepEqual(job.Spec.PodSelector.LabelSelector, wantSelector) {
		t.Errorf("job podSelector = %+v, want %+v", job.Spec.PodSelector, wantSelector)
	}
	err := framework.WaitFor(e.Ctx, waitTimeout, "revision "+revisionName+" labelled "+appsv1alpha1.ImagePreDownloadCreatedKey, func(context.Context) (bool, error) {
		rev, ok := e.revisions(t)[h2]
		return ok && rev.Labels[appsv1alpha1.ImagePreDownloadCreatedKey] == "true", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = framework.WaitFor(e.Ctx, waitTimeout, "a "+eventCreatedImagePullJob+" event", func(context.Context) (bool, error) {
		return len(e.dsEvents(t, ds.Name, eventCreatedImagePullJob)) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The partition keeps the smallest node old: the rollout is not complete, the job stays.
	e.waitForHashes(t, ds, map[string]string{nodes[0]: h1, nodes[1]: h2, nodes[2]: h2})
	e.WaitForNoWrites(t, idlePeriod)
	if _, err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Get(e.Ctx, jobName, metav1.GetOptions{}); err != nil {
		t.Fatalf("ImagePullJob %s while a pod is still old: %v", jobName, err)
	}

	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) { rollingUpdate(ds).Partition = ptr.To(intstr.FromInt32(0)) })
	e.waitForSettled(t, ds.Name, nodes)
	err = framework.WaitFor(e.Ctx, waitTimeout, "ImagePullJob "+jobName+" to be deleted", func(ctx context.Context) (bool, error) {
		_, err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Get(ctx, jobName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(e.dsEvents(t, ds.Name, eventCreatedImagePullJob)); got != 1 {
		t.Errorf("%d %s events, want 1 (one changed container, one revision)", got, eventCreatedImagePullJob)
	}
}

// removeImagePullJobs deletes the namespace's ImagePullJobs, finalizers included: without a
// garbage collector they would outlive the test's DaemonSet.
func (e *testEnv) removeImagePullJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobs := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace)
	if err := jobs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting ImagePullJobs: %v", err)
	}
	list, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: listing ImagePullJobs: %v", err)
		return
	}
	for _, job := range list.Items {
		if len(job.Finalizers) > 0 {
			_, err := jobs.Patch(ctx, job.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: releasing ImagePullJob %s: %v", job.Name, err)
			}
		}
	}
}
