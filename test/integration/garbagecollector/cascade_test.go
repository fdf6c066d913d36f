package garbagecollector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Scenario 1: deleting an owner in the background deletes its only dependent, strips its
// reference from a dependent that has another owner, and leaves everything else alone.
func TestCascadingDeletion(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	a := e.ReplicationControllers().Create(e.t, newRC("rc-a"))
	b := e.ReplicationControllers().Create(e.t, newRC("rc-b"))
	p1 := e.Pods().Create(e.t, newPod("p1", rcRef(a, nil)))
	p2 := e.Pods().Create(e.t, newPod("p2", rcRef(a, nil), rcRef(b, nil)))
	p3 := e.Pods().Create(e.t, newPod("p3"))

	e.ReplicationControllers().DeleteWith(e.t, a.Name, background)
	e.Pods().WaitForGone(e.t, p1.Name)
	e.waitFor("p2 to keep only rc-b's reference", waitTimeout, func(ctx context.Context) (bool, error) {
		pod, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, p2.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Equal(ownerUIDs(pod), []types.UID{b.UID}), nil
	})
	if got := e.Pods().Get(e.t, p3.Name); got.ResourceVersion != p3.ResourceVersion {
		t.Errorf("p3, which has no owner, was changed: resourceVersion %s, created as %s", got.ResourceVersion, p3.ResourceVersion)
	}
	if got := e.Pods().Get(e.t, p2.Name); got.DeletionTimestamp != nil {
		t.Errorf("p2, which still has an owner, is being deleted")
	}
	e.ReplicationControllers().Get(e.t, b.Name)
}

// Scenario 2: an object whose only owner never existed is deleted.
func TestCreateWithNonExistentOwner(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	pod := e.Pods().Create(e.t, newPod("orphaned-at-birth", missingRef("v1", "ReplicationController", "never-existed")))
	e.Pods().WaitForGone(e.t, pod.Name)
}

// Scenario 3: 10 collections of each of 5 ways to delete a core v1 ReplicationController
// with 3 pods, all at once: the pods of the orphaning ones remain without a reference to
// their deleted owner, the others vanish, and no deleted owner stays in the collector's graph.
func TestStressingCascadingDeletion(t *testing.T) {
	const (
		collections = 10
		podsEach    = 3
	)
	type variant struct {
		name       string
		finalizers []string
		options    metav1.DeleteOptions
		orphans    bool
	}
	variants := []variant{
		// The default for a core v1 ReplicationController is to orphan.
		{name: "default", options: metav1.DeleteOptions{}, orphans: true},
		{name: "finalizer", finalizers: []string{finalizerOrphan}, options: metav1.DeleteOptions{}, orphans: true},
		{name: "finalizer-no-orphan", finalizers: []string{finalizerOrphan}, options: metav1.DeleteOptions{OrphanDependents: ptr.To(false)}}, //nolint:staticcheck // the deprecated option is part of the scenario
		{name: "orphan-dependents", options: metav1.DeleteOptions{OrphanDependents: ptr.To(true)}, orphans: true},                            //nolint:staticcheck // the deprecated option is part of the scenario
		{name: "propagation-orphan", options: orphan, orphans: true},
	}
	e := setup(t)
	e.startCollector(collectorOptions{})

	type owner struct {
		variant variant
		rc      *corev1.ReplicationController
		pods    []types.UID
	}
	var (
		mu     sync.Mutex
		owners []owner
		errs   []error
		wg     sync.WaitGroup
	)
	for _, v := range variants {
		for i := range collections {
			wg.Go(func() {
				o, err := func() (owner, error) {
					rc := newRC(fmt.Sprintf("%s-%d", v.name, i))
					rc.Finalizers = v.finalizers
					rc, err := e.Client.CoreV1().ReplicationControllers(e.Namespace).Create(e.Ctx, rc, metav1.CreateOptions{})
					if err != nil {
						return owner{}, err
					}
					o := owner{variant: v, rc: rc}
					for j := range podsEach {
						pod, err := e.Client.CoreV1().Pods(e.Namespace).Create(e.Ctx, newPod(fmt.Sprintf("%s-%d-%d", v.name, i, j), rcRef(rc, nil)), metav1.CreateOptions{})
						if err != nil {
							return owner{}, err
						}
						o.pods = append(o.pods, pod.UID)
					}
					return o, nil
				}()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				owners = append(owners, o)
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		t.Fatal(err)
	}

	// Orphaning needs the collector to know the dependents when the owner's deletion
	// arrives; otherwise it lets the owner go and then collects the pods as garbage.
	var orphanable []types.UID
	for _, o := range owners {
		if o.variant.orphans {
			orphanable = append(orphanable, o.pods...)
		}
	}
	e.waitInGraph(orphanable...)

	for _, o := range owners {
		wg.Go(func() {
			if err := e.Client.CoreV1().ReplicationControllers(e.Namespace).Delete(e.Ctx, o.rc.Name, o.variant.options); err != nil {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, fmt.Errorf("deleting %s: %w", o.rc.Name, err))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Fatal(err)
	}

	wantPods := len(orphanable)
	var pods *corev1.PodList
	e.waitFor(fmt.Sprintf("no ReplicationController and %d pods", wantPods), stressTimeout, func(ctx context.Context) (bool, error) {
		rcs, err := e.Client.CoreV1().ReplicationControllers(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if pods, err = e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{}); err != nil {
			return false, err
		}
		return len(rcs.Items) == 0 && len(pods.Items) == wantPods, nil
	})
	for _, pod := range pods.Items {
		if strings.HasPrefix(pod.Name, "finalizer-no-orphan-") {
			t.Errorf("pod %s remains although its owner was deleted without orphaning", pod.Name)
		}
		if len(pod.OwnerReferences) != 0 {
			t.Errorf("orphaned pod %s still has ownerReferences %v", pod.Name, pod.OwnerReferences)
		}
	}
	var rcUIDs []types.UID
	for _, o := range owners {
		rcUIDs = append(rcUIDs, o.rc.UID)
	}
	e.caughtUp()
	g, err := e.gc.graph(rcUIDs...)
	if err != nil {
		t.Fatal(err)
	}
	// A node with neither owners nor dependents is not shown: what is checked is that no
	// deleted ReplicationController is still linked to anything.
	for _, uid := range rcUIDs {
		if g.has(uid) {
			t.Errorf("deleted ReplicationController %s is still in the collector's graph:\n%s", uid, g.text)
		}
	}
}

// Scenario 4: an owner deleted with propagationPolicy Orphan disappears once the collector
// has removed its reference from each dependent; the dependents remain.
func TestOrphaning(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	rc := e.ReplicationControllers().Create(e.t, newRC("owner"))
	var uids []types.UID
	var names []string
	for i := range 3 {
		pod := e.Pods().Create(e.t, newPod(fmt.Sprintf("pod-%d", i), rcRef(rc, nil)))
		uids, names = append(uids, pod.UID), append(names, pod.Name)
	}
	// Orphaning needs the collector to know the dependents when the deletion arrives.
	e.waitInGraph(uids...)

	e.ReplicationControllers().DeleteWith(e.t, rc.Name, orphan)
	e.ReplicationControllers().WaitForGone(e.t, rc.Name)
	for _, name := range names {
		pod := e.Pods().Get(e.t, name)
		if len(pod.OwnerReferences) != 0 {
			t.Errorf("pod %s still has ownerReferences %v", name, pod.OwnerReferences)
		}
		if pod.DeletionTimestamp != nil {
			t.Errorf("orphaned pod %s is being deleted", name)
		}
	}
}
