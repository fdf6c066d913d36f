package app

import (
	"context"
	"slices"
	"testing"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/webhook"
	clonesetwebhook "github.com/bosun-dev/bosun/pkg/webhook/cloneset"
	crrwebhook "github.com/bosun-dev/bosun/pkg/webhook/containerrecreaterequest"
	daemonsetwebhook "github.com/bosun-dev/bosun/pkg/webhook/daemonset"
	imagelistpulljobwebhook "github.com/bosun-dev/bosun/pkg/webhook/imagelistpulljob"
	imagepulljobwebhook "github.com/bosun-dev/bosun/pkg/webhook/imagepulljob"
	nodeimagewebhook "github.com/bosun-dev/bosun/pkg/webhook/nodeimage"
	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
	podwebhook "github.com/bosun-dev/bosun/pkg/webhook/pod"
	pubwebhook "github.com/bosun-dev/bosun/pkg/webhook/podunavailablebudget"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// fuzzedWebhooks are the admission webhooks that have a fuzz target in their package
// (Fuzz<Kind>Webhooks, run by `make fuzz`), by the target's package.
var fuzzedWebhooks = map[string][]string{
	"cloneset":                 {clonesetwebhook.MutatingName, clonesetwebhook.ValidatingName},
	"containerrecreaterequest": {crrwebhook.MutatingName},
	"daemonset":                {daemonsetwebhook.MutatingName, daemonsetwebhook.ValidatingName},
	"imagelistpulljob":         {imagelistpulljobwebhook.MutatingName, imagelistpulljobwebhook.ValidatingName},
	"imagepulljob":             {imagepulljobwebhook.MutatingName, imagepulljobwebhook.ValidatingName},
	"nodeimage":                {nodeimagewebhook.MutatingName, nodeimagewebhook.ValidatingName},
	"noderestriction":          {noderestriction.NodeImageName, noderestriction.ContainerRecreateRequestName},
	"pod":                      {podwebhook.MutatingName, podwebhook.ValidatingName, podwebhook.ValidatingEvictionName},
	"podunavailablebudget":     {pubwebhook.MutatingName, pubwebhook.ValidatingName},
}

// TestEveryWebhookIsFuzzed builds the admission webhooks as the manager does with every
// controller enabled, under the default feature gates and with every gate on, and checks
// that each has a fuzz target, so that a new webhook cannot go unfuzzed. It then answers
// the fuzz targets' seeds with the manager's webhooks, through the webhook server, and
// checks the answers as the targets do: the targets build each package's webhooks on fakes
// of their own, this is the same on the manager's informers.
func TestEveryWebhookIsFuzzed(t *testing.T) {
	fuzzer := webhooktest.NewAdmissionFuzzer(t, func(gates featuregate.FeatureGate) []webhook.Registration {
		return managerWebhooks(t, gates)
	})
	var want []string
	for _, names := range fuzzedWebhooks {
		want = append(want, names...)
	}
	slices.Sort(want)
	if got := fuzzer.Names(); !slices.Equal(got, want) {
		t.Fatalf("the manager serves the webhooks %v; those with a fuzz target are %v", got, want)
	}
	for _, seed := range fuzzer.Seeds(t, webhooktest.SampleObjectsByKind(t)) {
		fuzzer.Fuzz(t, seed.AllGates, seed.Path, seed.Body)
	}
}

// managerWebhooks builds the webhooks of every controller as the manager does, on a fake
// cluster that serves bosun's resources in both versions, holds bosun's CloneSet CRD and
// the sample budget covering the sample pod of a Deployment, and whose informers have
// synced.
func managerWebhooks(t *testing.T, gates featuregate.FeatureGate) []webhook.Registration {
	t.Helper()
	deployment, replicaSet := webhooktest.SampleOwners()
	client := fake.NewClientset(deployment, replicaSet, webhooktest.SamplePod(),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	for _, gv := range []string{"apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"} {
		client.Resources = append(client.Resources, servedAPIs(gv, "clonesets", "daemonsets", "containerrecreaterequests",
			"nodeimages", "imagepulljobs", "imagelistpulljobs"))
	}
	client.Resources = append(client.Resources, servedAPIs("policy.kruise.io/v1alpha1", "podunavailablebudgets"),
		servedAPIs("policy.kruise.io/v1beta1", "podunavailablebudgets"),
		servedAPIs("apps/v1", "deployments", "replicasets", "statefulsets", "daemonsets"))
	bosunClient := bosunfake.NewSimpleClientset(webhooktest.SampleBudget())
	wc := &registry.WebhookContext{
		ClientName:           webhookClientName,
		ClientBuilder:        fakeDiscoveryBuilder{client},
		Client:               client,
		BosunClient:          bosunClient,
		InformerFactory:      informers.NewSharedInformerFactory(client, 0),
		BosunInformerFactory: bosuninformers.NewSharedInformerFactory(bosunClient, 0),
		RESTMapper:           restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
		// Without a channel, events are dropped: a full one would block the webhook.
		EventRecorder: func(string) record.EventRecorderLogger { return &record.FakeRecorder{} },
		FeatureGate:   gates,
	}

	// The CloneSet's webhooks look for bosun's CRD through a metadata client of their own.
	reg := NewControllerRegistry()
	enabled := slices.DeleteFunc(reg.Names(), func(name string) bool { return name == cloneset.ControllerName })
	regs, err := webhookRegistrations(reg, enabled, wc)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crds := metadatafake.NewSimpleMetadataClient(scheme,
		crdMetadata(cloneSetCRD, map[string]string{"app.kubernetes.io/managed-by": "bosun"}))
	cloneSetRegs, err := cloneSetWebhooksWith(wc, func() (metadata.Interface, error) { return crds, nil })
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if !waitForWebhookInformers(ctx, wc) {
		t.Fatal("the webhooks' informers did not sync")
	}
	return append(regs, cloneSetRegs...)
}
