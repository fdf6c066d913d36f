package nodeimage

import (
	"context"
	"sync"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// fakeWatcher reports percent as soon as it watches a pull, then waits for the pull to end.
type fakeWatcher struct {
	percent int32

	mu       sync.Mutex
	images   []string
	reported bool
	stopped  bool
}

func (w *fakeWatcher) WatchPull(ctx context.Context, rt *cri.Runtime, image string, progress func(int32)) {
	w.mu.Lock()
	w.images = append(w.images, image)
	w.mu.Unlock()
	progress(w.percent)
	w.mu.Lock()
	w.reported = true
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

func (w *fakeWatcher) state() (images []string, reported, stopped bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.images...), w.reported, w.stopped
}

func TestPullReportsTheWatchersProgressWhilePulling(t *testing.T) {
	watcher := &fakeWatcher{percent: 40}
	f := newFixture(t, fixtureOptions{progress: watcher})
	release := f.runtime.BlockPulls()
	f.create(newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3)))

	f.sync()
	f.eventually("the watcher to report", func() bool {
		_, reported, _ := watcher.state()
		return reported && len(f.runtime.Pulls()) == 1
	})
	f.sync()
	status := f.tagStatus("nginx", "1.25")
	if status.Phase != appsv1beta1.ImagePhasePulling || status.Progress != 40 {
		t.Fatalf("status while pulling %+v", status)
	}
	if images, _, stopped := watcher.state(); len(images) != 1 || images[0] != "nginx:1.25" || stopped {
		t.Fatalf("watched %q, stopped %v", images, stopped)
	}

	release()
	f.waitForResult("nginx", "1.25")
	// The watcher stopped before the pull returned: nothing it reports can follow 100.
	if _, _, stopped := watcher.state(); !stopped {
		t.Error("the watcher still runs after the pull returned")
	}
	if status := f.tagStatus("nginx", "1.25"); status.Phase != appsv1beta1.ImagePhaseSucceeded || status.Progress != 100 {
		t.Errorf("final status %+v", status)
	}
}
