package app

import (
	"context"
	"testing"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/bosun-dev/bosun/pkg/controller/imagelistpulljob"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
)

// fakeDiscoveryBuilder hands out one fake clientset, whose discovery the test fills.
type fakeDiscoveryBuilder struct{ client *fake.Clientset }

func (b fakeDiscoveryBuilder) Config(string) (*rest.Config, error) {
	return &rest.Config{Host: "https://127.0.0.1:1"}, nil
}

func (b fakeDiscoveryBuilder) Client(string) (kubernetes.Interface, error) { return b.client, nil }

// The controller and its webhooks exist only while the API server serves
// apps.kruise.io/v1beta1 ImageListPullJobs (and, for the controller, v1beta1 ImagePullJobs):
// an informer of a resource that is not served never syncs.
func TestImageListPullJobNeedsV1beta1(t *testing.T) {
	resources := func(groupVersion string, names ...string) *metav1.APIResourceList {
		list := &metav1.APIResourceList{GroupVersion: groupVersion}
		for _, name := range names {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: name})
		}
		return list
	}
	for _, tc := range []struct {
		name                     string
		served                   []*metav1.APIResourceList
		wantController, wantHook bool
		// wantWaiting: not built yet, but the manager should wait for v1beta1 (the CRDs
		// of an earlier release are installed) rather than give up.
		wantWaiting bool
	}{
		{"nothing", nil, false, false, false},
		{"v1alpha1 only", []*metav1.APIResourceList{resources("apps.kruise.io/v1alpha1", "imagelistpulljobs", "imagepulljobs")}, false, false, true},
		{"v1beta1 without list jobs", []*metav1.APIResourceList{resources("apps.kruise.io/v1beta1", "imagepulljobs", "nodeimages")}, false, false, false},
		{"v1beta1 list jobs without ImagePullJobs", []*metav1.APIResourceList{resources("apps.kruise.io/v1beta1", "imagelistpulljobs")}, false, true, false},
		{"v1beta1", []*metav1.APIResourceList{resources("apps.kruise.io/v1beta1", "imagelistpulljobs", "imagepulljobs")}, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := fake.NewClientset()
			client.Resources = tc.served
			cc := &registry.ControllerContext{
				ClientName:           imagelistpulljob.ControllerName,
				ClientBuilder:        fakeDiscoveryBuilder{client},
				BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
				EventRecorder:        func(string) record.EventRecorderLogger { return record.NewFakeRecorder(10) },
				FeatureGate:          features.NewFeatureGate(),
				Config:               &config.Configuration{ImageListPullJob: config.ImageListPullJobConfiguration{ConcurrentSyncs: 3}},
			}
			c, err := newImageListPullJobController(ctx, cc)
			if tc.wantController {
				if err != nil || c == nil {
					t.Errorf("controller not built: %v", err)
				} else if w, ok := c.(withWorkers); !ok || w.workers != 3 {
					t.Errorf("controller %#v, want 3 workers", c)
				}
			} else if tc.wantWaiting {
				if _, waiting := registry.IsNotYetServed(err); !waiting {
					t.Errorf("built (%v, %v), want NotYetServed", c, err)
				}
			} else if _, notBuilt := registry.IsNotBuilt(err); !notBuilt {
				t.Errorf("built (%v, %v), want NotBuilt", c, err)
			}

			regs, err := imageListPullJobWebhooks(&registry.WebhookContext{Client: client, FeatureGate: features.NewFeatureGate()})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(regs) == 2; got != tc.wantHook {
				t.Errorf("%d webhooks, want them: %v", len(regs), tc.wantHook)
			}
		})
	}
}
