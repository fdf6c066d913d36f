package nodeimage

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

func TestCreatesTheNodeImageOnceTheNodeHasBeenReadyLongEnough(t *testing.T) {
	f := newFixture(t)
	labels := map[string]string{"zone": "a"}
	f.addNode(readyNode("n1", labels, t0.Add(-10*time.Second)))
	f.clearActions()

	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("wrote %v before the node was Ready for the creation delay", w)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: 20 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v (the rest of the delay)", got, want)
	}

	f.clock.Step(20 * time.Second)
	f.sync("n1")
	ni := f.nodeImage("n1")
	if ni == nil {
		t.Fatal("no NodeImage after the creation delay")
	}
	if !labelsEqual(ni.Labels, labels) || len(ni.Spec.Images) != 0 {
		t.Errorf("created %+v, want the node's labels and no images", ni.ObjectMeta)
	}
}

func TestNoNodeImageForANodeThatIsNotReady(t *testing.T) {
	f := newFixture(t)
	node := readyNode("n1", nil, t0.Add(-time.Hour))
	node.Status.Conditions[0].Status = corev1.ConditionFalse
	f.addNode(node)
	f.addNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	f.clearActions()
	f.sync("n1")
	f.sync("n2")
	if w := f.writes(); len(w) != 0 {
		t.Errorf("wrote %v for nodes that are not Ready", w)
	}
	if d := f.queue.Delayed(); len(d) != 0 {
		t.Errorf("requeued %v; a node's update brings it back when it turns Ready", d)
	}
}

func TestDeletesTheNodeImageOfAGoneNode(t *testing.T) {
	f := newFixture(t)
	f.addNodeImage(newNodeImage("gone", nil, nil))
	f.addNodeImage(newNodeImage("fake", map[string]string{appsv1beta1.FakeNodeImageLabelKey: "true"}, nil))
	deleting := readyNode("deleting", nil, t0.Add(-time.Hour))
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	f.addNode(deleting)
	f.addNodeImage(newNodeImage("deleting", nil, nil))
	f.clearActions()

	for _, name := range []string{"gone", "fake", "deleting"} {
		f.sync(name)
	}
	if f.nodeImage("gone") != nil || f.nodeImage("deleting") != nil {
		t.Error("the NodeImage of a missing or deleting node is still there")
	}
	if f.nodeImage("fake") == nil {
		t.Errorf("the NodeImage labelled %s was deleted", appsv1beta1.FakeNodeImageLabelKey)
	}
	// Deleting one that is already gone is not an error.
	f.sync("gone")
}

func TestRewritesTheSpec(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", map[string]string{"zone": "b", "gpu": "true"}, t0.Add(-time.Hour)))
	// Job "kept" is cached; "fresh" only exists on the server (the cache lags behind);
	// "replaced" is cached under its old UID and exists under a new one; "gone" is only
	// in the cache's past.
	f.addJob(job("kept", "kept-uid"), true, true)
	f.addJob(job("fresh", "fresh-uid"), false, true)
	f.addJob(job("replaced", "new-uid"), true, true)
	f.addSecret("kruise-daemon-config", "present")
	other := corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "Puller", Name: "p", UID: "other-uid"}
	noCreatedAt := tag("no-created-at", t0, 60)
	noCreatedAt.CreatedAt = nil
	expired := tag("expired", t0.Add(-time.Hour), 60, jobRef("kept", "kept-uid"))
	expiring := tag("expiring", t0.Add(-time.Hour), 600, jobRef("kept", "kept-uid"))
	ni := newNodeImage("n1", map[string]string{"zone": "a", "stray": "x"}, map[string]appsv1beta1.ImageSpec{
		"app": {
			PullSecrets: []appsv1beta1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "present"}, {Namespace: "kruise-daemon-config", Name: "absent"}},
			Tags: []appsv1beta1.ImageTagSpec{
				tag("kept", t0, 60, jobRef("kept", "kept-uid"), jobRef("gone", "gone-uid")),
				tag("fresh", t0, 60, jobRef("fresh", "fresh-uid")),
				tag("replaced", t0, 60, jobRef("replaced", "old-uid")),
				tag("other-owner", t0, 60, jobRef("gone", "gone-uid"), other),
				tag("no-owner", t0, 60),
				noCreatedAt,
				expired,
				expiring,
			},
		},
		"only-gone": {Tags: []appsv1beta1.ImageTagSpec{tag("1", t0, 60, jobRef("gone", "gone-uid"))}},
	})
	completed := metav1.NewTime(t0.Add(-2 * time.Minute))
	ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{"app": {Tags: []appsv1beta1.ImageTagStatus{
		{Tag: "expired", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &completed},
		{Tag: "expiring", Phase: appsv1beta1.ImagePhaseFailed, CompletionTime: &completed},
	}}}
	f.addNodeImage(ni)
	f.clearActions()
	f.conflictOnce("update", "")

	f.sync("n1")
	if got, want := f.writes(), []string{"update", "update"}; !slices.Equal(got, want) {
		t.Errorf("writes = %v, want %v (a conflict, then the rewrite, and no status write in the same sync)", got, want)
	}
	got := f.nodeImage("n1")
	if !labelsEqual(got.Labels, map[string]string{"zone": "b", "gpu": "true"}) {
		t.Errorf("labels = %v, want the node's", got.Labels)
	}
	if _, ok := got.Spec.Images["only-gone"]; ok {
		t.Error("an image whose only tag lost its only owner is still there")
	}
	app := got.Spec.Images["app"]
	var tags []string
	for _, tag := range app.Tags {
		var owners []string
		for _, o := range tag.OwnerReferences {
			owners = append(owners, string(o.UID))
		}
		tags = append(tags, tag.Tag+"("+strings.Join(owners, ",")+")")
	}
	if want := []string{"kept(kept-uid)", "fresh(fresh-uid)", "other-owner(other-uid)", "no-owner()", "expiring(kept-uid)"}; !slices.Equal(tags, want) {
		t.Errorf("tags = %v, want %v", tags, want)
	}
	if want := []appsv1beta1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "present"}}; !slices.Equal(app.PullSecrets, want) {
		t.Errorf("pullSecrets = %v, want %v", app.PullSecrets, want)
	}

	// Synced again with nothing left to rewrite, it writes nothing to the spec and comes
	// back for the next look at the secrets, before "expiring" expires (completed 2 min ago
	// with a 10 min TTL).
	if err := f.bosunInf.Apps().V1beta1().NodeImages().Informer().GetIndexer().Update(got); err != nil {
		t.Fatal(err)
	}
	f.clearActions()
	f.queue.Reset()
	f.sync("n1")
	if w := f.writes(); slices.Contains(w, "update") {
		t.Errorf("writes = %v, want no spec rewrite", w)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: secretCheckInterval}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}
}

func TestRequeuesNoSoonerThanTheFloor(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{
		tag("soon", t0.Add(-testResponseTimeout+time.Second), 60),
	}}})
	ni.Status.Desired = 1
	f.addNodeImage(ni)
	f.clearActions()
	f.sync("n1")
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: minRequeueDelay + fixedJitter}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %v, want none: nothing is due and the status is right", w)
	}
}

func TestChecksSecretsAtMostOncePerInterval(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	f.addSecret("kruise-daemon-config", "s")
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{"nginx": {
		PullSecrets: []appsv1beta1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "s"}},
		Tags:        []appsv1beta1.ImageTagSpec{tag("1", t0, 60)},
	}})
	f.addNodeImage(ni)
	secretGets := func() int {
		n := 0
		for _, a := range f.kube.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "secrets" {
				n++
			}
		}
		return n
	}
	f.clearActions()
	f.sync("n1")
	f.sync("n1")
	if n := secretGets(); n != 1 {
		t.Errorf("%d secret lookups in two syncs, want 1", n)
	}
	if err := f.kube.CoreV1().Secrets("kruise-daemon-config").Delete(f.ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(secretCheckInterval)
	f.sync("n1")
	if refs := f.nodeImage("n1").Spec.Images["nginx"].PullSecrets; len(refs) != 0 {
		t.Errorf("pullSecrets = %v after the secret was deleted, want none", refs)
	}
}

// A node added is queued and gets its NodeImage once it has been Ready for the delay
// WithCreationDelay sets, looked at again when the rest of the delay is over; with a delay
// of zero it gets it at once.
func TestNodeAddedGetsItsNodeImageAfterTheCreationDelay(t *testing.T) {
	f := newFixture(t, WithCreationDelay(2*time.Minute))
	node := readyNode("n1", map[string]string{"zone": "a"}, t0)
	f.addNode(node)
	f.clearActions()
	f.c.addNode(f.ctx, node)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("adding the node queued %v, want n1", got)
	}
	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("wrote %v as soon as the node turned Ready", w)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: 2 * time.Minute}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}

	f.clock.Step(2*time.Minute - time.Second)
	f.queue.Reset()
	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("wrote %v a second before the creation delay was over", w)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: time.Second}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}

	f.clock.Step(time.Second)
	f.sync("n1")
	if got, want := f.writes(), []string{"create"}; !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	if ni := f.nodeImage("n1"); ni == nil || !labelsEqual(ni.Labels, node.Labels) || len(ni.Spec.Images) != 0 {
		t.Errorf("created %+v, want an empty NodeImage with the node's labels", ni)
	}

	at := newFixture(t, WithCreationDelay(0))
	at.addNode(readyNode("n1", nil, t0))
	at.clearActions()
	at.sync("n1")
	if got, want := at.writes(), []string{"create"}; !slices.Equal(got, want) {
		t.Errorf("with no creation delay: writes = %v, want %v", got, want)
	}
	if d := at.queue.Delayed(); len(d) != 0 {
		t.Errorf("with no creation delay: requeued %v", d)
	}
	// Created meanwhile by another replica: not an error, and not created twice.
	at.clearActions()
	at.sync("n1")
	if got, want := at.writes(), []string{"create"}; !slices.Equal(got, want) {
		t.Errorf("writes = %v, want the one create that found the NodeImage there", got)
	}
}

// A node deleted is queued, from the informer's tombstone too, and its NodeImage is deleted
// on condition that it is still the one the cache holds.
func TestNodeDeletedDeletesItsNodeImage(t *testing.T) {
	f := newFixture(t)
	node := readyNode("n1", nil, t0.Add(-time.Hour))
	f.addNode(node)
	f.addNodeImage(newNodeImage("n1", nil, nil))
	f.removeNode(node)
	f.clearActions()
	f.c.deleteNode(f.ctx, cache.DeletedFinalStateUnknown{Key: "n1", Obj: node})
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("deleting the node queued %v, want n1", got)
	}
	f.sync("n1")
	if got, want := f.writes(), []string{"delete"}; !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	for _, a := range f.bosun.Actions() {
		if del, ok := a.(clienttesting.DeleteAction); ok {
			if pre := del.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != "ni-uid" {
				t.Errorf("deleted with preconditions %+v, want the cached NodeImage's UID", pre)
			}
		}
	}
	if f.nodeImage("n1") != nil {
		t.Error("the NodeImage of the deleted node is still there")
	}
}

// A tag leaves the spec ttlSecondsAfterFinished after its pull completed: the node is
// looked at again when that time comes, the tag is dropped with its image (it was the
// image's last), and the next sync drops the image's status.
func TestPrunesATagWhenItsTTLExpires(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{
		"nginx": {Tags: []appsv1beta1.ImageTagSpec{tag("1", t0.Add(-time.Hour), 300)}},
		"redis": {Tags: []appsv1beta1.ImageTagSpec{tag("7", t0.Add(-time.Hour), 3600)}},
	})
	completed := metav1.NewTime(t0.Add(-time.Minute))
	ni.Status = appsv1beta1.NodeImageStatus{Desired: 2, Succeeded: 2, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &completed}}},
		"redis": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "7", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &completed}}},
	}}
	f.addNodeImage(ni)
	f.clearActions()

	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %v before any TTL expired", w)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: 4 * time.Minute}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v (when nginx:1's TTL expires)", got, want)
	}

	f.clock.Step(4 * time.Minute)
	f.sync("n1")
	if got, want := f.writes(), []string{"update"}; !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	pruned := f.cacheNodeImage("n1")
	if _, ok := pruned.Spec.Images["nginx"]; ok {
		t.Error("nginx is still in the spec after its only tag expired")
	}
	if got := pruned.Spec.Images["redis"].Tags; len(got) != 1 || got[0].Tag != "7" {
		t.Errorf("redis tags = %+v, want 7 kept", got)
	}

	f.clearActions()
	f.sync("n1")
	if got, want := f.writes(), []string{"update/status"}; !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	status := f.nodeImage("n1").Status
	want := appsv1beta1.NodeImageStatus{Desired: 1, Succeeded: 1, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"redis": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "7", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &completed}}},
	}}
	if !equalStatus(status, want) {
		t.Errorf("status =\n%+v\nwant\n%+v", status, want)
	}
}

// Without the ImagePullJob informer (the API server does not serve them) owner references
// to ImagePullJobs are left alone and never looked up.
func TestWithoutImagePullJobsOwnerReferencesStay(t *testing.T) {
	f := newFixtureWithoutJobs(t)
	if got := len(f.c.cachesSynced); got != 2 {
		t.Errorf("%d caches waited for, want 2 (nodes and NodeImages)", got)
	}
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{
		tag("1", t0, 60, jobRef("gone", "gone-uid")),
	}}})
	ni.Status.Desired = 1
	f.addNodeImage(ni)
	f.clearActions()
	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %v, want none", w)
	}
	for _, a := range f.bosun.Actions() {
		if a.GetResource().Resource == "imagepulljobs" {
			t.Errorf("looked up ImagePullJobs (%s) without their informer", a.GetVerb())
		}
	}
	if owners := f.nodeImage("n1").Spec.Images["nginx"].Tags[0].OwnerReferences; len(owners) != 1 || owners[0].UID != "gone-uid" {
		t.Errorf("owners = %+v, want the job's reference kept", owners)
	}
}

// betaJobRef is jobRef as this release and OpenKruise 1.9 write it.
func betaJobRef(name, uid string) corev1.ObjectReference {
	ref := jobRef(name, uid)
	ref.APIVersion = "apps.kruise.io/v1beta1"
	return ref
}

// Owner references of both versions name their jobs alike: live jobs keep their tags
// through either, a gone job loses its reference through either, and what is kept keeps
// its version (the spec is never rewritten just for a version).
func TestOwnersOfAnyVersion(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	f.addJob(job("alpha", "alpha-uid"), true, true)
	f.addJob(job("beta", "beta-uid"), true, true)
	images := map[string]appsv1beta1.ImageSpec{"app": {Tags: []appsv1beta1.ImageTagSpec{
		tag("a", t0, 60, jobRef("alpha", "alpha-uid")),
		tag("b", t0, 60, betaJobRef("beta", "beta-uid")),
		tag("ab", t0, 60, jobRef("alpha", "alpha-uid"), betaJobRef("beta", "beta-uid")),
	}}}
	ni := newNodeImage("n1", nil, images)
	ni.Status.Desired = 3
	f.addNodeImage(ni)
	f.clearActions()

	f.sync("n1")
	if w := f.writes(); slices.Contains(w, "update") {
		t.Errorf("writes = %v, want no spec rewrite: every owner is alive", w)
	}
	if got := f.nodeImage("n1").Spec.Images; !apiequality.Semantic.DeepEqual(got, images) {
		t.Errorf("images = %+v, want them unchanged", got)
	}

	f.queue.Reset()
	f.c.deleteJob(f.ctx, job("beta", "beta-uid"))
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("deleting a job owning tags through v1beta1 references queued %v, want n1", got)
	}

	// beta goes; alpha's v1alpha1 references stay as they are.
	if err := f.bosunInf.Apps().V1beta1().ImagePullJobs().Informer().GetIndexer().Delete(job("beta", "beta-uid")); err != nil {
		t.Fatal(err)
	}
	if err := f.bosun.AppsV1beta1().ImagePullJobs("ns").Delete(f.ctx, "beta", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync("n1")
	want := []appsv1beta1.ImageTagSpec{
		tag("a", t0, 60, jobRef("alpha", "alpha-uid")),
		tag("ab", t0, 60, jobRef("alpha", "alpha-uid")),
	}
	if got := f.nodeImage("n1").Spec.Images["app"].Tags; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("tags = %+v, want %+v", got, want)
	}
}

// A gone job's reference leaves a tag that others still own even when no tag of the image
// goes: the rewrite carries the shortened owner list, not only a shortened tag list.
func TestDropsAGoneJobFromATagOthersStillOwn(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	f.addJob(job("alive", "alive-uid"), true, true)
	pinned := corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "pinned", UID: "pinned-uid"}
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{"app": {Tags: []appsv1beta1.ImageTagSpec{
		tag("a", t0, 60, pinned, jobRef("gone", "gone-uid")),
		tag("b", t0, 60, jobRef("alive", "alive-uid"), jobRef("gone", "gone-uid")),
	}}})
	ni.Status.Desired = 2
	f.addNodeImage(ni)
	f.clearActions()

	f.sync("n1")
	want := []appsv1beta1.ImageTagSpec{
		tag("a", t0, 60, pinned),
		tag("b", t0, 60, jobRef("alive", "alive-uid")),
	}
	if got := f.nodeImage("n1").Spec.Images["app"].Tags; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("tags = %+v, want the gone job's references dropped: %+v", got, want)
	}
}
