package cloneset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The CloneSet under a PodUnavailableBudget: two pods, a budget of one, and a rollout to an
// image that never starts, so that the pod it replaces first never becomes available again
// and the budget has nothing left for the second. The CloneSet alone (maxUnavailable 100%)
// would take both pods down at once.
const (
	pubBudgetedImage  = "registry.example/web:1"
	pubFailingImage   = "registry.example/web:does-not-exist"
	pubDeniedMessage  = "pub unavailable allowed is negative"
	pubPreventReason  = "PubPreventPodDeletion"
	pubTestTimeout    = 4 * time.Minute
	pubWaitTimeout    = time.Minute
	pubObservedPeriod = 6 * time.Second
)

// TestPodUnavailableBudgetStopsRecreateRollout: the rollout labels both pods for recreation;
// the pod webhook admits the deletion of the first and refuses the second, which the
// controller reports as FailedDelete and retries, without ever getting through.
func TestPodUnavailableBudgetStopsRecreateRollout(t *testing.T) {
	e := setupPUBEnv(t)
	startPUBManager(t, e, "")
	startKubeletFailingPulls(t, e, pubFailingImage)

	const name = "recreate"
	cs := e.createBudgetedCloneSet(t, name, appsv1beta1.RecreateCloneSetPodUpdateStrategyType)
	original := e.waitForBudgetedPods(t, cs)

	e.setPUBImage(t, name, pubFailingImage)
	e.WaitForEvent(t, e.Namespace, "CloneSet", name, "a FailedDelete the budget caused", func(ev *corev1.Event) bool {
		return ev.Type == corev1.EventTypeWarning && ev.Reason == "FailedDelete" && strings.Contains(ev.Message, pubDeniedMessage)
	})

	// From now on, and while the controller keeps retrying, one original pod stays.
	var kept string
	for deadline := time.Now().Add(pubObservedPeriod); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		pods := e.activeCloneSetPods(t, cs)
		var originals, replacements []string
		for _, pod := range pods {
			if pod.Spec.Containers[0].Image == pubBudgetedImage {
				originals = append(originals, pod.Name)
			} else {
				replacements = append(replacements, pod.Name)
			}
		}
		if len(originals) != 1 || len(replacements) > 1 {
			t.Fatalf("pods at %s %v, at %s %v; want one of %v kept and at most one replacement",
				pubBudgetedImage, originals, pubFailingImage, replacements, original)
		}
		if kept != "" && originals[0] != kept {
			t.Fatalf("pod %s was replaced after it had been refused", kept)
		}
		kept = originals[0]
	}
	e.WaitForEvent(t, e.Namespace, "Pod", kept, "the budget's refusal", func(ev *corev1.Event) bool {
		return ev.Type == corev1.EventTypeWarning && ev.Reason == pubPreventReason
	})
	e.WaitForPods(t, "one replacement at "+pubFailingImage, func(pods []corev1.Pod) bool {
		n := 0
		for i := range pods {
			if controlledBy(&pods[i], cs.UID) && pods[i].DeletionTimestamp == nil && pods[i].Spec.Containers[0].Image == pubFailingImage {
				n++
			}
		}
		return n == 1
	})
}

// TestPodUnavailableBudgetStopsInPlaceRollout: with PodUnavailableBudgetUpdateGate the
// controller asks the budget before each in-place update. The first pod is admitted and
// recorded in unavailablePods, so the pod webhook lets its update through; the second is
// refused and never updated.
func TestPodUnavailableBudgetStopsInPlaceRollout(t *testing.T) {
	e := setupPUBEnv(t)
	startPUBManager(t, e, "PodUnavailableBudgetUpdateGate=true")
	startKubeletFailingPulls(t, e, pubFailingImage)

	const name = "in-place"
	cs := e.createBudgetedCloneSet(t, name, appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType)
	original := e.waitForBudgetedPods(t, cs)
	uids := map[string]bool{}
	for _, pod := range original {
		uids[string(pod.UID)] = true
	}

	e.setPUBImage(t, name, pubFailingImage)
	budgets := e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace)
	var updated, refused string
	e.Await(t, "one pod updated in place and recorded by the budget, the other refused", func(ctx context.Context) (bool, error) {
		pods := e.activeCloneSetPods(t, cs)
		updated, refused = "", ""
		for _, pod := range pods {
			if pod.Spec.Containers[0].Image == pubFailingImage {
				updated = pod.Name
			} else {
				refused = pod.Name
			}
		}
		if updated == "" || refused == "" {
			return false, nil
		}
		pub, err := budgets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, recorded := pub.Status.UnavailablePods[updated]
		events, err := e.ListEvents(ctx, e.Namespace, "Pod", refused)
		if err != nil {
			return false, err
		}
		for _, ev := range events {
			if ev.Reason == pubPreventReason && strings.Contains(ev.Message, "update") && recorded {
				return true, nil
			}
		}
		return false, nil
	}, func() string { return fmt.Sprintf("updated %q, refused %q", updated, refused) })

	// The refused pod stays as it is while the controller keeps asking, and no pod is
	// recreated: InPlaceOnly.
	for deadline := time.Now().Add(pubObservedPeriod); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		pods := e.activeCloneSetPods(t, cs)
		if len(pods) != 2 {
			t.Fatalf("%d pods, want the 2 original ones", len(pods))
		}
		for _, pod := range pods {
			if !uids[string(pod.UID)] {
				t.Fatalf("pod %s is new: InPlaceOnly recreates nothing", pod.Name)
			}
			if pod.Name == refused && pod.Spec.Containers[0].Image != pubBudgetedImage {
				t.Fatalf("pod %s was updated to %s after the budget refused it", pod.Name, pod.Spec.Containers[0].Image)
			}
		}
	}
	pub, err := budgets.Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Status.UnavailableAllowed != 0 || pub.Status.DesiredAvailable != 1 {
		t.Errorf("budget status %+v, want desired 1 and nothing allowed", pub.Status)
	}
}

// setupPUBEnv prepares a test whose manager it starts itself: its budgets, CloneSets,
// pods, claims and revisions, and bosun's webhook configurations, are removed at the end.
func setupPUBEnv(t *testing.T) *testEnv {
	t.Helper()
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		Timeout: pubTestTimeout, WaitTimeout: pubWaitTimeout, RemoveWebhookConfigurations: true,
		Remove: []string{
			"podunavailablebudgets.policy.kruise.io", "clonesets.apps.kruise.io", "pods",
			"persistentvolumeclaims", "controllerrevisions.apps",
		},
	})
	return &testEnv{Env: e}
}

// startPUBManager runs bosun-controller-manager, leading, with the CloneSet and
// PodUnavailableBudget controllers and their webhooks, and returns once the API server
// calls the budget's and the pods' webhooks.
func startPUBManager(t *testing.T, e *testEnv, featureGates string) {
	t.Helper()
	probeLabels := map[string]string{"bosun.dev/admission-probe": e.Namespace}
	probeBudget := &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "admission-probe"},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: probeLabels},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	probePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "admission-probe", Labels: probeLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: pubBudgetedImage}}},
	}
	framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP,
		framework.ControllerManagerOptions{Controllers: "cloneset,podunavailablebudget", FeatureGates: featureGates, Verbosity: 4},
		framework.WebhookProbe{Webhook: "vpodunavailablebudget.kb.io", Send: func(ctx context.Context) {
			_, _ = e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace).Create(ctx, probeBudget, framework.DryRunCreate)
		}},
		framework.WebhookProbe{Webhook: "mpod.kb.io", Send: func(ctx context.Context) {
			_, _ = e.Client.CoreV1().Pods(e.Namespace).Create(ctx, probePod, framework.DryRunCreate)
		}},
	)
}

// createBudgetedCloneSet creates a budget of maxUnavailable 1 over the pods labelled
// app=name, then a CloneSet name of 2 such pods, updated by policy with maxUnavailable
// 100%. Its pods end at once when deleted (there is no kubelet to end them).
func (e *testEnv) createBudgetedCloneSet(t *testing.T, name string, policy appsv1beta1.CloneSetPodUpdateStrategyType) *appsv1beta1.CloneSet {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating PodUnavailableBudget %s: %v", name, err)
	}
	cs := &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "web", Image: pubBudgetedImage}},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
				},
			},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
					PodUpdatePolicy: policy,
					MaxUnavailable:  ptr.To(intstr.FromString("100%")),
				},
			},
		},
	}
	created, err := e.Bosun.AppsV1beta1().CloneSets(e.Namespace).Create(e.Ctx, cs, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CloneSet %s: %v", name, err)
	}
	return created
}

// waitForBudgetedPods waits until the CloneSet's two pods are available and tagged with
// the budget, and the budget allows one of them to go; it returns the pods.
func (e *testEnv) waitForBudgetedPods(t *testing.T, cs *appsv1beta1.CloneSet) []*corev1.Pod {
	t.Helper()
	pods := e.WaitForPods(t, "two available pods tagged with the budget", func(pods []corev1.Pod) bool {
		n := 0
		for i := range pods {
			pod := &pods[i]
			if controlledBy(pod, cs.UID) && pod.DeletionTimestamp == nil &&
				pod.Labels[appsv1beta1.LifecycleStateKey] == string(appsv1beta1.LifecycleStateNormal) &&
				conditionTrue(pod, corev1.PodReady) && pod.Annotations[policyv1beta1.PodRelatedPubAnnotationNew] == cs.Name {
				n++
			}
		}
		return n == 2
	})
	budgets := e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace)
	var status policyv1beta1.PodUnavailableBudgetStatus
	e.Await(t, "budget "+cs.Name+" allowing one pod to go", func(ctx context.Context) (bool, error) {
		pub, err := budgets.Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		status = pub.Status
		return status.TotalReplicas == 2 && status.DesiredAvailable == 1 && status.CurrentAvailable == 2 && status.UnavailableAllowed == 1, nil
	}, func() string { return fmt.Sprintf("status %+v", status) })
	var owned []*corev1.Pod
	for i := range pods {
		if controlledBy(&pods[i], cs.UID) && pods[i].DeletionTimestamp == nil {
			owned = append(owned, &pods[i])
		}
	}
	return owned
}

// activeCloneSetPods lists the CloneSet's pods that are not being deleted.
func (e *testEnv) activeCloneSetPods(t *testing.T, cs *appsv1beta1.CloneSet) []*corev1.Pod {
	t.Helper()
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if controlledBy(&list.Items[i], cs.UID) && list.Items[i].DeletionTimestamp == nil {
			pods = append(pods, &list.Items[i])
		}
	}
	return pods
}

// setPUBImage changes the CloneSet's image: a new revision.
func (e *testEnv) setPUBImage(t *testing.T, name, image string) {
	t.Helper()
	client := e.Bosun.AppsV1beta1().CloneSets(e.Namespace)
	for {
		cs, err := client.Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading CloneSet %s: %v", name, err)
		}
		cs.Spec.Template.Spec.Containers[0].Image = image
		_, err = client.Update(e.Ctx, cs, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("setting the image of CloneSet %s: %v", name, err)
		}
	}
}

// startKubeletFailingPulls runs the kubelet stand-in for the test's namespace, with every
// pull of image failing.
func startKubeletFailingPulls(t *testing.T, e *testEnv, image string) {
	t.Helper()
	k := e.newKubelet()
	k.FailPulls(image)
	k.Start(t)
}
