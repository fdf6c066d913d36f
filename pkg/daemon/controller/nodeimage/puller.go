package nodeimage

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

// PullRequest is one pull of one image reference.
type PullRequest struct {
	// Image is the reference to pull, "<name>:<tag>" or "<name>@<digest>".
	Image string
	// Credentials are tried in order; none means an anonymous pull.
	Credentials []*runtimeapi.AuthConfig
	// SandboxConfig is the pod sandbox config handed to the runtime.
	SandboxConfig *runtimeapi.PodSandboxConfig
}

// ProgressFunc receives a pull's progress in percent, 0 to 100.
type ProgressFunc func(percent int32)

// Puller pulls images for the controller. The CRI pull is a single call that reports
// nothing until it returns; a puller that watches the runtime's own transfer (containerd's
// content store, for one) can report real progress through progress while it pulls.
type Puller interface {
	// PullImage pulls req.Image, stopping when ctx ends, and returns the runtime's image ID.
	PullImage(ctx context.Context, req PullRequest, progress ProgressFunc) (imageID string, err error)
}

// ProgressWatcher follows a pull the runtime makes for a CRI PullImage call, in the
// runtime's own terms (containerd's content store, for one).
type ProgressWatcher interface {
	// WatchPull reports the progress of rt's pull of image through progress, in percent
	// below 100, until ctx ends. It returns at once when it cannot follow rt's pulls.
	WatchPull(ctx context.Context, rt *cri.Runtime, image string, progress func(percent int32))
}

// errRuntimeUnavailable fails an attempt made while the runtime does not answer.
var errRuntimeUnavailable = errors.New("the container runtime is not available")

// criPuller pulls with CRI PullImage, and reports progress through watcher while the call
// runs when there is one.
type criPuller struct {
	runtime controller.RuntimeSource
	watcher ProgressWatcher
}

func (p *criPuller) PullImage(ctx context.Context, req PullRequest, progress ProgressFunc) (string, error) {
	rt := p.runtime.Runtime()
	if rt == nil {
		return "", errRuntimeUnavailable
	}
	if p.watcher != nil && progress != nil {
		watchCtx, stopWatching := context.WithCancel(ctx)
		watching := make(chan struct{})
		go func() {
			defer close(watching)
			p.watcher.WatchPull(watchCtx, rt, req.Image, progress)
		}()
		// No progress may arrive after the pull returned: the caller reports 100 next.
		defer func() {
			stopWatching()
			<-watching
		}()
	}
	imageRef, err := rt.PullImageWithCredentials(ctx, req.Image, req.Credentials, req.SandboxConfig)
	if err != nil {
		return "", err
	}
	if imageRef != "" {
		return imageRef, nil
	}
	// Runtimes answer the image ID; one that answers nothing is asked.
	id, err := rt.ImageID(ctx, req.Image)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("the runtime reported image %s pulled but does not list it", req.Image)
	}
	return id, nil
}

// presentImageID returns the ID of the image ref names if the runtime already has it, ""
// otherwise.
func presentImageID(ctx context.Context, rt *cri.Runtime, ref string) (string, error) {
	images, err := rt.ListImages(ctx)
	if err != nil {
		return "", err
	}
	if image := cri.FindImage(images, ref); image != nil {
		return image.Id, nil
	}
	return "", nil
}
