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
