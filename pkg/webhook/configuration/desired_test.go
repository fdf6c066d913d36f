package configuration

import (
	"encoding/json"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

func TestDesiredURL(t *testing.T) {
	for _, base := range []string{"https://127.0.0.1:9876", "https://127.0.0.1:9876/"} {
		m, v := Desired(testRegistrations(), ClientConfig{URL: base}, testCA)
		if m == nil || v == nil {
			t.Fatalf("base %q: Desired = (%v, %v), want both configurations", base, m, v)
		}
		gotURLs := []string{}
		for _, hook := range m.Webhooks {
			if hook.ClientConfig.Service != nil || hook.ClientConfig.URL == nil {
				t.Fatalf("base %q: webhook %s has clientConfig %+v, want a URL only", base, hook.Name, hook.ClientConfig)
			}
			gotURLs = append(gotURLs, *hook.ClientConfig.URL)
		}
		wantURLs := []string{"https://127.0.0.1:9876/mutate-apps-kruise-io-v1alpha1-daemonset", "https://127.0.0.1:9876/mutate-pod"}
		if !reflect.DeepEqual(gotURLs, wantURLs) {
			t.Errorf("base %q: mutating URLs = %q, want %q", base, gotURLs, wantURLs)
		}
		if got, want := ptr.Deref(v.Webhooks[0].ClientConfig.URL, ""), "https://127.0.0.1:9876/validate-apps-kruise-io-v1alpha1-daemonset"; got != want {
			t.Errorf("base %q: validating URL = %q, want %q", base, got, want)
		}
	}
}

func TestDesiredService(t *testing.T) {
	tests := []struct {
		port, wantPort int32
	}{
		{port: 9443, wantPort: 9443},
		{port: 0, wantPort: 443},
	}
	for _, tc := range tests {
		client := ClientConfig{Service: &ServiceReference{Namespace: "bosun-system", Name: "bosun-webhook", Port: tc.port}}
		m, v := Desired(testRegistrations(), client, testCA)
		want := &admissionregistrationv1.ServiceReference{
			Namespace: "bosun-system", Name: "bosun-webhook",
			Path: ptr.To("/mutate-pod"), Port: ptr.To(tc.wantPort),
		}
		if got := m.Webhooks[1].ClientConfig; got.URL != nil || !reflect.DeepEqual(got.Service, want) {
			t.Errorf("port %d: clientConfig = URL %v, service %+v; want no URL, service %+v", tc.port, got.URL, got.Service, want)
		}
		if got := v.Webhooks[0].ClientConfig.Service; ptr.Deref(got.Path, "") != "/validate-apps-kruise-io-v1alpha1-daemonset" || *got.Port != tc.wantPort {
			t.Errorf("port %d: validating service = %+v", tc.port, got)
		}
	}
}

func TestDesiredFillsDefaultsAndKeepsChoices(t *testing.T) {
	m, v := Desired(testRegistrations(), testURLConfig, testCA)

	for _, obj := range []metav1.Object{m, v} {
		if want := map[string]string{managedByLabel: managedByBosun}; !reflect.DeepEqual(obj.GetLabels(), want) {
			t.Errorf("%s labels = %v, want %v", obj.GetName(), obj.GetLabels(), want)
		}
	}
	if m.Name != MutatingName || v.Name != ValidatingName {
		t.Errorf("names = %q, %q", m.Name, v.Name)
	}
	if got := []string{m.Webhooks[0].Name, m.Webhooks[1].Name}; !reflect.DeepEqual(got, []string{"mdaemonset.kb.io", "mpod.kb.io"}) {
		t.Errorf("mutating webhooks in order %q, want registration order", got)
	}
	if len(v.Webhooks) != 1 || v.Webhooks[0].Name != "vdaemonset.kb.io" {
		t.Errorf("validating webhooks = %+v, want vdaemonset.kb.io only", v.Webhooks)
	}

	// The registration that sets nothing optional gets every default.
	regs := testRegistrations()
	plain := m.Webhooks[0]
	wantPlain := admissionregistrationv1.MutatingWebhook{
		Name:         "mdaemonset.kb.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9876/mutate-apps-kruise-io-v1alpha1-daemonset"), CABundle: testCA},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: regs[0].Rules[0].Operations,
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"daemonsets"},
				Scope: ptr.To(admissionregistrationv1.AllScopes),
			},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](webhook.DefaultTimeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
	if !reflect.DeepEqual(plain, wantPlain) {
		t.Errorf("webhook without options:\n got %+v\nwant %+v", plain, wantPlain)
	}

	// The one that sets everything keeps its choices.
	chosen := m.Webhooks[1]
	if *chosen.FailurePolicy != admissionregistrationv1.Ignore || *chosen.TimeoutSeconds != 5 ||
		!reflect.DeepEqual(chosen.NamespaceSelector, regs[1].NamespaceSelector) ||
		!reflect.DeepEqual(chosen.ObjectSelector, regs[1].ObjectSelector) ||
		!reflect.DeepEqual(chosen.MatchConditions, regs[1].MatchConditions) {
		t.Errorf("webhook with options lost them: %+v", chosen)
	}

	validating := v.Webhooks[0]
	if *validating.FailurePolicy != admissionregistrationv1.Fail || *validating.SideEffects != admissionregistrationv1.SideEffectClassNone ||
		*validating.MatchPolicy != admissionregistrationv1.Equivalent || *validating.TimeoutSeconds != webhook.DefaultTimeoutSeconds ||
		validating.NamespaceSelector == nil || validating.ObjectSelector == nil ||
		*validating.Rules[0].Scope != admissionregistrationv1.AllScopes ||
		!reflect.DeepEqual(validating.AdmissionReviewVersions, []string{"v1"}) ||
		string(validating.ClientConfig.CABundle) != string(testCA) {
		t.Errorf("validating webhook lacks defaults: %+v", validating)
	}
	if !reflect.DeepEqual(validating.MatchConditions, regs[2].MatchConditions) {
		t.Errorf("validating webhook's match conditions = %v, want %v", validating.MatchConditions, regs[2].MatchConditions)
	}
}

// TestDesiredSurvivesTheAPIServer plays the API server: what Desired returns, sent as
// JSON, read back and defaulted, must compare equal to it, or every sync would update.
func TestDesiredSurvivesTheAPIServer(t *testing.T) {
	for _, client := range []ClientConfig{testURLConfig, {Service: &ServiceReference{Namespace: "ns", Name: "svc"}}} {
		m, v := Desired(testRegistrations(), client, testCA)

		var storedM admissionregistrationv1.MutatingWebhookConfiguration
		roundTrip(t, m, &storedM)
		for i := range storedM.Webhooks {
			setMutatingDefaults(&storedM.Webhooks[i])
		}
		if !apiequality.Semantic.DeepEqual(storedM.Webhooks, m.Webhooks) {
			t.Errorf("mutating webhooks change on the way through the API server:\n sent %+v\n read %+v", m.Webhooks, storedM.Webhooks)
		}

		var storedV admissionregistrationv1.ValidatingWebhookConfiguration
		roundTrip(t, v, &storedV)
		for i := range storedV.Webhooks {
			setValidatingDefaults(&storedV.Webhooks[i])
		}
		if !apiequality.Semantic.DeepEqual(storedV.Webhooks, v.Webhooks) {
			t.Errorf("validating webhooks change on the way through the API server:\n sent %+v\n read %+v", v.Webhooks, storedV.Webhooks)
		}
	}
}

func roundTrip(t *testing.T, in, out any) {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

func TestDesiredWithoutRegistrationsOfAType(t *testing.T) {
	m, v := Desired(onlyType(testRegistrations(), webhook.Validating), testURLConfig, testCA)
	if m != nil || v == nil {
		t.Errorf("validating only: Desired = (%v, %v), want (nil, configuration)", m, v)
	}
	m, v = Desired(onlyType(testRegistrations(), webhook.Mutating), testURLConfig, testCA)
	if m == nil || v != nil {
		t.Errorf("mutating only: Desired = (%v, %v), want (configuration, nil)", m, v)
	}
	m, v = Desired(nil, testURLConfig, testCA)
	if m != nil || v != nil {
		t.Errorf("no registrations: Desired = (%v, %v), want (nil, nil)", m, v)
	}
}

func TestDesiredSharesNothing(t *testing.T) {
	regs := testRegistrations()
	ca := append([]byte(nil), testCA...)
	m, v := Desired(regs, testURLConfig, ca)

	ca[0] = 'X'
	*m.Webhooks[1].FailurePolicy = admissionregistrationv1.Fail
	m.Webhooks[1].NamespaceSelector.MatchLabels["bosun.dev/inject"] = "false"
	m.Webhooks[0].Rules[0].Operations[0] = admissionregistrationv1.Delete
	v.Webhooks[0].AdmissionReviewVersions[0] = "v1beta1"
	m.Webhooks[1].MatchConditions[0].Expression = "true"
	v.Webhooks[0].MatchConditions[0].Expression = "true"

	if *regs[1].FailurePolicy != admissionregistrationv1.Ignore ||
		regs[1].NamespaceSelector.MatchLabels["bosun.dev/inject"] != "true" ||
		regs[0].Rules[0].Operations[0] != admissionregistrationv1.Create ||
		regs[1].MatchConditions[0].Expression == "true" || regs[2].MatchConditions[0].Expression == "true" {
		t.Error("changing Desired's result changed the registrations")
	}
	if string(m.Webhooks[0].ClientConfig.CABundle) != string(testCA) {
		t.Error("changing the caller's CA bundle changed Desired's result")
	}
	if m.Webhooks[0].AdmissionReviewVersions[0] != "v1" {
		t.Error("webhooks share their admissionReviewVersions")
	}
	if regs[0].Rules[0].Scope != nil {
		t.Error("Desired defaulted the registration's own rules")
	}
}
