package refmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var (
	rsGVK     = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	podsGR    = schema.GroupResource{Resource: "pods"}
	deletedAt = ptr.To(metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)))
)

// sentPatch is one body a recordingPatcher received.
type sentPatch struct {
	target string
	body   string
}

// recordingPatcher is a StrategicMergePatcher whose Send records bodies and returns err.
type recordingPatcher struct {
	sent []sentPatch
	err  error
}

func (r *recordingPatcher) patcher(kind string) *StrategicMergePatcher {
	return &StrategicMergePatcher{ObjectKind: kind, Send: func(_ context.Context, ns, name string, body []byte) error {
		r.sent = append(r.sent, sentPatch{target: ns + "/" + name, body: string(body)})
		return r.err
	}}
}

func ownerRS(deleting bool) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: "owner-uid"}}
	if deleting {
		rs.DeletionTimestamp = deletedAt
	}
	return rs
}

func controllerRef(uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: uid, Controller: ptr.To(true)}}
}

func pod(name string, refs []metav1.OwnerReference, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID(name + "-uid"),
		Labels: map[string]string{"app": "web"}, OwnerReferences: refs,
	}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

const (
	adoptBody   = `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"owner-uid","controller":true,"blockOwnerDeletion":true}],"uid":"p-uid"}}`
	releaseBody = `{"metadata":{"uid":"p-uid","ownerReferences":[{"$patch":"delete","uid":"owner-uid"}]}}`
)

func TestClaimDecisionTable(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "x", "immutable")})
	boom := errors.New("boom")
	tests := []struct {
		name          string
		ownerDeleting bool
		obj           *corev1.Pod
		match         bool
		patchErr      error
		canAdoptErr   error
		wantOwned     bool
		wantErr       string // substring; empty means no error
		wantBodies    []string
	}{
		{name: "1 controlled by another UID", obj: pod("p", controllerRef("other")), match: true},
		{name: "2 ours and matching", obj: pod("p", controllerRef("owner-uid")), match: true, wantOwned: true},
		{name: "2 ours and matching, owner being deleted", ownerDeleting: true, obj: pod("p", controllerRef("owner-uid")), match: true, wantOwned: true},
		{name: "3 ours, no match, owner being deleted", ownerDeleting: true, obj: pod("p", controllerRef("owner-uid"))},
		{name: "4 ours, no match: release", obj: pod("p", controllerRef("owner-uid")), wantBodies: []string{releaseBody}},
		{name: "4 release NotFound ignored", obj: pod("p", controllerRef("owner-uid")), patchErr: apierrors.NewNotFound(podsGR, "p"), wantBodies: []string{releaseBody}},
		{name: "4 release Invalid ignored", obj: pod("p", controllerRef("owner-uid")), patchErr: invalid, wantBodies: []string{releaseBody}},
		{name: "4 release other error returned", obj: pod("p", controllerRef("owner-uid")), patchErr: boom, wantErr: "boom", wantBodies: []string{releaseBody}},
		{name: "5 orphan, owner being deleted", ownerDeleting: true, obj: pod("p", nil), match: true},
		{name: "5 orphan, no match", obj: pod("p", nil)},
		{name: "6 orphan being deleted", obj: pod("p", nil, func(p *corev1.Pod) { p.DeletionTimestamp = deletedAt }), match: true},
		{name: "7 orphan in another namespace", obj: pod("p", nil, func(p *corev1.Pod) { p.Namespace = "elsewhere" }), match: true},
		{name: "8 orphan adopted", obj: pod("p", nil), match: true, wantOwned: true, wantBodies: []string{adoptBody}},
		{
			name:  "8 orphan with a non-controller ref adopted",
			obj:   pod("p", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}}),
			match: true, wantOwned: true, wantBodies: []string{adoptBody},
		},
		{name: "8 adopt NotFound", obj: pod("p", nil), match: true, patchErr: apierrors.NewNotFound(podsGR, "p"), wantBodies: []string{adoptBody}},
		{name: "8 adopt Invalid (uid changed) returned", obj: pod("p", nil), match: true, patchErr: invalid, wantErr: "Invalid value", wantBodies: []string{adoptBody}},
		{
			name: "8 canAdopt error: no patch", obj: pod("p", nil), match: true, canAdoptErr: errors.New("owner gone"),
			wantErr: "not adopting Pod ns/p (uid p-uid): owner gone",
		},
		{
			// The live recheck of an owner that is gone yields the owner's NotFound; it
			// must fail the claim, not pass for the object being gone.
			name: "8 canAdopt NotFound for the owner: returned", obj: pod("p", nil), match: true,
			canAdoptErr: fmt.Errorf("reading the owner live before adopting: %w", apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "owner")),
			wantErr:     `not adopting Pod ns/p (uid p-uid): reading the owner live before adopting: replicasets.apps "owner" not found`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingPatcher{err: tc.patchErr}
			m := New(ownerRS(tc.ownerDeleting), rsGVK, labels.Everything(),
				func(context.Context) error { return tc.canAdoptErr }, rec.patcher("Pod"))
			match := func(metav1.Object) bool { return tc.match }
			owned, err := m.Claim(context.Background(), tc.obj, match, m.Adopt, m.Release)
			if owned != tc.wantOwned {
				t.Errorf("owned = %v, want %v", owned, tc.wantOwned)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			var bodies []string
			for _, s := range rec.sent {
				bodies = append(bodies, s.body)
			}
			if diff := cmp.Diff(tc.wantBodies, bodies); diff != "" {
				t.Errorf("patch bodies (-want +got):\n%s", diff)
			}
		})
	}
}

// Claim itself ignores NotFound from any release func (row 4), not only from Release.
func TestClaimIgnoresReleaseNotFound(t *testing.T) {
	m := New(ownerRS(false), rsGVK, labels.Everything(), nil, (&recordingPatcher{}).patcher("Pod"))
	release := func(context.Context, metav1.Object) error { return apierrors.NewNotFound(podsGR, "p") }
	owned, err := m.Claim(context.Background(), pod("p", controllerRef("owner-uid")),
		func(metav1.Object) bool { return false }, m.Adopt, release)
	if owned || err != nil {
		t.Errorf("Claim = (%v, %v), want (false, nil)", owned, err)
	}
}

func TestCanAdoptRunsOnceLazily(t *testing.T) {
	selector := labels.SelectorFromSet(labels.Set{"app": "web"})
	t.Run("never when nothing is adopted", func(t *testing.T) {
		calls := 0
		m := New(ownerRS(false), rsGVK, selector, func(context.Context) error { calls++; return nil }, (&recordingPatcher{}).patcher("Pod"))
		pods := []*corev1.Pod{
			pod("a", controllerRef("owner-uid")),
			pod("b", controllerRef("other")),
			pod("c", nil, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
		}
		owned, err := m.ClaimPods(context.Background(), pods)
		if err != nil || len(owned) != 1 || owned[0].Name != "a" {
			t.Fatalf("ClaimPods = (%v, %v)", owned, err)
		}
		if calls != 0 {
			t.Errorf("canAdopt ran %d times, want 0", calls)
		}
	})
	t.Run("once across many adoptions", func(t *testing.T) {
		calls := 0
		rec := &recordingPatcher{}
		m := New(ownerRS(false), rsGVK, selector, func(context.Context) error { calls++; return nil }, rec.patcher("Pod"))
		var pods []*corev1.Pod
		for i := range 5 {
			pods = append(pods, pod(fmt.Sprintf("orphan-%d", i), nil))
		}
		owned, err := m.ClaimPods(context.Background(), pods)
		if err != nil || len(owned) != 5 {
			t.Fatalf("ClaimPods = (%d owned, %v), want 5", len(owned), err)
		}
		if calls != 1 {
			t.Errorf("canAdopt ran %d times, want 1", calls)
		}
		if len(rec.sent) != 5 {
			t.Errorf("%d patches sent, want 5", len(rec.sent))
		}
		for i, s := range rec.sent {
			if want := fmt.Sprintf(`"uid":"orphan-%d-uid"}}`, i); !strings.HasSuffix(s.body, want) {
				t.Errorf("adopt body %s does not carry the object's uid", s.body)
			}
		}
	})
	t.Run("a failure is remembered", func(t *testing.T) {
		calls := 0
		rec := &recordingPatcher{}
		m := New(ownerRS(false), rsGVK, selector, func(context.Context) error { calls++; return errors.New("deleted") }, rec.patcher("Pod"))
		owned, err := m.ClaimPods(context.Background(), []*corev1.Pod{pod("a", nil), pod("b", nil), pod("c", controllerRef("owner-uid"))})
		if calls != 1 || len(rec.sent) != 0 {
			t.Errorf("canAdopt calls = %d, patches = %d; want 1 and 0", calls, len(rec.sent))
		}
		// ClaimAll goes past the errors: the owned pod is still returned.
		if len(owned) != 1 || owned[0].Name != "c" {
			t.Errorf("owned = %v, want [c]", owned)
		}
		var agg interface{ Errors() []error }
		if !errors.As(err, &agg) || len(agg.Errors()) != 2 {
			t.Errorf("err = %v, want an aggregate of 2 errors", err)
		}
	})
}

func TestClaimPodsFilters(t *testing.T) {
	rec := &recordingPatcher{}
	m := New(ownerRS(false), rsGVK, labels.SelectorFromSet(labels.Set{"app": "web"}), nil, rec.patcher("Pod"))
	notTerminal := func(p *corev1.Pod) bool { return p.Status.Phase != corev1.PodSucceeded }
	pods := []*corev1.Pod{
		pod("keep", controllerRef("owner-uid")),
		pod("done", controllerRef("owner-uid"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
	}
	owned, err := m.ClaimPods(context.Background(), pods, notTerminal)
	if err != nil || len(owned) != 1 || owned[0].Name != "keep" {
		t.Fatalf("ClaimPods = (%v, %v)", owned, err)
	}
	// The filtered-out pod is ours but does not match: it is released.
	if len(rec.sent) != 1 || rec.sent[0].target != "ns/done" {
		t.Errorf("patches = %v, want one release of ns/done", rec.sent)
	}
}

func TestClaimReplicaSetsWithFinalizers(t *testing.T) {
	rec := &recordingPatcher{}
	owner := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "d-uid"}}
	m := New(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"), labels.SelectorFromSet(labels.Set{"app": "web"}), nil,
		rec.patcher("ReplicaSet"), "example.com/f")
	rss := []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", UID: "o-uid", Labels: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stale", UID: "s-uid", Labels: map[string]string{"app": "old"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "d", UID: "d-uid", Controller: ptr.To(true)}}}},
	}
	owned, err := m.ClaimReplicaSets(context.Background(), rss)
	if err != nil || len(owned) != 1 || owned[0].Name != "orphan" {
		t.Fatalf("ClaimReplicaSets = (%v, %v)", owned, err)
	}
	want := []sentPatch{
		{target: "ns/orphan", body: `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"d-uid","controller":true,"blockOwnerDeletion":true}],"uid":"o-uid","finalizers":["example.com/f"]}}`},
		{target: "ns/stale", body: `{"metadata":{"uid":"s-uid","ownerReferences":[{"$patch":"delete","uid":"d-uid"}],"$deleteFromPrimitiveList/finalizers":["example.com/f"]}}`},
	}
	if diff := cmp.Diff(want, rec.sent, cmp.AllowUnexported(sentPatch{})); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
}

func TestClusterScopedOwnerAdoptsAcrossNamespaces(t *testing.T) {
	rec := &recordingPatcher{}
	owner := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "n-uid"}}
	m := New(owner, corev1.SchemeGroupVersion.WithKind("Node"), labels.Everything(), nil, rec.patcher("Pod"))
	owned, err := m.Claim(context.Background(), pod("p", nil), m.SelectorMatches, m.Adopt, m.Release)
	if !owned || err != nil || len(rec.sent) != 1 {
		t.Errorf("Claim = (%v, %v) with %d patches; row 7 only applies to namespaced owners", owned, err, len(rec.sent))
	}
}
