package configuration

import (
	"bytes"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The names of the configurations bosun writes. OpenKruise's are kruise-...; a cluster may
// run both while moving from one to the other.
const (
	MutatingName   = "bosun-mutating-webhook-configuration"
	ValidatingName = "bosun-validating-webhook-configuration"
)

// bosun's mark on the configurations it manages: only objects carrying it are updated or
// deleted.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByBosun = "bosun"
)

// Desired returns the configurations that make the API server call regs at client,
// trusting caBundle: one webhook per registration of the configuration's type, in
// registration order (mutating webhooks are called in that order). A type without
// registrations yields nil. Every field the API server defaults is filled in. The result
// shares nothing with regs or caBundle.
func Desired(regs []webhook.Registration, client ClientConfig, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	caBundle = bytes.Clone(caBundle)
	var mutating []admissionregistrationv1.MutatingWebhook
	var validating []admissionregistrationv1.ValidatingWebhook
	for _, reg := range regs {
		switch reg.Type {
		case webhook.Mutating:
			mutating = append(mutating, mutatingWebhook(reg, client, caBundle))
		case webhook.Validating:
			validating = append(validating, validatingWebhook(reg, client, caBundle))
		}
	}

	var m *admissionregistrationv1.MutatingWebhookConfiguration
	if len(mutating) > 0 {
		m = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: objectMeta(MutatingName), Webhooks: mutating}
	}
	var v *admissionregistrationv1.ValidatingWebhookConfiguration
	if len(validating) > 0 {
		v = &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: objectMeta(ValidatingName), Webhooks: validating}
	}
	return m, v
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{managedByLabel: managedByBosun}}
}

func mutatingWebhook(reg webhook.Registration, client ClientConfig, caBundle []byte) admissionregistrationv1.MutatingWebhook {
	hook := admissionregistrationv1.MutatingWebhook{
		Name:                    reg.Name,
		ClientConfig:            client.webhookClientConfig(reg.Path, caBundle),
		Rules:                   cloneRules(reg.Rules),
		FailurePolicy:           failurePolicy(reg),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       reg.NamespaceSelector.DeepCopy(),
		ObjectSelector:          reg.ObjectSelector.DeepCopy(),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          timeoutSeconds(reg),
		AdmissionReviewVersions: admissionReviewVersions(),
		MatchConditions:         slices.Clone(reg.MatchConditions),
		// bosun's mutations do not depend on each other's or other webhooks' results.
		ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
	setMutatingDefaults(&hook)
	return hook
}

func validatingWebhook(reg webhook.Registration, client ClientConfig, caBundle []byte) admissionregistrationv1.ValidatingWebhook {
	hook := admissionregistrationv1.ValidatingWebhook{
		Name:                    reg.Name,
		ClientConfig:            client.webhookClientConfig(reg.Path, caBundle),
		Rules:                   cloneRules(reg.Rules),
		FailurePolicy:           failurePolicy(reg),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       reg.NamespaceSelector.DeepCopy(),
		ObjectSelector:          reg.ObjectSelector.DeepCopy(),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          timeoutSeconds(reg),
		AdmissionReviewVersions: admissionReviewVersions(),
		MatchConditions:         slices.Clone(reg.MatchConditions),
	}
	setValidatingDefaults(&hook)
	return hook
}

// admissionReviewVersions are the AdmissionReview versions the server speaks; a new slice
// each time, so that no two webhooks share one.
func admissionReviewVersions() []string {
	return []string{admissionregistrationv1.SchemeGroupVersion.Version}
}

func failurePolicy(reg webhook.Registration) *admissionregistrationv1.FailurePolicyType {
	return ptr.To(ptr.Deref(reg.FailurePolicy, admissionregistrationv1.Fail))
}

func timeoutSeconds(reg webhook.Registration) *int32 {
	if reg.TimeoutSeconds == 0 {
		return ptr.To[int32](webhook.DefaultTimeoutSeconds)
	}
	return ptr.To(reg.TimeoutSeconds)
}

func cloneRules(rules []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.RuleWithOperations {
	if rules == nil {
		return nil
	}
	clone := make([]admissionregistrationv1.RuleWithOperations, len(rules))
	for i := range rules {
		rules[i].DeepCopyInto(&clone[i])
	}
	return clone
}

// setMutatingDefaults fills in what the API server defaults in a mutating webhook. Desired
// applies it so that what it writes is what it reads back; the writer applies it to a copy
// of the live webhooks too, so that an object another client wrote, or a field a user
// cleared and the server defaulted again, compares by meaning.
func setMutatingDefaults(hook *admissionregistrationv1.MutatingWebhook) {
	setClientConfigAndRuleDefaults(&hook.ClientConfig, hook.Rules)
	setPolicyDefaults(&hook.FailurePolicy, &hook.MatchPolicy, &hook.NamespaceSelector, &hook.ObjectSelector, &hook.TimeoutSeconds)
	if hook.ReinvocationPolicy == nil {
		hook.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
	}
}

// setValidatingDefaults is setMutatingDefaults for a validating webhook, which has no
// reinvocation policy.
func setValidatingDefaults(hook *admissionregistrationv1.ValidatingWebhook) {
	setClientConfigAndRuleDefaults(&hook.ClientConfig, hook.Rules)
	setPolicyDefaults(&hook.FailurePolicy, &hook.MatchPolicy, &hook.NamespaceSelector, &hook.ObjectSelector, &hook.TimeoutSeconds)
}

// setPolicyDefaults fills in the defaults both kinds of webhook share; the two API types
// hold the same fields without a common struct.
func setPolicyDefaults(failurePolicy **admissionregistrationv1.FailurePolicyType, matchPolicy **admissionregistrationv1.MatchPolicyType,
	namespaceSelector, objectSelector **metav1.LabelSelector, timeoutSeconds **int32) {
	if *failurePolicy == nil {
		*failurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	if *matchPolicy == nil {
		*matchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	// An empty selector matches everything, which is what no selector means.
	if *namespaceSelector == nil {
		*namespaceSelector = &metav1.LabelSelector{}
	}
	if *objectSelector == nil {
		*objectSelector = &metav1.LabelSelector{}
	}
	if *timeoutSeconds == nil {
		*timeoutSeconds = ptr.To[int32](webhook.DefaultTimeoutSeconds)
	}
}

// setClientConfigAndRuleDefaults fills in the defaults nested in a webhook of either type:
// a service's port and each rule's scope ("*": cluster and namespaced resources alike),
// the one default a registration's rules nearly always leave out.
func setClientConfigAndRuleDefaults(config *admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) {
	if config.Service != nil && config.Service.Port == nil {
		config.Service.Port = ptr.To(defaultServicePort)
	}
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
}
