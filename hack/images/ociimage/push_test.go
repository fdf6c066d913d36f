// Tests for Push against a small in-test fake of the registry API.
package ociimage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeRegistry implements just enough of the registry API for Push, checks
// what a real registry would check, and records every request.
type fakeRegistry struct {
	t *testing.T
	// auth, when set, is required on every request.
	auth *BasicAuth
	// tokenRealm, when set, makes the registry want "Bearer <bearerToken>" on every
	// request and name tokenRealm in its challenge.
	tokenRealm, bearerToken string
	// absoluteLocation makes upload Locations absolute URLs without a query,
	// instead of relative paths carrying a _state parameter.
	absoluteLocation bool

	server *httptest.Server

	mu        sync.Mutex
	requests  []string // "METHOD /path", in order
	blobs     map[string][]byte
	manifests map[string][]byte // by tag
	uploads   int
}

func newFakeRegistry(t *testing.T, configure func(*fakeRegistry)) *fakeRegistry {
	t.Helper()
	r := &fakeRegistry{t: t, blobs: map[string][]byte{}, manifests: map[string][]byte{}}
	if configure != nil {
		configure(r)
	}
	r.server = httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(r.server.Close)
	return r
}

// host is the registry's "host:port", as Push takes it.
func (r *fakeRegistry) host() string {
	return strings.TrimPrefix(r.server.URL, "http://")
}

func (r *fakeRegistry) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// stored returns the blobs and the manifests by tag the registry holds.
func (r *fakeRegistry) stored() (blobs, manifests map[string][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.blobs), maps.Clone(r.manifests)
}

func (r *fakeRegistry) serveHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)

	if r.tokenRealm != "" {
		if req.Header.Get("Authorization") != "Bearer "+r.bearerToken {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="fake",scope="repository:bosun/webserver:pull"`, r.tokenRealm))
			registryErrorResponse(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
			return
		}
	} else if r.auth != nil {
		user, pass, ok := req.BasicAuth()
		if !ok || user != r.auth.Username || pass != r.auth.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
			registryErrorResponse(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
			return
		}
	}

	rest, ok := strings.CutPrefix(req.URL.Path, "/v2/")
	if !ok {
		http.NotFound(w, req)
		return
	}
	switch {
	case req.Method == http.MethodHead && strings.Contains(rest, "/blobs/sha256:"):
		digest := rest[strings.LastIndex(rest, "/")+1:]
		if _, ok := r.blobs[digest]; ok {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusNotFound)
		}

	case req.Method == http.MethodPost && strings.HasSuffix(rest, "/blobs/uploads/"):
		r.uploads++
		location := fmt.Sprintf("%s%d?_state=s%%2Bt%d%%3D", req.URL.Path, r.uploads, r.uploads)
		if r.absoluteLocation {
			location = fmt.Sprintf("%s%s%d", r.server.URL, req.URL.Path, r.uploads)
		}
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusAccepted)

	case req.Method == http.MethodPut && strings.Contains(rest, "/blobs/uploads/"):
		query := req.URL.Query()
		if !r.absoluteLocation {
			// The upload's own parameters must come back exactly as given.
			id := rest[strings.LastIndex(rest, "/")+1:]
			if want := "s+t" + id + "="; query.Get("_state") != want {
				registryErrorResponse(w, http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "lost _state: got "+query.Get("_state")+", want "+want)
				return
			}
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/octet-stream" {
			registryErrorResponse(w, http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "content type "+ct)
			return
		}
		data, err := io.ReadAll(req.Body)
		if err != nil {
			registryErrorResponse(w, http.StatusBadRequest, "BLOB_UPLOAD_INVALID", err.Error())
			return
		}
		digest := query.Get("digest")
		if digestOf(data) != digest {
			registryErrorResponse(w, http.StatusBadRequest, "DIGEST_INVALID", "digest mismatch")
			return
		}
		r.blobs[digest] = data
		w.Header().Set("Docker-Content-Digest", digest)
		w.WriteHeader(http.StatusCreated)

	case req.Method == http.MethodPut && strings.Contains(rest, "/manifests/"):
		if ct := req.Header.Get("Content-Type"); ct != MediaTypeManifest {
			registryErrorResponse(w, http.StatusBadRequest, "MANIFEST_INVALID", "content type "+ct)
			return
		}
		data, err := io.ReadAll(req.Body)
		if err != nil {
			registryErrorResponse(w, http.StatusBadRequest, "MANIFEST_INVALID", err.Error())
			return
		}
		var m ociManifest
		if err := json.Unmarshal(data, &m); err != nil {
			registryErrorResponse(w, http.StatusBadRequest, "MANIFEST_INVALID", err.Error())
			return
		}
		for _, d := range append([]ociDescriptor{m.Config}, m.Layers...) {
			if _, ok := r.blobs[d.Digest]; !ok {
				registryErrorResponse(w, http.StatusBadRequest, "MANIFEST_BLOB_UNKNOWN", d.Digest)
				return
			}
		}
		r.manifests[rest[strings.LastIndex(rest, "/")+1:]] = data
		w.Header().Set("Docker-Content-Digest", digestOf(data))
		w.WriteHeader(http.StatusCreated)

	default:
		registryErrorResponse(w, http.StatusNotFound, "UNSUPPORTED", req.Method+" "+req.URL.Path)
	}
}

// registryErrorResponse answers in the registry's JSON error format.
func registryErrorResponse(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]string{{"code": code, "message": message}},
	})
}

func TestPushSendsBlobsThenManifest(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	reg := newFakeRegistry(t, nil)

	if err := Push(context.Background(), reg.host(), "bosun/webserver", "v1", img, nil); err != nil {
		t.Fatalf("Push() error = %v", err)
	}

	want := []string{
		"HEAD /v2/bosun/webserver/blobs/" + img.Layer.Digest,
		"POST /v2/bosun/webserver/blobs/uploads/",
		"PUT /v2/bosun/webserver/blobs/uploads/1",
		"HEAD /v2/bosun/webserver/blobs/" + img.Config.Digest,
		"POST /v2/bosun/webserver/blobs/uploads/",
		"PUT /v2/bosun/webserver/blobs/uploads/2",
		"PUT /v2/bosun/webserver/manifests/v1",
	}
	if diff := cmp.Diff(want, reg.recorded()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	blobs, manifests := reg.stored()
	if !bytes.Equal(blobs[img.Layer.Digest], img.Layer.Data) {
		t.Error("the registry did not receive the layer as built")
	}
	if !bytes.Equal(blobs[img.Config.Digest], img.Config.Data) {
		t.Error("the registry did not receive the config as built")
	}
	if !bytes.Equal(manifests["v1"], img.Manifest) {
		t.Error("the registry did not receive the manifest as built")
	}
}

func TestPushWithAbsoluteLocation(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	reg := newFakeRegistry(t, func(r *fakeRegistry) { r.absoluteLocation = true })

	if err := Push(context.Background(), reg.host(), "webserver", "latest", img, nil); err != nil {
		t.Fatalf("Push() error = %v", err)
	}
	blobs, manifests := reg.stored()
	if len(blobs) != 2 || !bytes.Equal(manifests["latest"], img.Manifest) {
		t.Errorf("registry holds %d blobs and manifest %q, want 2 blobs and the manifest", len(blobs), manifests["latest"])
	}
}

func TestPushSkipsExistingBlobs(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	reg := newFakeRegistry(t, nil)
	// The config is already there, as after a push of the same image elsewhere.
	reg.blobs[img.Config.Digest] = img.Config.Data

	if err := Push(context.Background(), reg.host(), "bosun/webserver", "v1", img, nil); err != nil {
		t.Fatalf("first Push() error = %v", err)
	}
	if err := Push(context.Background(), reg.host(), "bosun/webserver", "v2", img, nil); err != nil {
		t.Fatalf("second Push() error = %v", err)
	}

	want := []string{
		// First push: only the layer is uploaded.
		"HEAD /v2/bosun/webserver/blobs/" + img.Layer.Digest,
		"POST /v2/bosun/webserver/blobs/uploads/",
		"PUT /v2/bosun/webserver/blobs/uploads/1",
		"HEAD /v2/bosun/webserver/blobs/" + img.Config.Digest,
		"PUT /v2/bosun/webserver/manifests/v1",
		// Second push: nothing but checks and the new tag.
		"HEAD /v2/bosun/webserver/blobs/" + img.Layer.Digest,
		"HEAD /v2/bosun/webserver/blobs/" + img.Config.Digest,
		"PUT /v2/bosun/webserver/manifests/v2",
	}
	if diff := cmp.Diff(want, reg.recorded()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestPushSendsBasicAuth(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	auth := &BasicAuth{Username: "user", Password: "pass"}
	reg := newFakeRegistry(t, func(r *fakeRegistry) { r.auth = auth })

	// The fake answers 401 to any request without the credentials, so a
	// successful push shows they went with every one of them.
	if err := Push(context.Background(), reg.host(), "bosun/webserver", "v1", img, auth); err != nil {
		t.Fatalf("Push() error = %v", err)
	}
	if got := len(reg.recorded()); got != 7 {
		t.Errorf("push made %d requests, want 7", got)
	}
}

func TestPushAnswersBearerChallenge(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	auth := &BasicAuth{Username: "user", Password: "pass"}
	var tokenRequests []string
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tokenRequests = append(tokenRequests, req.URL.RawQuery)
		if user, pass, ok := req.BasicAuth(); !ok || user != auth.Username || pass != auth.Password {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"access_token": "t0k3n"})
	}))
	defer tokens.Close()
	reg := newFakeRegistry(t, func(r *fakeRegistry) { r.tokenRealm, r.bearerToken = tokens.URL+"/token", "t0k3n" })

	if err := Push(context.Background(), "http://"+reg.host(), "bosun/webserver", "v1", img, auth); err != nil {
		t.Fatalf("Push() error = %v", err)
	}
	// One token, asked once, for both actions of the push: the first challenge
	// names the pull scope only.
	want := []string{"scope=repository%3Abosun%2Fwebserver%3Apull%2Cpush&service=fake"}
	if diff := cmp.Diff(want, tokenRequests); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}
	if _, manifests := reg.stored(); !bytes.Equal(manifests["v1"], img.Manifest) {
		t.Error("the registry does not hold the manifest under v1")
	}

	// Wrong credentials: the token endpoint's refusal is the error.
	err := Push(context.Background(), reg.host(), "bosun/webserver", "v2", img, &BasicAuth{Username: "user", Password: "guess"})
	if err == nil || !strings.Contains(err.Error(), "Bearer challenge") || !strings.Contains(err.Error(), "who are you") {
		t.Errorf("Push() with wrong credentials: error = %v, want the token endpoint's refusal", err)
	}
}

func TestParseBearerChallenge(t *testing.T) {
	tests := []struct {
		header string
		want   bearerChallenge
		ok     bool
	}{
		{`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull,push"`,
			bearerChallenge{realm: "https://auth.docker.io/token", service: "registry.docker.io", scope: "repository:a/b:pull,push"}, true},
		{`bearer realm=https://ghcr.io/token, service=ghcr.io`, bearerChallenge{realm: "https://ghcr.io/token", service: "ghcr.io"}, true},
		{`Basic realm="registry"`, bearerChallenge{}, false},
		{`Bearer service="x"`, bearerChallenge{service: "x"}, false},
		{`Bearer realm="unterminated`, bearerChallenge{}, false},
		{``, bearerChallenge{}, false},
	}
	for _, tt := range tests {
		got, ok := parseBearerChallenge(tt.header)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseBearerChallenge(%q) = %+v, %v; want %+v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPushReportsUnauthorized(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	reg := newFakeRegistry(t, func(r *fakeRegistry) { r.auth = &BasicAuth{Username: "user", Password: "pass"} })

	for name, auth := range map[string]*BasicAuth{
		"no credentials":    nil,
		"wrong credentials": {Username: "user", Password: "guess"},
	} {
		t.Run(name, func(t *testing.T) {
			err := Push(context.Background(), reg.host(), "bosun/webserver", "v1", img, auth)
			if err == nil {
				t.Fatal("Push() succeeded against a registry that wants other credentials")
			}
			var regErr *RegistryError
			if !errors.As(err, &regErr) || regErr.StatusCode != http.StatusUnauthorized {
				t.Fatalf("Push() error = %v, want a RegistryError with status 401", err)
			}
			for _, want := range []string{"401 Unauthorized", `Basic realm="fake"`, img.Layer.Digest, reg.host() + "/bosun/webserver:v1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestPushReportsRegistryErrors(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	// A registry that refuses to start uploads, explaining why in its body.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		registryErrorResponse(w, http.StatusForbidden, "DENIED", "repository is read-only\n"+strings.Repeat("x", 2000))
	}))
	defer srv.Close()

	err := Push(context.Background(), strings.TrimPrefix(srv.URL, "http://"), "bosun/webserver", "v1", img, nil)
	if err == nil {
		t.Fatal("Push() succeeded against a registry that refuses uploads")
	}
	msg := err.Error()
	for _, want := range []string{"starting the upload", "POST", "403 Forbidden", "repository is read-only", img.Layer.Digest} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if len(msg) > 1500 {
		t.Errorf("error message is %d bytes long; the body should have been trimmed", len(msg))
	}
}

func TestPushRejectsBadReferences(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	tests := []struct {
		registry, repository, tag string
		wantErr                   string
	}{
		{registry: "", repository: "a", tag: "v1", wantErr: "invalid registry"},
		{registry: "localhost:5000/bosun", repository: "a", tag: "v1", wantErr: "invalid registry"},
		{registry: "https://", repository: "a", tag: "v1", wantErr: "invalid registry"},
		{registry: "localhost:5000", repository: "Bosun/Webserver", tag: "v1", wantErr: "invalid repository"},
		{registry: "localhost:5000", repository: "bosun//webserver", tag: "v1", wantErr: "invalid repository"},
		{registry: "localhost:5000", repository: "webserver", tag: "", wantErr: "invalid tag"},
		{registry: "localhost:5000", repository: "webserver", tag: "-v1", wantErr: "invalid tag"},
	}
	for _, tt := range tests {
		err := Push(context.Background(), tt.registry, tt.repository, tt.tag, img, nil)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Push(%q, %q, %q) error = %v, want one containing %q", tt.registry, tt.repository, tt.tag, err, tt.wantErr)
		}
	}
}

func TestPushHonoursContext(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())
	reg := newFakeRegistry(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Push(ctx, reg.host(), "webserver", "v1", img, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Push() with a cancelled context: error = %v, want context.Canceled", err)
	}
}

// Guard against url.URL.JoinPath escaping the digest's colon or dropping the
// trailing slash of the uploads path, which registries are strict about.
func TestPusherURLs(t *testing.T) {
	p := &pusher{base: &url.URL{Scheme: "http", Host: "localhost:5000"}, repository: "bosun/webserver"}
	for suffix, want := range map[string]string{
		"blobs/sha256:abc": "http://localhost:5000/v2/bosun/webserver/blobs/sha256:abc",
		"blobs/uploads/":   "http://localhost:5000/v2/bosun/webserver/blobs/uploads/",
		"manifests/v1":     "http://localhost:5000/v2/bosun/webserver/manifests/v1",
	} {
		if got := p.url(suffix).String(); got != want {
			t.Errorf("url(%q) = %s, want %s", suffix, got, want)
		}
	}
}
