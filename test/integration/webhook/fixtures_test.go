package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// advancedDaemonSet is the controller whose webhooks the tests use: the manager serves
	// the webhooks of the controllers it runs.
	advancedDaemonSet = "advanced-daemonset-controller"

	validatingConfiguration = "bosun-validating-webhook-configuration"
	validatePath            = "/validate-apps-kruise-io-daemonset"
	mutatePath              = "/mutate-apps-kruise-io-daemonset"
	// legacyValidatePath is validatePath of the previous release, still answered.
	legacyValidatePath = "/validate-apps-kruise-io-v1alpha1-daemonset"

	// webhookSecretNamespace and webhookSecretName are --webhook-secret's default.
	webhookSecretNamespace = "kube-system"
	webhookSecretName      = "bosun-webhook-certs"
	// webhookTestCommonName names the serving certificates the tests issue.
	webhookTestCommonName = "bosun-webhook-test"

	testTimeout = 3 * time.Minute
	waitTimeout = time.Minute
)

// testEnv is what every test works with: the framework's environment, with a context
// bounded by testTimeout.
type testEnv struct{ *framework.Env }

// setup prepares a test. When it ends, after the test's managers stopped (they start later),
// the webhook configurations are deleted: without the managers the configurations, whose
// failure policy is Fail, would refuse every later DaemonSet write. So is the certificate
// Secret, so that each test starts from no configuration and no certificate.
func setup(t *testing.T) *testEnv {
	t.Helper()
	return setupEnv(t, framework.EnvOptions{Timeout: testTimeout, WaitTimeout: waitTimeout})
}

// setupEnv is setup with more to remove or a longer timeout: it adds the removal of the
// webhook configurations and of the certificate Secret to opts.
func setupEnv(t *testing.T, opts framework.EnvOptions) *testEnv {
	t.Helper()
	opts.RemoveWebhookConfigurations = true
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), opts)
	e.OnCleanup(func(ctx context.Context) error {
		err := e.Client.CoreV1().Secrets(webhookSecretNamespace).Delete(ctx, webhookSecretName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	return &testEnv{e}
}

// daemonSet is a minimal Advanced DaemonSet: no update strategy, burstReplicas or history
// limit, which only the mutating webhook fills in.
func daemonSet(name string) *appsv1alpha1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/agent:1.0"}}},
			},
		},
	}
}

// expectAdmitted creates a DaemonSet through the API server and checks that both webhooks
// ran: it reads back defaulted, and an invalid one is refused by bosun's validation.
func (e *testEnv) expectAdmitted(t *testing.T, name string) {
	t.Helper()
	ds := e.DaemonSets().Create(t, daemonSet(name))
	if ds.Spec.UpdateStrategy.Type != appsv1alpha1.RollingUpdateDaemonSetStrategyType || ds.Spec.RevisionHistoryLimit == nil {
		t.Fatalf("DaemonSet %s was not defaulted by the mutating webhook: %+v", name, ds.Spec.UpdateStrategy)
	}
	bad := daemonSet(name + "-bad")
	bad.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	_, err := e.DaemonSets().TryCreate(bad)
	if err == nil || !strings.Contains(err.Error(), "spec.template.spec.restartPolicy") {
		t.Fatalf("creating a DaemonSet with restartPolicy OnFailure: %v, want a denial naming spec.template.spec.restartPolicy", err)
	}
}

// caBundle returns the caBundle bosun wrote into its validating configuration.
func (e *testEnv) caBundle(t *testing.T) []byte {
	t.Helper()
	config, err := e.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(e.Ctx, validatingConfiguration, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return config.Webhooks[0].ClientConfig.CABundle
}

// webhookClient is an HTTPS client of the webhook server that trusts caBundle, as the API
// server does.
func webhookClient(t *testing.T, caBundle []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		t.Fatalf("the caBundle holds no certificate:\n%s", caBundle)
	}
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
}

// post sends body to path of the webhook server and returns the status and body.
func post(t *testing.T, client *http.Client, port int, path, contentType string, body []byte) (int, string) {
	t.Helper()
	resp, err := client.Post(fmt.Sprintf("https://127.0.0.1:%d%s", port, path), contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(out)
}

// review is an AdmissionReview of the creation of ds, as the API server sends it.
func review(t *testing.T, ds *appsv1alpha1.DaemonSet) []byte {
	t.Helper()
	raw, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("7d9e0f2c-webhook-test"),
			Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "DaemonSet"},
			Resource:  metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "daemonsets"},
			Name:      ds.Name,
			Namespace: "default",
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// servedCertificate returns the leaf certificate the server at port presents.
func servedCertificate(t *testing.T, port int) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake with the webhook server: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// waitFor polls cond until it holds, failing the test after waitTimeout.
func (e *testEnv) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	e.Await(t, what, func(context.Context) (bool, error) { return cond(), nil }, nil)
}

// firstCertificateDER returns the first certificate of a PEM chain.
func firstCertificateDER(t *testing.T, chain []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(chain)
	if block == nil {
		t.Fatalf("not a PEM certificate chain:\n%s", chain)
	}
	return block.Bytes
}
