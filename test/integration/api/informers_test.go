package api

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	applyappsv1alpha1 "github.com/bosun-dev/client-go/applyconfiguration/apps/v1alpha1"
	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// TestInformersAndListersSeeEveryKind runs the generated informer factory the way bosun's
// binaries do (with the managedFields-dropping transform) and checks that each lister
// serves the objects, updates and deletions the API server has.
func TestInformersAndListersSeeEveryKind(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Objects that exist before the informers start arrive through the initial list.
	ds, err := client.AppsV1alpha1().DaemonSets(ns).Create(ctx, newDaemonSet(ns, "before-start"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.ManagedFields) == 0 {
		t.Fatal("the API server returned no managedFields; the transform check below would prove nothing")
	}

	factory := bosuninformers.NewSharedInformerFactoryWithOptions(client, 0,
		bosuninformers.WithNamespace(ns), bosuninformers.WithTransform(informers.StripManagedFields))
	apps := factory.Apps().V1alpha1()
	dsLister := apps.DaemonSets().Lister()
	crrLister := apps.ContainerRecreateRequests().Lister()
	ipjLister := apps.ImagePullJobs().Lister()
	pubLister := factory.Policy().V1alpha1().PodUnavailableBudgets().Lister()
	// NodeImages are cluster scoped; a namespaced factory must not be used for them.
	clusterFactory := bosuninformers.NewSharedInformerFactoryWithOptions(client, 0,
		bosuninformers.WithTransform(informers.StripManagedFields))
	niLister := clusterFactory.Apps().V1alpha1().NodeImages().Lister()

	stop := make(chan struct{})
	factory.Start(stop)
	clusterFactory.Start(stop)
	// Shutdown waits for the informers, which stop only once stop is closed.
	defer func() {
		close(stop)
		factory.Shutdown()
		clusterFactory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	for typ, ok := range clusterFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}

	cached, err := dsLister.DaemonSets(ns).Get("before-start")
	if err != nil {
		t.Fatalf("lister after sync: %v", err)
	}
	if cached.ManagedFields != nil {
		t.Errorf("the cache holds managedFields %v; the transform should have dropped them", cached.ManagedFields)
	}
	if cached.Spec.Template.Spec.Containers[0].Image != ds.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("the transform changed more than managedFields: %+v", cached.Spec)
	}

	// Objects created afterwards arrive through the watch.
	if _, err := client.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, newPodUnavailableBudget(ns, "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, newContainerRecreateRequest(ns, "web-0-restart"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AppsV1alpha1().ImagePullJobs(ns).Create(ctx, newImagePullJob(ns, "prefetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeName := ns + "-node"
	if _, err := client.AppsV1alpha1().NodeImages().Create(ctx, newNodeImage(nodeName), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.AppsV1alpha1().NodeImages().Delete(context.Background(), nodeName, metav1.DeleteOptions{})
	})

	waitForLister(ctx, t, "PodUnavailableBudget web", func() bool { _, err := pubLister.PodUnavailableBudgets(ns).Get("web"); return err == nil })
	waitForLister(ctx, t, "ContainerRecreateRequest web-0-restart", func() bool {
		_, err := crrLister.ContainerRecreateRequests(ns).Get("web-0-restart")
		return err == nil
	})
	waitForLister(ctx, t, "ImagePullJob prefetch", func() bool { _, err := ipjLister.ImagePullJobs(ns).Get("prefetch"); return err == nil })
	waitForLister(ctx, t, "NodeImage "+nodeName, func() bool { _, err := niLister.Get(nodeName); return err == nil })

	// Label selection in the lister, as controllers use it.
	selected, err := dsLister.DaemonSets(ns).List(labels.SelectorFromSet(labels.Set{"tier": "node"}))
	if err != nil || len(selected) != 0 {
		t.Fatalf("lister selected %d DaemonSets (err %v) before any was labelled", len(selected), err)
	}
	ds = cached.DeepCopy()
	ds.Labels = map[string]string{"tier": "node"}
	if _, err := client.AppsV1alpha1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForLister(ctx, t, "the labelled DaemonSet", func() bool {
		selected, err := dsLister.DaemonSets(ns).List(labels.SelectorFromSet(labels.Set{"tier": "node"}))
		return err == nil && len(selected) == 1
	})

	if err := client.AppsV1alpha1().DaemonSets(ns).Delete(ctx, "before-start", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForLister(ctx, t, "the DaemonSet's deletion", func() bool {
		_, err := dsLister.DaemonSets(ns).Get("before-start")
		return err != nil
	})
}

// TestServerSideApplyWithApplyConfigurations applies a DaemonSet with the generated apply
// configurations, twice from one field manager, and checks that a second manager's
// conflicting apply is refused.
func TestServerSideApplyWithApplyConfigurations(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	desired := func(image string, maxUnavailable int32) *applyappsv1alpha1.DaemonSetApplyConfiguration {
		return applyappsv1alpha1.DaemonSet("agent", ns).
			WithLabels(map[string]string{"team": "platform"}).
			WithSpec(applyappsv1alpha1.DaemonSetSpec().
				WithSelector(metav1ApplySelector("agent")).
				WithTemplate(podTemplate("agent", image)).
				WithUpdateStrategy(applyappsv1alpha1.DaemonSetUpdateStrategy().
					WithType(appsv1alpha1.RollingUpdateDaemonSetStrategyType).
					WithRollingUpdate(applyappsv1alpha1.RollingUpdateDaemonSet().
						WithMaxUnavailable(intstr.FromInt32(maxUnavailable)))))
	}
	opts := metav1.ApplyOptions{FieldManager: "platform-team"}
	first, err := client.AppsV1alpha1().DaemonSets(ns).Apply(ctx, desired("registry.example/agent:1.0", 1), opts)
	if err != nil {
		t.Fatalf("first apply: %v", err)
	}
	second, err := client.AppsV1alpha1().DaemonSets(ns).Apply(ctx, desired("registry.example/agent:1.1", 2), opts)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if second.UID != first.UID || second.Generation != 2 {
		t.Errorf("second apply: uid %s generation %d, want uid %s generation 2", second.UID, second.Generation, first.UID)
	}
	if got := second.Spec.Template.Spec.Containers[0].Image; got != "registry.example/agent:1.1" {
		t.Errorf("image after apply = %s", got)
	}
	if got := second.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable; got == nil || got.IntValue() != 2 {
		t.Errorf("maxUnavailable after apply = %v, want 2", got)
	}

	_, err = client.AppsV1alpha1().DaemonSets(ns).Apply(ctx, desired("registry.example/agent:9.9", 2),
		metav1.ApplyOptions{FieldManager: "someone-else"})
	if err == nil {
		t.Fatal("a second field manager changed the image without a conflict")
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("conflicting apply: err = %v, want a 409 Conflict", err)
	}
	if _, err := client.AppsV1alpha1().DaemonSets(ns).Apply(ctx, desired("registry.example/agent:9.9", 2),
		metav1.ApplyOptions{FieldManager: "someone-else", Force: true}); err != nil {
		t.Errorf("forced apply: %v", err)
	}
}

func metav1ApplySelector(app string) *applymetav1.LabelSelectorApplyConfiguration {
	return applymetav1.LabelSelector().WithMatchLabels(map[string]string{"app": app})
}

func podTemplate(app, image string) *applycorev1.PodTemplateSpecApplyConfiguration {
	return applycorev1.PodTemplateSpec().
		WithLabels(map[string]string{"app": app}).
		WithSpec(applycorev1.PodSpec().WithContainers(applycorev1.Container().WithName("main").WithImage(image)))
}

func waitForLister(ctx context.Context, t *testing.T, what string, seen func() bool) {
	t.Helper()
	err := framework.WaitFor(ctx, 30*time.Second, what+" in the lister", func(context.Context) (bool, error) {
		return seen(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
