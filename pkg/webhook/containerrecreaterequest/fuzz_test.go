package containerrecreaterequest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzContainerRecreateRequestWebhooks sends AdmissionReview bodies to the
// ContainerRecreateRequest's webhook through the webhook server (see
// webhooktest.AdmissionFuzzer for what it checks), over caches and a fake cluster holding
// the sample pod and its Node.
func FuzzContainerRecreateRequestWebhooks(f *testing.F) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := pods.Add(webhooktest.SamplePod()); err != nil {
		f.Fatal(err)
	}
	if err := nodes.Add(node); err != nil {
		f.Fatal(err)
	}
	client := fake.NewClientset(webhooktest.SamplePod(), node)
	fuzzer := webhooktest.NewAdmissionFuzzer(f, func(gates featuregate.FeatureGate) []webhook.Registration {
		return Registrations(Dependencies{
			Pods:        corelisters.NewPodLister(pods),
			Nodes:       corelisters.NewNodeLister(nodes),
			LivePods:    client.CoreV1(),
			LiveNodes:   client.CoreV1(),
			FeatureGate: gates,
		})
	})
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}
