package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// retryDeniedEvictions makes bosun answer a denied eviction 429, which kubectl drain
	// retries, instead of 403, which makes it give up.
	retryDeniedEvictions = "pub.bosun.dev/retry-denied-evictions"
	// pubDenied is the reason bosun gives when a budget has nothing left to spend.
	pubDenied = "pub unavailable allowed is negative"
	// drainTimeout is kubectl drain's --timeout: three pods replaced one after the other,
	// each waiting for its replacement to start and turn Ready.
	drainTimeout = 3 * time.Minute
)

// A PodUnavailableBudget over a 3-replica Deployment with maxUnavailable 1, as a user sees
// it with kubectl on a real node: one pod may be deleted, a second right after is refused
// with a message naming the budget; `kubectl drain` of the node waits for each evicted
// pod's replacement to turn Ready before evicting the next (bosun answers its evictions
// 429 while the budget is spent, so drain retries rather than fails), so at least two pods
// serve throughout, and drain finishes once all three original pods are gone.
func TestPodUnavailableBudgetLimitsKubectlDeleteAndDrain(t *testing.T) {
	c := requireCluster(t)
	client := clientset(t)
	bosun := bosunClientset(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	const replicas, pubName = 3, "web-pub"
	// drain's --pod-selector looks at every namespace: the second label keeps it to this
	// test's pods.
	podLabels := map[string]string{"app": "web", "e2e-namespace": ns}
	selector := labels.SelectorFromSet(podLabels).String()

	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: webserverPod("v1", podLabels),
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRollout(t, ns, "web", "v1")

	pub := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: pubName, Annotations: map[string]string{retryDeniedEvictions: "true"}},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
		},
	}
	if _, err := bosun.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, pub, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodUnavailableBudget %s: %v", pubName, err)
	}
	// The budget goes before the namespace, so that deleting the namespace is not refused
	// pod by pod.
	t.Cleanup(func() {
		err := bosun.PolicyV1alpha1().PodUnavailableBudgets(ns).Delete(context.Background(), pubName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting PodUnavailableBudget %s: %v", pubName, err)
		}
	})
	waitForBudget(t, ns, pubName, selector, replicas)

	pods := readyPods(t, ns, selector)
	first, second := pods[0], pods[1]
	// --wait=false: the second delete must come while the first pod's replacement is still
	// starting, that is while the budget is spent.
	if out, err := kubectl(ctx, "delete", "pod", "-n", ns, first.Name, "--wait=false"); err != nil {
		t.Fatalf("kubectl delete pod %s (the budget allows one): %v\n%s", first.Name, err, out)
	}
	out, err := kubectl(ctx, "delete", "pod", "-n", ns, second.Name, "--wait=false")
	if err == nil {
		t.Fatalf("kubectl delete pod %s right after %s succeeded; the budget allows one pod unavailable:\n%s", second.Name, first.Name, out)
	}
	if !strings.Contains(out, pubName) || !strings.Contains(out, pubDenied) {
		t.Errorf("kubectl delete pod %s was refused with %q; want a message naming budget %s and saying %q", second.Name, out, pubName, pubDenied)
	}
	if pod, err := client.CoreV1().Pods(ns).Get(ctx, second.Name, metav1.GetOptions{}); err != nil || pod.DeletionTimestamp != nil {
		t.Errorf("pod %s after its refused deletion: %v, deletionTimestamp %v; want it still running", second.Name, err, deletionTimestamp(pod))
	}
	waitFor(t, time.Minute, "a PubPreventPodDeletion event on pod "+second.Name, func(ctx context.Context) (bool, error) {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": second.Name, "reason": "PubPreventPodDeletion"}.String()})
		if err != nil {
			return false, err
		}
		return len(events.Items) > 0, nil
	})

	// The replacement of the first pod turns Ready and the budget is back to one.
	waitForRollout(t, ns, "web", "v1")
	waitForBudget(t, ns, pubName, selector, replicas)

	originals := readyPods(t, ns, selector)
	if len(originals) != replicas {
		t.Fatalf("%d Ready pods before the drain, want %d", len(originals), replicas)
	}
	watcher := watchReadyPods(t, ns, selector)
	node := c.NodeName()
	t.Cleanup(func() {
		// Whatever happened, leave the node schedulable for the cases after this one.
		if out, err := kubectl(context.Background(), "uncordon", node); err != nil {
			t.Logf("kubectl uncordon %s: %v\n%s", node, err, out)
		}
	})
	drain := startKubectl(t, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
		"--pod-selector="+selector, fmt.Sprintf("--timeout=%s", drainTimeout))

	// Cordoned, drain evicts one pod; its replacement cannot be scheduled, so the budget
	// stays spent and drain keeps retrying the other two: two rounds of refusals, 5 s apart.
	waitFor(t, 2*time.Minute, "kubectl drain to cordon the node, evict one pod and retry the others twice", func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		gone, err := originalsGone(ctx, client, ns, originals)
		if err != nil {
			return false, err
		}
		return n.Spec.Unschedulable && gone > 0 && strings.Count(drain.output(), "will retry after") >= 2*(replicas-1), nil
	})
	if out := drain.output(); !strings.Contains(out, pubName) {
		t.Errorf("kubectl drain retried without naming budget %s:\n%s", pubName, out)
	}
	if gone, err := originalsGone(ctx, client, ns, originals); err != nil || gone != 1 {
		t.Errorf("%d of the original pods are gone or terminating while the node is cordoned (%v); the budget allows 1", gone, err)
	}

	if out, err := kubectl(ctx, "uncordon", node); err != nil {
		t.Fatalf("kubectl uncordon %s: %v\n%s", node, err, out)
	}
	waitFor(t, drainTimeout+time.Minute, "kubectl drain to finish", func(context.Context) (bool, error) {
		return drain.exited(), nil
	})
	out = drain.output()
	if err := drain.err(); err != nil {
		t.Fatalf("kubectl drain failed: %v\n%s", err, out)
	}
	t.Logf("kubectl drain:\n%s", out)
	for _, pod := range originals {
		if !strings.Contains(out, "pod/"+pod.Name+" evicted") {
			t.Errorf("kubectl drain did not report evicting original pod %s", pod.Name)
		}
	}
	if gone, err := originalsGone(ctx, client, ns, originals); err != nil || gone != len(originals) {
		t.Errorf("only %d of the %d original pods are gone after the drain (%v)", gone, len(originals), err)
	}
	waitForRollout(t, ns, "web", "v1")

	minReady, changes := watcher.result()
	t.Logf("during the drain: at least %d Ready pods, %d pod changes seen", minReady, changes)
	if minReady < replicas-1 {
		t.Errorf("only %d pods of the Deployment were Ready at one point of the drain; the budget keeps %d", minReady, replicas-1)
	}
	if changes == 0 {
		t.Error("no pod change was seen during the drain: the watch saw nothing")
	}
}

// waitForBudget waits until the budget counts replicas pods, wants replicas−1 available
// and allows one more unavailable, with nothing recorded as disrupted, and every pod of
// selector carries both of its annotations.
func waitForBudget(t *testing.T, namespace, name, selector string, replicas int32) {
	t.Helper()
	client := clientset(t)
	bosun := bosunClientset(t)
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("PodUnavailableBudget %s, last seen: %s", name, last)
		}
	}()
	waitFor(t, 2*time.Minute, fmt.Sprintf("PodUnavailableBudget %s to allow 1 of %d pods unavailable", name, replicas), func(ctx context.Context) (bool, error) {
		pub, err := bosun.PolicyV1alpha1().PodUnavailableBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := pub.Status
		last = fmt.Sprintf("%+v", s)
		if s.ObservedGeneration < pub.Generation || s.TotalReplicas != replicas || s.DesiredAvailable != replicas-1 ||
			s.CurrentAvailable != replicas || s.UnavailableAllowed != 1 || len(s.DisruptedPods) > 0 {
			return false, nil
		}
		pods, err := listPods(ctx, client, namespace, selector)
		if err != nil {
			return false, err
		}
		for _, pod := range pods {
			if pod.Annotations[policyv1alpha1.PodRelatedPubAnnotation] != name || pod.Annotations[policyv1alpha1.PodRelatedPubAnnotationNew] != name {
				last = fmt.Sprintf("pod %s annotations %v", pod.Name, pod.Annotations)
				return false, nil
			}
		}
		return len(pods) == int(replicas), nil
	})
}

// readyPods lists the Ready pods of selector that are not being deleted.
func readyPods(t *testing.T, namespace, selector string) []corev1.Pod {
	t.Helper()
	pods, err := listPods(testContext(t), clientset(t), namespace, selector)
	if err != nil {
		t.Fatal(err)
	}
	var ready []corev1.Pod
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil && podReady(&pod) {
			ready = append(ready, pod)
		}
	}
	if len(ready) < 2 {
		t.Fatalf("%d Ready pods of %s, want at least 2", len(ready), selector)
	}
	return ready
}

// originalsGone counts the pods of originals that no longer exist or are being deleted.
func originalsGone(ctx context.Context, client kubernetes.Interface, namespace string, originals []corev1.Pod) (int, error) {
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the pods of %s: %w", namespace, err)
	}
	present := map[types.UID]bool{}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			present[pod.UID] = true
		}
	}
	gone := 0
	for _, pod := range originals {
		if !present[pod.UID] {
			gone++
		}
	}
	return gone, nil
}

func deletionTimestamp(pod *corev1.Pod) *metav1.Time {
	if pod == nil {
		return nil
	}
	return pod.DeletionTimestamp
}

// readyWatch follows the pods of a selector through an informer and records the fewest
// Ready pods, not being deleted, seen at once after the informer synced.
type readyWatch struct {
	mu       sync.Mutex
	minReady int
	seen     int
}

func watchReadyPods(t *testing.T, namespace, selector string) *readyWatch {
	t.Helper()
	client := clientset(t)
	ctx := testContext(t)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	informer := factory.Core().V1().Pods()
	lister := informer.Lister()
	w := &readyWatch{minReady: -1}
	synced := false
	observe := func() {
		pods, err := lister.List(labels.Everything())
		if err != nil {
			return
		}
		ready := 0
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil && podReady(pod) {
				ready++
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		// Until the first list is in, the cache holds only some of the pods.
		if !synced {
			return
		}
		w.seen++
		if w.minReady < 0 || ready < w.minReady {
			w.minReady = ready
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { observe() },
		UpdateFunc: func(_, _ any) { observe() },
		DeleteFunc: func(any) { observe() },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("the pod informer did not sync")
	}
	w.mu.Lock()
	synced = true
	w.mu.Unlock()
	observe()
	return w
}

func (w *readyWatch) result() (minReady, changes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minReady, w.seen
}

// kubectl runs kubectl (built by hack/build-test-servers.sh) as the cluster's admin and
// returns its combined output.
func kubectl(ctx context.Context, args ...string) (string, error) {
	cmd, err := kubectlCommand(ctx, args...)
	if err != nil {
		return "", err
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func kubectlCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	binary, err := framework.ToolPath("kubectl")
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, binary, append([]string{"--kubeconfig=" + suite.KubeconfigPath()}, args...)...), nil
}

// backgroundKubectl is a kubectl running while the test goes on.
type backgroundKubectl struct {
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	wait error
}

func (b *backgroundKubectl) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.Write(p)
}

func (b *backgroundKubectl) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

func (b *backgroundKubectl) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// err is how it ended; call it only once exited.
func (b *backgroundKubectl) err() error {
	<-b.done
	return b.wait
}

// startKubectl starts kubectl in the background; the end of the test kills it if it still
// runs.
func startKubectl(t *testing.T, args ...string) *backgroundKubectl {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := kubectlCommand(ctx, args...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	b := &backgroundKubectl{done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b, b
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		b.wait = cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}
