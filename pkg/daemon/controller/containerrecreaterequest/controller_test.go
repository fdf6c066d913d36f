package containerrecreaterequest

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// Every event of a request queues its pod, finished requests and removals included: the next
// request of the pod may be waiting for exactly that event.
func TestHandlersQueueThePod(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	finished := crr.DeepCopy()
	finished.Status.Phase = appsv1beta1.ContainerRecreateRequestCompleted
	finished.Status.CompletionTime = ptr.To(metav1.NewTime(t0))
	other := f.newRequest("r2", "app")
	other.Spec.PodName = "other"

	tests := []struct {
		name  string
		event func()
		want  []string
	}{
		{name: "add", event: func() { f.c.addRequest(f.ctx, crr) }, want: []string{podQueueKey}},
		{name: "add of another pod", event: func() { f.c.addRequest(f.ctx, other) }, want: []string{"ns/other"}},
		{name: "update", event: func() { f.c.updateRequest(f.ctx, crr, crr) }, want: []string{podQueueKey}},
		{name: "update to completed", event: func() { f.c.updateRequest(f.ctx, crr, finished) }, want: []string{podQueueKey}},
		{name: "delete", event: func() { f.c.deleteRequest(f.ctx, finished) }, want: []string{podQueueKey}},
		{name: "delete tombstone", event: func() {
			f.c.deleteRequest(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/r1", Obj: crr})
		}, want: []string{podQueueKey}},
		{name: "delete of something else", event: func() { f.c.deleteRequest(f.ctx, "junk") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			tc.event()
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeleteForgetsWrittenVersion(t *testing.T) {
	f := newFixture(t, "app")
	crr := f.newRequest("r1", "app")
	crr.ResourceVersion = "10"
	if err := f.requests.Add(crr); err != nil {
		t.Fatal(err)
	}
	written := crr.DeepCopy()
	written.ResourceVersion = "20"
	f.c.written.Expect(podKey(written), written)
	if _, pending := f.c.written.Pending(podKey(crr)); !pending {
		t.Fatal("an older cached copy must be waited for")
	}
	f.c.deleteRequest(f.ctx, crr)
	if _, pending := f.c.written.Pending(podKey(crr)); pending {
		t.Error("a deleted request must not be waited for")
	}
}

func TestIndexByPod(t *testing.T) {
	f := newFixture(t, "app")
	a := f.newRequest("a", "app")
	b := f.newRequest("b", "app")
	b.Spec.PodName = "other"
	for _, crr := range []*appsv1beta1.ContainerRecreateRequest{a, b} {
		if err := f.requests.Add(crr); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := f.requests.ByIndex(podIndex, podQueueKey)
	if err != nil || len(objs) != 1 || objs[0].(*appsv1beta1.ContainerRecreateRequest).Name != "a" {
		t.Errorf("ByIndex = %v, %v", objs, err)
	}
}

// The agent waits for the informer to show its own last write to a request, read from the
// requests' cache, for at most writtenVersionWait.
func TestWrittenVersions(t *testing.T) {
	f := newFixture(t)
	w := f.c.written
	crr := f.newRequest("r1")
	crr.ResourceVersion = "5"
	if err := f.requests.Add(crr); err != nil {
		t.Fatal(err)
	}
	key := podKey(crr)
	written := crr.DeepCopy()
	written.ResourceVersion = "9"
	w.Expect(key, written)
	if left, pending := w.Pending(key); !pending || left != writtenVersionWait {
		t.Errorf("wait = %v, %v; want the full wait", left, pending)
	}
	f.clock.Step(4 * time.Second)
	if left, pending := w.Pending(key); !pending || left != 6*time.Second {
		t.Errorf("wait after 4s = %v, %v", left, pending)
	}
	seen := crr.DeepCopy()
	seen.ResourceVersion = "9"
	if err := f.requests.Update(seen); err != nil {
		t.Fatal(err)
	}
	if _, pending := w.Pending(key); pending {
		t.Error("the written version itself must not be waited for")
	}
	if err := f.requests.Update(crr); err != nil {
		t.Fatal(err)
	}
	if _, pending := w.Pending(key); pending {
		t.Error("once met, the record must be gone")
	}
	w.Expect(key, written)
	f.clock.Step(writtenVersionWait)
	if _, pending := w.Pending(key); pending {
		t.Error("after the wait, a stale copy is acted on")
	}
}
