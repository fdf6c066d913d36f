package app

import (
	"context"
	"testing"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"

	"github.com/bosun-dev/bosun/pkg/controller/podreadiness"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
)

// The controller runs in any cluster, on the shared pod informer, with OpenKruise's three
// workers.
func TestPodReadinessControllerIsBuilt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	cc := &registry.ControllerContext{
		ClientName:      podreadiness.ControllerName,
		ClientBuilder:   fakeDiscoveryBuilder{client},
		InformerFactory: informers.NewSharedInformerFactory(client, 0),
		FeatureGate:     features.NewFeatureGate(),
	}
	c, err := newPodReadinessController(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := c.(withWorkers); !ok || w.workers != podReadinessWorkers || podReadinessWorkers != 3 {
		t.Errorf("controller %#v, want 3 workers", c)
	}
	d, ok := NewControllerRegistry().Get("podreadiness")
	if !ok || d.Name != podreadiness.ControllerName || d.DisabledByDefault || !d.KruiseClientLimits {
		t.Errorf("descriptor %+v, want %s under alias podreadiness, on by default, with the OpenKruise limits", d, podreadiness.ControllerName)
	}
}

// The mutating pod webhook is registered once whichever of the controllers that mutate new
// pods are enabled, and only while one of them is.
func TestMutatingPodWebhookIsRegisteredOnce(t *testing.T) {
	client := fake.NewClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "policy.kruise.io/v1beta1",
		APIResources: []metav1.APIResource{{Name: "podunavailablebudgets"}}}}
	for _, tc := range []struct {
		name    string
		enabled []string
		want    int // registrations of mpod.kb.io
	}{
		{"pod readiness alone", []string{podreadiness.ControllerName}, 1},
		{"budgets alone", []string{podunavailablebudget.ControllerName}, 1},
		{"both", []string{podreadiness.ControllerName, podunavailablebudget.ControllerName}, 1},
		{"neither", []string{"replicaset-controller"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wc := &registry.WebhookContext{
				ClientName:           "webhooks",
				ClientBuilder:        fakeDiscoveryBuilder{client},
				Client:               client,
				BosunClient:          bosunfake.NewSimpleClientset(),
				InformerFactory:      informers.NewSharedInformerFactory(client, 0),
				BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
				RESTMapper:           restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
				EventRecorder:        func(string) record.EventRecorderLogger { return record.NewFakeRecorder(10) },
				FeatureGate:          features.NewFeatureGate(),
			}
			regs, err := webhookRegistrations(NewControllerRegistry(), tc.enabled, wc)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, reg := range regs {
				if reg.Name == podwebhook.MutatingName {
					got++
				}
			}
			if got != tc.want {
				t.Errorf("%d registrations of %s, want %d", got, podwebhook.MutatingName, tc.want)
			}
		})
	}
}
