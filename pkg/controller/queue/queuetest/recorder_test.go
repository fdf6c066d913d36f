package queuetest

import (
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/bosun-dev/bosun/pkg/controller/options"
)

// Wrapping's option puts the Recorder in front of the queue the controller builds: adds
// are recorded, not queued, and everything else reaches the queue.
func TestWrapping(t *testing.T) {
	r, opt := Wrapping()
	inner := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer inner.ShutDown()
	q := options.Apply([]options.Option{opt}).WrapQueue(inner)
	if q != r {
		t.Fatalf("the wrapped queue is %T, not the Recorder", q)
	}
	q.Add("ns/a")
	q.AddAfter("ns/b", time.Second)
	if got := r.AddedKeys(); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("AddedKeys %v, want [ns/a]", got)
	}
	if got := r.Delayed(); !slices.Equal(got, []Delayed{{Key: "ns/b", Delay: time.Second}}) {
		t.Errorf("Delayed %v", got)
	}
	if inner.Len() != 0 {
		t.Errorf("the queue got %d items; adds must only be recorded", inner.Len())
	}
	r.TypedRateLimitingInterface.Add("ns/c")
	if q.Len() != 1 {
		t.Errorf("Len through the Recorder = %d, want the queue's 1", q.Len())
	}
}
