package deployment

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Scenario 19 (e2e "deployment should delete old replica sets"): a Deployment adopts an
// existing ReplicaSet with another template and, with revisionHistoryLimit 0, deletes it
// once its rollout is complete.
func TestDeploymentDeletesOldReplicaSets(t *testing.T) {
	e := setup(t, "")
	e.startPodReadier(nil)
	labels := map[string]string{"name": "cleanup-pod", "pod": "httpd"}

	orphan := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "test-cleanup-controller", Labels: copyLabels(labels)},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyLabels(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "httpd", Image: "httpd"}}},
			},
		},
	}
	orphan, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Create(e.Ctx, orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = framework.WaitFor(e.Ctx, waitTimeout, "the ReplicaSet's pod to be available", func(ctx context.Context) (bool, error) {
		rs, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, orphan.Name, metav1.GetOptions{})
		return err == nil && rs.Status.AvailableReplicas == 1, err
	})
	if err != nil {
		t.Fatal(err)
	}
	rses := startTracker(e, "ReplicaSets", replicaSetsListWatch(e), nil)

	const name = "test-cleanup-deployment"
	d := newDeployment(e.Namespace, name, 1)
	d.Spec.Selector.MatchLabels = copyLabels(labels)
	d.Spec.Template.Labels = copyLabels(labels)
	d.Spec.Template.Spec.Containers[0].Image = "agnhost"
	d.Spec.RevisionHistoryLimit = ptr.To[int32](0)
	d = e.deployments().Create(e.t, d)

	d, newRS := e.waitForComplete(name)
	err = framework.WaitFor(e.Ctx, waitTimeout, "the old ReplicaSet to be deleted", func(ctx context.Context) (bool, error) {
		_, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, orphan.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		all, _ := e.allReplicaSets(e.Ctx)
		t.Fatalf("%v\nReplicaSets:\n%s", err, describeReplicaSets(all))
	}
	if !rses.Saw(func(rs *appsv1.ReplicaSet) bool {
		ref := metav1.GetControllerOf(rs)
		return rs.UID == orphan.UID && ref != nil && ref.UID == d.UID
	}) {
		t.Errorf("ReplicaSet %s was deleted without being seen adopted by the Deployment", orphan.Name)
	}
	all, err := e.allReplicaSets(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].UID != newRS.UID {
		t.Errorf("want only the new ReplicaSet %s left:\n%s", newRS.Name, describeReplicaSets(all))
	}
	for _, pod := range e.GetPods(e.t, nil) {
		if podImage(&pod) == "httpd" && podutil.IsPodActive(&pod) {
			t.Errorf("pod %s of the deleted ReplicaSet is still active", pod.Name)
		}
	}
}

// Scenario 20 (e2e "deployment reaping should cascade to its replica sets and pods"):
// deleting a Deployment removes its ReplicaSets and pods, with the garbage collector
// running.
func TestDeploymentDeletionCascades(t *testing.T) {
	e := setup(t, "")
	framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: garbageCollectorControllerID})
	e.startPodReadier(nil)
	const name = "test-deployment-reaping"
	e.deployments().Create(e.t, newDeployment(e.Namespace, name, 2))
	e.waitForComplete(name)

	if err := e.Client.AppsV1().Deployments(e.Namespace).Delete(e.Ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the Deployment: %v", err)
	}
	var left string
	err := framework.WaitFor(e.Ctx, waitTimeout, "the Deployment, its ReplicaSets and its pods to be gone", func(ctx context.Context) (bool, error) {
		_, err := e.Client.AppsV1().Deployments(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			left = "the Deployment"
			return false, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		rses, err := e.allReplicaSets(ctx)
		if err != nil {
			return false, err
		}
		pods, err := e.ListPods(ctx, nil)
		if err != nil {
			return false, err
		}
		left = describeReplicaSets(rses)
		for _, pod := range pods {
			left += "  pod " + pod.Name + "\n"
		}
		return len(rses) == 0 && len(pods) == 0, nil
	})
	if err != nil {
		t.Fatalf("%v; left:\n%s", err, left)
	}
}
