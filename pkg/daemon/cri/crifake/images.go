package crifake

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Names of the image service calls ImageCallCount counts.
const (
	ListImagesCall  = "ListImages"
	ImageStatusCall = "ImageStatus"
	PullImageCall   = "PullImage"
)

// PullCall is one PullImage request as the fake runtime received it.
type PullCall struct {
	// Image is the reference as requested.
	Image string
	// Auth is the credential sent, nil for an anonymous pull.
	Auth *runtimeapi.AuthConfig
	// SandboxConfig is the pod sandbox config sent.
	SandboxConfig *runtimeapi.PodSandboxConfig
}

// credential is a user name and password a repository requires.
type credential struct{ username, password string }

// imageState holds the fake runtime's images and the pulls it was asked for.
type imageState struct {
	mu sync.Mutex
	// images are the images the runtime has; repo tags and digests in normalised form.
	images []*runtimeapi.Image
	pulls  []PullCall
	calls  map[string]int
	// pullErr, when set, fails every pull.
	pullErr error
	// blocked, when set, holds every pull until it is closed or the caller gives up.
	blocked chan struct{}
	// required maps a normalised repository name to the credential its pulls need.
	required map[string]credential
}

// AddImage adds an image known by the references refs (repo tags such as "nginx:1.25" or
// digests "nginx@sha256:…"), as if it had been pulled earlier, and returns its ID.
func (r *Runtime) AddImage(refs ...string) string {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(refs...)
}

func (s *imageState) addLocked(refs ...string) string {
	image := &runtimeapi.Image{Id: fakeImageID(refs), Size: 1 << 20}
	for _, ref := range refs {
		normalized := normalizeReference(ref)
		// A tag moves to the new image, as it does in a real runtime.
		for _, other := range s.images {
			other.RepoTags = slices.DeleteFunc(other.RepoTags, func(t string) bool { return t == normalized })
		}
		if strings.Contains(normalized, "@") {
			image.RepoDigests = append(image.RepoDigests, normalized)
		} else {
			image.RepoTags = append(image.RepoTags, normalized)
		}
	}
	s.images = slices.DeleteFunc(s.images, func(i *runtimeapi.Image) bool { return i.Id == image.Id })
	s.images = append(s.images, image)
	return image.Id
}

// fakeImageID derives a stable content-like ID from the references.
func fakeImageID(refs []string) string {
	sum := sha256.Sum256([]byte(strings.Join(refs, ",")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ImageID returns the ID of the image ref names (a repo tag or digest, any form), and
// whether the runtime has it.
func (r *Runtime) ImageID(ref string) (string, bool) {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	if image := s.findLocked(ref); image != nil {
		return image.Id, true
	}
	return "", false
}

// FailPulls makes every later pull fail with err (returned as is when it is a gRPC
// status, else with code Unknown); nil makes pulls succeed again.
func (r *Runtime) FailPulls(err error) {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullErr = err
}

// BlockPulls makes every later pull wait, after it has been recorded, until release is
// called or its caller gives up; the pull then proceeds as usual (succeeds or fails).
func (r *Runtime) BlockPulls() (release func()) {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	blocked := make(chan struct{})
	s.blocked = blocked
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			close(blocked)
			if s.blocked == blocked {
				s.blocked = nil
			}
		})
	}
}

// RequireCredentials makes pulls of the repository of ref (tag ignored) fail as a private
// registry does unless they carry username and password, in the auth config's fields or
// in its base64 "auth".
func (r *Runtime) RequireCredentials(ref, username, password string) {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.required == nil {
		s.required = map[string]credential{}
	}
	s.required[repositoryOf(normalizeReference(ref))] = credential{username, password}
}

// Pulls returns the PullImage calls received so far, in order.
func (r *Runtime) Pulls() []PullCall {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pulls)
}

// ImageCallCount returns how many times the image service call method (ListImagesCall,
// ImageStatusCall, PullImageCall) was made.
func (r *Runtime) ImageCallCount(method string) int {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *imageState) countLocked(method string) {
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[method]++
}

// findLocked returns the image ref names by ID, repo tag or repo digest.
func (s *imageState) findLocked(ref string) *runtimeapi.Image {
	normalized := normalizeReference(ref)
	for _, image := range s.images {
		if image.Id == ref || slices.Contains(image.RepoTags, normalized) || slices.Contains(image.RepoDigests, normalized) {
			return image
		}
	}
	return nil
}

// ListImages lists every image, or the one the filter names.
func (r *Runtime) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countLocked(ListImagesCall)
	resp := &runtimeapi.ListImagesResponse{}
	if want := req.GetFilter().GetImage().GetImage(); want != "" {
		if image := s.findLocked(want); image != nil {
			resp.Images = append(resp.Images, proto.Clone(image).(*runtimeapi.Image))
		}
		return resp, nil
	}
	for _, image := range s.images {
		resp.Images = append(resp.Images, proto.Clone(image).(*runtimeapi.Image))
	}
	return resp, nil
}

// ImageStatus answers the image the request names, or no image (and no error) when the
// runtime does not have it, as the CRI requires.
func (r *Runtime) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	s := &r.images
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countLocked(ImageStatusCall)
	resp := &runtimeapi.ImageStatusResponse{}
	if image := s.findLocked(req.GetImage().GetImage()); image != nil {
		resp.Image = proto.Clone(image).(*runtimeapi.Image)
	}
	return resp, nil
}

// PullImage records the call, waits while pulls are blocked, then fails as FailPulls or
// RequireCredentials say, or adds the image and answers its ID.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	s := &r.images
	s.mu.Lock()
	s.countLocked(PullImageCall)
	call := PullCall{Image: req.GetImage().GetImage()}
	if req.Auth != nil {
		call.Auth = proto.Clone(req.Auth).(*runtimeapi.AuthConfig)
	}
	if req.SandboxConfig != nil {
		call.SandboxConfig = proto.Clone(req.SandboxConfig).(*runtimeapi.PodSandboxConfig)
	}
	s.pulls = append(s.pulls, call)
	blocked := s.blocked
	s.mu.Unlock()

	if blocked != nil {
		select {
		case <-blocked:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pullErr != nil {
		if _, ok := status.FromError(s.pullErr); ok {
			return nil, s.pullErr
		}
		return nil, status.Error(codes.Unknown, s.pullErr.Error())
	}
	normalized := normalizeReference(call.Image)
	if want, ok := s.required[repositoryOf(normalized)]; ok && !authorized(req.Auth, want) {
		return nil, status.Errorf(codes.Unknown, "failed to pull and unpack image %q: failed to resolve reference %q: pull access denied, repository does not exist or may require authorization: authorization failed", normalized, normalized)
	}
	if image := s.findLocked(normalized); image != nil {
		return &runtimeapi.PullImageResponse{ImageRef: image.Id}, nil
	}
	return &runtimeapi.PullImageResponse{ImageRef: s.addLocked(call.Image)}, nil
}

// authorized tells whether auth carries want, as fields or as base64 "user:password".
func authorized(auth *runtimeapi.AuthConfig, want credential) bool {
	if auth == nil {
		return false
	}
	if auth.Username == want.username && auth.Password == want.password {
		return true
	}
	decoded, err := base64.StdEncoding.DecodeString(auth.Auth)
	return err == nil && string(decoded) == want.username+":"+want.password
}

// normalizeReference qualifies an image reference the way runtimes report repo tags:
// "nginx:1.25" → "docker.io/library/nginx:1.25"; "latest" is added when the reference has
// neither tag nor digest. The fake keeps its own copy of the rule, as a real runtime does.
func normalizeReference(ref string) string {
	name, digest, _ := strings.Cut(ref, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	first, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first) {
		first, rest = "docker.io", name
	}
	if first == "index.docker.io" || first == "registry-1.docker.io" {
		first = "docker.io"
	}
	if first == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	out := first + "/" + rest
	if tag == "" && digest == "" {
		tag = "latest"
	}
	if tag != "" {
		out += ":" + tag
	}
	if digest != "" {
		out += "@" + digest
	}
	return out
}

// repositoryOf strips the tag and digest of a normalised reference.
func repositoryOf(normalized string) string {
	name, _, _ := strings.Cut(normalized, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name
}
