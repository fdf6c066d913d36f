package garbagecollector

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
)

func TestAttemptToOrphan(t *testing.T) {
	owner := object(replicaSetKind, testNamespace, "rs", "RS", deleting(metav1.FinalizerOrphanDependents, "x/y"))
	other := object(replicaSetKind, testNamespace, "other", "OTHER")
	p1 := object(podKind, testNamespace, "p1", "P1", ownedBy(blocking(owner)))
	p2 := object(podKind, testNamespace, "p2", "P2", ownedBy(ref(other, nil), blocking(owner)))
	gonePod := object(podKind, testNamespace, "p3", "P3", ownedBy(blocking(owner)))
	widget := object(widgetKind, testNamespace, "w", "W", ownedBy(ref(other, nil), blocking(owner)), withResourceVersion("9"))
	const ownerID = "[apps/v1/ReplicaSet, namespace: ns, name: rs, uid: RS]"
	releaseP1 := `patch pods ns/p1 ` + smp + ` {"metadata":{"uid":"P1","ownerReferences":[{"$patch":"delete","uid":"RS"}]}}`
	releaseP2 := `patch pods ns/p2 ` + smp + ` {"metadata":{"uid":"P2","ownerReferences":[{"$patch":"delete","uid":"RS"}]}}`
	releaseP3 := `patch pods ns/p3 ` + smp + ` {"metadata":{"uid":"P3","ownerReferences":[{"$patch":"delete","uid":"RS"}]}}`
	finalize := `patch replicasets ns/rs ` + merge + ` {"metadata":{"resourceVersion":"1","finalizers":["x/y"]}}`

	tests := []struct {
		name         string
		server       []*metav1.PartialObjectMetadata
		graph        []*metav1.PartialObjectMetadata
		setup        func(f *fixture)
		wantErr      string // prefix
		wantWrites   []string
		wantReleased map[string][]string // remaining owner UIDs of dependents in the API server
	}{
		{name: "every dependent released in parallel, then the finalizer removed",
			server:       []*metav1.PartialObjectMetadata{owner, other, p1, p2},
			graph:        []*metav1.PartialObjectMetadata{owner, other, p1, p2, gonePod},
			wantWrites:   []string{releaseP1, releaseP2, releaseP3, finalize},
			wantReleased: map[string][]string{"p1": nil, "p2": {"OTHER"}}},
		{name: "a failed release keeps the finalizer",
			server: []*metav1.PartialObjectMetadata{owner, other, p1, p2},
			graph:  []*metav1.PartialObjectMetadata{owner, other, p1, p2},
			setup: func(f *fixture) {
				f.client.PrependReactor("patch", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
					if action.(clienttesting.PatchAction).GetName() == "p2" {
						return true, nil, apierrors.NewInternalError(errors.New("etcd down"))
					}
					return false, nil, nil
				})
			},
			wantErr:    "failed to orphan dependents of owner " + ownerID + ", got errors: orphaning [v1/Pod, namespace: ns, name: p2, uid: P2] failed, Internal error occurred: etcd down",
			wantWrites: []string{releaseP1, releaseP2}},
		{name: "custom resource dependent: JSON merge patch",
			server: []*metav1.PartialObjectMetadata{owner, other, widget},
			graph:  []*metav1.PartialObjectMetadata{owner, other, widget},
			setup: func(f *fixture) {
				f.failPatch(smp, apierrors.NewGenericServerResponse(415, "patch", schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w", "", 0, false))
			},
			wantWrites: []string{
				`patch widgets ns/w ` + smp + ` {"metadata":{"uid":"W","ownerReferences":[{"$patch":"delete","uid":"RS"}]}}`,
				`patch widgets ns/w ` + merge + ` {"metadata":{"resourceVersion":"9","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"other","uid":"OTHER"}]}}`,
				finalize,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.server...)
			f.observeAll(tc.graph...)
			if tc.setup != nil {
				tc.setup(f)
			}
			err := f.c.attemptToOrphanWorker(f.ctx, f.node("RS"))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
			writes := f.writes()
			// Releases run in parallel: compare them as a set, and the finalizer patch last.
			releases := writes
			if n := len(writes); n > 0 && strings.Contains(writes[n-1], "finalizers") {
				releases = writes[:n-1]
			}
			slices.SortStableFunc(releases, func(a, b string) int {
				return strings.Compare(strings.Fields(a)[2], strings.Fields(b)[2]) // by object; each one's patches in order
			})
			if diff := cmp.Diff(tc.wantWrites, writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			for name, want := range tc.wantReleased {
				got, err := f.client.Resource(podResource).Namespace(testNamespace).Get(f.ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var owners []string
				for _, r := range got.OwnerReferences {
					owners = append(owners, string(r.UID))
				}
				if diff := cmp.Diff(want, owners); diff != "" {
					t.Errorf("%s owners after orphaning (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

var podResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func TestRemoveFinalizerPatch(t *testing.T) {
	tests := []struct {
		finalizers []string
		want       string
	}{
		{[]string{"x/y", "a/b"}, `{"metadata":{"resourceVersion":"5","finalizers":["x/y","a/b"]}}`},
		{nil, `{"metadata":{"resourceVersion":"5","finalizers":null}}`},
		{[]string{}, `{"metadata":{"resourceVersion":"5","finalizers":null}}`},
	}
	for _, tc := range tests {
		got, err := RemoveFinalizerPatch("5", tc.finalizers)
		if err != nil || string(got) != tc.want {
			t.Errorf("RemoveFinalizerPatch(%v) = %s, %v; want %s", tc.finalizers, got, err, tc.want)
		}
	}
}

func TestRemoveFinalizer(t *testing.T) {
	rs := func(finalizers ...string) *metav1.PartialObjectMetadata {
		return object(replicaSetKind, testNamespace, "rs", "RS", deleting(finalizers...), withResourceVersion("3"))
	}
	conflicts := func(n int32) func(f *fixture) {
		return func(f *fixture) {
			var calls atomic.Int32
			f.client.PrependReactor("patch", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if calls.Add(1) <= n {
					return true, nil, apierrors.NewConflict(action.GetResource().GroupResource(), "rs", errors.New("modified"))
				}
				return false, nil, nil
			})
		}
	}
	const patchOrphanOut = `patch replicasets ns/rs ` + merge + ` {"metadata":{"resourceVersion":"3","finalizers":["a/b","c/d"]}}`
	tests := []struct {
		name       string
		server     []*metav1.PartialObjectMetadata
		finalizer  string
		setup      func(f *fixture)
		wantErr    string
		wantWrites []string
	}{
		{name: "only the named finalizer goes", server: []*metav1.PartialObjectMetadata{rs("a/b", metav1.FinalizerOrphanDependents, "c/d")},
			finalizer: metav1.FinalizerOrphanDependents, wantWrites: []string{patchOrphanOut}},
		{name: "last finalizer: null", server: []*metav1.PartialObjectMetadata{rs(metav1.FinalizerDeleteDependents)},
			finalizer:  metav1.FinalizerDeleteDependents,
			wantWrites: []string{`patch replicasets ns/rs ` + merge + ` {"metadata":{"resourceVersion":"3","finalizers":null}}`}},
		{name: "finalizer already gone: nothing", server: []*metav1.PartialObjectMetadata{rs("a/b")},
			finalizer: metav1.FinalizerOrphanDependents},
		{name: "object gone: nothing", finalizer: metav1.FinalizerOrphanDependents},
		{name: "one conflict: retried", server: []*metav1.PartialObjectMetadata{rs("a/b", metav1.FinalizerOrphanDependents, "c/d")},
			finalizer: metav1.FinalizerOrphanDependents, setup: conflicts(1), wantWrites: []string{patchOrphanOut, patchOrphanOut}},
		{name: "conflicts throughout: given up after the default backoff's 4 steps",
			server:    []*metav1.PartialObjectMetadata{rs("a/b", metav1.FinalizerOrphanDependents, "c/d")},
			finalizer: metav1.FinalizerOrphanDependents, setup: conflicts(100),
			wantErr:    "updateMaxRetries(4) has reached. The garbage collector will retry later for owner [apps/v1/ReplicaSet, namespace: ns, name: rs, uid: RS]",
			wantWrites: []string{patchOrphanOut, patchOrphanOut, patchOrphanOut, patchOrphanOut}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.server...)
			if tc.setup != nil {
				tc.setup(f)
			}
			id := identityOf(rs(), replicaSetKind)
			err := f.c.removeFinalizer(f.ctx, id, tc.finalizer)
			if got := errString(err); got != tc.wantErr {
				t.Errorf("error = %q, want %q", got, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantWrites, f.writes()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
