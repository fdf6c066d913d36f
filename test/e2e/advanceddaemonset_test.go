package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// daemonSetTimeout bounds a pod's start or replacement on the node: pull from the loopback
// registry, sandbox, probes.
const daemonSetTimeout = 2 * time.Minute

func bosunClientset(t *testing.T) bosunclientset.Interface {
	t.Helper()
	client, err := bosunclientset.NewForConfig(requireCluster(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// advancedDaemonSet is an Advanced DaemonSet of the webserver as a user writes it: no
// update strategy fields but rollingUpdateType, the rest left to bosun's defaulting.
func advancedDaemonSet(name, version string, rollingUpdateType appsv1alpha1.RollingUpdateType) *appsv1alpha1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: webserverPod(version, labels),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{Type: rollingUpdateType},
			},
		},
	}
}

// The node gets exactly one Running pod, which an image change replaces with one running
// the new image.
func TestAdvancedDaemonSetRunsAPodOnTheNodeAndRollsItsImage(t *testing.T) {
	c := requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	bosun := bosunClientset(t)

	ds, err := bosun.AppsV1alpha1().DaemonSets(ns).Create(ctx, advancedDaemonSet("agent", "v1", appsv1alpha1.StandardRollingUpdateType), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1alpha1.RollingUpdateDaemonSetStrategyType {
		t.Errorf("the DaemonSet was not defaulted by bosun's webhook: updateStrategy %+v", ds.Spec.UpdateStrategy)
	}
	first := waitForDaemonPod(t, ns, "agent", "v1", "")
	if first.Spec.NodeName != c.NodeName() {
		t.Errorf("pod %s runs on %q, want the node %q", first.Name, first.Spec.NodeName, c.NodeName())
	}

	setDaemonSetImage(t, bosun, ns, "agent", "v2")
	second := waitForDaemonPod(t, ns, "agent", "v2", "")
	if second.UID == first.UID {
		t.Errorf("a Standard rolling update kept pod %s (%s); it must replace it", first.Name, first.UID)
	}
}

// With InPlaceIfPossible an image change restarts the container inside the same pod: the
// kubelet sees the new image in the pod spec, kills the old container and starts the new one.
func TestAdvancedDaemonSetUpdatesTheImageInPlace(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	bosun := bosunClientset(t)
	client := clientset(t)

	if _, err := bosun.AppsV1alpha1().DaemonSets(ns).Create(ctx, advancedDaemonSet("agent", "v1", appsv1alpha1.InplaceRollingUpdateType), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitForDaemonPod(t, ns, "agent", "v1", "")
	oldContainerID := before.Status.ContainerStatuses[0].ContainerID

	setDaemonSetImage(t, bosun, ns, "agent", "v2")
	after := waitForDaemonPod(t, ns, "agent", "v2", before.UID)
	status := after.Status.ContainerStatuses[0]
	if status.ContainerID == oldContainerID {
		t.Errorf("container %s still runs: the image was not changed in place", oldContainerID)
	}
	if !hasCondition(after, appsv1alpha1.InPlaceUpdateReady) {
		t.Errorf("pod %s lacks condition %s=True after the in-place update: %+v", after.Name, appsv1alpha1.InPlaceUpdateReady, after.Status.Conditions)
	}
	if after.Annotations[appsv1alpha1.InPlaceUpdateStateKey] == "" {
		t.Errorf("pod %s has no %s annotation", after.Name, appsv1alpha1.InPlaceUpdateStateKey)
	}
	pods, err := listPods(ctx, client, ns, "app=agent")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Errorf("%d pods after the in-place update, want the one", len(pods))
	}
}

// A bad object is refused by bosun's validating webhook with a message that names the field.
func TestAdvancedDaemonSetBadObjectIsRefusedNamingTheField(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	ds := advancedDaemonSet("bad", "v1", appsv1alpha1.StandardRollingUpdateType)
	ds.Spec.Template.Labels = map[string]string{"app": "other"}
	_, err := bosunClientset(t).AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.metadata.labels") {
		t.Fatalf("creating a DaemonSet whose selector does not match its template: %v, want 422 Invalid naming spec.template.metadata.labels", err)
	}
}

// waitForDaemonPod waits until the DaemonSet's only pod on the node runs image version,
// is Ready and answers /version with it; with uid set, it must be that pod. The
// DaemonSet's status must agree: one pod desired, updated and available.
func waitForDaemonPod(t *testing.T, namespace, name, version string, uid types.UID) *corev1.Pod {
	t.Helper()
	client := clientset(t)
	bosun := bosunClientset(t)
	var found *corev1.Pod
	waitFor(t, daemonSetTimeout, fmt.Sprintf("DaemonSet %s to run %s", name, version), func(ctx context.Context) (bool, error) {
		pods, err := listPods(ctx, client, namespace, "app="+name)
		if err != nil {
			return false, err
		}
		var active []corev1.Pod
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				active = append(active, p)
			}
		}
		if len(active) != 1 || len(active[0].Status.ContainerStatuses) != 1 {
			return false, nil
		}
		pod := &active[0]
		status := pod.Status.ContainerStatuses[0]
		if (uid != "" && pod.UID != uid) || !podReady(pod) || status.State.Running == nil || status.Image != cluster.WebserverImage(version) {
			return false, nil
		}
		if served, err := webserverVersion(ctx, client, pod); err != nil || served != version {
			return false, nil
		}
		ds, err := bosun.AppsV1alpha1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := ds.Status
		if s.ObservedGeneration < ds.Generation || s.DesiredNumberScheduled != 1 || s.UpdatedNumberScheduled != 1 || s.NumberAvailable != 1 {
			return false, nil
		}
		found = pod
		return true, nil
	})
	return found
}

func setDaemonSetImage(t *testing.T, bosun bosunclientset.Interface, namespace, name, version string) {
	t.Helper()
	ctx := testContext(t)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := bosun.AppsV1alpha1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds.Spec.Template.Spec.Containers[0].Image = cluster.WebserverImage(version)
		_, err = bosun.AppsV1alpha1().DaemonSets(namespace).Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting DaemonSet %s to %s: %v", name, version, err)
	}
}

func hasCondition(pod *corev1.Pod, conditionType corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == conditionType {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
