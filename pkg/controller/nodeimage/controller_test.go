package nodeimage

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"

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
	f.addNodeImage(newNodeImage("fake", map[string]string{appsv1alpha1.FakeNodeImageLabelKey: "true"}, nil))
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
		t.Errorf("the NodeImage labelled %s was deleted", appsv1alpha1.FakeNodeImageLabelKey)
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
	ni := newNodeImage("n1", map[string]string{"zone": "a", "stray": "x"}, map[string]appsv1alpha1.ImageSpec{
		"app": {
			PullSecrets: []appsv1alpha1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "present"}, {Namespace: "kruise-daemon-config", Name: "absent"}},
			Tags: []appsv1alpha1.ImageTagSpec{
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
		"only-gone": {Tags: []appsv1alpha1.ImageTagSpec{tag("1", t0, 60, jobRef("gone", "gone-uid"))}},
	})
	completed := metav1.NewTime(t0.Add(-2 * time.Minute))
	ni.Status.ImageStatuses = map[string]appsv1alpha1.ImageStatus{"app": {Tags: []appsv1alpha1.ImageTagStatus{
		{Tag: "expired", Phase: appsv1alpha1.ImagePhaseSucceeded, CompletionTime: &completed},
		{Tag: "expiring", Phase: appsv1alpha1.ImagePhaseFailed, CompletionTime: &completed},
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
	if want := []appsv1alpha1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "present"}}; !slices.Equal(app.PullSecrets, want) {
		t.Errorf("pullSecrets = %v, want %v", app.PullSecrets, want)
	}

	// Synced again with nothing left to rewrite, it writes nothing to the spec and comes
	// back for the next look at the secrets, before "expiring" expires (completed 2 min ago
	// with a 10 min TTL).
	if err := f.bosunInf.Apps().V1alpha1().NodeImages().Informer().GetIndexer().Update(got); err != nil {
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

func TestFailsTagsTheAgentNeverAnswered(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	f.addJob(job("j", "j-uid"), true, true)
	created := t0.Add(-testResponseTimeout)
	deadline := tag("deadline", t0.Add(-testResponseTimeout-30*time.Second), 60, jobRef("j", "j-uid"))
	deadline.PullPolicy.ActiveDeadlineSeconds = ptr.To[int64](30)
	deadline.Version = 2
	waiting := tag("waiting", t0.Add(-time.Minute), 60)
	stale := tag("stale", created, 60)
	stale.Version = 1
	ni := newNodeImage("n1", nil, map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{
		tag("silent", created, 60, jobRef("j", "j-uid")), deadline, waiting, stale,
		tag("done", created, 7200),
	}}})
	started := metav1.NewTime(t0.Add(-time.Hour))
	ni.Status = appsv1alpha1.NodeImageStatus{Desired: 9, Waiting: 1, ImageStatuses: map[string]appsv1alpha1.ImageStatus{
		"nginx": {Tags: []appsv1alpha1.ImageTagStatus{
			{Tag: "deadline", Phase: appsv1alpha1.ImagePhasePulling, Version: 2, StartTime: &started},
			{Tag: "done", Phase: appsv1alpha1.ImagePhaseSucceeded, CompletionTime: &started, ImageID: "nginx@sha256:1"},
			{Tag: "stale", Phase: appsv1alpha1.ImagePhaseSucceeded, Version: 0, CompletionTime: &started},
			{Tag: "removed", Phase: appsv1alpha1.ImagePhaseSucceeded},
		}},
		"removed": {Tags: []appsv1alpha1.ImageTagStatus{{Tag: "1", Phase: appsv1alpha1.ImagePhasePulling}}},
	}}
	f.addNodeImage(ni)
	f.clearActions()
	f.conflictOnce("update", "status")

	f.sync("n1")
	if got, want := f.writes(), []string{"update/status", "update/status"}; !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v (a conflict, then the status)", got, want)
	}
	got := f.nodeImage("n1").Status
	now := metav1.NewTime(t0)
	want := appsv1alpha1.NodeImageStatus{Desired: 5, Succeeded: 1, Failed: 3, Waiting: 1, ImageStatuses: map[string]appsv1alpha1.ImageStatus{
		"nginx": {Tags: []appsv1alpha1.ImageTagStatus{
			{Tag: "silent", Phase: appsv1alpha1.ImagePhaseFailed, CompletionTime: &now, Message: NotRespondedMessage},
			{Tag: "deadline", Phase: appsv1alpha1.ImagePhaseFailed, Version: 2, StartTime: &started, CompletionTime: &now, Message: DeadlineExceededMessage},
			{Tag: "stale", Phase: appsv1alpha1.ImagePhaseFailed, Version: 1, CompletionTime: &now, Message: NotRespondedMessage},
			{Tag: "done", Phase: appsv1alpha1.ImagePhaseSucceeded, CompletionTime: &started, ImageID: "nginx@sha256:1"},
		}},
	}}
	if !equalStatus(got, want) {
		t.Errorf("status =\n%+v\nwant\n%+v", got, want)
	}
	wantEvents := []string{
		"Warning PullImageFailed NodeImage/n1: Image nginx:silent failed to pull on node n1: " + NotRespondedMessage,
		"Warning PullImageFailed ImagePullJob/ns/j: Image nginx:silent failed to pull on node n1: " + NotRespondedMessage,
		"Warning PullImageFailed NodeImage/n1: Image nginx:deadline failed to pull on node n1: " + DeadlineExceededMessage,
		"Warning PullImageFailed ImagePullJob/ns/j: Image nginx:deadline failed to pull on node n1: " + DeadlineExceededMessage,
		"Warning PullImageFailed NodeImage/n1: Image nginx:stale failed to pull on node n1: " + NotRespondedMessage,
	}
	if got := f.recorder.all(); !slices.Equal(got, wantEvents) {
		t.Errorf("events =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantEvents, "\n"))
	}
	// "waiting" falls due 9 minutes from now.
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: 9 * time.Minute}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}
}

func TestRequeuesNoSoonerThanTheFloor(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	ni := newNodeImage("n1", nil, map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{
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
	ni := newNodeImage("n1", nil, map[string]appsv1alpha1.ImageSpec{"nginx": {
		PullSecrets: []appsv1alpha1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "s"}},
		Tags:        []appsv1alpha1.ImageTagSpec{tag("1", t0, 60)},
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

func TestHandlers(t *testing.T) {
	f := newFixture(t)
	node := readyNode("n1", map[string]string{"a": "1"}, t0)
	heartbeat := node.DeepCopy()
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
	heartbeat.ResourceVersion = "2"
	f.c.updateNode(f.ctx, node, heartbeat)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("a heartbeat queued %v", got)
	}
	relabelled := node.DeepCopy()
	relabelled.Labels["a"] = "2"
	notReady := node.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, cur := range []*corev1.Node{relabelled, notReady} {
		f.queue.Reset()
		f.c.updateNode(f.ctx, node, cur)
		if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
			t.Errorf("a node update queued %v, want n1", got)
		}
	}

	owned := newNodeImage("owned", nil, map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{tag("1", t0, 60, jobRef("j", "j-uid"))}}})
	f.addNodeImage(owned)
	f.addNodeImage(newNodeImage("other", nil, map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{tag("1", t0, 60, jobRef("k", "k-uid"))}}}))
	f.queue.Reset()
	f.c.deleteJob(f.ctx, job("j", "j-uid"))
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"owned"}) {
		t.Errorf("deleting a job queued %v, want the NodeImage it owns a tag of", got)
	}
}

// equalStatus compares statuses field by field, times by instant.
func equalStatus(a, b appsv1alpha1.NodeImageStatus) bool {
	if a.Desired != b.Desired || a.Succeeded != b.Succeeded || a.Failed != b.Failed || a.Pulling != b.Pulling || a.Waiting != b.Waiting ||
		len(a.ImageStatuses) != len(b.ImageStatuses) {
		return false
	}
	for image, as := range a.ImageStatuses {
		bs, ok := b.ImageStatuses[image]
		if !ok || len(as.Tags) != len(bs.Tags) {
			return false
		}
		for i := range as.Tags {
			x, y := as.Tags[i], bs.Tags[i]
			if x.Tag != y.Tag || x.Phase != y.Phase || x.Version != y.Version || x.Message != y.Message || x.ImageID != y.ImageID ||
				!x.StartTime.Equal(y.StartTime) || !x.CompletionTime.Equal(y.CompletionTime) {
				return false
			}
		}
	}
	return true
}
