package pod

import (
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	policylisters "github.com/bosun-dev/client-go/listers/policy/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The names and paths OpenKruise gives the same webhooks, so that configurations and
// dashboards written for one work for the other.
const (
	MutatingName           = "mpod.kb.io"
	MutatingPath           = "/mutate-pod"
	ValidatingName         = "vpod.kb.io"
	ValidatingPath         = "/validate-pod"
	ValidatingEvictionName = "vpodeviction.kb.io"
	ValidatingEvictionPath = "/validate-pod-eviction"
)

// Dependencies are what the pod webhooks read and write.
type Dependencies struct {
	// Pods is read for the subject of an eviction, which the request does not carry.
	Pods corelisters.PodLister
	// LivePods reads the subject of an eviction that Pods has not seen yet; nil leaves such
	// evictions to the API server.
	LivePods corev1client.PodsGetter
	// Budgets is read for the budget covering a pod; its copies are the informer copies
	// budget.Cache compares with its own.
	Budgets policylisters.PodUnavailableBudgetLister
	// Finder resolves a pod's controller chain for budgets with a targetRef.
	Finder *workload.Finder
	// Client writes budget status.
	Client bosunclientset.Interface
	// Cache is the process's budget cache, shared with the controller.
	Cache *budget.Cache
	// Recorder records PubPreventPodDeletion events on pods.
	Recorder record.EventRecorder
	// FeatureGate is read on every request; features.DefaultFeatureGate when nil.
	FeatureGate featuregate.FeatureGate
	// Clock stamps the disruptedPods and unavailablePods entries; the real clock when nil.
	Clock clock.PassiveClock
	// Mutating is the process's mutating pod webhook, which the budget's tagging joins;
	// the webhooks of other controllers add their own mutations to it. Nil gives the budget
	// webhooks one of their own.
	Mutating *MutatingWebhook
}

// handler answers the budget's pod webhooks and tags new pods.
type handler struct {
	Dependencies
}

func newHandler(deps Dependencies) *handler {
	if deps.FeatureGate == nil {
		deps.FeatureGate = features.DefaultFeatureGate
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	return &handler{Dependencies: deps}
}

// Registrations are the pod webhooks of PodUnavailableBudgets the feature gates ask for:
// always the tagging, a mutation of the mutating pod webhook, whose registration comes
// with it unless another controller's mutations registered it already; the validating one
// on DELETE (PodUnavailableBudgetDeleteGate) and UPDATE (PodUnavailableBudgetUpdateGate),
// left out when neither gate is on; the eviction one with the delete gate. The handlers
// read the gates again on every request, so a webhook configuration written before a
// restart with other gates cannot enforce more than they allow.
func Registrations(deps Dependencies) []webhook.Registration {
	registerMetrics()
	h := newHandler(deps)
	mutating := deps.Mutating
	if mutating == nil {
		mutating = NewMutatingWebhook()
	}
	regs := mutating.Add(h.budgetTagging())

	deleteOn := h.FeatureGate.Enabled(features.PodUnavailableBudgetDeleteGate)
	var ops []admissionregistrationv1.OperationType
	if deleteOn {
		ops = append(ops, admissionregistrationv1.Delete)
	}
	if h.FeatureGate.Enabled(features.PodUnavailableBudgetUpdateGate) {
		ops = append(ops, admissionregistrationv1.Update)
	}
	if len(ops) > 0 {
		regs = append(regs, webhook.Registration{
			Name:              ValidatingName,
			Path:              ValidatingPath,
			Type:              webhook.Validating,
			Rules:             podRules("pods", ops...),
			FailurePolicy:     ptr.To(admissionregistrationv1.Fail),
			NamespaceSelector: outsideControlPlane(),
			Handler:           webhook.HandlerFunc(h.validate),
		})
	}
	if deleteOn {
		regs = append(regs, webhook.Registration{
			Name:              ValidatingEvictionName,
			Path:              ValidatingEvictionPath,
			Type:              webhook.Validating,
			Rules:             podRules("pods/eviction", admissionregistrationv1.Create),
			FailurePolicy:     ptr.To(admissionregistrationv1.Fail),
			NamespaceSelector: outsideControlPlane(),
			Handler:           webhook.HandlerFunc(h.validate),
		})
	}
	return regs
}

func podRules(resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{corev1.GroupName},
			APIVersions: []string{corev1.SchemeGroupVersion.Version},
			Resources:   []string{resource},
		},
	}}
}

// ControlPlaneNamespaceLabel marks the namespaces whose pods the pod webhooks leave alone, as
// OpenKruise marks kruise-system: the in-cluster install labels bosun-system with it.
const ControlPlaneNamespaceLabel = "control-plane"

// outsideControlPlane keeps the pods of kube-system and of namespaces labelled
// ControlPlaneNamespaceLabel out of the webhooks: the control plane's pods, and bosun's own
// when it runs inside the cluster, must stay creatable and deletable while no replica of bosun
// answers (the webhooks that judge deletions fail closed).
func outsideControlPlane() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem}},
		{Key: ControlPlaneNamespaceLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
	}}
}
