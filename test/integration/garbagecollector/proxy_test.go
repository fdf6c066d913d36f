package garbagecollector

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// apiProxy is a reverse proxy in front of the API server, serving TLS on 127.0.0.1, that
// passes every request through unchanged except the watches of one or two resources, whose
// events it delays or rewrites. A collector started with its kubeconfig sees the API server
// as slow or inconsistent as a scenario needs, while the test's own clients see the truth.
type apiProxy struct {
	opts       proxyOptions
	server     *httptest.Server
	kubeconfig string
	stop       chan struct{}

	// rewriting is closed once a watch of rewriteWatchOf answered 200: events written from
	// then on reach the rewrite function. Until then a change the test makes may reach the
	// client in its initial list instead, as no event at all.
	rewriting     chan struct{}
	rewritingOnce sync.Once

	mu   sync.Mutex
	errs []error
}

type proxyOptions struct {
	// delayWatchOf names a resource (plural, for example "persistentvolumes") whose watch
	// responses are slowed down: every read of their body waits delay after it returned.
	delayWatchOf string
	delay        time.Duration

	// rewriteWatchOf names a resource whose watches the proxy asks for in JSON and passes
	// event by event through rewrite, which may change the object in place and reports
	// whether it did.
	rewriteWatchOf string
	rewrite        func(eventType string, obj map[string]any) bool
}

// newAPIProxy starts a proxy in front of cp's API server until the test ends, with a
// kubeconfig of the admin user that points to it.
func newAPIProxy(t *testing.T, cp *framework.ControlPlane, opts proxyOptions) *apiProxy {
	t.Helper()
	target, err := url.Parse(cp.Host())
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := rest.TLSConfigFor(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{opts: opts, stop: make(chan struct{}), rewriting: make(chan struct{})}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if isWatchOf(r.In, opts.rewriteWatchOf) {
				r.Out.Header.Set("Accept", jsonOnly(r.In.Header.Get("Accept")))
			}
		},
		Transport:      &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true},
		FlushInterval:  -1, // watch events go out as they come
		ModifyResponse: p.modifyResponse,
		// Requests cut off when the collector stops are not the test's concern.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.server = httptest.NewUnstartedServer(proxy)
	p.server.EnableHTTP2 = true
	p.server.StartTLS()
	t.Cleanup(func() {
		close(p.stop)
		p.server.CloseClientConnections()
		p.server.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, err := range p.errs {
			t.Errorf("API proxy: %v", err)
		}
	})

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
	config := clientcmdapi.NewConfig()
	config.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.server.URL, CertificateAuthorityData: caPEM}
	config.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cp.Config().BearerToken}
	config.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "admin"}
	config.CurrentContext = "proxy"
	p.kubeconfig = filepath.Join(t.TempDir(), "proxy-kubeconfig")
	if err := clientcmd.WriteToFile(*config, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitRewriting waits until a watch of rewriteWatchOf passes through the rewrite function.
func (p *apiProxy) waitRewriting(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.rewriting:
	case <-time.After(timeout):
		t.Fatalf("no watch of %s reached the API proxy within %v", p.opts.rewriteWatchOf, timeout)
	}
}

func (p *apiProxy) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, err)
}

// isWatchOf reports whether r watches resource (in any namespace).
func isWatchOf(r *http.Request, resource string) bool {
	if resource == "" {
		return false
	}
	watch := r.URL.Query().Get("watch")
	return (watch == "true" || watch == "1") && path.Base(r.URL.Path) == resource
}

func (p *apiProxy) modifyResponse(resp *http.Response) error {
	req := resp.Request
	switch {
	case resp.StatusCode != http.StatusOK:
	case isWatchOf(req, p.opts.delayWatchOf):
		resp.Body = &delayedBody{ReadCloser: resp.Body, delay: p.opts.delay, stop: p.stop}
	case isWatchOf(req, p.opts.rewriteWatchOf):
		if mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mediaType != "application/json" {
			err := fmt.Errorf("watch %s answered %q although the proxy asked for JSON", req.URL, resp.Header.Get("Content-Type"))
			p.fail(err)
			return err
		}
		resp.Body = p.rewriteEvents(resp.Body)
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		p.rewritingOnce.Do(func() { close(p.rewriting) })
	}
	return nil
}

// delayedBody waits delay after every read, as a slow network would.
type delayedBody struct {
	io.ReadCloser
	delay time.Duration
	stop  <-chan struct{}
}

func (b *delayedBody) Read(data []byte) (int, error) {
	n, err := b.ReadCloser.Read(data)
	select {
	case <-time.After(b.delay):
	case <-b.stop:
	}
	return n, err
}

// watchEvent is one event of a JSON watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// rewriteEvents passes a JSON watch stream event by event through the rewrite function.
func (p *apiProxy) rewriteEvents(body io.ReadCloser) io.ReadCloser {
	reader, writer := io.Pipe()
	go func() {
		defer body.Close()
		decoder := json.NewDecoder(body)
		for {
			var event watchEvent
			if err := decoder.Decode(&event); err != nil {
				writer.CloseWithError(err)
				return
			}
			var obj map[string]any
			if err := json.Unmarshal(event.Object, &obj); err == nil && p.opts.rewrite(event.Type, obj) {
				rewritten, err := json.Marshal(obj)
				if err != nil {
					p.fail(err)
					writer.CloseWithError(err)
					return
				}
				event.Object = rewritten
			}
			line, err := json.Marshal(event)
			if err != nil {
				p.fail(err)
				writer.CloseWithError(err)
				return
			}
			if _, err := writer.Write(append(line, '\n')); err != nil {
				return // the client went away
			}
		}
	}()
	return &pipeBody{PipeReader: reader, upstream: body}
}

// pipeBody is the rewritten stream; closing it also closes the API server's.
type pipeBody struct {
	*io.PipeReader
	upstream io.Closer
}

func (b *pipeBody) Close() error {
	b.PipeReader.Close()
	return b.upstream.Close()
}

// jsonOnly turns an Accept header into its JSON equivalent: each protobuf or CBOR media range
// becomes application/json with the same parameters (as=PartialObjectMetadata;… included), so
// that metadata-only and typed clients both still get what they can decode.
func jsonOnly(accept string) string {
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "application/json", "application/vnd.kubernetes.protobuf", "application/cbor", "*/*":
		default:
			continue
		}
		if mediaType != "*/*" {
			mediaType = "application/json"
		}
		formatted := mime.FormatMediaType(mediaType, params)
		if !seen[formatted] {
			seen[formatted] = true
			out = append(out, formatted)
		}
	}
	if len(out) == 0 {
		return "application/json"
	}
	return strings.Join(out, ",")
}
