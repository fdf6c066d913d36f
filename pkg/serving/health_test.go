package serving

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/server/healthz"
)

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func failing(name string) healthz.HealthChecker {
	return healthz.NamedCheck(name, func(*http.Request) error { return errors.New("secret detail") })
}

func TestCheckSet(t *testing.T) {
	tests := []struct {
		name     string
		checks   []healthz.HealthChecker
		url      string
		wantCode int
		wantBody string
	}{
		{
			name:     "no checks serves ping",
			url:      "/healthz?verbose",
			wantCode: 200,
			wantBody: "[+]ping ok\nhealthz check passed\n",
		},
		{
			name:     "terse success",
			checks:   []healthz.HealthChecker{healthz.NamedCheck("leaderElection", func(*http.Request) error { return nil })},
			url:      "/healthz",
			wantCode: 200,
			wantBody: "ok",
		},
		{
			name: "verbose lists every check in order",
			checks: []healthz.HealthChecker{
				healthz.NamedCheck("leaderElection", func(*http.Request) error { return nil }),
				healthz.NamedCheck("replicaset-controller", func(*http.Request) error { return nil }),
			},
			url:      "/healthz?verbose",
			wantCode: 200,
			wantBody: "[+]leaderElection ok\n[+]replicaset-controller ok\nhealthz check passed\n",
		},
		{
			name: "failure is verbose, withholds the reason and answers 500",
			checks: []healthz.HealthChecker{
				healthz.NamedCheck("leaderElection", func(*http.Request) error { return nil }),
				failing("replicaset-controller"),
			},
			url:      "/healthz",
			wantCode: 500,
			wantBody: "[+]leaderElection ok\n[-]replicaset-controller failed: reason withheld\nhealthz check failed\n",
		},
		{
			name:     "exclude skips a failing check",
			checks:   []healthz.HealthChecker{failing("replicaset-controller")},
			url:      "/healthz?verbose&exclude=replicaset-controller",
			wantCode: 200,
			wantBody: "[+]replicaset-controller excluded: ok\nhealthz check passed\n",
		},
		{
			name:     "per-check subpath",
			checks:   []healthz.HealthChecker{failing("replicaset-controller"), healthz.PingHealthz},
			url:      "/healthz/ping",
			wantCode: 200,
			wantBody: "ok",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := NewCheckSet("/healthz", tc.checks...)
			code, body := get(t, set, tc.url)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tc.url, code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestCheckSetAddWhileServing(t *testing.T) {
	set := NewCheckSet("/livez", healthz.PingHealthz)
	if code, _ := get(t, set, "/livez"); code != 200 {
		t.Fatalf("before Add: code %d", code)
	}
	if err := set.Add(failing("leaderElection")); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, set, "/livez")
	if code != 500 || !strings.HasSuffix(body, "livez check failed\n") {
		t.Errorf("after Add: %d %q, want 500 ending in livez check failed", code, body)
	}
	if err := set.Add(healthz.PingHealthz); err == nil {
		t.Error("adding a second check named ping succeeded")
	}
	if got, want := set.Names(), []string{"ping", "leaderElection"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

// describedCheck is a check that describes itself when it passes.
type describedCheck struct {
	name        string
	err         error
	description string
}

func (c *describedCheck) Name() string              { return c.name }
func (c *describedCheck) Check(*http.Request) error { return c.err }
func (c *describedCheck) Describe() string          { return c.description }

func TestCheckSetDescriptions(t *testing.T) {
	cri := &describedCheck{name: "cri", description: "containerd 1.6.20 (runtime API v1) at unix:///run/containerd/containerd.sock"}
	set := NewCheckSet("/readyz", healthz.PingHealthz, cri)

	code, body := get(t, set, "/readyz?verbose")
	want := "[+]ping ok\n[+]cri ok: containerd 1.6.20 (runtime API v1) at unix:///run/containerd/containerd.sock\nreadyz check passed\n"
	if code != 200 || body != want {
		t.Errorf("passing: %d %q, want 200 %q", code, body, want)
	}
	if code, body := get(t, set, "/readyz"); code != 200 || body != "ok" {
		t.Errorf("terse: %d %q, want 200 \"ok\"", code, body)
	}
	if code, body := get(t, set, "/readyz/cri"); code != 200 || body != "ok" {
		t.Errorf("subpath: %d %q, want 200 \"ok\"", code, body)
	}
	if code, body := get(t, set, "/readyz?verbose&exclude=cri"); code != 200 || body != "[+]ping ok\n[+]cri excluded: ok\nreadyz check passed\n" {
		t.Errorf("excluded: %d %q", code, body)
	}

	// A description must not break the line-per-check format.
	cri.description = "evil\n[+]fake ok\r\n\x1b[31m  red "
	if _, body := get(t, set, "/readyz?verbose"); !strings.Contains(body, "[+]cri ok: evil [+]fake ok [31m red\nreadyz") {
		t.Errorf("control characters: %q", body)
	}
	cri.description = ""
	if _, body := get(t, set, "/readyz?verbose"); !strings.Contains(body, "[+]cri ok\nreadyz") {
		t.Errorf("empty description: %q", body)
	}

	// A failing check is not asked for its description: whatever it would say stays private.
	cri.description, cri.err = "containerd at unix:///secret.sock", errors.New("secret detail")
	code, body = get(t, set, "/readyz?verbose")
	want = "[+]ping ok\n[-]cri failed: reason withheld\nreadyz check failed\n"
	if code != 500 || body != want {
		t.Errorf("failing: %d %q, want 500 %q", code, body, want)
	}
}

// TestCheckSetMatchesApiserver compares the set's answers with those of the apiserver's healthz
// handler, which it replaces, for checks that do not describe themselves.
func TestCheckSetMatchesApiserver(t *testing.T) {
	passing := healthz.NamedCheck("passing", func(*http.Request) error { return nil })
	grouped := healthz.NamedGroupedCheck("grouped", "group", func(*http.Request) error { return errors.New("secret detail") })
	urls := []string{
		"/readyz", "/readyz?verbose", "/readyz?verbose=false", "/readyz?exclude=failing",
		"/readyz?verbose&exclude=failing&exclude=group", "/readyz?exclude=failing&exclude=group&exclude=zz&exclude=aa",
		"/readyz?exclude=nothing", "/readyz/passing", "/readyz/failing", "/readyz/grouped", "/readyz/unknown",
		"/readyz/", "/readyz/passing/x", "/readyzx",
	}
	for _, checks := range [][]healthz.HealthChecker{
		nil,
		{passing},
		{passing, failing("failing"), grouped},
	} {
		ours := NewCheckSet("/readyz", checks...)
		theirs := http.NewServeMux()
		healthz.InstallPathHandler(theirs, "/readyz", checks...)
		for _, url := range append(urls, "/readyz/ping") {
			rec, want := httptest.NewRecorder(), httptest.NewRecorder()
			ours.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
			theirs.ServeHTTP(want, httptest.NewRequest(http.MethodGet, url, nil))
			if rec.Code != want.Code || rec.Body.String() != want.Body.String() || !reflect.DeepEqual(rec.Header(), want.Header()) {
				t.Errorf("%d checks, GET %s = %d %v %q, apiserver answers %d %v %q", len(checks), url,
					rec.Code, rec.Header(), rec.Body, want.Code, want.Header(), want.Body)
			}
		}
	}
}

type fakeTypedFactory map[reflect.Type]bool

func (f fakeTypedFactory) WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool { return f }

func TestInformerSync(t *testing.T) {
	check := &InformerSync{}
	if err := check.Check(nil); err != nil {
		t.Fatalf("no factories: %v", err)
	}
	synced := fakeTypedFactory{reflect.TypeOf(""): true}
	check.WatchTypedFactory(synced)
	if err := check.Check(nil); err != nil {
		t.Fatalf("all synced: %v", err)
	}
	check.WatchTypedFactory(fakeTypedFactory{reflect.TypeOf(0): false, reflect.TypeOf(true): true})
	err := check.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "int") || strings.Contains(err.Error(), "bool") {
		t.Errorf("one unsynced informer: got %v, want an error naming only int", err)
	}
}
