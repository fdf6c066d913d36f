package conversion

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	testTimeout = 4 * time.Minute
	waitTimeout = time.Minute

	// injectionDeadline is how soon after CRDs without a caBundle were applied the manager
	// must have pointed their conversion webhook at itself, with its CA.
	injectionDeadline = 5 * time.Second

	// webhookSecretNamespace and webhookSecretName are --webhook-secret's default.
	webhookSecretNamespace = "kube-system"
	webhookSecretName      = "bosun-webhook-certs"

	// managedByLabel marks bosun's CRDs; the manager writes into no other.
	managedByLabel = "app.kubernetes.io/managed-by"

	dsCRD  = "daemonsets.apps.kruise.io"
	crrCRD = "containerrecreaterequests.apps.kruise.io"
	pubCRD = "podunavailablebudgets.policy.kruise.io"

	// convertPath is where bosun-controller-manager serves the conversion webhook.
	convertPath = "/convert"

	// progressiveCreatePodKey is the v1alpha1 annotation that carries v1beta1's
	// spec.scaleStrategy.partitionedScaling.
	progressiveCreatePodKey = "daemonset.kruise.io/progressive-create-pod"
	// protectTotalReplicasKey carries v1beta1's spec.protectTotalReplicas in v1alpha1.
	protectTotalReplicasKey = "pub.kruise.io/protect-total-replicas"
	// protectOperationsKey carries v1beta1's spec.protectOperations in v1alpha1.
	protectOperationsKey = "kruise.io/pub-protect-operations"
	// reservedPrefix starts the annotations in which a conversion records what the other
	// version cannot hold.
	reservedPrefix = "conversion.bosun.dev/"

	image = "registry.example/agent:1.0"
)

// webhookCRDs are the CRDs whose objects convert through bosun's webhook.
var webhookCRDs = []string{dsCRD, crrCRD, pubCRD}

// bosunCRDs are all six of bosun's CRDs, the ones the storage version migrator works on.
var bosunCRDs = []string{
	dsCRD, crrCRD, pubCRD,
	"nodeimages.apps.kruise.io", "imagepulljobs.apps.kruise.io", "imagelistpulljobs.apps.kruise.io",
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// testEnv is what every test works with: the framework's environment and the suite's helpers.
type testEnv struct{ *framework.Env }

// envOptions: the end of a test on the shared control plane, after its managers stopped,
// deletes bosun's webhook configurations (nothing answers them any more), the objects it
// made and, in setup, the certificate Secret, so that each test starts from none.
var envOptions = framework.EnvOptions{
	Timeout: testTimeout, WaitTimeout: waitTimeout, RemoveWebhookConfigurations: true,
	Remove: []string{
		"daemonsets.apps.kruise.io", "podunavailablebudgets.policy.kruise.io", "containerrecreaterequests.apps.kruise.io",
		"imagepulljobs.apps.kruise.io", "pods",
	},
}

// setup prepares a test on the shared control plane.
func setup(t *testing.T) *testEnv {
	t.Helper()
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), envOptions)
	e.OnCleanup(func(ctx context.Context) error {
		err := e.Client.CoreV1().Secrets(webhookSecretNamespace).Delete(ctx, webhookSecretName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	return &testEnv{e}
}

// setupOwnControlPlane starts a control plane for one test, without any CRD: the test
// installs them as the release it plays had them.
func setupOwnControlPlane(t *testing.T) *testEnv {
	t.Helper()
	cp := framework.StartTestControlPlane(t, framework.Options{})
	return &testEnv{framework.NewTestEnv(t, cp, framework.EnvOptions{Timeout: testTimeout, WaitTimeout: waitTimeout})}
}

// crdDir is the directory of bosun's CRD manifests.
func crdDir(t *testing.T) string {
	t.Helper()
	dir, err := framework.DefaultCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ---- Managers ----

// startWebhookManager runs bosun-controller-manager serving webhooks, with no controller (so
// with no admission webhook: only the conversion webhook and the writer of the webhook
// configurations and of the CRDs' conversion settings), until the test ends. It returns once
// /readyz passes, that is once the CRDs carry its clientConfig and CA.
func (e *testEnv) startWebhookManager(t *testing.T, extraArgs ...string) *framework.ControllerManager {
	t.Helper()
	return framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Webhooks: true, ExtraArgs: append([]string{"--controllers="}, extraArgs...),
	})
}

// adminToken is the bearer token of the admin, which may read any manager endpoint.
func (e *testEnv) adminToken() string { return e.CP.Config().BearerToken }

// readyCheck returns the answer of one of cm's readiness checks, whose body gives the reason
// of a failure.
func (e *testEnv) readyCheck(cm *framework.ControllerManager, check string) (int, string) {
	return framework.GetEndpoint(cm.Port, "/readyz/"+check, e.adminToken())
}

// conversions sums bosun_conversion_requests_total of kind over its successful series in cm's
// /metrics: the conversion reviews cm answered for that kind.
func (e *testEnv) conversions(t *testing.T, cm *framework.ControllerManager, kind string) float64 {
	t.Helper()
	metrics, err := cm.Metrics(e.adminToken())
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "bosun_conversion_requests_total{") ||
			!strings.Contains(line, `kind="`+kind+`"`) || !strings.Contains(line, `code="200"`) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += v
		}
	}
	return total
}

// ---- CRDs ----

// crd reads one CRD.
func (e *testEnv) crd(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	crd, err := e.Dynamic.Resource(crdResource).Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading CRD %s: %v", name, err)
	}
	return crd
}

// updateCRD changes one CRD with mutate, again on conflicts, and returns it as stored.
func (e *testEnv) updateCRD(ctx context.Context, name string, mutate func(*unstructured.Unstructured) error) (*unstructured.Unstructured, error) {
	crds := e.Dynamic.Resource(crdResource)
	var stored *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := mutate(crd); err != nil {
			return err
		}
		stored, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating CRD %s: %w", name, err)
	}
	return stored, nil
}

// clientConfigOf returns the conversion webhook clientConfig of crd (nil without one).
func clientConfigOf(crd *unstructured.Unstructured) map[string]any {
	config, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig")
	return config
}

// storedVersions returns status.storedVersions of crd.
func storedVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return versions
}

// wantConversion is where a CRD's conversion webhook should send the API server: a URL or a
// service (namespace/name, path /convert, port 443), trusting ca (PEM).
type wantConversion struct {
	url     string
	service string
	ca      []byte
}

// mismatch says how crd's conversion webhook differs from w, or returns "".
func (w wantConversion) mismatch(crd *unstructured.Unstructured) string {
	config := clientConfigOf(crd)
	if config == nil {
		return "no clientConfig"
	}
	var problems []string
	url, _ := config["url"].(string)
	service, _ := config["service"].(map[string]any)
	switch {
	case w.url != "" && (url != w.url || service != nil):
		problems = append(problems, fmt.Sprintf("url %q service %v, want url %q", url, service, w.url))
	case w.service != "":
		namespace, name, _ := strings.Cut(w.service, "/")
		port, hasPort := service["port"].(int64)
		if url != "" || service == nil || service["namespace"] != namespace || service["name"] != name ||
			service["path"] != convertPath || (hasPort && port != 443) {
			problems = append(problems, fmt.Sprintf("url %q service %v, want service %s path %s port 443", url, service, w.service, convertPath))
		}
	}
	encoded, _ := config["caBundle"].(string)
	ca, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || !bytes.Equal(ca, w.ca) {
		problems = append(problems, fmt.Sprintf("caBundle of %d bytes (%v) is not the expected CA of %d bytes", len(ca), err, len(w.ca)))
	}
	return strings.Join(problems, "; ")
}

// waitForConversionConfig waits until every CRD that converts through the webhook is
// configured as want says, and returns when they all first were.
func (e *testEnv) waitForConversionConfig(t *testing.T, what string, want wantConversion) time.Time {
	t.Helper()
	var last []string
	e.Await(t, what, func(ctx context.Context) (bool, error) {
		last = nil
		for _, name := range webhookCRDs {
			crd, err := e.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if problem := want.mismatch(crd); problem != "" {
				last = append(last, name+": "+problem)
			}
		}
		return len(last) == 0, nil
	}, func() string { return strings.Join(last, "\n") })
	return time.Now()
}

// reapplyManifests applies bosun's CRD manifests over the installed CRDs, as an upgrade or a
// GitOps sync does: their conversion webhook carries the default URL and no caBundle. It
// then waits until the manager has configured them as want says again, which must take at
// most injectionDeadline, and checks that the manifests did reach the API server in
// between (each CRD's generation moved by at least two: the apply and the manager's write).
func (e *testEnv) reapplyManifests(t *testing.T, want wantConversion) {
	t.Helper()
	generations := map[string]int64{}
	for _, name := range webhookCRDs {
		generations[name] = e.crd(t, name).GetGeneration()
	}
	began := time.Now()
	if err := framework.InstallCRDs(e.Ctx, e.CP.Config(), crdDir(t)); err != nil {
		t.Fatal(err)
	}
	done := e.waitForConversionConfig(t, "the manager to configure the conversion webhook of the re-applied CRDs", want)
	if took := done.Sub(began); took > injectionDeadline {
		t.Errorf("the conversion webhook of the re-applied CRDs was configured %v after the apply began, want at most %v",
			took.Round(10*time.Millisecond), injectionDeadline)
	} else {
		t.Logf("conversion webhook configured %v after the manifests were applied", took.Round(10*time.Millisecond))
	}
	for _, name := range webhookCRDs {
		if got := e.crd(t, name).GetGeneration(); got < generations[name]+2 {
			t.Errorf("CRD %s went from generation %d to %d: the manifests or the manager's write did not change it", name, generations[name], got)
		}
	}
}

// pointConversionAt sends the conversions of every CRD that converts through the webhook to
// url, keeping its caBundle: with url unreachable, as when every replica is stopped.
func (e *testEnv) pointConversionAt(t *testing.T, url string) {
	t.Helper()
	for _, name := range webhookCRDs {
		_, err := e.updateCRD(e.Ctx, name, func(crd *unstructured.Unstructured) error {
			config := clientConfigOf(crd)
			if config == nil {
				return fmt.Errorf("CRD %s has no conversion clientConfig", name)
			}
			delete(config, "service")
			config["url"] = url
			return unstructured.SetNestedMap(crd.Object, config, "spec", "conversion", "webhook", "clientConfig")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// unreachableURL is a conversion URL on a loopback port nothing listens on.
func unreachableURL(t *testing.T) string {
	t.Helper()
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("https://127.0.0.1:%d%s", ports[0], convertPath)
}

// serveConversion points the CRDs back at the test process's conversion server.
func (e *testEnv) serveConversion(t *testing.T) {
	t.Helper()
	if err := e.CP.ServeConversion(e.Ctx); err != nil {
		t.Fatal(err)
	}
}

// waitForStoredVersions waits until status.storedVersions of every named CRD is want.
func (e *testEnv) waitForStoredVersions(t *testing.T, timeout time.Duration, names []string, want ...string) {
	t.Helper()
	var last []string
	e.AwaitWithin(t, timeout, fmt.Sprintf("status.storedVersions %v on %v", want, names), func(ctx context.Context) (bool, error) {
		last = nil
		for _, name := range names {
			crd, err := e.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got := storedVersions(crd); !slices.Equal(got, want) {
				last = append(last, fmt.Sprintf("%s: %v", name, got))
			}
		}
		return len(last) == 0, nil
	}, func() string { return strings.Join(last, "; ") })
}

// ---- etcd ----

// storedAPIVersions returns, by key, the apiVersion each object under prefix is stored in,
// read from etcd: what the API server stored, whichever version a client asks for.
func (e *testEnv) storedAPIVersions(t *testing.T, prefix string) map[string]string {
	t.Helper()
	entries, err := e.CP.ReadEtcd(e.Ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for key, entry := range entries {
		version, err := entry.StoredAPIVersion()
		if err != nil {
			t.Fatal(err)
		}
		versions[key] = version
	}
	return versions
}

// ---- Objects ----

func (e *testEnv) betaDaemonSets() *framework.Objects[*appsv1beta1.DaemonSet] {
	return framework.NewObjects(e.Env, "DaemonSet", e.Namespace, e.Bosun.AppsV1beta1().DaemonSets(e.Namespace))
}

func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// alphaDaemonSet is a minimal Advanced DaemonSet in v1alpha1, as its users write it.
func alphaDaemonSet(name string) *appsv1alpha1.DaemonSet {
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name),
		},
	}
}

// betaDaemonSet is a v1beta1 Advanced DaemonSet with partitioned scaling, the field v1alpha1
// carries in an annotation.
func betaDaemonSet(name string) *appsv1beta1.DaemonSet {
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "infra"}},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:      podTemplate(name),
			ScaleStrategy: &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true},
		},
	}
}

// alphaBudget is a v1alpha1 PodUnavailableBudget over the pods labelled app=name.
func alphaBudget(name string) *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
}

// alphaRequest is a v1alpha1 ContainerRecreateRequest of the containers of pod.
func alphaRequest(name, pod string, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	r := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: pod},
	}
	for _, c := range containers {
		r.Spec.Containers = append(r.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return r
}

// withoutReserved returns annotations without the conversion's reserved ones.
func withoutReserved(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range annotations {
		if !strings.HasPrefix(k, reservedPrefix) {
			out[k] = v
		}
	}
	return out
}

// toJSON renders v for failure messages.
func toJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(raw)
}
