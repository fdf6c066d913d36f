package pod

import (
	"testing"

	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	metadatafake "k8s.io/client-go/metadata/fake"
	scalefake "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget/budgettest"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzPodWebhooks sends AdmissionReview bodies to the pod webhooks through the webhook
// server (see webhooktest.AdmissionFuzzer for what it checks): the mutating one with every
// mutation the manager adds to it, in the manager's order, and the validating ones of
// deletions, updates and evictions, over a cluster where a budget covers the sample pod
// of a Deployment.
func FuzzPodWebhooks(f *testing.F) {
	fuzzer := webhooktest.NewAdmissionFuzzer(f, func(gates featuregate.FeatureGate) []webhook.Registration {
		return fuzzedPodWebhooks(f, gates)
	})
	fuzzer.Seed(f, webhooktest.SampleObjectsByKind(f))
	f.Fuzz(fuzzer.Fuzz)
}

// fuzzedPodWebhooks builds the pod webhooks over a cluster of its own.
func fuzzedPodWebhooks(t testing.TB, gates featuregate.FeatureGate) []webhook.Registration {
	t.Helper()
	newIndexer := func(objects ...runtime.Object) cache.Indexer {
		indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, obj := range objects {
			if err := indexer.Add(obj); err != nil {
				t.Fatal(err)
			}
		}
		return indexer
	}
	deployment, replicaSet := webhooktest.SampleOwners()
	// Owners of other kinds are looked up live, and are not found.
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scales := &scalefake.FakeScaleClient{}
	scales.AddReactor("get", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		get := action.(clienttesting.GetAction)
		return true, nil, apierrors.NewNotFound(get.GetResource().GroupResource(), get.GetName())
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []string{"ReplicaSet", "Deployment", "StatefulSet"} {
		mapper.Add(appsv1.SchemeGroupVersion.WithKind(gvk), meta.RESTScopeNamespace)
	}
	finder := workload.NewFinder(workload.Listers{
		ReplicaSets: appslisters.NewReplicaSetLister(newIndexer(replicaSet)),
		Deployments: appslisters.NewDeploymentLister(newIndexer(deployment)),
	}, scales, metadatafake.NewSimpleMetadataClient(scheme), mapper,
		workload.WithOwnerChain(gates.Enabled(features.PodUnavailableBudgetOwnerChain)),
		workload.WithDaemonSetReplicas(gates.Enabled(features.PodUnavailableBudgetDaemonSetReplicas)))

	server := budgettest.NewServer()
	stored := server.Put(webhooktest.SampleBudget())
	mutations := NewMutatingWebhook()
	// The manager's order: the readiness gate's controller, the budget's, then the launch
	// priority's.
	regs := mutations.Add(KruisePodReadyGate(gates))
	regs = append(regs, Registrations(Dependencies{
		Pods:     corelisters.NewPodLister(newIndexer(webhooktest.SamplePod())),
		LivePods: kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: webhooktest.SampleNamespace}}).CoreV1(),
		Budgets:  policylisters.NewPodUnavailableBudgetLister(newIndexer(stored)),
		Finder:   finder,
		Client:   server,
		Cache:    budget.NewCache(),
		// Without a channel, events are dropped: a full one would block the webhook.
		Recorder:    &record.FakeRecorder{},
		FeatureGate: gates,
		Mutating:    mutations,
	})...)
	return append(regs, mutations.Add(LaunchPriority())...)
}
