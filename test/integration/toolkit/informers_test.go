package toolkit

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// TestPodControllerIndexOnRealInformer feeds the podController index from a real,
// cluster-wide pod informer built by bosun's factory, and checks what PodsForOwner returns
// as pods are created before and after the informer starts, adopted and deleted.
func TestPodControllerIndexOnRealInformer(t *testing.T) {
	ctx, _, client, ns := setup(t)
	otherNS := framework.CreateTestNamespace(t, client).Name

	newOwner := func(namespace, name string) *appsv1.ReplicaSet {
		rs, err := client.AppsV1().ReplicaSets(namespace).Create(ctx, newReplicaSet(namespace, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	a, b, elsewhere := newOwner(ns, "a"), newOwner(ns, "b"), newOwner(otherNS, "c")
	refsA, refsB := newTestRefs(a, replicaSetGVK), newTestRefs(b, replicaSetGVK)
	createPod := func(namespace, name string, refs []metav1.OwnerReference, nodeName string) {
		t.Helper()
		pod := newPod(namespace, name, selectorLabels("a"), refs, nil)
		pod.Spec.NodeName = nodeName
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// These arrive through the informer's initial list...
	createPod(ns, "a-1", refsA.get(ownerController), "")
	createPod(ns, "a-2", refsA.get(ownerController), "")
	createPod(ns, "b-1", refsB.get(ownerController, otherPlain), "")
	createPod(ns, "orphan-1", nil, "")
	createPod(ns, "plain-1", refsA.get(ownerPlain), "") // a plain reference does not own
	createPod(otherNS, "elsewhere-1", nil, "")

	factory := informers.NewSharedInformerFactory(client, informers.DefaultMinResyncPeriod)
	podInformer := factory.Core().V1().Pods().Informer()
	// Every controller sharing the informer adds the index; the second call is a no-op.
	for range 2 {
		if err := podutil.AddPodControllerIndex(podInformer); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}

	// ...and these through its watch.
	createPod(ns, "a-3", refsA.get(ownerController), "")
	createPod(ns, "orphan-2", nil, "node-1")

	indexer := podInformer.GetIndexer()
	type query struct {
		name           string
		owner          metav1.Object
		kind           string
		includeOrphans bool
		want           []string
	}
	// check waits until every query returns its pods: the cache catches up with the
	// API server asynchronously.
	check := func(t *testing.T, queries []query) {
		t.Helper()
		for _, q := range queries {
			var got []string
			err := framework.WaitFor(ctx, 30*time.Second, q.name, func(context.Context) (bool, error) {
				pods, err := podutil.PodsForOwner(indexer, q.owner, q.kind, q.includeOrphans)
				if err != nil {
					return false, err
				}
				for _, pod := range pods {
					if pod.ManagedFields != nil {
						return false, fmt.Errorf("cached pod %s has managedFields; the factory's transform should drop them", pod.Name)
					}
				}
				got = podNames(pods)
				return slices.Equal(got, q.want), nil
			})
			if err != nil {
				t.Errorf("%v: PodsForOwner returned %v, want %v", err, got, q.want)
			}
		}
	}

	t.Run("initial list and watch", func(t *testing.T) {
		check(t, []query{
			{"pods of a", a, "ReplicaSet", false, []string{"a-1", "a-2", "a-3"}},
			{"pods of a and orphans", a, "ReplicaSet", true, []string{"a-1", "a-2", "a-3", "orphan-1", "orphan-2", "plain-1"}},
			{"pods of b", b, "ReplicaSet", false, []string{"b-1"}},
			{"pods of b and orphans", b, "ReplicaSet", true, []string{"b-1", "orphan-1", "orphan-2", "plain-1"}},
			{"a's name and uid under another kind", a, "Deployment", false, nil},
			{"orphans of another namespace", elsewhere, "ReplicaSet", true, []string{"elsewhere-1"}},
		})
	})

	t.Run("adoption and deletion", func(t *testing.T) {
		orphan, err := client.CoreV1().Pods(ns).Get(ctx, "orphan-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := newManager(a, replicaSetGVK, a.Spec.Selector, refmanager.LiveReplicaSet(client, a), refmanager.PodControlPatcher(&podcontrol.Real{Client: client}))
		if err != nil {
			t.Fatal(err)
		}
		if owned, err := m.ClaimPods(ctx, []*corev1.Pod{orphan}); err != nil || len(owned) != 1 {
			t.Fatalf("adopting orphan-1: owned %d, error %v", len(owned), err)
		}
		if err := client.CoreV1().Pods(ns).Delete(ctx, "a-2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		check(t, []query{
			{"pods of a", a, "ReplicaSet", false, []string{"a-1", "a-3", "orphan-1"}},
			{"pods of b and orphans", b, "ReplicaSet", true, []string{"b-1", "orphan-2", "plain-1"}},
		})
	})
}

// podNames returns the sorted names of pods.
func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	return names
}
