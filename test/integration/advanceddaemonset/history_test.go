package advanceddaemonset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// waitForRevisions waits until the namespace's ControllerRevisions are exactly those of
// the hashes, and returns them by hash.
func (e *testEnv) waitForRevisions(t *testing.T, hashes ...string) map[string]appsv1.ControllerRevision {
	t.Helper()
	want := slices.Sorted(slices.Values(hashes))
	var last []string
	var revs map[string]appsv1.ControllerRevision
	err := framework.WaitFor(e.Ctx, waitTimeout, fmt.Sprintf("ControllerRevisions %v", want), func(ctx context.Context) (bool, error) {
		list, err := e.Client.AppsV1().ControllerRevisions(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		revs = map[string]appsv1.ControllerRevision{}
		for _, rev := range list.Items {
			revs[rev.Labels[appsv1alpha1.ControllerRevisionHashLabelKey]] = rev
		}
		last = slices.Sorted(maps.Keys(revs))
		return slices.Equal(last, want), nil
	})
	if err != nil {
		t.Fatalf("%v; last: %v", err, last)
	}
	return revs
}

// revisionHistoryLimit keeps that many old revisions, dropping the oldest first, but never
// one whose hash a live pod still carries.
func TestRevisionHistoryKeepsLimitAndLiveRevisions(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	ds := newDS("agent")
	ds.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	ds, _ = e.waitForSettled(t, e.daemonSets().Create(t, ds).Name, nodes)
	hashes := []string{ds.Status.DaemonSetHash}

	for _, image := range []string{image2, image3, image4} {
		e.setImage(t, ds.Name, image)
		hashes = append(hashes, e.waitForNewHash(t, ds.Name, hashes[len(hashes)-1]))
		e.waitForSettled(t, ds.Name, nodes)
	}
	// The current revision and the newest old one.
	e.waitForRevisions(t, hashes[3], hashes[2])

	// A partition of 1 keeps the pod on the smallest node at hashes[3] through two more changes.
	e.daemonSets().Update(t, ds.Name, func(ds *appsv1alpha1.DaemonSet) {
		rollingUpdate(ds).Partition = ptr.To(intstr.FromInt32(1))
		ds.Spec.Template.Spec.Containers[0].Image = "registry.example/agent:5.0"
	})
	hashes = append(hashes, e.waitForNewHash(t, ds.Name, hashes[3]))
	e.waitForHashes(t, ds, map[string]string{nodes[0]: hashes[3], nodes[1]: hashes[4]})
	e.setImage(t, ds.Name, "registry.example/agent:6.0")
	hashes = append(hashes, e.waitForNewHash(t, ds.Name, hashes[4]))
	e.waitForHashes(t, ds, map[string]string{nodes[0]: hashes[3], nodes[1]: hashes[5]})

	// Of the old revisions, hashes[3] is live and hashes[4] is not: with a limit of 1 the
	// live one stays, although it is the oldest.
	e.waitForRevisions(t, hashes[5], hashes[3])
	e.WaitForNoWrites(t, idlePeriod)
	if revs := e.revisions(t); len(revs) != 2 {
		t.Errorf("%d revisions after the controller settled, want 2", len(revs))
	}
}

// Setting the template back to an earlier one reuses its revision, renumbered as the
// newest, instead of creating another.
func TestRollbackReusesTheOldRevision(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a")
	ds, _ := e.waitForSettled(t, e.daemonSets().Create(t, newDS("agent")).Name, nodes)
	h1 := ds.Status.DaemonSetHash

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, h1)
	e.waitForSettled(t, ds.Name, nodes)
	revs := e.waitForRevisions(t, h1, h2)
	if revs[h1].Revision != 1 || revs[h2].Revision != 2 {
		t.Fatalf("revision numbers %d and %d, want 1 and 2", revs[h1].Revision, revs[h2].Revision)
	}
	r1 := revs[h1]

	e.setImage(t, ds.Name, image1)
	back := e.waitForNewHash(t, ds.Name, h2)
	if back != h1 {
		t.Errorf("the rollback's hash is %s, want the first revision's %s", back, h1)
	}
	e.waitForSettled(t, ds.Name, nodes)
	err := framework.WaitFor(e.Ctx, waitTimeout, "the first revision to be renumbered 3", func(ctx context.Context) (bool, error) {
		rev, err := e.Client.AppsV1().ControllerRevisions(e.Namespace).Get(ctx, r1.Name, metav1.GetOptions{})
		return err == nil && rev.Revision == 3, nil
	})
	if err != nil {
		t.Error(err)
	}
	if revs := e.revisions(t); len(revs) != 2 {
		t.Errorf("%d revisions after the rollback, want the 2 there were", len(revs))
	}
}
