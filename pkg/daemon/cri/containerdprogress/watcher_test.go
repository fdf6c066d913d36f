package containerdprogress

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// A bound on waiting for the watcher's goroutine, never reached when it works.
const testWait = 30 * time.Second

// startWatch runs Watch on a fake clock starting at since until the test ends; the
// returned channels receive the progress reported and are closed when Watch returns.
func startWatch(t *testing.T, conn grpc.ClientConnInterface, image string) (*clocktesting.FakeClock, <-chan int32, <-chan struct{}, context.CancelFunc) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	clk := clocktesting.NewFakeClock(since)
	w := NewWatcher()
	w.clock, w.platform = clk, amd64
	reports := make(chan int32, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Watch(ctx, conn, image, func(percent int32) { reports <- percent })
	}()
	return clk, reports, done, cancel
}

// tick lets the watcher's ticker fire once it waits on it.
func tick(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the watcher never waited for its ticker")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(pollInterval)
}

func nextReport(t *testing.T, reports <-chan int32) int32 {
	t.Helper()
	select {
	case p := <-reports:
		return p
	case <-time.After(testWait):
		t.Fatal("no progress reported")
		return 0
	}
}

func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(testWait):
		t.Fatal("Watch did not return")
	}
}

func TestWatchReportsEachRiseUntilStopped(t *testing.T) {
	fake, conn := startFakeContent(t)
	config, layer1, layer2 := imageConfig("amd64"), layer(1, 1000), layer(2, 1000)
	manifest := manifestOf(config, layer1, layer2)
	total := len(config) + len(layer1) + len(layer2)
	fake.commit("", manifest, afterPull, fromWebserver)
	fake.commit("", config, afterPull, fromWebserver)
	clk, reports, done, stop := startWatch(t, conn, testImage)

	tick(t, clk)
	if got, want := nextReport(t, reports), percentOf(len(config), total); got != want {
		t.Fatalf("first report %d, want %d", got, want)
	}
	fake.commit("", layer1, afterPull, fromWebserver)
	tick(t, clk)
	if got, want := nextReport(t, reports), percentOf(len(config)+len(layer1), total); got != want {
		t.Fatalf("second report %d, want %d", got, want)
	}
	fake.commit("", layer2, afterPull, fromWebserver)
	tick(t, clk)
	if got := nextReport(t, reports); got != 99 {
		t.Fatalf("report with everything downloaded %d, want 99", got)
	}

	stop()
	waitDone(t, done)
	// Nothing is reported twice, nor after the end.
	if len(reports) != 0 {
		t.Errorf("more reports: %d", len(reports))
	}
}

func TestWatchEndsWhereContainerdsAPIIsMissing(t *testing.T) {
	// A gRPC server with no content service, as a CRI-only runtime's socket.
	conn := serve(t, grpc.NewServer())
	clk, reports, done, _ := startWatch(t, conn, testImage)

	tick(t, clk)
	waitDone(t, done)
	if len(reports) != 0 {
		t.Errorf("reports: %d", len(reports))
	}
}

func TestWatchPullFollowsContainerdOnly(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	w := NewWatcher()
	// Neither returns before ctx ends if it watched anything.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, rt := range []*cri.Runtime{nil, {Name: "cri-o"}, {Name: RuntimeName}} {
		w.WatchPull(ctx, rt, testImage, func(int32) { t.Error("progress reported") })
	}
}
