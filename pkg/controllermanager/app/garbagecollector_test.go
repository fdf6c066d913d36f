package app

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/controller/garbagecollector"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

func TestGarbageCollectorRegistration(t *testing.T) {
	d, ok := NewControllerRegistry().Get("garbagecollector")
	if !ok {
		t.Fatal("alias garbagecollector is not registered")
	}
	if d.Name != garbagecollector.ControllerName || d.ClientName != "generic-garbage-collector" || d.DisabledByDefault {
		t.Errorf("descriptor = %+v", d)
	}
}

func TestGarbageCollectorNotBuiltWhenDisabled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cc := &registry.ControllerContext{Config: &config.Configuration{GarbageCollector: config.GarbageCollectorConfiguration{Enabled: false, ConcurrentSyncs: 20}}}
	_, err := newGarbageCollector(ctx, cc)
	if _, notBuilt := registry.IsNotBuilt(err); !notBuilt {
		t.Errorf("error = %v, want NotBuilt", err)
	}
}

// The metadata client gets twice the QPS (burst unchanged); the typed client keeps the
// controller's budget.
func TestGarbageCollectorClientBudget(t *testing.T) {
	cc := &registry.ControllerContext{
		ClientName:    "generic-garbage-collector",
		ClientBuilder: clientbuilder.NewSimpleBuilder(&rest.Config{Host: "https://127.0.0.1:1", QPS: 20, Burst: 30}),
	}
	metadataConfig, err := gcMetadataConfig(cc)
	if err != nil {
		t.Fatal(err)
	}
	if metadataConfig.QPS != 40 || metadataConfig.Burst != 30 {
		t.Errorf("metadata client QPS/burst = %v/%d, want 40/30", metadataConfig.QPS, metadataConfig.Burst)
	}
	typedConfig, err := cc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if typedConfig.QPS != 20 || typedConfig.Burst != 30 {
		t.Errorf("typed client QPS/burst = %v/%d, want 20/30", typedConfig.QPS, typedConfig.Burst)
	}
	wantAgent := rest.DefaultKubernetesUserAgent() + "/generic-garbage-collector"
	if metadataConfig.UserAgent != wantAgent {
		t.Errorf("metadata client User-Agent = %q, want %q", metadataConfig.UserAgent, wantAgent)
	}
}

// Built by the manager, the collector gets a health check and its graph under
// /debug/controllers/garbage-collector-controller/, and shares the typed informers of the
// workload controllers.
func TestGarbageCollectorBuiltByTheManager(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var gc registry.Descriptor
	for _, d := range builtinControllers() {
		if d.Name == garbagecollector.ControllerName {
			gc = d
		}
	}
	tm := newTestManager(t, []string{garbagecollector.ControllerName}, gc)
	cc := tm.lc.ControllerContext
	cc.ClientBuilder = clientbuilder.NewSimpleBuilder(&rest.Config{Host: "https://127.0.0.1:1", QPS: 20, Burst: 30})
	cc.RESTMapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(&fakediscovery.FakeDiscovery{Fake: &fake.NewClientset().Fake}))
	cc.EventRecorder = func(string) record.EventRecorderLogger { return record.NewFakeRecorder(10) }
	cc.Config = &config.Configuration{GarbageCollector: config.GarbageCollectorConfiguration{Enabled: true, ConcurrentSyncs: 3}}

	built, _, err := tm.buildControllers(ctx, tm.lc)
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 1 {
		t.Fatalf("built %d controllers, want the collector", len(built))
	}
	if g, ok := built[0].controller.(garbageCollector); !ok || g.workers != 3 {
		t.Errorf("built %T %+v, want the collector with 3 workers", built[0].controller, built[0].controller)
	}
	if code, body := get(t, tm.mux, "/debug/controllers/garbage-collector-controller/graph"); code != http.StatusOK || body != "strict digraph full {\n}\n" {
		t.Errorf("graph = %d %q", code, body)
	}
	if code, _ := get(t, tm.mux, "/debug/controllers/garbage-collector-controller/nope"); code != http.StatusNotFound {
		t.Errorf("other debug path = %d, want 404", code)
	}
	if code, body := get(t, tm.mux, "/healthz?verbose"); code != http.StatusOK || !slices.Contains(strings.Split(body, "\n"), "[+]garbage-collector-controller ok") {
		t.Errorf("healthz = %d %q", code, body)
	}

	lookup := sharedTypedInformers(cc.InformerFactory)
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "pods"},
		{Group: "apps", Version: "v1", Resource: "replicasets"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
	} {
		if _, ok := lookup(gvr); !ok {
			t.Errorf("%s is not shared", gvr)
		}
	}
	if informer, _ := lookup(schema.GroupVersionResource{Version: "v1", Resource: "pods"}); informer != cc.InformerFactory.Core().V1().Pods().Informer() {
		t.Error("the pods informer is not the factory's")
	}
	if _, ok := lookup(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}); ok {
		t.Error("secrets must be watched metadata-only")
	}
}
