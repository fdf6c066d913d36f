package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// A rolling update on a real node: new pods become Ready only when the kubelet's readiness
// probe passes (the new version holds /ready for a few seconds), and at no moment may fewer
// than replicas-maxUnavailable pods serve, nor more than replicas+maxSurge exist.
func TestDeploymentRollingUpdateKeepsMaxUnavailable(t *testing.T) {
	client := clientset(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	const replicas, maxUnavailable, maxSurge = 4, 1, 1
	labels := map[string]string{"app": "web"}

	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
					MaxSurge:       ptr.To(intstr.FromInt32(maxSurge)),
				},
			},
			Template: webserverPod("v1", labels),
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRollout(t, ns, "web", "v1")

	// Watch every pod change from here on and keep the extremes.
	watcher := watchServingPods(t, ns)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Spec.Template = webserverPod("v2", labels, corev1.EnvVar{Name: "READY_AFTER", Value: "2s"})
		_, err = client.AppsV1().Deployments(ns).Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating the Deployment to v2: %v", err)
	}
	waitForRollout(t, ns, "web", "v2")

	minReady, maxPods := watcher.extremes()
	t.Logf("during the rollout: at least %d pods Ready, at most %d pods", minReady, maxPods)
	if minReady < replicas-maxUnavailable {
		t.Errorf("only %d pods were Ready at one point of the rollout; maxUnavailable %d allows no fewer than %d",
			minReady, maxUnavailable, replicas-maxUnavailable)
	}
	if maxPods > replicas+maxSurge {
		t.Errorf("%d pods existed at one point of the rollout; maxSurge %d allows no more than %d", maxPods, maxSurge, replicas+maxSurge)
	}
	if watcher.changes() == 0 {
		t.Error("no pod change was seen during the rollout: the watch saw nothing")
	}
}

// waitForRollout waits until the Deployment has rolled out completely and every one of its
// pods is Ready and answers /version with version.
func waitForRollout(t *testing.T, namespace, name, version string) {
	t.Helper()
	client := clientset(t)
	waitFor(t, 3*time.Minute, "Deployment "+name+" to roll out "+version, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := *d.Spec.Replicas
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want ||
			d.Status.AvailableReplicas != want || d.Status.Replicas != want {
			return false, nil
		}
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return false, err
		}
		pods, err := listPods(ctx, client, namespace, selector.String())
		if err != nil {
			return false, err
		}
		if int32(len(pods)) != want {
			return false, nil // old pods still terminating
		}
		for i := range pods {
			if !podReady(&pods[i]) {
				return false, nil
			}
			got, err := webserverVersion(ctx, client, &pods[i])
			if err != nil || got != version {
				return false, nil
			}
		}
		return true, nil
	})
}

// servingPods follows a namespace's pods through an informer and records the fewest Ready
// pods and the most pods (not being deleted) seen at once.
type servingPods struct {
	mu                sync.Mutex
	minReady, maxPods int
	seen              int
}

func watchServingPods(t *testing.T, namespace string) *servingPods {
	t.Helper()
	client := clientset(t)
	ctx := testContext(t)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	informer := factory.Core().V1().Pods()
	lister := informer.Lister()
	w := &servingPods{minReady: -1}
	observe := func(any) {
		pods, err := lister.List(labels.Everything())
		if err != nil {
			return
		}
		ready, existing := 0, 0
		for _, pod := range pods {
			if pod.DeletionTimestamp != nil {
				continue
			}
			existing++
			if podReady(pod) {
				ready++
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seen++
		if w.minReady < 0 || ready < w.minReady {
			w.minReady = ready
		}
		w.maxPods = max(w.maxPods, existing)
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: observe,
	}); err != nil {
		t.Fatal(err)
	}
	// Shutdown waits for the informers, so they need a stop channel closed before it (the
	// test context ends only after every cleanup).
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	return w
}

func (w *servingPods) extremes() (minReady, maxPods int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minReady, w.maxPods
}

func (w *servingPods) changes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}
