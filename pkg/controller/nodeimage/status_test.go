package nodeimage

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

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
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{
		tag("silent", created, 60, jobRef("j", "j-uid")), deadline, waiting, stale,
		tag("done", created, 7200),
	}}})
	started := metav1.NewTime(t0.Add(-time.Hour))
	ni.Status = appsv1beta1.NodeImageStatus{Desired: 9, Waiting: 1, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{
			{Tag: "deadline", Phase: appsv1beta1.ImagePhasePulling, Version: 2, StartTime: &started},
			{Tag: "done", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &started, ImageID: "nginx@sha256:1"},
			{Tag: "stale", Phase: appsv1beta1.ImagePhaseSucceeded, Version: 0, CompletionTime: &started},
			{Tag: "removed", Phase: appsv1beta1.ImagePhaseSucceeded},
		}},
		"removed": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1", Phase: appsv1beta1.ImagePhasePulling}}},
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
	want := appsv1beta1.NodeImageStatus{Desired: 5, Succeeded: 1, Failed: 3, Waiting: 1, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{
			{Tag: "silent", Phase: appsv1beta1.ImagePhaseFailed, CompletionTime: &now, Message: NotRespondedMessage},
			{Tag: "deadline", Phase: appsv1beta1.ImagePhaseFailed, Version: 2, StartTime: &started, CompletionTime: &now, Message: DeadlineExceededMessage},
			{Tag: "stale", Phase: appsv1beta1.ImagePhaseFailed, Version: 1, CompletionTime: &now, Message: NotRespondedMessage},
			{Tag: "done", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &started, ImageID: "nginx@sha256:1"},
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

// The agent has the response timeout WithResponseTimeout sets to report on a tag: until
// then the node is looked at again when it falls due, after it the tag is Failed, with a
// warning on the NodeImage and on the tag's owner.
func TestFailsAnUnansweredTagAfterTheResponseTimeout(t *testing.T) {
	f := newFixture(t, WithResponseTimeout(2*time.Minute))
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	f.addJob(job("j", "j-uid"), true, true)
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{
		tag("1", t0, 60, jobRef("j", "j-uid")),
	}}})
	ni.Status.Desired = 1
	f.addNodeImage(ni)
	f.clearActions()

	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %v before the response timeout", w)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: 2 * time.Minute}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}

	f.clock.Step(2 * time.Minute)
	f.queue.Reset()
	f.sync("n1")
	if got, want := f.writes(), []string{"update/status"}; !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	now := metav1.NewTime(t0.Add(2 * time.Minute))
	want := appsv1beta1.NodeImageStatus{Desired: 1, Failed: 1, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1", Phase: appsv1beta1.ImagePhaseFailed, CompletionTime: &now, Message: NotRespondedMessage}}},
	}}
	if got := f.nodeImage("n1").Status; !equalStatus(got, want) {
		t.Errorf("status =\n%+v\nwant\n%+v", got, want)
	}
	wantEvents := []string{
		"Warning PullImageFailed NodeImage/n1: Image nginx:1 failed to pull on node n1: " + NotRespondedMessage,
		"Warning PullImageFailed ImagePullJob/ns/j: Image nginx:1 failed to pull on node n1: " + NotRespondedMessage,
	}
	if got := f.recorder.all(); !slices.Equal(got, wantEvents) {
		t.Errorf("events =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantEvents, "\n"))
	}
	// Nothing else falls due; the update event of the write brings the node back.
	if d := f.queue.Delayed(); len(d) != 0 {
		t.Errorf("requeued %v", d)
	}

	// Failed once: synced again on its own write, the tag is not failed a second time.
	f.cacheNodeImage("n1")
	f.clearActions()
	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %v after the failure was written", w)
	}
	if got := f.recorder.all(); len(got) != len(wantEvents) {
		t.Errorf("%d events, want the %d of the failure only", len(got), len(wantEvents))
	}
}

// The counts cover the spec's tags: desired all of them; pulling, succeeded and failed by
// the phase the agent reported; waiting stays the number the agent wrote. Statuses of tags
// and images no longer in the spec are dropped and counted nowhere. A status already right
// is not written again.
func TestStatusCounts(t *testing.T) {
	f := newFixture(t)
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	created := t0.Add(-time.Minute)
	done := metav1.NewTime(t0.Add(-30 * time.Second))
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{
		"nginx": {Tags: []appsv1beta1.ImageTagSpec{
			tag("pulling", created, 600), tag("ok", created, 600), tag("bad", created, 600),
			tag("queued", created, 600), tag("unreported", created, 600),
		}},
		"redis": {Tags: []appsv1beta1.ImageTagSpec{tag("7", created, 600)}},
	})
	pulling := appsv1beta1.ImageTagStatus{Tag: "pulling", Phase: appsv1beta1.ImagePhasePulling}
	ok := appsv1beta1.ImageTagStatus{Tag: "ok", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &done, ImageID: "nginx@sha256:1"}
	bad := appsv1beta1.ImageTagStatus{Tag: "bad", Phase: appsv1beta1.ImagePhaseFailed, CompletionTime: &done, Message: "manifest unknown"}
	queued := appsv1beta1.ImageTagStatus{Tag: "queued", Phase: appsv1beta1.ImagePhaseWaiting}
	redis := appsv1beta1.ImageTagStatus{Tag: "7", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &done}
	ni.Status = appsv1beta1.NodeImageStatus{Desired: 2, Pulling: 9, Waiting: 3, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{bad, queued, {Tag: "dropped", Phase: appsv1beta1.ImagePhaseSucceeded}, pulling, ok}},
		"redis": {Tags: []appsv1beta1.ImageTagStatus{redis}},
		"gone":  {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1", Phase: appsv1beta1.ImagePhasePulling}}},
	}}
	f.addNodeImage(ni)
	f.clearActions()

	f.sync("n1")
	if got, want := f.writes(), []string{"update/status"}; !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	want := appsv1beta1.NodeImageStatus{Desired: 6, Pulling: 1, Succeeded: 2, Failed: 1, Waiting: 3, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		// In spec order.
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{pulling, ok, bad, queued}},
		"redis": {Tags: []appsv1beta1.ImageTagStatus{redis}},
	}}
	if got := f.nodeImage("n1").Status; !equalStatus(got, want) {
		t.Errorf("status =\n%+v\nwant\n%+v", got, want)
	}
	if got := f.recorder.all(); len(got) != 0 {
		t.Errorf("events %v, want none: nothing failed for want of the agent", got)
	}

	f.cacheNodeImage("n1")
	f.clearActions()
	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %v, want none: the status is right", w)
	}
}

// A tag with activeDeadlineSeconds still pulling is failed once the deadline plus the
// response timeout passed since its createdAt, and not before.
func TestFailsATagPastItsDeadline(t *testing.T) {
	f := newFixture(t, WithResponseTimeout(time.Minute))
	f.addNode(readyNode("n1", nil, t0.Add(-time.Hour)))
	slow := tag("slow", t0, 60)
	slow.PullPolicy.ActiveDeadlineSeconds = ptr.To[int64](120)
	ni := newNodeImage("n1", nil, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{slow}}})
	started := metav1.NewTime(t0)
	ni.Status = appsv1beta1.NodeImageStatus{Desired: 1, Pulling: 1, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "slow", Phase: appsv1beta1.ImagePhasePulling, StartTime: &started}}},
	}}
	f.addNodeImage(ni)
	f.clock.Step(2 * time.Minute)
	f.clearActions()

	f.sync("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %v within the deadline plus the response timeout", w)
	}
	if got, want := f.queue.Delayed(), []queuetest.Delayed{{Key: "n1", Delay: time.Minute}}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}

	f.clock.Step(time.Minute)
	f.sync("n1")
	now := metav1.NewTime(t0.Add(3 * time.Minute))
	want := appsv1beta1.NodeImageStatus{Desired: 1, Failed: 1, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "slow", Phase: appsv1beta1.ImagePhaseFailed, StartTime: &started, CompletionTime: &now, Message: DeadlineExceededMessage}}},
	}}
	if got := f.nodeImage("n1").Status; !equalStatus(got, want) {
		t.Errorf("status =\n%+v\nwant\n%+v", got, want)
	}
}
