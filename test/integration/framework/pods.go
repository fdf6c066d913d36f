package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// There is no kubelet in the test clusters: tests play its part by writing pod status.

// SetPodRunning sets the pod's phase to Running and its Ready condition to ready, with the
// condition's lastTransitionTime at readySince (now when zero). It retries on conflicts and
// returns the updated pod.
func SetPodRunning(ctx context.Context, client kubernetes.Interface, namespace, name string, ready bool, readySince time.Time) (*corev1.Pod, error) {
	if readySince.IsZero() {
		readySince = time.Now()
	}
	var updated *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setRunning(pod, ready, readySince)
		updated, err = client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("marking pod %s/%s running (ready=%v): %w", namespace, name, ready, err)
	}
	return updated, nil
}

// setRunning edits pod in place: phase Running and a Ready condition.
func setRunning(pod *corev1.Pod, ready bool, readySince time.Time) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = corev1.PodRunning
	condition := corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(readySince)}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			pod.Status.Conditions[i] = condition
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, condition)
}

// PodReadier marks pods Running and Ready as they appear, the way a kubelet would once
// their containers pass their readiness probes.
type PodReadier struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	marked int
	err    error
}

// StartPodReadierForTest starts a PodReadier (see StartPodReadier) that the end of the test
// stops, failing the test if the readier ran into an error.
func StartPodReadierForTest(t testing.TB, ctx context.Context, client kubernetes.Interface, namespace string, workers int, accept func(*corev1.Pod) bool) {
	t.Helper()
	r := StartPodReadier(ctx, client, namespace, workers, accept)
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("pod readier: %v", err)
		}
	})
}

// StartPodReadier watches the pods of namespace and marks every active pod that is not
// ready yet and for which accept returns true (nil accepts all) Running and Ready, with
// `workers` parallel writers. Stop it, or let the test end, to stop it.
func StartPodReadier(ctx context.Context, client kubernetes.Interface, namespace string, workers int, accept func(*corev1.Pod) bool) *PodReadier {
	ctx, cancel := context.WithCancel(ctx)
	r := &PodReadier{cancel: cancel, done: make(chan struct{})}
	pending := make(chan *corev1.Pod, 4096)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pod := range pending {
				r.markReady(ctx, client, pod)
			}
		}()
	}
	go func() {
		defer close(r.done)
		defer wg.Wait()
		defer close(pending)
		r.watch(ctx, client, namespace, accept, pending)
	}()
	return r
}

// watch feeds pending with pods that need marking until ctx ends, re-listing when the
// watch closes.
func (r *PodReadier) watch(ctx context.Context, client kubernetes.Interface, namespace string, accept func(*corev1.Pod) bool, pending chan<- *corev1.Pod) {
	for ctx.Err() == nil {
		w, err := client.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.Everything().String()})
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(PollInterval)
			}
			continue
		}
		for event := range w.ResultChan() {
			pod, ok := event.Object.(*corev1.Pod)
			if !ok || (event.Type != watch.Added && event.Type != watch.Modified) {
				continue
			}
			if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			if podutil.IsPodReady(pod) || (accept != nil && !accept(pod)) {
				continue
			}
			select {
			case pending <- pod:
			case <-ctx.Done():
				w.Stop()
				return
			}
		}
		w.Stop()
	}
}

func (r *PodReadier) markReady(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) {
	pod = pod.DeepCopy()
	setRunning(pod, true, time.Now())
	_, err := client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// A newer version is on its way through the watch, or the pod is gone.
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil && r.err == nil {
			r.err = fmt.Errorf("marking pod %s/%s ready: %w", pod.Namespace, pod.Name, err)
		}
		return
	}
	r.marked++
}

// Marked returns how many pods it has marked ready so far.
func (r *PodReadier) Marked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.marked
}

// Stop stops watching and waits for in-flight writes; it returns the first write error.
func (r *PodReadier) Stop() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// ListPods returns the pods of the test's namespace that selector selects (all when nil),
// sorted by name.
func (e *Env) ListPods(ctx context.Context, selector map[string]string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{}
	if selector != nil {
		opts.LabelSelector = labels.SelectorFromSet(selector).String()
	}
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", e.Namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// GetPods is ListPods failing the test on error.
func (e *Env) GetPods(t testing.TB, selector map[string]string) []corev1.Pod {
	t.Helper()
	pods, err := e.ListPods(e.Ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// WaitForPods waits until cond holds for the pods of the test's namespace, sorted by name,
// and returns them. A failure shows the pods last seen (see EnvOptions.PodDetails).
func (e *Env) WaitForPods(t testing.TB, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var last []corev1.Pod
	e.Await(t, what, func(ctx context.Context) (bool, error) {
		pods, err := e.ListPods(ctx, nil)
		if err != nil {
			return false, err
		}
		last = pods
		return cond(pods), nil
	}, func() string { return DescribePodsWith(last, e.opts.PodDetails) })
	return last
}

// SetPodRunning marks the pod of the test's namespace Running, and Ready or not, as a kubelet
// would (see the function SetPodRunning).
func (e *Env) SetPodRunning(t testing.TB, name string, ready bool, readySince time.Time) *corev1.Pod {
	t.Helper()
	pod, err := SetPodRunning(e.Ctx, e.Client, e.Namespace, name, ready, readySince)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// StartPodReadier marks the pods of the test's namespace Running and Ready as they appear,
// with workers parallel writers, except those accept refuses (nil accepts all), until the
// test ends (see StartPodReadierForTest).
func (e *Env) StartPodReadier(t testing.TB, workers int, accept func(*corev1.Pod) bool) {
	t.Helper()
	StartPodReadierForTest(t, e.Ctx, e.Client, e.Namespace, workers, accept)
}

// DescribePods renders pods for failure messages: each one's controller, phase, readiness,
// deletion and node, the first 20 of them.
func DescribePods(pods []corev1.Pod) string { return DescribePodsWith(pods, nil) }

// DescribePodsWith is DescribePods with what details (nil: nothing) says of each pod.
func DescribePodsWith(pods []corev1.Pod, details func(*corev1.Pod) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods", len(pods))
	for i := range pods {
		pod := &pods[i]
		if i == 20 {
			b.WriteString(" ...")
			break
		}
		owner := "<orphan>"
		if ref := metav1.GetControllerOf(pod); ref != nil {
			owner = ref.Kind + "/" + ref.Name
		}
		fmt.Fprintf(&b, "; %s (owner %s, phase %s, ready %v, deleting %v, node %q", pod.Name, owner, pod.Status.Phase,
			podutil.IsPodReady(pod), pod.DeletionTimestamp != nil, pod.Spec.NodeName)
		if details != nil {
			fmt.Fprintf(&b, ", %s", details(pod))
		}
		b.WriteString(")")
	}
	return b.String()
}
