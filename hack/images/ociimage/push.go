// Pushing images over the Docker Registry HTTP API v2 (the OCI distribution API).

package ociimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// requestTimeout bounds each request to the registry. The registry is on
// loopback and the blobs are a few megabytes, so anything slower is a hang.
const requestTimeout = 2 * time.Minute

// maxErrorBody is how much of an error response is kept for the error message.
const maxErrorBody = 512

var (
	// repositoryPattern is the distribution spec's repository name: lowercase
	// path components separated by "/", each made of alphanumerics joined by
	// ".", "_", "__" or runs of "-".
	repositoryPattern = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	// tagPattern is the distribution spec's tag.
	tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
)

// BasicAuth holds the credentials for a registry protected by HTTP basic
// authentication, such as distribution's htpasswd auth.
type BasicAuth struct {
	Username string
	Password string
}

// RegistryError is an answer from the registry other than the one a step of
// the push expects.
type RegistryError struct {
	Method     string
	URL        string
	StatusCode int
	// Status is the status line's text, for example "401 Unauthorized".
	Status string
	// Body is the start of the response body, trimmed; often the registry's
	// JSON error list. Empty for HEAD requests.
	Body string
	// Authenticate is the WWW-Authenticate header of a 401, which tells what
	// kind of credentials the registry wants.
	Authenticate string
}

func (e *RegistryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: registry answered %s", e.Method, e.URL, e.Status)
	if e.Authenticate != "" {
		fmt.Fprintf(&b, " (WWW-Authenticate: %s)", e.Authenticate)
	}
	if e.Body != "" {
		fmt.Fprintf(&b, ": %s", e.Body)
	}
	return b.String()
}

// Push uploads img to registry as repository:tag. registry is "host:port" for a
// registry that speaks plain HTTP, like the loopback registries of the tests, or
// "https://host[:port]". Blobs the registry already has are not sent again, so
// pushing the same image twice costs only a few requests.
//
// auth, when not nil, is sent as basic authentication. A registry that answers
// with a Bearer challenge instead (Docker Hub, GHCR, Harbor and most hosted
// registries) gets it at the token endpoint the challenge names, and the token
// is sent from then on.
func Push(ctx context.Context, registry, repository, tag string, img *Image, auth *BasicAuth) error {
	base, err := registryURL(registry)
	if err == nil {
		err = validateReference(repository, tag)
	}
	_, host := CutScheme(registry)
	ref := host + "/" + repository + ":" + tag
	if err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	if img == nil {
		return fmt.Errorf("pushing %s: no image", ref)
	}

	p := &pusher{
		client:     &http.Client{Timeout: requestTimeout},
		base:       base,
		repository: repository,
		auth:       auth,
	}
	// The registry checks that a manifest's blobs exist, so they go first.
	for _, blob := range img.Blobs() {
		if err := p.pushBlob(ctx, blob); err != nil {
			return fmt.Errorf("pushing %s: blob %s (%s): %w", ref, blob.Digest, blob.MediaType, err)
		}
	}
	if err := p.putManifest(ctx, tag, img); err != nil {
		return fmt.Errorf("pushing %s: manifest %s: %w", ref, img.Digest, err)
	}
	return nil
}

// registryURL is the base URL of registry: "host:port" means plain HTTP, an
// explicit https:// or http:// scheme is kept.
func registryURL(registry string) (*url.URL, error) {
	scheme, host := CutScheme(registry)
	if scheme == "" {
		scheme = "http"
	}
	if host == "" || strings.ContainsAny(host, "/?#@ ") {
		return nil, fmt.Errorf("invalid registry %q: want host:port or https://host[:port]", registry)
	}
	return &url.URL{Scheme: scheme, Host: host}, nil
}

// CutScheme splits an "https://" or "http://" off a registry, returning the scheme without
// "://" ("" when there is none) and the rest.
func CutScheme(registry string) (scheme, rest string) {
	for _, s := range []string{"https", "http"} {
		if rest, ok := strings.CutPrefix(registry, s+"://"); ok {
			return s, rest
		}
	}
	return "", registry
}

func validateReference(repository, tag string) error {
	if !repositoryPattern.MatchString(repository) {
		return fmt.Errorf("invalid repository %q: want lowercase path components such as bosun/webserver", repository)
	}
	if !tagPattern.MatchString(tag) {
		return fmt.Errorf("invalid tag %q", tag)
	}
	return nil
}

// pusher sends the requests of one push.
type pusher struct {
	client     *http.Client
	base       *url.URL
	repository string
	auth       *BasicAuth
	// bearer is the token a Bearer challenge led to; once set it replaces auth.
	bearer string
}

// response is what a step needs of a registry answer; the body is already
// read (up to a limit) and closed, so no step can leak a connection.
type response struct {
	request    *http.Request
	statusCode int
	status     string
	header     http.Header
	body       []byte
}

// registryError describes resp as an unexpected answer.
func (r *response) registryError() error {
	body := strings.TrimSpace(string(r.body))
	if len(body) > maxErrorBody {
		body = body[:maxErrorBody] + "..."
	}
	e := &RegistryError{
		Method:     r.request.Method,
		URL:        r.request.URL.Redacted(),
		StatusCode: r.statusCode,
		Status:     r.status,
		Body:       body,
	}
	if r.statusCode == http.StatusUnauthorized {
		e.Authenticate = r.header.Get("WWW-Authenticate")
	}
	return e
}

// url returns the URL of an API path under the repository, such as "blobs/uploads/".
func (p *pusher) url(suffix string) *url.URL {
	return p.base.JoinPath("v2", p.repository, suffix)
}

func (p *pusher) pushBlob(ctx context.Context, blob Blob) error {
	head, err := p.send(ctx, http.MethodHead, p.url("blobs/"+blob.Digest), "", nil)
	if err != nil {
		return fmt.Errorf("checking for the blob: %w", err)
	}
	switch head.statusCode {
	case http.StatusOK:
		return nil // already there, maybe from an earlier push or another repository
	case http.StatusNotFound:
	default:
		return fmt.Errorf("checking for the blob: %w", head.registryError())
	}

	start, err := p.send(ctx, http.MethodPost, p.url("blobs/uploads/"), "", nil)
	if err != nil {
		return fmt.Errorf("starting the upload: %w", err)
	}
	if start.statusCode != http.StatusAccepted {
		return fmt.Errorf("starting the upload: %w", start.registryError())
	}
	location := start.header.Get("Location")
	if location == "" {
		return errors.New("starting the upload: the registry answered 202 without a Location")
	}
	// The Location may be relative to the request, and usually carries query
	// parameters of its own (distribution's _state) that must be kept as sent.
	uploadURL, err := start.request.URL.Parse(location)
	if err != nil {
		return fmt.Errorf("starting the upload: bad Location %q: %w", location, err)
	}
	digestParam := "digest=" + url.QueryEscape(blob.Digest)
	if uploadURL.RawQuery == "" {
		uploadURL.RawQuery = digestParam
	} else {
		uploadURL.RawQuery += "&" + digestParam
	}

	// A single monolithic PUT: the blobs are small and the registry is local,
	// so chunked PATCH uploads would add requests and buy nothing.
	put, err := p.send(ctx, http.MethodPut, uploadURL, "application/octet-stream", blob.Data)
	if err != nil {
		return fmt.Errorf("uploading: %w", err)
	}
	if put.statusCode != http.StatusCreated {
		return fmt.Errorf("uploading: %w", put.registryError())
	}
	return checkDigest(put, blob.Digest)
}

func (p *pusher) putManifest(ctx context.Context, tag string, img *Image) error {
	put, err := p.send(ctx, http.MethodPut, p.url("manifests/"+tag), MediaTypeManifest, img.Manifest)
	if err != nil {
		return err
	}
	if put.statusCode != http.StatusCreated {
		return put.registryError()
	}
	return checkDigest(put, img.Digest)
}

// checkDigest compares the digest the registry says it stored, when it says,
// with the one computed here: a mismatch means the bytes were changed on the
// way, and the image would not be found under the digest the caller knows.
func checkDigest(r *response, want string) error {
	got := r.header.Get("Docker-Content-Digest")
	if got != "" && got != want {
		return fmt.Errorf("%s %s: the registry stored digest %s, want %s", r.request.Method, r.request.URL.Redacted(), got, want)
	}
	return nil
}

// send makes one request to the registry. Any status is returned as a
// response; only a failure to get an answer at all is an error. A Bearer
// challenge is answered once: the token is fetched and the request repeated.
func (p *pusher) send(ctx context.Context, method string, u *url.URL, contentType string, body []byte) (*response, error) {
	resp, err := p.sendOnce(ctx, method, u, contentType, body)
	if err != nil || resp.statusCode != http.StatusUnauthorized {
		return resp, err
	}
	challenge, ok := parseBearerChallenge(resp.header.Get("WWW-Authenticate"))
	if !ok || p.bearer != "" {
		return resp, nil
	}
	token, err := p.fetchToken(ctx, challenge)
	if err != nil {
		return nil, fmt.Errorf("%s %s: answering the registry's Bearer challenge: %w", method, u.Redacted(), err)
	}
	p.bearer = token
	return p.sendOnce(ctx, method, u, contentType, body)
}

func (p *pusher) sendOnce(ctx context.Context, method string, u *url.URL, contentType string, body []byte) (*response, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reader)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	switch {
	case p.bearer != "":
		req.Header.Set("Authorization", "Bearer "+p.bearer)
	case p.auth != nil:
		req.SetBasicAuth(p.auth.Username, p.auth.Password)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// Keep enough of the body for an error message, then drain the rest so the
	// connection can be reused for the next step.
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, u.Redacted(), err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return &response{
		request:    resp.Request, // the last one, after any redirects: relative Locations resolve against it
		statusCode: resp.StatusCode,
		status:     resp.Status,
		header:     resp.Header,
		body:       data,
	}, nil
}
