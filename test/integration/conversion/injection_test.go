package conversion

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// secretCA returns the CA bundle of the manager's certificate Secret.
func (e *testEnv) secretCA(t *testing.T) []byte {
	t.Helper()
	secret, err := e.Client.CoreV1().Secrets(webhookSecretNamespace).Get(e.Ctx, webhookSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the manager did not create its certificate Secret: %v", err)
	}
	if len(secret.Data["ca.crt"]) == 0 {
		t.Fatalf("Secret %s/%s has no ca.crt", webhookSecretNamespace, webhookSecretName)
	}
	return secret.Data["ca.crt"]
}

// managerURL is the conversion URL of a manager in URL mode.
func managerURL(cm *framework.ControllerManager) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", cm.WebhookPort, convertPath)
}

// expectConvertedBy creates a v1beta1 DaemonSet and reads it in v1alpha1, which the API server
// can only answer through a conversion webhook; the read must succeed, show the conversion
// (partitionedScaling as the v1alpha1 annotation), and be one that cm answered.
func (e *testEnv) expectConvertedBy(t *testing.T, cm *framework.ControllerManager, name string) {
	t.Helper()
	e.betaDaemonSets().Create(t, betaDaemonSet(name))
	before := e.conversions(t, cm, "DaemonSet")
	var lastAnnotations map[string]string
	var answered float64
	e.Await(t, "a v1alpha1 read of v1beta1 DaemonSet "+name+" converted by the manager", func(ctx context.Context) (bool, error) {
		ds, err := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		lastAnnotations = ds.Annotations
		answered = e.conversions(t, cm, "DaemonSet") - before
		return ds.Annotations[progressiveCreatePodKey] == "true" && answered > 0, nil
	}, func() string {
		return fmt.Sprintf("annotations %v, %v conversions answered by the manager", lastAnnotations, answered)
	})
}

// The manager in its default mode (URL, CA in its Secret) points the CRDs that convert
// through the webhook at its own /convert with the Secret's CA; when the manifests are
// applied again without a caBundle, it restores both within seconds; and the API server
// then converts through the manager.
func TestConversionWebhookConfiguredFromSecret(t *testing.T) {
	e := setup(t)
	cm := e.startWebhookManager(t)
	want := wantConversion{url: managerURL(cm), ca: e.secretCA(t)}
	if problems := e.mismatches(t, want); problems != "" {
		t.Fatalf("the manager reports ready, but the CRDs are not configured:\n%s", problems)
	}
	e.reapplyManifests(t, want)
	e.expectConvertedBy(t, cm, "converted-by-manager")
}

// With --webhook-cert-dir the CA is the directory's ca.crt, which the manager writes into the
// CRDs itself (no CA injector needed), again after the manifests are re-applied, and again
// when the files are replaced by a certificate of another CA; conversions go through the
// manager under both CAs.
func TestConversionWebhookConfiguredFromCertDirAndRotated(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	first := framework.NewTestCA(t, "conversion test CA 1")
	first.WriteCertDir(t, dir, "bosun-conversion-test")
	cm := e.startWebhookManager(t, "--webhook-cert-dir="+dir)
	want := wantConversion{url: managerURL(cm), ca: first.PEM}
	if problems := e.mismatches(t, want); problems != "" {
		t.Fatalf("the manager reports ready, but the CRDs do not carry ca.crt of --webhook-cert-dir:\n%s", problems)
	}
	e.reapplyManifests(t, want)
	e.expectConvertedBy(t, cm, "first-ca")
	if _, err := e.Client.CoreV1().Secrets(webhookSecretNamespace).Get(e.Ctx, webhookSecretName, metav1.GetOptions{}); err == nil {
		t.Error("with --webhook-cert-dir the manager still created its own certificate Secret")
	}

	// cert-manager reissues under a new CA.
	second := framework.NewTestCA(t, "conversion test CA 2")
	second.WriteCertDir(t, dir, "bosun-conversion-test")
	want.ca = second.PEM
	e.waitForConversionConfig(t, "the rotated CA in the CRDs", want)
	e.expectConvertedBy(t, cm, "second-ca")
}

// With --webhook-service the CRDs get the service form (path /convert) and the Secret's CA,
// also over re-applied manifests that name the default URL, which the manager reports as a
// correction. Nothing here can call the service (no cluster networking), so only the CRDs
// are checked.
func TestConversionWebhookServiceMode(t *testing.T) {
	e := setup(t)
	const service = "bosun-system/bosun-webhook"
	e.startWebhookManager(t, "--webhook-service="+service)
	want := wantConversion{service: service, ca: e.secretCA(t)}
	if problems := e.mismatches(t, want); problems != "" {
		t.Fatalf("the manager reports ready, but the CRDs do not name its service:\n%s", problems)
	}
	e.reapplyManifests(t, want)
	for _, name := range webhookCRDs {
		e.WaitForEvent(t, "", "CustomResourceDefinition", name, "a Warning ConversionClientConfigCorrected naming the service", func(ev *corev1.Event) bool {
			return ev.Type == corev1.EventTypeWarning && ev.Reason == "ConversionClientConfigCorrected" &&
				strings.Contains(ev.Message, "url https://127.0.0.1:9876/convert replaced by service "+service+" port 443 path "+convertPath)
		})
	}
}

// A CRD that converts through a webhook but is not labelled as bosun's belongs to someone
// else: the manager does not write it, /readyz fails naming it and where its conversions go,
// and a Warning ConversionNotManaged event says the same. The other CRDs stay configured.
func TestUnmanagedConversionCRDIsLeftAlone(t *testing.T) {
	e := setup(t)
	// Before the manager starts, the CRDs convert through the test's conversion server: that
	// is where the unmanaged CRD will keep sending its conversions.
	elsewhere := clientConfigOf(e.crd(t, pubCRD))
	elsewhereURL, _ := elsewhere["url"].(string)
	if elsewhereURL == "" {
		t.Fatalf("CRD %s has no conversion url before the manager starts: %v", pubCRD, elsewhere)
	}
	cm := e.startWebhookManager(t)
	// Registered after the manager, so it runs before the manager stops: the CRD is bosun's
	// again for the tests that follow.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if _, err := e.updateCRD(ctx, pubCRD, func(crd *unstructured.Unstructured) error {
			labels := crd.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[managedByLabel] = "bosun"
			crd.SetLabels(labels)
			return nil
		}); err != nil {
			t.Errorf("labelling CRD %s as bosun's again: %v", pubCRD, err)
		}
	})

	unmanaged, err := e.updateCRD(e.Ctx, pubCRD, func(crd *unstructured.Unstructured) error {
		labels := maps.Clone(crd.GetLabels())
		delete(labels, managedByLabel)
		crd.SetLabels(labels)
		return unstructured.SetNestedMap(crd.Object, elsewhere, "spec", "conversion", "webhook", "clientConfig")
	})
	if err != nil {
		t.Fatal(err)
	}

	var lastReady string
	e.Await(t, "/readyz/webhook-configuration to name the unmanaged CRD", func(context.Context) (bool, error) {
		code, body := e.readyCheck(cm, "webhook-configuration")
		lastReady = fmt.Sprintf("%d %s", code, body)
		return code == http.StatusInternalServerError && strings.Contains(body, pubCRD) &&
			strings.Contains(body, "not labelled "+managedByLabel+"=bosun") && strings.Contains(body, elsewhereURL), nil
	}, func() string { return lastReady })
	if code, body := framework.GetEndpoint(cm.Port, "/readyz", ""); code != http.StatusInternalServerError ||
		!strings.Contains(body, "[-]webhook-configuration failed") {
		t.Errorf("/readyz = %d:\n%s\nwant a failing webhook-configuration check", code, body)
	}
	e.WaitForEvent(t, "", "CustomResourceDefinition", pubCRD, "a Warning ConversionNotManaged naming where conversions go", func(ev *corev1.Event) bool {
		return ev.Type == corev1.EventTypeWarning && ev.Reason == "ConversionNotManaged" && strings.Contains(ev.Message, elsewhereURL)
	})

	// The writer has looked at the CRD (it reported it) and left it exactly as written.
	now := e.crd(t, pubCRD)
	if now.GetResourceVersion() != unmanaged.GetResourceVersion() {
		t.Errorf("CRD %s was written after it lost the bosun label: resourceVersion %s, then %s; clientConfig now %v",
			pubCRD, unmanaged.GetResourceVersion(), now.GetResourceVersion(), clientConfigOf(now))
	}
	want := wantConversion{url: managerURL(cm), ca: e.secretCA(t)}
	for _, name := range []string{dsCRD, crrCRD} {
		if problem := want.mismatch(e.crd(t, name)); problem != "" {
			t.Errorf("CRD %s, still bosun's: %s", name, problem)
		}
	}
}

// mismatches says how each CRD that converts through the webhook differs from want.
func (e *testEnv) mismatches(t *testing.T, want wantConversion) string {
	t.Helper()
	var problems []string
	for _, name := range webhookCRDs {
		if problem := want.mismatch(e.crd(t, name)); problem != "" {
			problems = append(problems, name+": "+problem)
		}
	}
	return strings.Join(problems, "\n")
}
