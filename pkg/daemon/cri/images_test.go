package cri

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

// startImageRuntime serves a fake runtime and returns it with a Runtime connected to it.
func startImageRuntime(t *testing.T) (*crifake.Runtime, *Runtime) {
	t.Helper()
	fake := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "cri.sock"))
	conn, err := grpc.NewClient(fake.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return fake, &Runtime{Endpoint: fake.Endpoint(), ImageService: runtimeapi.NewImageServiceClient(conn)}
}

// The normalisation itself is imageref's (tested there); the runtime's side relies on
// its Docker Hub folding, registry-1.docker.io included.
func TestNormalizeImageReference(t *testing.T) {
	for ref, want := range map[string]string{
		"nginx":                                "docker.io/library/nginx:latest",
		"registry-1.docker.io/bitnami/redis:7": "docker.io/bitnami/redis:7",
		"reg.io:5000/app:v1@sha256:abc":        "reg.io:5000/app:v1@sha256:abc",
	} {
		if got := NormalizeImageReference(ref); got != want {
			t.Errorf("NormalizeImageReference(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestImageReference(t *testing.T) {
	if got := ImageReference("nginx", "1.25"); got != "nginx:1.25" {
		t.Errorf("tag: %q", got)
	}
	if got := ImageReference("reg.io:5000/app", "sha256:abc"); got != "reg.io:5000/app@sha256:abc" {
		t.Errorf("digest: %q", got)
	}
}

func TestListImagesNormalisesAndFindImageMatches(t *testing.T) {
	fake, rt := startImageRuntime(t)
	nginx := fake.AddImage("nginx:1.25", "nginx@sha256:0123")
	app := fake.AddImage("reg.io:5000/team/app:v1")

	images, err := rt.ListImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, image := range images {
		for _, tag := range image.RepoTags {
			if !strings.Contains(tag, "/") {
				t.Errorf("repo tag %q not normalised", tag)
			}
		}
	}
	for ref, want := range map[string]string{
		"nginx:1.25":                        nginx,
		"docker.io/library/nginx:1.25":      nginx,
		"nginx@sha256:0123":                 nginx,
		"reg.io:5000/team/app:v1":           app,
		"nginx:1.26":                        "",
		"reg.io/team/app:v1":                "",
		"docker.io/library/nginx@sha256:99": "",
	} {
		got := FindImage(images, ref)
		switch {
		case want == "" && got != nil:
			t.Errorf("FindImage(%q) found %s", ref, got.Id)
		case want != "" && (got == nil || got.Id != want):
			t.Errorf("FindImage(%q) = %v, want %s", ref, got, want)
		}
	}
}

func TestPullImagePassesAuthAndSandbox(t *testing.T) {
	fake, rt := startImageRuntime(t)
	auth := &runtimeapi.AuthConfig{Username: "u", Password: "p", ServerAddress: "docker.io"}
	sandbox := &runtimeapi.PodSandboxConfig{Annotations: map[string]string{"a": "b"}, Labels: map[string]string{"l": "v"}}
	imageRef, err := rt.PullImage(context.Background(), "nginx:1.25", auth, sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := fake.ImageID("docker.io/library/nginx:1.25"); !ok || id != imageRef {
		t.Errorf("pulled image ref %q, runtime has %q (%v)", imageRef, id, ok)
	}
	if id, err := rt.ImageID(context.Background(), "nginx:1.25"); err != nil || id != imageRef {
		t.Errorf("ImageID = %q, %v", id, err)
	}
	pulls := fake.Pulls()
	if len(pulls) != 1 || pulls[0].Image != "nginx:1.25" || pulls[0].Auth.GetUsername() != "u" ||
		pulls[0].SandboxConfig.GetAnnotations()["a"] != "b" || pulls[0].SandboxConfig.GetLabels()["l"] != "v" {
		t.Errorf("pulls %+v", pulls)
	}

	fake.FailPulls(errors.New("registry unavailable"))
	if _, err := rt.PullImage(context.Background(), "nginx:1.26", nil, nil); err == nil || !strings.Contains(err.Error(), "registry unavailable") {
		t.Errorf("failed pull: %v", err)
	}
}

func TestPullImageWithCredentials(t *testing.T) {
	fake, rt := startImageRuntime(t)
	fake.RequireCredentials("reg.io/app", "right", "secret")
	ctx := context.Background()
	wrong := &runtimeapi.AuthConfig{Username: "wrong", Password: "x"}
	right := &runtimeapi.AuthConfig{Username: "right", Password: "secret"}

	// Each credential in turn until one works; never anonymously when credentials exist.
	if _, err := rt.PullImageWithCredentials(ctx, "reg.io/app:v1", []*runtimeapi.AuthConfig{wrong, right}, nil); err != nil {
		t.Fatal(err)
	}
	pulls := fake.Pulls()
	if len(pulls) != 2 || pulls[0].Auth.GetUsername() != "wrong" || pulls[1].Auth.GetUsername() != "right" {
		t.Errorf("pulls %+v", pulls)
	}

	_, err := rt.PullImageWithCredentials(ctx, "reg.io/app:v2", []*runtimeapi.AuthConfig{wrong}, nil)
	if err == nil || !strings.Contains(err.Error(), "authorization failed") {
		t.Errorf("wrong credential: %v", err)
	}
	if pulls := fake.Pulls(); len(pulls) != 3 || pulls[2].Auth == nil {
		t.Errorf("a failing credential was followed by an anonymous pull: %+v", pulls)
	}

	// Without credentials: one anonymous pull.
	if _, err := rt.PullImageWithCredentials(ctx, "nginx:1.25", nil, nil); err != nil {
		t.Fatal(err)
	}
	if pulls := fake.Pulls(); len(pulls) != 4 || pulls[3].Auth != nil {
		t.Errorf("anonymous pull: %+v", pulls)
	}
}
