// Tests for the webserver's handlers and option parsing, driven through
// httptest so that no real port is needed.

package main

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer builds a server whose log and exit requests the test can inspect.
type testServer struct {
	*server
	logs *syncBuffer

	mu    sync.Mutex
	exits []int
}

func newTestServer(t *testing.T, opts options) *testServer {
	t.Helper()
	ts := &testServer{logs: &syncBuffer{}}
	ts.server = newServer(opts, "v1", "node-a", log.New(ts.logs, "", 0), func(code int) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.exits = append(ts.exits, code)
	})
	return ts
}

func (ts *testServer) exitCodes() []int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]int(nil), ts.exits...)
}

// do sends one request to the handler and returns the status and body.
func (ts *testServer) do(t *testing.T, method, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	ts.handler().ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, target, err)
	}
	return rec.Code, string(body)
}

func (ts *testServer) expect(t *testing.T, method, target string, wantCode int, wantBody string) {
	t.Helper()
	code, body := ts.do(t, method, target)
	if code != wantCode || body != wantBody {
		t.Errorf("%s %s = %d %q, want %d %q", method, target, code, body, wantCode, wantBody)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger and the --ready-after timer.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStaticEndpoints(t *testing.T) {
	ts := newTestServer(t, options{})
	ts.expect(t, http.MethodGet, "/", http.StatusOK, "bosun webserver v1 on node-a\n")
	ts.expect(t, http.MethodGet, "/healthz", http.StatusOK, "ok")
	ts.expect(t, http.MethodGet, "/version", http.StatusOK, "v1\n")
	ts.expect(t, http.MethodGet, "/ready", http.StatusOK, "ready")

	if code, _ := ts.do(t, http.MethodGet, "/nothing-here"); code != http.StatusNotFound {
		t.Errorf("GET /nothing-here = %d, want 404", code)
	}
	if code, _ := ts.do(t, http.MethodPost, "/"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", code)
	}
}

func TestReadySwitch(t *testing.T) {
	ts := newTestServer(t, options{})

	ts.expect(t, http.MethodGet, "/ready?set=off", http.StatusOK, "not ready")
	ts.expect(t, http.MethodGet, "/ready", http.StatusServiceUnavailable, "not ready")
	// Switching to the state it already has is fine and logs nothing new.
	ts.expect(t, http.MethodPost, "/ready?set=off", http.StatusOK, "not ready")
	ts.expect(t, http.MethodPut, "/ready?set=on", http.StatusOK, "ready")
	ts.expect(t, http.MethodGet, "/ready", http.StatusOK, "ready")
	// Liveness does not follow readiness.
	ts.expect(t, http.MethodGet, "/healthz", http.StatusOK, "ok")

	code, body := ts.do(t, http.MethodGet, "/ready?set=maybe")
	if code != http.StatusBadRequest || !strings.Contains(body, `"maybe"`) {
		t.Errorf("GET /ready?set=maybe = %d %q, want 400 naming the bad value", code, body)
	}
	ts.expect(t, http.MethodGet, "/ready", http.StatusOK, "ready")

	if got, want := strings.Count(ts.logs.String(), "readiness "), 2; got != want {
		t.Errorf("logged %d readiness changes, want %d; log:\n%s", got, want, ts.logs)
	}
}

func TestStartNotReady(t *testing.T) {
	// --start-not-ready wins over --ready-after: only a switch makes it ready.
	ts := newTestServer(t, options{startNotReady: true, readyAfter: time.Millisecond})
	time.Sleep(20 * time.Millisecond)
	ts.expect(t, http.MethodGet, "/ready", http.StatusServiceUnavailable, "not ready")
	ts.expect(t, http.MethodGet, "/ready?set=on", http.StatusOK, "ready")
	ts.expect(t, http.MethodGet, "/ready", http.StatusOK, "ready")
}

func TestReadyAfter(t *testing.T) {
	ts := newTestServer(t, options{readyAfter: 50 * time.Millisecond})
	ts.expect(t, http.MethodGet, "/ready", http.StatusServiceUnavailable, "not ready")

	deadline := time.Now().Add(5 * time.Second)
	for !ts.isReady() {
		if time.Now().After(deadline) {
			t.Fatal("still not ready 5s after a 50ms --ready-after")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.expect(t, http.MethodGet, "/ready", http.StatusOK, "ready")
	if !strings.Contains(ts.logs.String(), "readiness on") {
		t.Errorf("the timer's switch was not logged; log:\n%s", ts.logs)
	}
}

func TestExplicitSwitchCancelsReadyAfter(t *testing.T) {
	ts := newTestServer(t, options{readyAfter: 20 * time.Millisecond})
	ts.expect(t, http.MethodGet, "/ready?set=off", http.StatusOK, "not ready")
	time.Sleep(100 * time.Millisecond)
	ts.expect(t, http.MethodGet, "/ready", http.StatusServiceUnavailable, "not ready")
}

func TestExit(t *testing.T) {
	ts := newTestServer(t, options{})
	ts.expect(t, http.MethodGet, "/exit", http.StatusOK, "exiting with code 0\n")
	ts.expect(t, http.MethodPost, "/exit?code=42", http.StatusOK, "exiting with code 42\n")
	ts.expect(t, http.MethodGet, "/exit?code=255", http.StatusOK, "exiting with code 255\n")

	for _, bad := range []string{"256", "-1", "x", "1.5"} {
		code, body := ts.do(t, http.MethodGet, "/exit?code="+bad)
		if code != http.StatusBadRequest || !strings.Contains(body, bad) {
			t.Errorf("GET /exit?code=%s = %d %q, want 400 naming the bad code", bad, code, body)
		}
	}

	if got, want := ts.exitCodes(), []int{0, 42, 255}; !slices.Equal(got, want) {
		t.Errorf("exit requests = %v, want %v", got, want)
	}
	if !strings.Contains(ts.logs.String(), "exit requested with code 42") {
		t.Errorf("exit request not logged; log:\n%s", ts.logs)
	}
}

func TestParseOptions(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}

	tests := []struct {
		name    string
		args    []string
		getenv  func(string) string
		want    options
		wantErr string
	}{
		{name: "defaults", getenv: env(), want: options{port: "8080"}},
		{
			name:   "env",
			getenv: env("PORT", "9000", "READY_AFTER", "5s", "START_NOT_READY", "true", "TERM_DELAY", "4s"),
			want:   options{port: "9000", readyAfter: 5 * time.Second, startNotReady: true, termDelay: 4 * time.Second},
		},
		{
			name:   "flags win over env",
			args:   []string{"--port", "9100", "--ready-after=1s", "--start-not-ready=false"},
			getenv: env("PORT", "9000", "READY_AFTER", "5s", "START_NOT_READY", "true"),
			want:   options{port: "9100", readyAfter: time.Second},
		},
		{name: "bad port", getenv: env("PORT", "http"), wantErr: "invalid port"},
		{name: "bad env duration", getenv: env("READY_AFTER", "soon"), wantErr: "READY_AFTER"},
		{name: "term delay flag", args: []string{"--term-delay=2s"}, getenv: env("TERM_DELAY", "4s"), want: options{port: "8080", termDelay: 2 * time.Second}},
		{name: "bad term delay", getenv: env("TERM_DELAY", "later"), wantErr: "TERM_DELAY"},
		{name: "negative term delay", args: []string{"--term-delay=-1s"}, getenv: env(), wantErr: "negative"},
		{name: "bad env bool", getenv: env("START_NOT_READY", "perhaps"), wantErr: "START_NOT_READY"},
		{name: "negative duration", args: []string{"--ready-after=-1s"}, getenv: env(), wantErr: "negative"},
		{name: "stray argument", args: []string{"extra"}, getenv: env(), wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOptions(tt.args, tt.getenv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseOptions() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseOptions() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("parseOptions() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A hook command's lines are served by GET /hooks, across "restarts" (new servers) that
// share the log.
func TestHooksAreServed(t *testing.T) {
	path := t.TempDir() + "/hooks.log"
	t.Setenv("HOOK_LOG", path)
	ts := newTestServer(t, options{port: "8080"})
	ts.expect(t, http.MethodGet, "/hooks", http.StatusOK, "")
	for _, name := range []string{"prestop", "prestop-again"} {
		if err := runHook(hookLogPath(func(string) string { return path }), name); err != nil {
			t.Fatal(err)
		}
	}
	restarted := newTestServer(t, options{port: "8080"})
	restarted.expect(t, http.MethodGet, "/hooks", http.StatusOK, "prestop\nprestop-again\n")
}
