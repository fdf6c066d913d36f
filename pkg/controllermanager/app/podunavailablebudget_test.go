package app

import (
	"context"
	"reflect"
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
)

// The controller and its webhooks work on v1beta1 budgets only: they exist while the API
// server serves them, the controller waits while it serves budgets in v1alpha1 only (the
// CRDs of an earlier release), and the Advanced DaemonSets they read are v1beta1 ones,
// watched only when served.
func TestPodUnavailableBudgetNeedsV1beta1(t *testing.T) {
	resources := func(groupVersion string, names ...string) *metav1.APIResourceList {
		list := &metav1.APIResourceList{GroupVersion: groupVersion}
		for _, name := range names {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: name})
		}
		return list
	}
	daemonSetType := reflect.TypeOf(&appsv1beta1.DaemonSet{})
	budgetType := reflect.TypeOf(&policyv1beta1.PodUnavailableBudget{})
	for _, tc := range []struct {
		name   string
		served []*metav1.APIResourceList
		// wantBuilt: the controller and the five webhooks are built; wantWaiting: the
		// controller is not built yet but awaited.
		wantBuilt, wantWaiting bool
		// wantCached are the bosun types the controller and the webhooks watch.
		wantCached []reflect.Type
	}{
		{name: "nothing"},
		{name: "v1alpha1 only", served: []*metav1.APIResourceList{resources("policy.kruise.io/v1alpha1", "podunavailablebudgets")}, wantWaiting: true},
		{name: "v1beta1", served: []*metav1.APIResourceList{resources("policy.kruise.io/v1beta1", "podunavailablebudgets")},
			wantBuilt: true, wantCached: []reflect.Type{budgetType}},
		{name: "v1beta1 with v1alpha1 DaemonSets", served: []*metav1.APIResourceList{
			resources("policy.kruise.io/v1beta1", "podunavailablebudgets"), resources("apps.kruise.io/v1alpha1", "daemonsets")},
			wantBuilt: true, wantCached: []reflect.Type{budgetType}},
		{name: "v1beta1 with v1beta1 DaemonSets", served: []*metav1.APIResourceList{
			resources("policy.kruise.io/v1beta1", "podunavailablebudgets"), resources("apps.kruise.io/v1beta1", "daemonsets")},
			wantBuilt: true, wantCached: []reflect.Type{budgetType, daemonSetType}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := fake.NewClientset()
			client.Resources = tc.served
			mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
			recorders := func(string) record.EventRecorderLogger { return record.NewFakeRecorder(10) }
			budgets := budget.NewCache()

			cc := &registry.ControllerContext{
				ClientName:           podunavailablebudget.ControllerName,
				ClientBuilder:        fakeDiscoveryBuilder{client},
				InformerFactory:      informers.NewSharedInformerFactory(client, 0),
				BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
				RESTMapper:           mapper,
				EventRecorder:        recorders,
				FeatureGate:          features.NewFeatureGate(),
				Config:               &config.Configuration{PodUnavailableBudget: config.PodUnavailableBudgetConfiguration{ConcurrentSyncs: 3}},
			}
			c, err := newPodUnavailableBudgetController(budgets)(ctx, cc)
			switch {
			case tc.wantBuilt:
				if err != nil || c == nil {
					t.Errorf("controller not built: %v", err)
				} else if w, ok := c.(withWorkers); !ok || w.workers != 3 {
					t.Errorf("controller %#v, want 3 workers", c)
				}
			case tc.wantWaiting:
				if _, waiting := registry.IsNotYetServed(err); !waiting {
					t.Errorf("built (%v, %v), want NotYetServed", c, err)
				}
			default:
				if _, notBuilt := registry.IsNotBuilt(err); !notBuilt {
					t.Errorf("built (%v, %v), want NotBuilt", c, err)
				}
			}
			assertCached(t, ctx, "controller", cc.BosunInformerFactory, tc.wantCached)

			wc := &registry.WebhookContext{
				ClientName:           "webhooks",
				ClientBuilder:        fakeDiscoveryBuilder{client},
				Client:               client,
				BosunClient:          bosunfake.NewSimpleClientset(),
				InformerFactory:      informers.NewSharedInformerFactory(client, 0),
				BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
				RESTMapper:           mapper,
				EventRecorder:        recorders,
				FeatureGate:          features.NewFeatureGate(),
			}
			regs, err := podUnavailableBudgetWebhooks(budgets, podwebhook.NewMutatingWebhook())(wc)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 5, false: 0}[tc.wantBuilt]; len(regs) != want {
				t.Errorf("%d webhooks, want %d", len(regs), want)
			}
			assertCached(t, ctx, "webhooks", wc.BosunInformerFactory, tc.wantCached)
		})
	}
}

// assertCached checks which bosun types factory has informers for.
func assertCached(t *testing.T, ctx context.Context, who string, factory bosuninformers.SharedInformerFactory, want []reflect.Type) {
	t.Helper()
	factory.Start(ctx.Done())
	var got []reflect.Type
	for typ := range factory.WaitForCacheSync(ctx.Done()) {
		got = append(got, typ)
	}
	for _, typ := range want {
		if !slices.Contains(got, typ) {
			t.Errorf("the %s do not watch %v; they watch %v", who, typ, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the %s watch %v, want %v", who, got, want)
	}
}
