package app

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
)

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestHealthChecksAssembly(t *testing.T) {
	tests := []struct {
		name        string
		leaderElect bool
		url         string
		terminating bool
		wired       bool
		wantCode    int
		wantBody    string
	}{
		{name: "healthz with leader election", leaderElect: true, url: "/healthz?verbose", wantCode: 200,
			wantBody: "[+]leaderElection ok\nhealthz check passed\n"},
		{name: "healthz without leader election", url: "/healthz?verbose", wantCode: 200,
			wantBody: "[+]ping ok\nhealthz check passed\n"},
		{name: "livez with leader election", leaderElect: true, url: "/livez?verbose", wantCode: 200,
			wantBody: "[+]ping ok\n[+]leaderElection ok\nlivez check passed\n"},
		{name: "livez without leader election", url: "/livez?verbose", wantCode: 200,
			wantBody: "[+]ping ok\nlivez check passed\n"},
		{name: "readyz", leaderElect: true, url: "/readyz?verbose", wired: true, wantCode: 200,
			wantBody: "[+]ping ok\n[+]startup ok\n[+]informer-sync ok\n[+]shutdown ok\nreadyz check passed\n"},
		// Serving starts before the webhooks add their readiness checks.
		{name: "readyz fails until every check is wired", leaderElect: true, url: "/readyz?verbose", wantCode: 500,
			wantBody: "[+]ping ok\n[-]startup failed: reason withheld\n[+]informer-sync ok\n[+]shutdown ok\nreadyz check failed\n"},
		{name: "readyz fails once terminating", leaderElect: true, url: "/readyz", terminating: true, wired: true, wantCode: 500,
			wantBody: "[+]ping ok\n[+]startup ok\n[+]informer-sync ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"},
		{name: "livez keeps passing while terminating", leaderElect: true, url: "/livez", terminating: true, wantCode: 200, wantBody: "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			terminating := make(chan struct{})
			if tc.terminating {
				close(terminating)
			}
			h := newHealthChecks(tc.leaderElect, terminating)
			if tc.wired {
				h.readinessChecksWired()
			}
			handler := mux.NewPathRecorderMux("test")
			handler.Handle("/healthz", h.Healthz)
			handler.Handle("/livez", h.Livez)
			handler.Handle("/readyz", h.Readyz)
			code, body := get(t, handler, tc.url)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tc.url, code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

// fakeController records what it was built with and runs until its context ends, or longer
// when told to ignore it.
type fakeController struct {
	clientName       string
	informersStarted <-chan struct{}
	ignoreStop       chan struct{}

	mu                   sync.Mutex
	ran                  bool
	informersWereStarted bool
}

func (c *fakeController) Run(ctx context.Context) {
	c.mu.Lock()
	c.ran = true
	select {
	case <-c.informersStarted:
		c.informersWereStarted = true
	default:
	}
	c.mu.Unlock()
	<-ctx.Done()
	if c.ignoreStop != nil {
		<-c.ignoreStop
	}
}

type failingController struct{ fakeController }

func (*failingController) HealthCheck(*http.Request) error { return errors.New("stuck") }

type debugController struct{ fakeController }

func (*debugController) DebuggingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("graph at " + r.URL.Path)) })
}

// testManager is a manager with a registry of fake controllers and fake informer factories.
type testManager struct {
	*controllerManager
	mux         *mux.PathRecorderMux
	controllers map[string]*fakeController
	factories   *sharedFactories
	lc          leaderContext
}

func newTestManager(t *testing.T, enabled []string, extra ...registry.Descriptor) *testManager {
	t.Helper()
	tm := &testManager{mux: mux.NewPathRecorderMux("test"), controllers: map[string]*fakeController{}}
	remember := func(name string, c *fakeController, cc *registry.ControllerContext) {
		c.clientName = cc.ClientName
		c.informersStarted = cc.InformersStarted
		tm.controllers[name] = c
	}
	reg := registry.New()
	reg.MustRegister(registry.Descriptor{Name: "healthy-controller", Aliases: []string{"healthy"}, ClientName: "healthy-client",
		Constructor: func(_ context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
			c := &fakeController{}
			remember("healthy-controller", c, cc)
			return c, nil
		}})
	reg.MustRegister(registry.Descriptor{Name: "failing-controller",
		Constructor: func(_ context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
			c := &failingController{}
			remember("failing-controller", &c.fakeController, cc)
			return c, nil
		}})
	reg.MustRegister(registry.Descriptor{Name: "debug-controller",
		Constructor: func(_ context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
			c := &debugController{}
			remember("debug-controller", &c.fakeController, cc)
			return c, nil
		}})
	reg.MustRegister(registry.Descriptor{Name: "skipped-controller",
		Constructor: func(context.Context, *registry.ControllerContext) (registry.Controller, error) {
			return nil, registry.NotBuilt("required API absent")
		}})
	for _, d := range extra {
		reg.MustRegister(d)
	}
	if enabled == nil {
		enabled = reg.Enabled([]string{"*"})
	}

	informerFactory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	// Ask for one informer so that the factories really start something.
	informerFactory.Core().V1().Pods().Informer()
	tm.factories = &sharedFactories{
		typed:    informerFactory,
		metadata: metadatainformer.NewSharedInformerFactory(metadatafake.NewSimpleMetadataClient(runtime.NewScheme()), 0),
		bosun:    bosuninformers.NewSharedInformerFactory(bosunfake.NewClientset(), 0),
	}
	informersStarted := make(chan struct{})
	tm.lc = leaderContext{
		ControllerContext: &registry.ControllerContext{
			InformerFactory:         tm.factories.typed,
			MetadataInformerFactory: tm.factories.metadata,
			BosunInformerFactory:    tm.factories.bosun,
			FeatureGate:             features.NewFeatureGate(),
			InformersStarted:        informersStarted,
			Config:                  &config.Configuration{},
		},
		informersStarted: informersStarted,
	}
	tm.controllerManager = &controllerManager{
		registry: reg,
		enabled:  enabled,
		health:   newHealthChecks(true, make(chan struct{})),
		debugMux: tm.mux,
	}
	tm.mux.Handle("/healthz", tm.health.Healthz)
	return tm
}

// startTerm runs a leadership term in the background the way lead does after the context
// is built, and waits until every built controller runs.
func (tm *testManager) startTerm(t *testing.T, ctx context.Context, wantRunning int) <-chan error {
	t.Helper()
	if !tm.beginTerm() {
		t.Fatal("beginTerm refused before shutdown")
	}
	result := make(chan error, 1)
	go func() {
		defer tm.terms.Done()
		result <- tm.runTerm(ctx, tm.lc, tm.factories)
	}()
	for len(tm.runningNames()) < wantRunning {
		select {
		case err := <-result:
			t.Fatalf("term ended early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return result
}

func TestLeadershipTerm(t *testing.T) {
	tm := newTestManager(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	result := tm.startTerm(t, ctx, 3)

	if got, want := strings.Join(tm.runningNames(), ","), "debug-controller,failing-controller,healthy-controller"; got != want {
		t.Errorf("running %q, want %q (skipped-controller must not run)", got, want)
	}
	code, body := get(t, tm.mux, "/healthz?verbose")
	wantBody := "[+]leaderElection ok\n[+]debug-controller ok\n[-]failing-controller failed: reason withheld\n[+]healthy-controller ok\nhealthz check failed\n"
	if code != 500 || body != wantBody {
		t.Errorf("/healthz?verbose = %d %q, want 500 %q", code, body, wantBody)
	}
	if code, _ := get(t, tm.mux, "/healthz?exclude=failing-controller"); code != 200 {
		t.Errorf("excluding the failing controller: %d, want 200", code)
	}
	if code, body := get(t, tm.mux, "/debug/controllers/debug-controller/graph"); code != 200 || body != "graph at /graph" {
		t.Errorf("debug handler: %d %q", code, body)
	}
	if c := tm.controllers["healthy-controller"]; c.clientName != "healthy-client" {
		t.Errorf("constructor saw client name %q, want the descriptor's", c.clientName)
	}
	if c := tm.controllers["debug-controller"]; c.clientName != "debug-controller" {
		t.Errorf("constructor saw client name %q, want the canonical name", c.clientName)
	}
	for name, c := range tm.controllers {
		c.mu.Lock()
		if !c.informersWereStarted {
			t.Errorf("%s ran before the informers were started", name)
		}
		c.mu.Unlock()
	}

	cancel()
	if err := tm.stopControllers(context.Background(), time.Minute); err != nil {
		t.Fatalf("stopControllers: %v", err)
	}
	if err := <-result; err != nil {
		t.Errorf("term: %v", err)
	}
	if names := tm.runningNames(); len(names) != 0 {
		t.Errorf("still running after stop: %v", names)
	}
	if tm.beginTerm() {
		t.Error("a term could begin after shutdown started")
	}
}

func TestSelectionLimitsBuiltControllers(t *testing.T) {
	tm := newTestManager(t, []string{"healthy-controller"})
	ctx, cancel := context.WithCancel(context.Background())
	result := tm.startTerm(t, ctx, 1)
	code, body := get(t, tm.mux, "/healthz?verbose")
	if code != 200 || body != "[+]leaderElection ok\n[+]healthy-controller ok\nhealthz check passed\n" {
		t.Errorf("/healthz?verbose = %d %q", code, body)
	}
	if len(tm.controllers) != 1 {
		t.Errorf("constructors run for %d controllers, want 1", len(tm.controllers))
	}
	cancel()
	if err := tm.stopControllers(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	<-result
}

func TestShutdownTimeout(t *testing.T) {
	release := make(chan struct{})
	stubborn := registry.Descriptor{Name: "stubborn-controller",
		Constructor: func(context.Context, *registry.ControllerContext) (registry.Controller, error) {
			return &fakeController{ignoreStop: release}, nil
		}}
	tm := newTestManager(t, []string{"stubborn-controller"}, stubborn)
	ctx, cancel := context.WithCancel(context.Background())
	result := tm.startTerm(t, ctx, 1)
	cancel()
	err := tm.stopControllers(context.Background(), 300*time.Millisecond)
	if !errors.Is(err, errShutdownTimeout) || err.Error() != "controller shutdown timeout reached" {
		t.Errorf("stopControllers = %v, want the shutdown timeout error", err)
	}
	if got := tm.runningNames(); len(got) != 1 || got[0] != "stubborn-controller" {
		t.Errorf("running after timeout: %v", got)
	}
	close(release)
	<-result
}

func TestConstructorErrorStopsTheTerm(t *testing.T) {
	broken := registry.Descriptor{Name: "broken-controller",
		Constructor: func(context.Context, *registry.ControllerContext) (registry.Controller, error) {
			return nil, errors.New("no such API")
		}}
	tm := newTestManager(t, []string{"broken-controller", "healthy-controller"}, broken)
	err := tm.runTerm(context.Background(), tm.lc, tm.factories)
	if err == nil || !strings.Contains(err.Error(), "broken-controller") || !strings.Contains(err.Error(), "no such API") {
		t.Errorf("runTerm = %v, want an error naming the controller and cause", err)
	}
}

func TestRunsWithZeroControllers(t *testing.T) {
	tm := newTestManager(t, []string{})
	ctx, cancel := context.WithCancel(context.Background())
	result := tm.startTerm(t, ctx, 0)
	cancel()
	if err := tm.stopControllers(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, tm.mux, "/healthz?verbose"); code != 200 || body != "[+]leaderElection ok\nhealthz check passed\n" {
		t.Errorf("/healthz?verbose = %d %q", code, body)
	}
}

// The controllers whose Descriptor asks for KruiseClientLimits build their clients with
// those limits; every other controller keeps the base ones.
func TestKruiseClientLimitsReachOnlyTheirControllers(t *testing.T) {
	seen := map[string]*rest.Config{}
	var mu sync.Mutex
	recordConfig := func(name string) registry.Constructor {
		return func(_ context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
			config, err := cc.ClientConfig()
			if err != nil {
				return nil, err
			}
			mu.Lock()
			seen[name] = config
			mu.Unlock()
			return &fakeController{}, nil
		}
	}
	kruise := registry.Descriptor{Name: "kruise-like-controller", KruiseClientLimits: true, Constructor: recordConfig("kruise-like-controller")}
	upstream := registry.Descriptor{Name: "upstream-like-controller", Constructor: recordConfig("upstream-like-controller")}
	tm := newTestManager(t, []string{"kruise-like-controller", "upstream-like-controller"}, kruise, upstream)
	tm.lc.ClientBuilder = clientbuilder.NewSimpleBuilder(&rest.Config{Host: "https://127.0.0.1:1", QPS: 20, Burst: 30})
	tm.kruiseClientLimits = clientbuilder.Limits{QPS: 50, Burst: 100}

	if _, _, err := tm.buildControllers(context.Background(), tm.lc); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]clientbuilder.Limits{
		"kruise-like-controller":   {QPS: 50, Burst: 100},
		"upstream-like-controller": {QPS: 20, Burst: 30},
	} {
		config := seen[name]
		if config == nil {
			t.Errorf("%s was not built", name)
			continue
		}
		if got := (clientbuilder.Limits{QPS: config.QPS, Burst: config.Burst}); got != want {
			t.Errorf("%s client limits %+v, want %+v", name, got, want)
		}
		if !strings.HasSuffix(config.UserAgent, "/"+name) {
			t.Errorf("%s client User-Agent %q lacks its client name", name, config.UserAgent)
		}
	}
	// kruise-manager's limits hold per resource: the transport waits, the client does not.
	if kruise, upstream := seen["kruise-like-controller"], seen["upstream-like-controller"]; kruise != nil && upstream != nil {
		if kruise.WrapTransport == nil || kruise.RateLimiter == nil || !kruise.RateLimiter.TryAccept() {
			t.Error("the OpenKruise-like controller's client is not limited per resource")
		}
		if upstream.WrapTransport != nil || upstream.RateLimiter != nil {
			t.Error("the upstream-like controller's client is not limited by one token bucket of its own")
		}
	}
}

// kube-controller-manager's controllers keep its limits; kruise-manager's get their own.
func TestBuiltinControllersClientLimits(t *testing.T) {
	reg := NewControllerRegistry()
	want := []string{"advanced-daemonset-controller", "cloneset-controller", "container-launch-priority-controller", "containerrecreaterequest-controller", "imagelistpulljob-controller",
		"imagepulljob-controller", "nodeimage-controller", "pod-readiness-controller", "podunavailablebudget-controller"}
	if got := reg.WithKruiseClientLimits(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("controllers with the OpenKruise-compatible limits: %v, want %v", got, want)
	}
}

// A controller whose resources are served only in an older version waits, reported by
// informer-sync, and starts once its constructor builds it, without a new term.
func TestWaitingControllerStartsOnceServed(t *testing.T) {
	defer func(old time.Duration) { notYetServedRecheck = old }(notYetServedRecheck)
	notYetServedRecheck = 10 * time.Millisecond
	var (
		mu       sync.Mutex
		served   bool
		attempts int
	)
	waiting := registry.Descriptor{Name: "waiting-controller",
		Constructor: func(context.Context, *registry.ControllerContext) (registry.Controller, error) {
			mu.Lock()
			defer mu.Unlock()
			attempts++
			if !served {
				return nil, registry.NotYetServed("example.io/v1 widgets only")
			}
			return &fakeController{}, nil
		}}
	tm := newTestManager(t, []string{"healthy-controller", "waiting-controller"}, waiting)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	result := tm.startTerm(t, ctx, 1)

	err := tm.health.informerSync.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "waiting-controller: example.io/v1 widgets only") {
		t.Fatalf("informer-sync = %v, want it to name the waiting controller and its reason", err)
	}
	for {
		mu.Lock()
		n := attempts
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if names := tm.runningNames(); slices.Contains(names, "waiting-controller") {
		t.Fatalf("the waiting controller runs before it was built: %v", names)
	}

	mu.Lock()
	served = true
	mu.Unlock()
	for !slices.Contains(tm.runningNames(), "waiting-controller") {
		select {
		case err := <-result:
			t.Fatalf("term ended early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := tm.health.informerSync.Check(nil); err != nil {
		t.Errorf("informer-sync after the controller started: %v", err)
	}

	cancel()
	if err := tm.stopControllers(context.Background(), time.Minute); err != nil {
		t.Fatalf("stopControllers: %v", err)
	}
	if err := <-result; err != nil {
		t.Errorf("term: %v", err)
	}
}
