package cri

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/pkg/controller/imageref"
)

// ImageReference is the reference the runtime is asked to pull for tag of the image
// repository name: "name:tag", or "name@tag" when the tag is a digest ("sha256:…").
func ImageReference(name, tag string) string {
	return imageref.Join(name, tag)
}

// NormalizeImageReference returns ref in the fully qualified form runtimes report in
// repo tags and digests (imageref.Normalize): registry host, full path, and a tag
// ("latest" when ref has neither tag nor digest). "nginx:1.25" becomes
// "docker.io/library/nginx:1.25".
func NormalizeImageReference(ref string) string {
	return imageref.Normalize(ref)
}

// ListImages returns the runtime's images with their repo tags and repo digests
// normalised (NormalizeImageReference), so that they compare equal to normalised
// references whatever form the runtime reports them in.
func (r *Runtime) ListImages(ctx context.Context) ([]*runtimeapi.Image, error) {
	if r.ImageService == nil {
		return nil, errors.New("the runtime connection has no image service")
	}
	resp, err := r.ImageService.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	images := resp.GetImages()
	for _, image := range images {
		for i, tag := range image.RepoTags {
			image.RepoTags[i] = NormalizeImageReference(tag)
		}
		for i, digest := range image.RepoDigests {
			image.RepoDigests[i] = NormalizeImageReference(digest)
		}
	}
	return images, nil
}

// FindImage returns the image of images (as ListImages returns them) that ref names, by
// repo tag or repo digest, or nil. A digest reference also matches a repo tag that carries
// the same digest.
func FindImage(images []*runtimeapi.Image, ref string) *runtimeapi.Image {
	want := NormalizeImageReference(ref)
	name, _, digest := imageref.Split(want)
	for _, image := range images {
		for _, tag := range image.RepoTags {
			if tag == want {
				return image
			}
		}
		if digest == "" {
			continue
		}
		for _, repoDigest := range image.RepoDigests {
			if repoDigest == name+"@"+digest {
				return image
			}
		}
	}
	return nil
}

// PullImage asks the runtime to pull ref with auth (nil: anonymously) and sandbox as the
// pod sandbox config, and returns the image reference the runtime answers (the image ID
// for containerd and CRI-O).
func (r *Runtime) PullImage(ctx context.Context, ref string, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	if r.ImageService == nil {
		return "", errors.New("the runtime connection has no image service")
	}
	resp, err := r.ImageService.PullImage(ctx, &runtimeapi.PullImageRequest{
		Image:         &runtimeapi.ImageSpec{Image: ref},
		Auth:          auth,
		SandboxConfig: sandbox,
	})
	if err != nil {
		return "", fmt.Errorf("pulling image %s: %w", ref, err)
	}
	return resp.GetImageRef(), nil
}

// PullImageWithCredentials pulls ref with each of credentials in turn until one works;
// anonymously only when there is no credential at all. The error of a failed pull is the
// last attempt's.
func (r *Runtime) PullImageWithCredentials(ctx context.Context, ref string, credentials []*runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	if len(credentials) == 0 {
		return r.PullImage(ctx, ref, nil, sandbox)
	}
	var lastErr error
	for _, auth := range credentials {
		imageRef, err := r.PullImage(ctx, ref, auth, sandbox)
		if err == nil {
			return imageRef, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if len(credentials) > 1 {
		return "", fmt.Errorf("each of %d matching registry credentials failed, the last with: %w", len(credentials), lastErr)
	}
	return "", lastErr
}

// ImageID returns the ID of the image ref names, or "" when the runtime does not have it.
func (r *Runtime) ImageID(ctx context.Context, ref string) (string, error) {
	if r.ImageService == nil {
		return "", errors.New("the runtime connection has no image service")
	}
	resp, err := r.ImageService.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		return "", fmt.Errorf("reading the status of image %s: %w", ref, err)
	}
	return resp.GetImage().GetId(), nil
}
