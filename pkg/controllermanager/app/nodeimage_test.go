package app

import (
	"context"
	"reflect"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob"
	"github.com/bosun-dev/bosun/pkg/controller/nodeimage"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
)

// servedAPIs is a discovery answer: resources served in groupVersion.
func servedAPIs(groupVersion string, names ...string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: groupVersion}
	for _, name := range names {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: name})
	}
	return list
}

// imageControllerContext is the context the NodeImage and ImagePullJob constructors get, on
// a fake clientset whose discovery answers served.
func imageControllerContext(clientName string, served []*metav1.APIResourceList) (*registry.ControllerContext, *fake.Clientset) {
	client := fake.NewClientset()
	client.Resources = served
	return &registry.ControllerContext{
		ClientName:           clientName,
		ClientBuilder:        fakeDiscoveryBuilder{client},
		InformerFactory:      informers.NewSharedInformerFactory(client, 0),
		BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunfake.NewSimpleClientset(), 0),
		EventRecorder:        func(string) record.EventRecorderLogger { return record.NewFakeRecorder(10) },
		FeatureGate:          features.NewFeatureGate(),
		Config: &config.Configuration{
			NodeImage:    config.NodeImageConfiguration{ConcurrentSyncs: 3},
			ImagePullJob: config.ImagePullJobConfiguration{ConcurrentSyncs: 2},
		},
	}, client
}

// startedBosunInformers starts the context's bosun informers and returns the types it has
// informers of.
func startedBosunInformers(ctx context.Context, cc *registry.ControllerContext) map[reflect.Type]bool {
	cc.BosunInformerFactory.Start(ctx.Done())
	return cc.BosunInformerFactory.WaitForCacheSync(ctx.Done())
}

// Both controllers work on apps.kruise.io/v1beta1: built while it is served; waiting while
// only v1alpha1 is (the CRDs of an older release, until the new ones are applied); not
// built without the resources. The NodeImage controller watches v1beta1 ImagePullJobs only
// when they are served, and the webhooks follow the v1beta1 resources too.
func TestImageControllersNeedV1beta1(t *testing.T) {
	type outcome int
	const (
		built outcome = iota
		notYetServed
		notBuilt
	)
	for _, tc := range []struct {
		name                 string
		served               []*metav1.APIResourceList
		nodeImage, pullJob   outcome
		jobInformer          bool
		nodeHooks, pullHooks bool
	}{
		{"nothing", nil, notBuilt, notBuilt, false, false, false},
		{"v1alpha1 only", []*metav1.APIResourceList{servedAPIs("apps.kruise.io/v1alpha1", "nodeimages", "imagepulljobs")},
			notYetServed, notYetServed, false, false, false},
		{"v1beta1 NodeImages only", []*metav1.APIResourceList{servedAPIs("apps.kruise.io/v1beta1", "nodeimages")},
			built, notBuilt, false, true, false},
		{"v1beta1", []*metav1.APIResourceList{
			servedAPIs("apps.kruise.io/v1alpha1", "nodeimages", "imagepulljobs"),
			servedAPIs("apps.kruise.io/v1beta1", "nodeimages", "imagepulljobs"),
		}, built, built, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(kind string, c registry.Controller, err error, want outcome, workers int) {
				t.Helper()
				switch want {
				case built:
					if err != nil || c == nil {
						t.Errorf("%s controller not built: %v", kind, err)
					} else if w, ok := c.(withWorkers); !ok || w.workers != workers {
						t.Errorf("%s controller %#v, want %d workers", kind, c, workers)
					}
				case notYetServed:
					if _, ok := registry.IsNotYetServed(err); !ok {
						t.Errorf("%s controller: (%v, %v), want NotYetServed", kind, c, err)
					}
				case notBuilt:
					if _, ok := registry.IsNotBuilt(err); !ok {
						t.Errorf("%s controller: (%v, %v), want NotBuilt", kind, c, err)
					}
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			cc, client := imageControllerContext(nodeimage.ControllerName, tc.served)
			c, err := newNodeImageController(ctx, cc)
			check("NodeImage", c, err, tc.nodeImage, 3)
			if tc.nodeImage == built {
				started := startedBosunInformers(ctx, cc)
				if !started[reflect.TypeOf(&appsv1beta1.NodeImage{})] {
					t.Errorf("informers %v, want v1beta1 NodeImages", started)
				}
				if got := started[reflect.TypeOf(&appsv1beta1.ImagePullJob{})]; got != tc.jobInformer {
					t.Errorf("v1beta1 ImagePullJob informer started = %v, want %v", got, tc.jobInformer)
				}
			}
			hooks, err := nodeImageWebhooks(&registry.WebhookContext{Client: client, FeatureGate: features.NewFeatureGate()})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(hooks) > 0; got != tc.nodeHooks {
				t.Errorf("%d NodeImage webhooks, want some: %v", len(hooks), tc.nodeHooks)
			}

			cc, client = imageControllerContext(imagepulljob.ControllerName, tc.served)
			c, err = newImagePullJobController(ctx, cc)
			check("ImagePullJob", c, err, tc.pullJob, 2)
			if tc.pullJob == built {
				started := startedBosunInformers(ctx, cc)
				if !started[reflect.TypeOf(&appsv1beta1.NodeImage{})] || !started[reflect.TypeOf(&appsv1beta1.ImagePullJob{})] {
					t.Errorf("informers %v, want v1beta1 NodeImages and ImagePullJobs", started)
				}
			}
			hooks, err = imagePullJobWebhooks(&registry.WebhookContext{Client: client, FeatureGate: features.NewFeatureGate()})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(hooks) > 0; got != tc.pullHooks {
				t.Errorf("%d ImagePullJob webhooks, want some: %v", len(hooks), tc.pullHooks)
			}
		})
	}
}
