// Tests for Push against the real CNCF distribution registry, the one the
// local cluster runs. They are skipped where its binary is not installed.

package ociimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// registryBinary is where Debian's docker-registry package installs distribution.
const registryBinary = "/usr/bin/docker-registry"

func TestPushToRealRegistry(t *testing.T) {
	if _, err := os.Stat(registryBinary); err != nil {
		t.Skipf("real registry not available (%v); install Debian's docker-registry package to run this test", err)
	}
	img := mustBuild(t, testFiles(), testConfig())

	t.Run("anonymous", func(t *testing.T) {
		reg := startRegistry(t, "")
		ctx := context.Background()

		if err := Push(ctx, reg.addr, "bosun/webserver", "v1", img, nil); err != nil {
			t.Fatalf("Push() error = %v\nregistry log:\n%s", err, reg.log())
		}
		// Pushing again, under another tag, must find the blobs already there.
		if err := Push(ctx, reg.addr, "bosun/webserver", "v2", img, nil); err != nil {
			t.Fatalf("second Push() error = %v\nregistry log:\n%s", err, reg.log())
		}
		for _, tag := range []string{"v1", "v2"} {
			reg.checkImage(t, "bosun/webserver", tag, img, nil)
		}
	})

	t.Run("htpasswd", func(t *testing.T) {
		htpasswd, err := exec.LookPath("htpasswd")
		if err != nil {
			t.Skipf("htpasswd not found (%v); install Debian's apache2-utils package to test registry auth", err)
		}
		out, err := exec.Command(htpasswd, "-Bbn", "user", "pass").Output()
		if err != nil {
			t.Fatalf("htpasswd -Bbn: %v", err)
		}
		htpasswdFile := filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(htpasswdFile, out, 0o600); err != nil {
			t.Fatal(err)
		}
		reg := startRegistry(t, htpasswdFile)
		ctx := context.Background()

		err = Push(ctx, reg.addr, "bosun/webserver", "v1", img, nil)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("Push() without credentials: error = %v, want one mentioning 401", err)
		}
		err = Push(ctx, reg.addr, "bosun/webserver", "v1", img, &BasicAuth{Username: "user", Password: "wrong"})
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("Push() with a wrong password: error = %v, want one mentioning 401", err)
		}

		auth := &BasicAuth{Username: "user", Password: "pass"}
		if err := Push(ctx, reg.addr, "bosun/webserver", "v1", img, auth); err != nil {
			t.Fatalf("Push() with credentials: error = %v\nregistry log:\n%s", err, reg.log())
		}
		reg.checkImage(t, "bosun/webserver", "v1", img, auth)
	})
}

// realRegistry is a distribution registry process serving on loopback.
type realRegistry struct {
	addr string // host:port

	mu     sync.Mutex
	output bytes.Buffer
}

func (r *realRegistry) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.output.Write(p)
}

// log returns what the registry printed, for failure messages.
func (r *realRegistry) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.output.String()
}

// startRegistry runs the registry with its storage in a temporary directory,
// and htpasswd auth when htpasswdFile is not empty, and waits until it serves.
// The process is killed when the test ends.
func startRegistry(t *testing.T, htpasswdFile string) *realRegistry {
	t.Helper()
	dir := t.TempDir()
	reg := &realRegistry{addr: freeLoopbackAddr(t)}

	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
`, filepath.Join(dir, "storage"), reg.addr)
	if htpasswdFile != "" {
		config += fmt.Sprintf(`auth:
  htpasswd:
    realm: bosun
    path: %s
`, htpasswdFile)
	}
	configFile := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(registryBinary, "serve", configFile)
	cmd.Stdout = reg
	cmd.Stderr = reg
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", registryBinary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	// Any HTTP answer from /v2/ means it serves; 401 is the answer with auth on.
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("http://" + reg.addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return reg
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup's receive
			t.Fatalf("registry exited before serving: %v\nlog:\n%s", err, reg.log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry not serving on %s after 15s\nlog:\n%s", reg.addr, reg.log())
		}
	}
}

// freeLoopbackAddr picks a port that is free now. Another process could take
// it before the registry binds it, but on a test machine that is unlikely, and
// the registry then fails loudly rather than serving the wrong thing.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// checkImage pulls repository:tag back, as a container runtime would resolve
// it, and compares it with img.
func (r *realRegistry) checkImage(t *testing.T, repository, tag string, img *Image, auth *BasicAuth) {
	t.Helper()
	manifest, header := r.get(t, "/v2/"+repository+"/manifests/"+tag, MediaTypeManifest, auth)
	if got := digestOf(manifest); got != img.Digest {
		t.Errorf("manifest %s:%s hashes to %s, want %s", repository, tag, got, img.Digest)
	}
	if got := header.Get("Docker-Content-Digest"); got != img.Digest {
		t.Errorf("manifest %s:%s: Docker-Content-Digest %s, want %s", repository, tag, got, img.Digest)
	}
	if got := header.Get("Content-Type"); got != MediaTypeManifest {
		t.Errorf("manifest %s:%s: Content-Type %s, want %s", repository, tag, got, MediaTypeManifest)
	}

	config, _ := r.get(t, "/v2/"+repository+"/blobs/"+img.Config.Digest, "", auth)
	if got := digestOf(config); got != img.Config.Digest {
		t.Errorf("config blob hashes to %s, want %s", got, img.Config.Digest)
	}
	layer, _ := r.get(t, "/v2/"+repository+"/blobs/"+img.Layer.Digest, "", auth)
	if !bytes.Equal(layer, img.Layer.Data) {
		t.Errorf("layer blob differs from the one pushed (%d bytes, want %d)", len(layer), len(img.Layer.Data))
	}
}

func (r *realRegistry) get(t *testing.T, path, accept string, auth *BasicAuth) ([]byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+r.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if auth != nil {
		req.SetBasicAuth(auth.Username, auth.Password)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status + ": " + strings.TrimSpace(string(body)))
	}
	if err != nil {
		t.Fatalf("GET %s: %v\nregistry log:\n%s", path, err, r.log())
	}
	return body, resp.Header
}
