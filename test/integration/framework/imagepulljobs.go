package framework

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// WaitForImagePullJob waits until the ImagePullJob name exists in the test's namespace, as
// a workload's image pre-download makes it, and returns it.
func (e *Env) WaitForImagePullJob(t testing.TB, name string) *appsv1beta1.ImagePullJob {
	t.Helper()
	var job *appsv1beta1.ImagePullJob
	e.Await(t, "ImagePullJob "+name, func(ctx context.Context) (bool, error) {
		got, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		job = got
		return true, nil
	}, func() string { return fmt.Sprintf("jobs in the namespace: %v", e.ImagePullJobNames(t)) })
	return job
}

// ImagePullJobNames returns the names of the ImagePullJobs in the test's namespace.
func (e *Env) ImagePullJobNames(t testing.TB) []string {
	t.Helper()
	list, err := e.Bosun.AppsV1beta1().ImagePullJobs(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing ImagePullJobs: %v", err)
	}
	var names []string
	for _, job := range list.Items {
		names = append(names, job.Name)
	}
	return names
}
