// Package containerdprogress measures how far containerd has got with an image pull, in
// bytes, by reading containerd's own content store. A CRI PullImage call says nothing until
// it returns; containerd, which serves its native API on the same socket as CRI, shows the
// blobs it has committed and the downloads (ingests) still being written.
//
// While a pull runs, a tracker looks about once a second for the manifest the pull fetched:
// for a digest reference the digest itself, for a tag the manifest or index of the image's
// repository committed since the pull started (containerd labels every blob it fetches
// with the registry and repository it came from) — of several, the one whose content is
// not all there yet; of an index, the linux manifest of this machine's architecture. From then on the progress is the bytes of the manifest's
// config and layers already committed, plus those written so far of the ones being
// downloaded, over the sum of their sizes. It never goes down within a pull and stays below
// 100, which only the end of the pull reports. When the manifest cannot be told (the pull
// found everything in place, or another pull of the same repository runs alongside) nothing
// is reported.
package containerdprogress

import (
	"context"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	contentapi "github.com/containerd/containerd/api/services/content/v1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

const (
	// RuntimeName is the runtime name containerd gives in its CRI Version answer.
	RuntimeName = "containerd"
	// Namespace is the containerd namespace of the CRI plugin, which holds the images,
	// content and ingests of the pulls it makes.
	Namespace = "k8s.io"
	// namespaceHeader is the gRPC metadata key that selects a containerd namespace.
	namespaceHeader = "containerd-namespace"

	// pollInterval is how often the content store is read while a pull runs.
	pollInterval = time.Second
	// pollTimeout bounds the calls of one reading, so that a stuck call does not stop the
	// readings after it.
	pollTimeout = 10 * time.Second
	// startSlack is how much earlier than the watcher's start a pull's manifest may be
	// committed and still count as fetched by the pull: the watcher starts beside the
	// PullImage call, not before it.
	startSlack = 500 * time.Millisecond
)

// Watcher follows the pulls containerd makes for CRI PullImage calls. One Watcher serves
// every pull of the node agent: it knows which pulls of a repository run at the same time.
type Watcher struct {
	clock    clock.WithTicker
	interval time.Duration
	platform platform

	mu sync.Mutex
	// active are the trackers of the pulls being watched, by repository.
	active map[string][]*tracker
}

// NewWatcher returns a watcher for pulls of linux images of this machine's architecture.
func NewWatcher() *Watcher {
	return &Watcher{
		clock:    clock.RealClock{},
		interval: pollInterval,
		platform: platform{OS: "linux", Architecture: runtime.GOARCH},
		active:   map[string][]*tracker{},
	}
}

// WatchPull reports the progress of rt's pull of image, "<name>:<tag>" or
// "<name>@<digest>", until ctx ends: progress receives each new, higher percentage, never
// 100. It returns at once when rt is not containerd. Call it when the pull starts and end
// ctx when the pull returns.
func (w *Watcher) WatchPull(ctx context.Context, rt *cri.Runtime, image string, progress func(percent int32)) {
	if rt == nil || rt.Name != RuntimeName {
		return
	}
	conn := rt.Conn()
	if conn == nil {
		return
	}
	w.Watch(ctx, conn, image, progress)
}

// Watch is WatchPull on a connection to containerd's socket.
func (w *Watcher) Watch(ctx context.Context, conn grpc.ClientConnInterface, image string, progress func(percent int32)) {
	logger := klog.FromContext(ctx)
	t := w.begin(contentapi.NewContentClient(conn), image)
	defer w.end(t)

	ticker := w.clock.NewTicker(w.interval)
	defer ticker.Stop()
	var reported int32
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		pollCtx, cancel := context.WithTimeout(ctx, pollTimeout)
		percent, err := t.poll(pollCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case status.Code(err) == codes.Unimplemented:
			// Not containerd after all, or one that does not serve its API on this socket.
			logger.V(2).Info("The runtime does not serve containerd's content API; pull progress is not reported", "err", err)
			return
		case err != nil:
			logger.V(4).Info("Reading the pull's progress from containerd failed", "err", err)
		case percent > reported:
			reported = percent
			logger.V(5).Info("Pull progress", "percent", percent)
			progress(percent)
		}
	}
}

// begin starts tracking a pull of image. Pulls of one repository that overlap make each
// other's manifest search ambiguous: a tag pull that overlaps another pull of its
// repository never picks a manifest by itself.
func (w *Watcher) begin(content contentapi.ContentClient, image string) *tracker {
	t := newTracker(content, image, w.clock.Now().Add(-startSlack), w.platform)
	w.mu.Lock()
	defer w.mu.Unlock()
	if others := w.active[t.repositoryKey()]; len(others) > 0 {
		t.shared.Store(true)
		for _, other := range others {
			other.shared.Store(true)
		}
	}
	w.active[t.repositoryKey()] = append(w.active[t.repositoryKey()], t)
	return t
}

// end stops tracking t.
func (w *Watcher) end(t *tracker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := t.repositoryKey()
	others := w.active[key][:0]
	for _, other := range w.active[key] {
		if other != t {
			others = append(others, other)
		}
	}
	if len(others) == 0 {
		delete(w.active, key)
		return
	}
	w.active[key] = others
}
