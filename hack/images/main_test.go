package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bosun-dev/bosun/hack/images/ociimage"
)

// TestBinariesAreReproducible builds a small main package twice, the way the images'
// binaries are built, in two work directories, and expects the same bytes: the commit's date
// stands in for the build time and no path of the machine is kept. (Building the manager
// twice here would cost minutes for the same answer.)
func TestBinariesAreReproducible(t *testing.T) {
	ctx := context.Background()
	const root = "../.."
	commit, created, err := commitOf(ctx, root, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	var builds [][]byte
	for range 2 {
		data, err := buildBinary(ctx, root, "./test/images/pause", filepath.Join(t.TempDir(), "pause"), "v9.9.9-test", commit, created)
		if err != nil {
			t.Fatal(err)
		}
		builds = append(builds, data)
	}
	if !bytes.Equal(builds[0], builds[1]) {
		t.Errorf("two builds of one commit differ (%d and %d bytes)", len(builds[0]), len(builds[1]))
	}
	if bytes.Contains(builds[0], []byte(t.TempDir())) || bytes.Contains(builds[0], []byte(os.TempDir()+"/")) {
		t.Error("the binary holds a path of the build machine")
	}
}

// TestManagerImage packs a stand-in binary as the manager's image twice and expects the
// same digest, a non-root user, and the labels that say which commit and version it is.
func TestManagerImage(t *testing.T) {
	created := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const commit = "0123456789abcdef0123456789abcdef01234567"
	manager := images[0]
	first, err := manager.pack([]byte("stand-in"), "v9.9.9-test", commit, created)
	if err != nil {
		t.Fatal(err)
	}
	second, err := manager.pack([]byte("stand-in"), "v9.9.9-test", commit, created)
	if err != nil {
		t.Fatal(err)
	}
	if first.Digest != second.Digest {
		t.Errorf("two packs of one binary differ: %s and %s", first.Digest, second.Digest)
	}

	var config struct {
		Config struct {
			User       string
			Entrypoint []string
			Labels     map[string]string
		} `json:"config"`
	}
	if err := json.Unmarshal(first.Config.Data, &config); err != nil {
		t.Fatal(err)
	}
	if config.Config.User != "65532:65532" {
		t.Errorf("the manager runs as %q, want the unprivileged 65532:65532", config.Config.User)
	}
	if diff := cmp.Diff([]string{"/usr/local/bin/bosun-controller-manager"}, config.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	for key, want := range map[string]string{
		"org.opencontainers.image.title":    "bosun-controller-manager",
		"org.opencontainers.image.version":  "v9.9.9-test",
		"org.opencontainers.image.revision": commit,
		"org.opencontainers.image.created":  "2026-11-27T12:00:00Z",
	} {
		if got := config.Config.Labels[key]; got != want {
			t.Errorf("label %s = %q, want %q", key, got, want)
		}
	}
}

func TestSplitRegistry(t *testing.T) {
	for registry, want := range map[string][2]string{
		"127.0.0.1:5000":               {"127.0.0.1:5000", ""},
		"127.0.0.1:5000/bosun":         {"127.0.0.1:5000", "bosun"},
		"localhost:5000/bosun":         {"localhost:5000", "bosun"},
		"ghcr.io/acme":                 {"https://ghcr.io", "acme"},
		"https://ghcr.io/acme/bosun/":  {"https://ghcr.io", "acme/bosun"},
		"http://registry.local:80/dev": {"registry.local:80", "dev"},
	} {
		host, prefix := splitRegistry(registry)
		if got := [2]string{host, prefix}; got != want {
			t.Errorf("splitRegistry(%q) = %q, want %q", registry, got, want)
		}
	}
}

func TestCredentialsFromDockerConfig(t *testing.T) {
	auth := func(userPass string) string { return base64.StdEncoding.EncodeToString([]byte(userPass)) }
	config := fmt.Sprintf(`{"auths": {
		"https://index.docker.io/v1/": {"auth": %q},
		"ghcr.io": {"auth": %q},
		"broken.example": {"auth": "not base64!"}
	}}`, auth("hub:one"), auth("gh:two"))

	tests := []struct {
		registry string
		want     *ociimage.BasicAuth
		wantErr  bool
	}{
		{registry: "https://ghcr.io", want: &ociimage.BasicAuth{Username: "gh", Password: "two"}},
		{registry: "https://index.docker.io", want: &ociimage.BasicAuth{Username: "hub", Password: "one"}},
		{registry: "127.0.0.1:5000"},
		{registry: "https://broken.example", wantErr: true},
	}
	for _, tt := range tests {
		got, err := credentialsFromDockerConfig([]byte(config), tt.registry)
		if (err != nil) != tt.wantErr {
			t.Errorf("credentialsFromDockerConfig(%s) error = %v, want error %v", tt.registry, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("credentialsFromDockerConfig(%s) (-want +got):\n%s", tt.registry, diff)
		}
	}
}
