package webhook

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestBadAdmissionReviewBodiesAreRefusedWithClearErrors(t *testing.T) {
	e := setup(t)
	cm := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: advancedDaemonSet, Webhooks: true})
	client := webhookClient(t, e.caBundle(t))

	valid := review(t, daemonSet("valid"))
	noRequest := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`)
	tests := []struct {
		name        string
		path        string
		contentType string
		body        []byte
		wantStatus  int
		wantBody    string
	}{
		{"empty body", validatePath, "application/json", nil, http.StatusBadRequest, "bad AdmissionReview: empty body"},
		{"truncated JSON", validatePath, "application/json", valid[:40], http.StatusBadRequest, "bad AdmissionReview: malformed JSON"},
		{"trailing data", validatePath, "application/json", append(append([]byte{}, valid...), []byte(`{}`)...), http.StatusBadRequest, "malformed JSON"},
		{"duplicate field", validatePath, "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","kind":"AdmissionReview","request":{"uid":"1"}}`),
			http.StatusBadRequest, `duplicate field "kind"`},
		{"older review version", mutatePath, "application/json",
			bytes.Replace(valid, []byte(`"admission.k8s.io/v1"`), []byte(`"admission.k8s.io/v1beta1"`), 1),
			http.StatusBadRequest, `apiVersion "admission.k8s.io/v1beta1" is not admission.k8s.io/v1`},
		{"no request", validatePath, "application/json", noRequest, http.StatusBadRequest, "bad AdmissionReview: no request"},
		{"request without uid", validatePath, "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`),
			http.StatusBadRequest, "request.uid is empty"},
		{"not JSON", validatePath, "text/plain", valid, http.StatusUnsupportedMediaType, `Content-Type "text/plain" is not application/json`},
		{"unknown path", "/validate-something-else", "application/json", valid, http.StatusNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, client, cm.WebhookPort, tc.path, tc.contentType, tc.body)
			if status != tc.wantStatus || !strings.Contains(body, tc.wantBody) {
				t.Errorf("status %d body %q, want %d with %q", status, body, tc.wantStatus, tc.wantBody)
			}
		})
	}

	// A well-formed review of a bad object is answered with a review: a denial with the
	// field, code 422, not an HTTP error.
	bad := daemonSet("bad")
	bad.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	status, body := post(t, client, cm.WebhookPort, validatePath, "application/json", review(t, bad))
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(body), &answer); status != http.StatusOK || err != nil || answer.Response == nil {
		t.Fatalf("review of an invalid DaemonSet: status %d body %q (%v)", status, body, err)
	}
	if r := answer.Response; r.Allowed || r.UID != "7d9e0f2c-webhook-test" || r.Result == nil || r.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Result.Message, "spec.template.spec.restartPolicy") {
		t.Errorf("answer %+v, want a 422 denial for this UID naming spec.template.spec.restartPolicy", r)
	}

	// The path of the previous release, which configurations written by replicas not yet
	// upgraded still name, gets the same answer; the configuration names the new path and
	// both versions.
	status, legacyBody := post(t, client, cm.WebhookPort, legacyValidatePath, "application/json", review(t, bad))
	var legacy admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(legacyBody), &legacy); status != http.StatusOK || err != nil || legacy.Response == nil {
		t.Fatalf("review on %s: status %d body %q (%v)", legacyValidatePath, status, legacyBody, err)
	}
	if r := legacy.Response; r.Allowed || r.Result == nil || r.Result.Code != answer.Response.Result.Code || r.Result.Message != answer.Response.Result.Message {
		t.Errorf("answer on %s %+v, want the one on %s", legacyValidatePath, r.Result, validatePath)
	}
	config, err := e.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(e.Ctx, validatingConfiguration, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range config.Webhooks {
		if w.Name != "vdaemonset.kb.io" {
			continue
		}
		path := ""
		if w.ClientConfig.URL != nil {
			path = *w.ClientConfig.URL
		} else if w.ClientConfig.Service != nil && w.ClientConfig.Service.Path != nil {
			path = *w.ClientConfig.Service.Path
		}
		if !strings.HasSuffix(path, validatePath) || len(w.Rules) != 1 || strings.Join(w.Rules[0].APIVersions, ",") != "v1alpha1,v1beta1" {
			t.Errorf("vdaemonset.kb.io calls %s for versions %v, want %s for v1alpha1 and v1beta1", path, w.Rules, validatePath)
		}
	}

	// None of that hurt the server: the API server's own calls still go through.
	e.expectAdmitted(t, "after-bad-bodies")
}

func TestRotatedSecretCertificateIsServedWithoutRestart(t *testing.T) {
	e := setup(t)
	cm := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: advancedDaemonSet, Webhooks: true})
	e.expectAdmitted(t, "before")
	secrets := e.Client.CoreV1().Secrets(webhookSecretNamespace)
	secret, err := secrets.Get(e.Ctx, webhookSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the manager did not create its certificate Secret: %v", err)
	}
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	if served := servedCertificate(t, cm.WebhookPort); !bytes.Equal(firstCertificateDER(t, secret.Data["tls.crt"]), served.Raw) {
		t.Errorf("the served certificate (serial %s) is not the Secret's", served.SerialNumber)
	}

	// Another replica (played by the test) renews the serving certificate under the same CA.
	ca := framework.LoadTestCA(t, secret.Data["ca.crt"], secret.Data["ca.key"])
	certPEM, keyPEM, serialNumber := ca.IssueServingCertificate(t, webhookTestCommonName)
	secret.Data["tls.crt"], secret.Data["tls.key"] = certPEM, keyPEM
	if _, err := secrets.Update(e.Ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the renewed certificate to be served", func() bool {
		return servedCertificate(t, cm.WebhookPort).SerialNumber.Cmp(serialNumber) == 0
	})
	e.expectAdmitted(t, "after-renewal")

	// The Secret is lost: the manager makes a new CA and certificate, and tells the API
	// server to trust the new CA before admission needs it.
	oldBundle := e.caBundle(t)
	if err := secrets.Delete(e.Ctx, webhookSecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "a new CA in the webhook configurations", func() bool {
		return !bytes.Equal(e.caBundle(t), oldBundle)
	})
	e.waitFor(t, "a certificate of the new CA to be served", func() bool {
		return verifies(servedCertificate(t, cm.WebhookPort), e.caBundle(t))
	})
	e.expectAdmitted(t, "after-new-ca")
	if cm.Exited() {
		t.Fatal("the manager exited")
	}
}

func TestCertificateDirectoryIsReloadedWhenItsFilesChange(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	first := framework.NewTestCA(t, "cert-manager CA 1")
	first.WriteCertDir(t, dir, webhookTestCommonName)
	cm := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Controllers: advancedDaemonSet, Webhooks: true, ExtraArgs: []string{"--webhook-cert-dir=" + dir},
	})
	if got := e.caBundle(t); !bytes.Equal(got, first.PEM) {
		t.Fatalf("caBundle is not ca.crt of --webhook-cert-dir:\n%s", got)
	}
	e.expectAdmitted(t, "first-ca")
	if _, err := e.Client.CoreV1().Secrets(webhookSecretNamespace).Get(e.Ctx, webhookSecretName, metav1.GetOptions{}); err == nil {
		t.Error("with --webhook-cert-dir the manager still created its own certificate Secret")
	}

	// cert-manager reissues under a new CA.
	second := framework.NewTestCA(t, "cert-manager CA 2")
	serialNumber := second.WriteCertDir(t, dir, webhookTestCommonName)
	e.waitFor(t, "the new certificate to be served and its CA written", func() bool {
		return servedCertificate(t, cm.WebhookPort).SerialNumber.Cmp(serialNumber) == 0 && bytes.Equal(e.caBundle(t), second.PEM)
	})
	e.expectAdmitted(t, "second-ca")
}

func TestStandbyReplicaServesAdmission(t *testing.T) {
	e := setup(t)
	ports, err := framework.FreeLoopbackPorts(2)
	if err != nil {
		t.Fatal(err)
	}
	leaderPort, standbyPort := ports[0], ports[1]
	lease := "bosun-webhook-test-" + e.Namespace
	// Both replicas tell the API server to call the standby, as a Service would pick any
	// ready replica; only the standby can then have answered.
	replica := func(port int) framework.ControllerManagerOptions {
		return framework.ControllerManagerOptions{
			Controllers: advancedDaemonSet, Webhooks: true, WebhookPort: port,
			ExtraArgs: []string{
				"--leader-elect=true", "--leader-elect-resource-name=" + lease,
				fmt.Sprintf("--webhook-url=https://127.0.0.1:%d", standbyPort),
			},
		}
	}
	leader := framework.StartBosunControllerManager(t, e.CP, replica(leaderPort))
	e.waitFor(t, "the first replica to lead", func() bool {
		_, body := framework.GetEndpoint(leader.Port, "/healthz?verbose", "")
		return strings.Contains(body, "[+]"+advancedDaemonSet+" ok")
	})
	standby := framework.StartBosunControllerManager(t, e.CP, replica(standbyPort))

	_, body := framework.GetEndpoint(standby.Port, "/healthz?verbose", "")
	if strings.Contains(body, advancedDaemonSet) {
		t.Fatalf("the second replica runs controllers, so it is not a standby:\n%s", body)
	}
	held, err := e.Client.CoordinationV1().Leases("kube-system").Get(e.Ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if code, readyz := framework.GetEndpoint(standby.Port, "/readyz?verbose", ""); code != http.StatusOK ||
		!strings.Contains(readyz, "[+]webhook-server ok") || !strings.Contains(readyz, "[+]webhook-certificate ok") ||
		!strings.Contains(readyz, "[+]webhook-configuration ok") {
		t.Errorf("standby /readyz %d:\n%s", code, readyz)
	}

	e.expectAdmitted(t, "through-the-standby")
	if after, err := e.Client.CoordinationV1().Leases("kube-system").Get(e.Ctx, lease, metav1.GetOptions{}); err != nil || !sameHolder(held, after) {
		t.Errorf("leadership changed while admitting (%v): the standby may have led", err)
	}
}

func sameHolder(a, b *coordinationv1.Lease) bool {
	return a.Spec.HolderIdentity != nil && b.Spec.HolderIdentity != nil && *a.Spec.HolderIdentity == *b.Spec.HolderIdentity
}

// verifies reports whether cert chains to a CA in caBundle.
func verifies(cert *x509.Certificate, caBundle []byte) bool {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return false
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool})
	return err == nil
}
