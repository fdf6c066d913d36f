package podunavailablebudget

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// terminationTime is how long the test's kubelet takes to stop a deleted pod's containers.
const terminationTime = time.Second

// `kubectl drain` of a node running a Deployment under a budget with
// retry-denied-evictions: drain's evictions beyond the budget are answered 429, which
// drain retries, so it waits for each evicted pod's replacement to become Ready elsewhere
// before the next eviction goes through, never leaving more than one pod of the Deployment
// down, and finishes with every pod moved. Without the annotation the same drain gives up
// at the first denial, because a 403 — OpenKruise's answer — is not retryable to kubectl.
//
// The test plays the scheduler (binding new pods to the first schedulable node meant for
// their Deployment, so that replacements land on the spare node once drain has cordoned
// theirs; a nodeName in the pod template would put them back on the drained node), and the
// kubelet (marking bound pods Running and Ready, and removing deleted pods after their
// containers stopped).
func TestKubectlDrain(t *testing.T) {
	e := setup(t)
	opts := managerOptions("")
	opts.Controllers += "," + workloadControllers
	e.startManager(t, opts)
	nodeA, nodeB, spare := e.createNode(t, "a", nil), e.createNode(t, "b", nil), e.createNode(t, "spare", nil)
	e.startCluster(t, map[string][]string{"web-a": {nodeA, spare}, "web-b": {nodeB, spare}})
	framework.StartPodReadierForTest(t, e.Ctx, e.Client, e.Namespace, 2, func(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" })

	t.Run("without retry-denied-evictions drain gives up", func(t *testing.T) {
		e.Deployments().Create(t, newDeployment("web-a", 3))
		e.budgets().Create(t, newBudget("web-a", withTarget("apps/v1", "Deployment", "web-a"), maxUnavailableOne))
		e.waitForSettled(t, "web-a", counts{total: 3, desired: 2, current: 3, allowed: 1})
		onNode := e.podsOnNode(t, "web-a", nodeA)
		if onNode.Len() != 3 {
			t.Fatalf("%d pods of web-a on %s, want 3", onNode.Len(), nodeA)
		}

		out, err := e.drain(t, nodeA, time.Minute)
		t.Logf("kubectl drain %s (%v):\n%s", nodeA, err, out)
		if err == nil {
			t.Fatalf("kubectl drain %s succeeded although the budget denies with 403:\n%s", nodeA, out)
		}
		if !strings.Contains(out, budgetDeniedMessage) || strings.Contains(out, "will retry after") {
			t.Errorf("kubectl drain %s did not stop at the budget's 403:\n%s", nodeA, out)
		}
		// One eviction fit in the budget; drain gave up on the other two.
		if left := e.podsOnNode(t, "web-a", nodeA).Intersection(onNode); left.Len() != 2 {
			t.Errorf("%d of the original pods are still on %s after the failed drain, want 2: %v\n%s", left.Len(), nodeA, sets.List(left), out)
		}
	})

	t.Run("with retry-denied-evictions drain waits for replacements", func(t *testing.T) {
		e.Deployments().Create(t, newDeployment("web-b", 3))
		e.budgets().Create(t, newBudget("web-b", withTarget("apps/v1", "Deployment", "web-b"), maxUnavailableOne,
			withAnnotation(retryDeniedEvictionsKey, "true")))
		e.waitForSettled(t, "web-b", counts{total: 3, desired: 2, current: 3, allowed: 1})
		originals := e.podsOnNode(t, "web-b", nodeB)
		if originals.Len() != 3 {
			t.Fatalf("%d pods of web-b on %s, want 3", originals.Len(), nodeB)
		}
		lowest := e.watchReadyPods(t, "web-b")

		out, err := e.drain(t, nodeB, 3*time.Minute)
		if err != nil {
			t.Fatalf("kubectl drain %s: %v\n%s", nodeB, err, out)
		}
		t.Logf("kubectl drain %s:\n%s", nodeB, out)
		if !strings.Contains(out, "will retry after") || !strings.Contains(out, budgetDeniedMessage) {
			t.Errorf("kubectl drain %s never retried an eviction the budget denied:\n%s", nodeB, out)
		}
		if !strings.Contains(out, "node/"+nodeB+" drained") {
			t.Errorf("kubectl drain %s does not report the node drained:\n%s", nodeB, out)
		}
		if low, when := lowest(); low < 2 {
			t.Errorf("only %d pods of web-b were Ready at %s, want at least 2 at all times", low, when)
		}
		e.WaitForPods(t, "3 Ready pods of web-b on "+spare+", none of the originals", func(pods []corev1.Pod) bool {
			n := 0
			for _, pod := range pods {
				if pod.Labels["app"] != "web-b" {
					continue
				}
				if originals.Has(string(pod.UID)) {
					return false
				}
				if isActiveReady(&pod) && pod.Spec.NodeName == spare {
					n++
				}
			}
			return n == 3
		})
	})
}

// drain runs the real `kubectl drain` of node and returns its combined output and error.
func (e *testEnv) drain(t *testing.T, node string, timeout time.Duration) (string, error) {
	t.Helper()
	kubectl, err := framework.ToolPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.Ctx, timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig="+e.CP.KubeconfigPath(), "drain", node,
		"--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+timeout.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// podsOnNode returns the UIDs of the active pods labelled app=<app> bound to node.
func (e *testEnv) podsOnNode(t *testing.T, app, node string) sets.Set[string] {
	t.Helper()
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	uids := sets.New[string]()
	for _, pod := range list.Items {
		if pod.Spec.NodeName == node && pod.DeletionTimestamp == nil {
			uids.Insert(string(pod.UID))
		}
	}
	return uids
}

// watchReadyPods follows every change of the pods labelled app=<app> from now on, and
// returns a function reporting the lowest number of them that were active and Ready after
// any change, and when.
func (e *testEnv) watchReadyPods(t *testing.T, app string) func() (int, string) {
	t.Helper()
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	pods := map[types.UID]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].UID] = &list.Items[i]
	}
	count := func() int {
		n := 0
		for _, pod := range pods {
			if isActiveReady(pod) {
				n++
			}
		}
		return n
	}
	lowest, when := count(), "the start"
	startRetryWatch(t, e.Ctx, list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = "app=" + app
		return e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, opts)
	}, func(ev watch.Event) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.Type == watch.Deleted {
			delete(pods, pod.UID)
		} else {
			pods[pod.UID] = pod
		}
		if n := count(); n < lowest {
			lowest, when = n, fmt.Sprintf("%s of pod %s (resourceVersion %s)", ev.Type, pod.Name, pod.ResourceVersion)
		}
	})
	return func() (int, string) {
		mu.Lock()
		defer mu.Unlock()
		return lowest, when
	}
}

// startCluster plays the scheduler and the kubelet for the namespace until the test ends:
// it binds each new pod labelled app=<app> to the first schedulable node of placement[app],
// and removes each bound pod whose deletion began terminationTime ago, as a kubelet does
// once the containers have stopped.
func (e *testEnv) startCluster(t *testing.T, placement map[string][]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan struct{})
	var failure error
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := e.clusterStep(ctx, placement); err != nil && ctx.Err() == nil {
				failure = err
				return
			}
			time.Sleep(framework.PollInterval)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if failure != nil {
			t.Errorf("the test's scheduler and kubelet: %v", failure)
		}
	})
}

func (e *testEnv) clusterStep(ctx context.Context, placement map[string][]string) error {
	pods, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil // retried at the next step
	}
	for _, pod := range pods.Items {
		switch {
		case pod.DeletionTimestamp != nil && pod.Spec.NodeName != "":
			if time.Since(pod.DeletionTimestamp.Time.Add(-time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0))*time.Second)) < terminationTime {
				continue
			}
			err := e.Client.CoreV1().Pods(e.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID},
			})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("removing terminated pod %s: %w", pod.Name, err)
			}
		case pod.DeletionTimestamp == nil && pod.Spec.NodeName == "":
			node, err := e.schedulableNode(ctx, placement[pod.Labels["app"]])
			if err != nil || node == "" {
				continue
			}
			err = e.Client.CoreV1().Pods(e.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("binding pod %s to %s: %w", pod.Name, node, err)
			}
		}
	}
	return nil
}

// schedulableNode returns the first of nodes that is not cordoned, or "".
func (e *testEnv) schedulableNode(ctx context.Context, nodes []string) (string, error) {
	for _, name := range nodes {
		node, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if !node.Spec.Unschedulable {
			return name, nil
		}
	}
	return "", nil
}
