package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Deleting a Deployment on the real node: bosun's garbage collector (upstream's does not run
// here) deletes its ReplicaSet and pods, and the kubelet then stops their containers. Also
// foreground deletion of a ReplicaSet (it stays, with the foregroundDeletion finalizer,
// until its pods are gone) and orphaning (the pods keep running, without an owner).
func TestCascadingDeletionByBosunsGarbageCollector(t *testing.T) {
	c := requireCluster(t)
	client := clientset(t)
	rt := runtimeService(t)
	ctx := testContext(t)
	ns := newNamespace(t)

	port := c.HealthPort("bosun-controller-manager")
	if port == 0 {
		t.Fatal("the cluster does not say where bosun-controller-manager serves /healthz")
	}
	code, body := framework.GetEndpoint(port, "/healthz?verbose", "")
	if code != http.StatusOK || !strings.Contains(body, "[+]garbage-collector-controller ok") {
		t.Fatalf("bosun-controller-manager does not run its garbage collector: /healthz?verbose = %d\n%s", code, body)
	}

	t.Run("background", func(t *testing.T) {
		labels := map[string]string{"app": "background"}
		createDeployment(t, ns, "background", 3, labels)
		pods, err := listPods(ctx, client, ns, "app=background")
		if err != nil {
			t.Fatal(err)
		}
		if err := client.AppsV1().Deployments(ns).Delete(ctx, "background", metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Minute, "the ReplicaSet, the pods and their containers to be gone", func(ctx context.Context) (bool, error) {
			sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=background"})
			if err != nil || len(sets.Items) > 0 {
				return false, err
			}
			left, err := listPods(ctx, client, ns, "app=background")
			if err != nil || len(left) > 0 {
				return false, err
			}
			for _, pod := range pods {
				running, err := runningContainers(ctx, rt, string(pod.UID))
				if err != nil || len(running) > 0 {
					return false, err
				}
			}
			return true, nil
		})
	})

	t.Run("foreground", func(t *testing.T) {
		labels := map[string]string{"app": "foreground"}
		createDeployment(t, ns, "foreground", 2, labels)
		sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=foreground"})
		if err != nil || len(sets.Items) != 1 {
			t.Fatalf("listing the Deployment's ReplicaSet: %v (%d found)", err, len(sets.Items))
		}
		rsName := sets.Items[0].Name
		// The Deployment goes first, orphaning nothing; the ReplicaSet is then deleted in the
		// foreground.
		if err := client.AppsV1().Deployments(ns).Delete(ctx, "foreground", metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan),
		}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the orphaned ReplicaSet to lose its owner", func(ctx context.Context) (bool, error) {
			rs, err := client.AppsV1().ReplicaSets(ns).Get(ctx, rsName, metav1.GetOptions{})
			return err == nil && len(rs.OwnerReferences) == 0, err
		})
		if err := client.AppsV1().ReplicaSets(ns).Delete(ctx, rsName, metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		}); err != nil {
			t.Fatal(err)
		}
		sawFinalizer := false
		waitFor(t, 2*time.Minute, "the ReplicaSet to go after its pods", func(ctx context.Context) (bool, error) {
			rs, err := client.AppsV1().ReplicaSets(ns).Get(ctx, rsName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				left, err := listPods(ctx, client, ns, "app=foreground")
				if err != nil {
					return false, err
				}
				if len(left) > 0 {
					return false, fmt.Errorf("the ReplicaSet was deleted while %d of its pods remained", len(left))
				}
				return true, nil
			}
			if err != nil {
				return false, err
			}
			for _, f := range rs.Finalizers {
				sawFinalizer = sawFinalizer || f == metav1.FinalizerDeleteDependents
			}
			return false, nil
		})
		if !sawFinalizer {
			t.Log("the ReplicaSet went before a poll saw its foregroundDeletion finalizer")
		}
	})

	t.Run("orphan", func(t *testing.T) {
		labels := map[string]string{"app": "orphan"}
		createDeployment(t, ns, "orphan", 2, labels)
		sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=orphan"})
		if err != nil || len(sets.Items) != 1 {
			t.Fatalf("listing the Deployment's ReplicaSet: %v (%d found)", err, len(sets.Items))
		}
		if err := client.AppsV1().ReplicaSets(ns).Delete(ctx, sets.Items[0].Name, metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan),
		}); err != nil {
			t.Fatal(err)
		}
		// The Deployment makes a new ReplicaSet, which adopts the orphans: same pods, still
		// running, now owned by the new ReplicaSet.
		before, err := listPods(ctx, client, ns, "app=orphan")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Minute, "the orphaned pods to be adopted by the Deployment's new ReplicaSet", func(ctx context.Context) (bool, error) {
			sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=orphan"})
			if err != nil || len(sets.Items) != 1 || sets.Items[0].UID == "" || sets.Items[0].DeletionTimestamp != nil {
				return false, err
			}
			owner := sets.Items[0].UID
			pods, err := listPods(ctx, client, ns, "app=orphan")
			if err != nil || len(pods) != 2 {
				return false, err
			}
			for _, p := range pods {
				ref := metav1.GetControllerOf(&p)
				if ref == nil || ref.UID != owner || !podReady(&p) {
					return false, nil
				}
			}
			return true, nil
		})
		after, err := listPods(ctx, client, ns, "app=orphan")
		if err != nil {
			t.Fatal(err)
		}
		for i := range before {
			found := false
			for j := range after {
				found = found || after[j].UID == before[i].UID
			}
			if !found {
				t.Errorf("pod %s was deleted: orphaning must leave the pods running", before[i].Name)
			}
		}
	})
}

// createDeployment creates a Deployment of the web server and waits until it has rolled
// out.
func createDeployment(t *testing.T, namespace, name string, replicas int32, labels map[string]string) {
	t.Helper()
	client := clientset(t)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: webserverPod("v1", labels),
		},
	}
	if _, err := client.AppsV1().Deployments(namespace).Create(testContext(t), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRollout(t, namespace, name, "v1")
}
