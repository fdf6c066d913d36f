package cloneset

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
)

// createdRevisions returns the revisions sent to the API server.
func (f *fixture) createdRevisions() []*appsv1.ControllerRevision {
	var revisions []*appsv1.ControllerRevision
	for _, a := range f.actions("create", "controllerrevisions") {
		revisions = append(revisions, a.(clienttesting.CreateAction).GetObject().(*appsv1.ControllerRevision))
	}
	return revisions
}

func TestNewCloneSetGetsItsFirstRevision(t *testing.T) {
	cs := newCS(0)
	cs.Annotations = map[string]string{"owner": "team-a"}
	f := newFixture(t, fixtureOption{}, cs)
	f.sync(cs)

	created := f.createdRevisions()
	if len(created) != 1 {
		t.Fatalf("created %d revisions, want 1", len(created))
	}
	want, err := clonesetutil.NewRevision(cs, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := created[0]
	if got.Name != want.Name || string(got.Data.Raw) != string(want.Data.Raw) || got.Revision != 1 ||
		got.Labels[clonesetutil.RevisionHashLabelKey] != clonesetutil.ShortHash(want.Name) || got.Labels["app"] != "cs" ||
		got.Annotations["owner"] != "team-a" || got.Annotations[appsv1beta1.CloneSetVolumeClaimTemplateHashAnnotationKey] != "" {
		t.Errorf("created revision %s (%d) labels %v annotations %v data %s, want %s", got.Name, got.Revision, got.Labels, got.Annotations, got.Data.Raw, want.Name)
	}
	status := f.lastStatus()
	if status == nil || status.UpdateRevision != got.Name || status.CurrentRevision != got.Name || ptr.Deref(status.CollisionCount, -1) != 0 ||
		status.LabelSelector != "app=cs" || status.ObservedGeneration != 1 {
		t.Errorf("status = %+v, want both revisions %s, collision count 0, selector app=cs", status, got.Name)
	}
}

func TestExistingRevisionIsReused(t *testing.T) {
	cs := newCS(0)
	revision := revisionOf(t, cs, 3)
	cs.Status = appsv1beta1.CloneSetStatus{ObservedGeneration: 1, UpdateRevision: revision.Name, CurrentRevision: revision.Name,
		CollisionCount: ptr.To[int32](0), LabelSelector: "app=cs"}
	f := newFixture(t, fixtureOption{}, cs, revision)
	f.sync(cs)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("a CloneSet at its revision with nothing to do wrote %d times: %v", len(writes), writes)
	}
}

func TestRevisionWrittenByOpenKruiseIsFoundByItsData(t *testing.T) {
	// OpenKruise's bytes for this template (kruisepod's golden revision data), under a name
	// and number bosun did not choose: found by its data, nothing is created.
	cs := newCS(0)
	cs.Spec.Template.Labels = map[string]string{"app": "cs"}
	revision := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: "cs-5d8f9c7b6", Namespace: testNamespace, Labels: map[string]string{"app": "cs", clonesetutil.RevisionHashLabelKey: "5d8f9c7b6"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "cs", UID: cs.UID, Controller: ptr.To(true)}},
		},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"cs"}},"spec":{"containers":[{"image":"img:v1","name":"c","resources":{}}]}}}}`)},
		Revision: 7,
	}
	f := newFixture(t, fixtureOption{}, cs, revision)
	f.sync(cs)
	if created := f.createdRevisions(); len(created) != 0 {
		t.Errorf("created %s although OpenKruise's revision records the template", created[0].Name)
	}
	if status := f.lastStatus(); status == nil || status.UpdateRevision != "cs-5d8f9c7b6" {
		t.Errorf("status = %+v, want update revision cs-5d8f9c7b6", status)
	}
}

func TestRollbackRenumbersTheOldRevision(t *testing.T) {
	cs := newCS(0)
	old := revisionOf(t, cs, 1)
	delete(old.Annotations, appsv1beta1.CloneSetVolumeClaimTemplateHashAnnotationKey) // written before the hash existed
	newer := revisionOf(t, withImage(newCS(0), "img:v2"), 2)
	f := newFixture(t, fixtureOption{}, cs, old, newer)
	f.sync(cs)

	if created := f.createdRevisions(); len(created) != 0 {
		t.Errorf("created %d revisions on a rollback, want none", len(created))
	}
	updates := f.actions("update", "controllerrevisions")
	if len(updates) != 1 {
		t.Fatalf("updated %d revisions, want 1", len(updates))
	}
	updated := updates[0].(clienttesting.UpdateAction).GetObject().(*appsv1.ControllerRevision)
	if updated.Name != old.Name || updated.Revision != 3 {
		t.Errorf("updated %s to revision %d, want %s to 3", updated.Name, updated.Revision, old.Name)
	}
	if hash, ok := updated.Annotations[appsv1beta1.CloneSetVolumeClaimTemplateHashAnnotationKey]; !ok || hash != "" {
		t.Errorf("volume-claim-template hash annotation = %q (%v), want it added empty", hash, ok)
	}
	if status := f.lastStatus(); status == nil || status.UpdateRevision != old.Name {
		t.Errorf("status = %+v, want update revision %s", status, old.Name)
	}
}

func TestRevisionNameCollision(t *testing.T) {
	cs := newCS(0)
	mine, err := clonesetutil.NewRevision(cs, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's revision holds the name with other data; it is not in the cache (it
	// does not match the selector).
	clash := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: mine.Name, Namespace: testNamespace},
		Data:       runtime.RawExtension{Raw: []byte(`{"other":true}`)},
	}
	f := newFixture(t, fixtureOption{}, cs)
	if err := f.kubeClient.Tracker().Add(clash); err != nil {
		t.Fatal(err)
	}
	f.sync(cs)

	created := f.createdRevisions()
	if len(created) != 2 {
		t.Fatalf("%d create attempts, want 2 (the clash, then the next name)", len(created))
	}
	second := created[1]
	wantName := clonesetutil.RevisionNameFor(cs.Name, mine.Data.Raw, 1)
	if second.Name != wantName {
		t.Errorf("second attempt named %s, want %s", second.Name, wantName)
	}
	// As OpenKruise's do, the labels keep the hash of the first name.
	if second.Labels[clonesetutil.RevisionHashLabelKey] != clonesetutil.ShortHash(mine.Name) {
		t.Errorf("hash label = %s, want %s", second.Labels[clonesetutil.RevisionHashLabelKey], clonesetutil.ShortHash(mine.Name))
	}
	if status := f.lastStatus(); status == nil || ptr.Deref(status.CollisionCount, 0) != 1 || status.UpdateRevision != wantName {
		t.Errorf("status = %+v, want collision count 1 and update revision %s", status, wantName)
	}
}

func TestRevisionCreatedEarlierButNotCachedIsUsed(t *testing.T) {
	cs := newCS(0)
	mine := revisionOf(t, cs, 1)
	f := newFixture(t, fixtureOption{}, cs)
	if err := f.kubeClient.Tracker().Add(mine); err != nil {
		t.Fatal(err)
	}
	f.sync(cs)
	if status := f.lastStatus(); status == nil || ptr.Deref(status.CollisionCount, 0) != 0 || status.UpdateRevision != mine.Name {
		t.Errorf("status = %+v, want the existing revision %s and no collision", status, mine.Name)
	}
}

func TestCurrentRevisionFromStatus(t *testing.T) {
	v1 := newCS(2)
	r1 := revisionOf(t, v1, 1)
	cs := withImage(newCS(2), "img:v2")
	r2 := revisionOf(t, cs, 2)
	cs.Status.CurrentRevision = r1.Name
	f := newFixture(t, fixtureOption{}, cs, r1, r2, newPod(v1, "aaaaa", r1), newPod(v1, "bbbbb", r1))
	f.sync(cs)
	status := f.lastStatus()
	if status == nil || status.CurrentRevision != r1.Name || status.UpdateRevision != r2.Name {
		t.Errorf("status = %+v, want current %s and update %s", status, r1.Name, r2.Name)
	}
}

func TestHistoryIsTruncated(t *testing.T) {
	images := []string{"img:v1", "img:v2", "img:v3", "img:v4", "img:v5"}
	var revisions []*appsv1.ControllerRevision
	for i, image := range images {
		revisions = append(revisions, revisionOf(t, withImage(newCS(1), image), int64(i+1)))
	}
	cs := withImage(newCS(1), "img:v5")
	cs.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	cs.Status.CurrentRevision = revisions[3].Name
	// A pod still runs v2: its revision stays.
	pod := newPod(withImage(newCS(1), "img:v2"), "aaaaa", revisions[1])
	objs := []runtime.Object{cs, pod}
	for _, r := range revisions {
		objs = append(objs, r)
	}
	f := newFixture(t, fixtureOption{}, objs...)
	f.sync(cs)
	// Dead: v1 and v3 (v2 is live, v4 current, v5 update); one is kept, the oldest goes.
	if deleted := f.deleted("controllerrevisions"); !slices.Equal(deleted, []string{revisions[0].Name}) {
		t.Errorf("deleted %v, want only %s", deleted, revisions[0].Name)
	}
}

func TestOrphanRevisionsOfTheSelectorAreHistory(t *testing.T) {
	cs := newCS(0)
	orphan := revisionOf(t, cs, 4)
	orphan.OwnerReferences = nil
	foreign := revisionOf(t, withImage(newCS(0), "img:v9"), 9)
	foreign.OwnerReferences[0].UID = "someone-else"
	f := newFixture(t, fixtureOption{}, cs, orphan, foreign)
	f.sync(cs)
	if created := f.createdRevisions(); len(created) != 0 {
		t.Errorf("created a revision although an orphan one of the selector records the template")
	}
	if status := f.lastStatus(); status == nil || status.UpdateRevision != orphan.Name {
		t.Errorf("status = %+v, want update revision %s", status, orphan.Name)
	}
}
