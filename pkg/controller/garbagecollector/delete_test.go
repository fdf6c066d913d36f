package garbagecollector

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/gcgraph"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// outcome is what the attempt-to-delete worker tells the queue.
type outcome string

const (
	forgotten outcome = "forget"
	requeued  outcome = "requeue quietly"
	failed    outcome = "error"
)

func outcomeOf(err error) outcome {
	switch {
	case err == nil:
		return forgotten
	case errors.Is(err, queue.ErrRequeue):
		return requeued
	default:
		return failed
	}
}

const (
	smp   = "application/strategic-merge-patch+json"
	merge = "application/merge-patch+json"
)

func TestAttemptToDelete(t *testing.T) {
	solid := object(replicaSetKind, testNamespace, "a", "A")
	solidB := object(replicaSetKind, testNamespace, "b", "B")
	waiting := object(replicaSetKind, testNamespace, "w", "W", deleting(metav1.FinalizerDeleteDependents))
	gone := object(replicaSetKind, testNamespace, "gone", "GONE")
	pod := func(mutate ...func(*metav1.PartialObjectMetadata)) *metav1.PartialObjectMetadata {
		return object(podKind, testNamespace, "p", "P", mutate...)
	}
	unknown := metav1.OwnerReference{APIVersion: "unknown.group/v1", Kind: "UnknownType", Name: "u", UID: "UNKNOWN"}

	tests := []struct {
		name string
		// server holds the objects the API server has; graph those observed, in order.
		server, graph []*metav1.PartialObjectMetadata
		item          types.UID
		setup         func(f *fixture)
		want          outcome
		wantWrites    []string
		wantQueued    []types.UID // queued to attempt-to-delete by the attempt
		wantVirtual   bool        // a virtual delete of the item was raised
		wantNoGetOf   string      // a GET that must not have happened ("resource ns/name")
	}{
		{name: "solid owner: nothing to do",
			server: []*metav1.PartialObjectMetadata{solid, pod(ownedBy(blocking(solid)))},
			graph:  []*metav1.PartialObjectMetadata{solid, pod(ownedBy(blocking(solid)))},
			item:   "P", want: forgotten},
		{name: "no owner references: nothing to do",
			server: []*metav1.PartialObjectMetadata{pod()}, graph: []*metav1.PartialObjectMetadata{pod()},
			item: "P", want: forgotten},
		{name: "dangling owner: deleted in the background",
			server: []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			item:   "P", want: forgotten,
			wantWrites: []string{"delete pods ns/p policy=Background uid=P rv=1"}},
		{name: "dangling owner, object asks to orphan its dependents: orphan delete",
			server: []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)), withFinalizers(metav1.FinalizerOrphanDependents))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)), withFinalizers(metav1.FinalizerOrphanDependents))},
			item:   "P", want: forgotten,
			wantWrites: []string{"delete pods ns/p policy=Orphan uid=P rv=1"}},
		{name: "dangling owner, object asks for foreground deletion: foreground delete",
			server: []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)), withFinalizers(metav1.FinalizerDeleteDependents))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)), withFinalizers(metav1.FinalizerDeleteDependents))},
			item:   "P", want: forgotten,
			wantWrites: []string{"delete pods ns/p policy=Foreground uid=P rv=1"}},
		{name: "owner replaced under the same name is dangling",
			server: []*metav1.PartialObjectMetadata{object(replicaSetKind, testNamespace, "a", "A2"), pod(ownedBy(ref(solid, nil)))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(solid, nil)))},
			item:   "P", want: forgotten,
			wantWrites: []string{"delete pods ns/p policy=Background uid=P rv=1"}},
		{name: "owner known absent: no GET of it",
			server: []*metav1.PartialObjectMetadata{solid, pod(ownedBy(ref(solid, nil)))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(solid, nil)))},
			setup: func(f *fixture) {
				f.c.absentOwners.Add(gcgraph.IdentityFromRef(ref(solid, nil), testNamespace))
			},
			item: "P", want: forgotten, wantNoGetOf: "replicasets ns/a",
			wantWrites: []string{"delete pods ns/p policy=Background uid=P rv=1"}},
		{name: "solid and dangling owners: the dangling reference is removed",
			server: []*metav1.PartialObjectMetadata{solid, pod(ownedBy(ref(solid, nil), ref(gone, nil)))},
			graph:  []*metav1.PartialObjectMetadata{solid, pod(ownedBy(ref(solid, nil), ref(gone, nil)))},
			item:   "P", want: forgotten,
			wantWrites: []string{`patch pods ns/p ` + smp + ` {"metadata":{"uid":"P","ownerReferences":[{"$patch":"delete","uid":"GONE"}]}}`}},
		{name: "solid and waiting owners: the waiting reference is removed",
			server: []*metav1.PartialObjectMetadata{solid, waiting, pod(ownedBy(blocking(waiting), ref(solid, nil)))},
			graph:  []*metav1.PartialObjectMetadata{solid, waiting, pod(ownedBy(blocking(waiting), ref(solid, nil)))},
			item:   "P", want: forgotten,
			wantWrites: []string{`patch pods ns/p ` + smp + ` {"metadata":{"uid":"P","ownerReferences":[{"$patch":"delete","uid":"W"}]}}`}},
		{name: "only a waiting owner, object has dependents: foreground delete",
			server: []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting)))},
			graph: []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting))),
				object(configMapKind, testNamespace, "c", "C", ownedBy(ref(pod(), nil)))},
			item: "P", want: forgotten,
			wantWrites: []string{"delete pods ns/p policy=Foreground uid=P rv=1"}},
		{name: "only a waiting owner, no dependents: background delete",
			server: []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting)))},
			graph:  []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting)))},
			item:   "P", want: forgotten,
			wantWrites: []string{"delete pods ns/p policy=Background uid=P rv=1"}},
		{name: "waiting owner and a dependent deleting its own dependents: unblock, then foreground delete",
			server: []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting), ref(gone, nil)))},
			graph: []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting), ref(gone, nil))),
				object(configMapKind, testNamespace, "c", "C", ownedBy(blocking(pod())), deleting(metav1.FinalizerDeleteDependents))},
			item: "P", want: forgotten,
			wantWrites: []string{
				`patch pods ns/p ` + smp + ` {"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"w","uid":"W","blockOwnerDeletion":false}],"uid":"P"}}`,
				"delete pods ns/p policy=Foreground uid=P rv=1",
			}},
		{name: "object gone: virtual delete",
			graph: []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			item:  "P", want: forgotten, wantVirtual: true},
		{name: "object replaced under the same name: virtual delete",
			server: []*metav1.PartialObjectMetadata{object(podKind, testNamespace, "p", "P2", ownedBy(ref(gone, nil)))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			item:   "P", want: forgotten, wantVirtual: true},
		{name: "being deleted without waiting for dependents: not even a GET",
			server: []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)), deleting("x/y"))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)), deleting("x/y"))},
			item:   "P", want: forgotten, wantNoGetOf: "pods ns/p"},
		{name: "foreground deletion with no blocking dependent left: finalizer removed",
			server: []*metav1.PartialObjectMetadata{object(replicaSetKind, testNamespace, "w", "W", deleting(metav1.FinalizerDeleteDependents, "x/y")),
				pod(ownedBy(ref(waiting, ptr.To(false))))},
			graph: []*metav1.PartialObjectMetadata{object(replicaSetKind, testNamespace, "w", "W", deleting(metav1.FinalizerDeleteDependents, "x/y")),
				pod(ownedBy(ref(waiting, ptr.To(false))))},
			item: "W", want: forgotten,
			wantWrites: []string{`patch replicasets ns/w ` + merge + ` {"metadata":{"resourceVersion":"1","finalizers":["x/y"]}}`}},
		{name: "foreground deletion with a blocking dependent: the dependent is queued",
			server: []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting)))},
			graph:  []*metav1.PartialObjectMetadata{waiting, pod(ownedBy(blocking(waiting)))},
			item:   "W", want: forgotten, wantQueued: []types.UID{"P"}},
		{name: "cluster-scoped object with a namespaced owner: forgotten after one GET",
			server: []*metav1.PartialObjectMetadata{object(clusterRoleKind, "", "cr", "CR", ownedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "CM"}))},
			graph:  []*metav1.PartialObjectMetadata{object(clusterRoleKind, "", "cr", "CR", ownedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "CM"}))},
			item:   "CR", want: forgotten, wantNoGetOf: "configmaps /cm"},
		{name: "the unverified namespaced owner of a cluster-scoped object: forgotten without a request",
			graph: []*metav1.PartialObjectMetadata{object(clusterRoleKind, "", "cr", "CR", ownedBy(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "CM"}))},
			item:  "CM", want: forgotten, wantNoGetOf: "configmaps /cm"},
		{name: "owner of an unknown kind: requeued quietly",
			server: []*metav1.PartialObjectMetadata{pod(ownedBy(unknown))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(unknown))},
			item:   "P", want: requeued},
		{name: "unknown kind of an unverified owner: requeued quietly",
			graph: []*metav1.PartialObjectMetadata{pod(ownedBy(unknown))},
			item:  "UNKNOWN", want: requeued},
		{name: "unverified owner that exists: requeued until observed",
			server: []*metav1.PartialObjectMetadata{solid, pod(ownedBy(ref(solid, nil)))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(solid, nil)))},
			item:   "A", want: requeued},
		{name: "custom resource rejects strategic merge patches: JSON merge patch",
			server: []*metav1.PartialObjectMetadata{solid, object(widgetKind, testNamespace, "w1", "WD", ownedBy(ref(solid, nil), ref(gone, nil)), withResourceVersion("7"))},
			graph:  []*metav1.PartialObjectMetadata{solid, object(widgetKind, testNamespace, "w1", "WD", ownedBy(ref(solid, nil), ref(gone, nil)), withResourceVersion("7"))},
			setup: func(f *fixture) {
				f.failPatch(smp, apierrors.NewGenericServerResponse(415, "patch", schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w1", "", 0, false))
			},
			item: "WD", want: forgotten,
			wantWrites: []string{
				`patch widgets ns/w1 ` + smp + ` {"metadata":{"uid":"WD","ownerReferences":[{"$patch":"delete","uid":"GONE"}]}}`,
				`patch widgets ns/w1 ` + merge + ` {"metadata":{"resourceVersion":"7","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"A"}]}}`,
			}},
		{name: "conflict, owner references unchanged: retried on the UID alone",
			server: []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			setup: func(f *fixture) {
				f.conflictOnFirstDelete()
				f.secondGetReturns(pod(ownedBy(ref(gone, nil)), withResourceVersion("2")))
			},
			item: "P", want: forgotten,
			wantWrites: []string{"delete pods ns/p policy=Background uid=P rv=1", "delete pods ns/p policy=Background uid=P rv=<none>"}},
		{name: "conflict, owner references changed: the conflict is returned",
			server: []*metav1.PartialObjectMetadata{solidB, pod(ownedBy(ref(gone, nil)))},
			graph:  []*metav1.PartialObjectMetadata{solidB, pod(ownedBy(ref(gone, nil)))},
			setup: func(f *fixture) {
				f.conflictOnFirstDelete()
				f.secondGetReturns(pod(ownedBy(ref(gone, nil), ref(solidB, nil)), withResourceVersion("2")))
			},
			item: "P", want: failed,
			wantWrites: []string{"delete pods ns/p policy=Background uid=P rv=1"}},
		{name: "conflict, object gone meanwhile: virtual delete",
			server: []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			graph:  []*metav1.PartialObjectMetadata{pod(ownedBy(ref(gone, nil)))},
			setup: func(f *fixture) {
				f.conflictOnFirstDelete()
				f.secondGetReturns(nil)
			},
			item: "P", want: forgotten, wantVirtual: true,
			wantWrites: []string{"delete pods ns/p policy=Background uid=P rv=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.server...)
			f.observeAll(tc.graph...)
			if tc.setup != nil {
				tc.setup(f)
			}
			item := f.node(tc.item)

			err := f.c.attemptToDeleteWorker(f.ctx, item)
			if got := outcomeOf(err); got != tc.want {
				t.Errorf("outcome = %s (%v), want %s", got, err, tc.want)
			}
			if diff := cmp.Diff(tc.wantWrites, f.writes()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			queued, _ := f.deletes.take()
			if diff := cmp.Diff(tc.wantQueued, uids(queued)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
			changes, _ := f.changes.take()
			raised := slices.ContainsFunc(changes, func(ch *graphChange) bool { return ch.virtual && ch.identity == item.Identity() })
			if raised != tc.wantVirtual || len(changes) > 1 {
				t.Errorf("graph changes raised: %v, want a virtual delete of the item: %v", changes, tc.wantVirtual)
			}
			if tc.wantNoGetOf != "" && slices.Contains(f.gets(), tc.wantNoGetOf) {
				t.Errorf("GET %s sent; requests: %v", tc.wantNoGetOf, f.gets())
			}
		})
	}
}

// failPatch makes every patch of patchType fail with err.
func (f *fixture) failPatch(patchType string, err error) {
	f.client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if string(action.(clienttesting.PatchAction).GetPatchType()) == patchType {
			return true, nil, err
		}
		return false, nil, nil
	})
}

// conflictOnFirstDelete makes the first delete answer 409.
func (f *fixture) conflictOnFirstDelete() {
	var calls atomic.Int32
	f.client.PrependReactor("delete", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) == 1 {
			return true, nil, apierrors.NewConflict(action.GetResource().GroupResource(), "p", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
}

// secondGetReturns answers the second and later GETs of obj's resource with obj (NotFound
// when nil).
func (f *fixture) secondGetReturns(obj *metav1.PartialObjectMetadata) {
	var calls atomic.Int32
	f.client.PrependReactor("get", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) == 1 {
			return false, nil, nil
		}
		if obj == nil {
			return true, nil, apierrors.NewNotFound(action.GetResource().GroupResource(), "p")
		}
		return true, obj.DeepCopy(), nil
	})
}

func TestAttemptToDeleteSkipsStaleVirtualItems(t *testing.T) {
	f := newFixture(t)
	// Observed in another namespace than its dependent's, the owner replaces the virtual
	// node with a new one: the graph holds another, observed node for its UID.
	owner := object(configMapKind, "b", "cm", "U")
	f.observeAll(object(secretKind, testNamespace, "s", "S", ownedBy(ref(owner, nil))))
	stale := f.node("U")
	f.observe(objectAdded, owner)
	if f.node("U") == stale || !stale.Virtual() {
		t.Fatal("the virtual node was not replaced")
	}
	if err := f.c.attemptToDeleteWorker(f.ctx, stale); err != nil {
		t.Errorf("stale virtual item: %v, want it forgotten", err)
	}
	// Removed from the graph altogether.
	f.observe(objectDeleted, owner)
	if err := f.c.attemptToDeleteWorker(f.ctx, stale); err != nil {
		t.Errorf("virtual item no longer in the graph: %v, want it forgotten", err)
	}
	if got := f.client.Actions(); len(got) != 0 {
		t.Errorf("requests sent for stale items: %v", got)
	}
}

func TestPropagationFor(t *testing.T) {
	tests := []struct {
		finalizers []string
		want       metav1.DeletionPropagation
	}{
		{nil, metav1.DeletePropagationBackground},
		{[]string{"x/y"}, metav1.DeletePropagationBackground},
		{[]string{metav1.FinalizerOrphanDependents}, metav1.DeletePropagationOrphan},
		{[]string{metav1.FinalizerDeleteDependents}, metav1.DeletePropagationForeground},
		{[]string{metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents}, metav1.DeletePropagationOrphan},
	}
	for _, tc := range tests {
		obj := object(podKind, testNamespace, "p", "P", withFinalizers(tc.finalizers...))
		if got := propagationFor(obj); got != tc.want {
			t.Errorf("finalizers %v: %s, want %s", tc.finalizers, got, tc.want)
		}
	}
}
