package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// OpenKruise's own manager, run beside bosun: the other column of the benchmarks and the
// starting point of takeover tests. hack/build-kruise.sh builds it from the Go module proxy,
// in the releases KruiseRelease names; its manifests are rendered from that module at run
// time, so nothing of OpenKruise's source lives in this repository.
const (
	// KruiseManagerBinary is the kruise-manager of Kruise19 that hack/build-kruise.sh writes
	// into ToolsBinDir (KruiseRelease.ManagerBinary names that of any release).
	KruiseManagerBinary = "kruise-manager"

	// KruiseNamespace is the namespace of OpenKruise's config/default, where kruise-manager
	// keeps its leader lease and its webhook certificate secret.
	KruiseNamespace = "kruise-system"

	// KruiseMutatingWebhookConfiguration and KruiseValidatingWebhookConfiguration are the
	// configurations kruise-manager expects to exist at start-up and then fills in with the
	// webhooks it serves; it exits if they are missing.
	KruiseMutatingWebhookConfiguration   = "kruise-mutating-webhook-configuration"
	KruiseValidatingWebhookConfiguration = "kruise-validating-webhook-configuration"

	// KruiseCIFeatureGates are the --feature-gates OpenKruise's own CI runs kruise-manager
	// with.
	KruiseCIFeatureGates = "AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false"

	// KruiseManagerStartTimeout bounds StartKruiseManager. kruise-manager v1.9 looks up the
	// kind of every controller it knows before adding it, and spends about 16 s of retries on
	// each kind whose CRD is not installed (about 25 lookups in all), so a manager with a few
	// CRDs takes some six minutes to set up.
	KruiseManagerStartTimeout = 12 * time.Minute

	// kruiseModule is OpenKruise's Go module; hack/kruise and hack/kruise-1.8 pin its
	// versions.
	kruiseModule = "github.com/openkruise/kruise"

	// kruiseWebhookTemplateAnnotation holds, as a JSON list, the webhooks kruise-manager
	// writes into a configuration: when present it is read instead of the configuration's
	// webhooks, which kruise-manager then replaces with the ones it serves.
	kruiseWebhookTemplateAnnotation = "template"
)

// KruiseRelease names a release of OpenKruise that hack/build-kruise.sh builds: the Go
// module under hack/ that pins it, the names of its binaries, and the facts of it that
// installing its manifests and starting its manager depend on. The zero value is Kruise19.
type KruiseRelease struct {
	// Version is the release's tag, as the module under hack/ requires it.
	Version string

	// toolsModule is the directory under hack/ whose go.mod pins the release.
	toolsModule string
	// binarySuffix follows kruise-manager and kruise-daemon in the names of its binaries.
	binarySuffix string
	// policyVersion is the version of policy.kruise.io in which its manager looks for
	// PodUnavailableBudgets, and so the version kruisePlaceholderCRD serves.
	policyVersion string
	// servesHealthz says whether its manager answers /healthz: 1.9 registers a check there,
	// 1.8 none, and its health port then serves /readyz alone.
	servesHealthz bool
}

// KruiseControllersOfBosunKinds are the controllers of kruise-manager that serve the
// kinds bosun serves too; a start that waits for them (KruiseManagerOptions.WaitForControllers)
// returns once each runs its workers.
var KruiseControllersOfBosunKinds = []string{
	"cloneset-controller", "daemonset-controller", "podunavailablebudget-controller", "containerrecreaterequest-controller",
	"imagepulljob-controller", "imagelistpulljob-controller", "nodeimage-controller",
}

var (
	// Kruise19 is OpenKruise v1.9.0 (hack/kruise): kruise-manager and kruise-daemon. Its
	// CRDs serve v1alpha1 and v1beta1 and store v1beta1.
	Kruise19 = KruiseRelease{Version: "v1.9.0", toolsModule: "kruise", policyVersion: "v1beta1", servesHealthz: true}
	// Kruise18 is OpenKruise v1.8.2 (hack/kruise-1.8): kruise-manager-1.8 and
	// kruise-daemon-1.8. Its CRDs of the kinds bosun takes over serve and store v1alpha1 only.
	Kruise18 = KruiseRelease{Version: "v1.8.2", toolsModule: "kruise-1.8", binarySuffix: "-1.8", policyVersion: "v1alpha1"}
)

// orDefault is the release itself, or Kruise19 for the zero value.
func (r KruiseRelease) orDefault() KruiseRelease {
	if r == (KruiseRelease{}) {
		return Kruise19
	}
	return r
}

func (r KruiseRelease) String() string { return "OpenKruise " + r.orDefault().Version }

// ManagerBinary is the name of the release's kruise-manager in ToolsBinDir, as
// hack/build-kruise.sh takes it.
func (r KruiseRelease) ManagerBinary() string { return "kruise-manager" + r.orDefault().binarySuffix }

// DaemonBinary is the name of the release's kruise-daemon in ToolsBinDir, as
// hack/build-kruise.sh takes it.
func (r KruiseRelease) DaemonBinary() string { return "kruise-daemon" + r.orDefault().binarySuffix }

// healthPaths are the paths of the manager's health port that answer once it serves.
func (r KruiseRelease) healthPaths() []string {
	if r.orDefault().servesHealthz {
		return []string{"/healthz", "/readyz"}
	}
	return []string{"/readyz"}
}

// kruiseRenders caches the rendering of each release's config/default for the process: it
// runs `go list` and `kubectl kustomize`, about a second, and never changes within a run.
var kruiseRenders struct {
	mu   sync.Mutex
	objs map[KruiseRelease][]*unstructured.Unstructured
}

// KruiseManifests renders config/default of the OpenKruise module that the release's
// module under hack/ pins (`kubectl kustomize`, kubectl from ToolsBinDir) and returns its
// documents. The module must be in the module cache, which hack/build-kruise.sh ensures.
func KruiseManifests(ctx context.Context, release KruiseRelease) ([]*unstructured.Unstructured, error) {
	release = release.orDefault()
	kruiseRenders.mu.Lock()
	defer kruiseRenders.mu.Unlock()
	if objs, ok := kruiseRenders.objs[release]; ok {
		return objs, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	kubectl, err := ToolPath("kubectl")
	if err != nil {
		return nil, err
	}
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", kruiseModule)
	list.Dir = filepath.Join(root, "hack", release.toolsModule)
	// As hack/build-kruise.sh: the checksum database does not know OpenKruise's module.
	list.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GONOSUMDB="+joinNonEmpty(os.Getenv("GONOSUMDB"), "github.com/openkruise"))
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("finding the module of %s (run hack/build-kruise.sh %s first): %w: %s", release, release.ManagerBinary(), err, stderr.String())
	}
	moduleDir := strings.TrimSpace(string(out))
	stderr.Reset()
	kustomize := exec.CommandContext(ctx, kubectl, "kustomize", filepath.Join(moduleDir, "config", "default"))
	kustomize.Stderr = &stderr
	rendered, err := kustomize.Output()
	if err != nil {
		return nil, fmt.Errorf("rendering %s/config/default: %w: %s", moduleDir, err, stderr.String())
	}
	objs, err := DecodeObjects(bytes.NewReader(rendered))
	if err != nil {
		return nil, fmt.Errorf("decoding the rendering of %s/config/default: %w", moduleDir, err)
	}
	if kruiseRenders.objs == nil {
		kruiseRenders.objs = map[KruiseRelease][]*unstructured.Unstructured{}
	}
	kruiseRenders.objs[release] = objs
	return objs, nil
}

func joinNonEmpty(values ...string) string {
	return strings.Join(slices.DeleteFunc(values, func(v string) bool { return v == "" }), ",")
}

// kruiseCRDKinds returns the kinds whose CRDs kruise-manager needs to run the controllers
// of kinds (every kind when kinds is empty), and whether the policy.kruise.io group needs a
// placeholder. The facts of kruise-manager behind them, the same in v1.8 and v1.9:
//   - it indexes ImagePullJobs at start-up and exits when they are not served, so the
//     ImagePullJob CRD is always needed (its controller runs only with ImagePullJobGate);
//   - its PodUnavailableBudget controller also watches CloneSets and Advanced
//     StatefulSets, and it stops the whole manager when a controller's informer has not
//     synced after two minutes, so those CRDs come with the PodUnavailableBudget's;
//   - it takes a group version that discovery does not find for installed (after 16 s of
//     retries), so without the policy.kruise.io version where it looks for
//     PodUnavailableBudgets it would add its PodUnavailableBudget controller, serve its pod
//     validating webhook, and stop two minutes later. A placeholder CRD in that group
//     version (kruisePlaceholderCRD) lets discovery answer "no such kind" instead.
func kruiseCRDKinds(kinds []string) (crdKinds []string, placeholder bool) {
	if len(kinds) == 0 {
		return nil, false
	}
	crdKinds = slices.Clone(kinds)
	add := func(kind string) {
		if !slices.Contains(crdKinds, kind) {
			crdKinds = append(crdKinds, kind)
		}
	}
	add("ImagePullJob")
	if slices.Contains(kinds, "PodUnavailableBudget") {
		add("CloneSet")
		add("StatefulSet")
		return crdKinds, false
	}
	return crdKinds, true
}

// kruisePlaceholderCRD is a CRD of bosun's own in OpenKruise's policy.kruise.io group, at
// the version where the release's kruise-manager looks for PodUnavailableBudgets (v1beta1
// in 1.9, v1alpha1 in 1.8), so that the group version exists without that kind; see
// kruiseCRDKinds.
func kruisePlaceholderCRD(release KruiseRelease) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "placeholders.policy.kruise.io", "labels": map[string]any{"bosun.dev/kruise-placeholder": "true"}},
		"spec": map[string]any{
			"group": "policy.kruise.io",
			"scope": "Cluster",
			"names": map[string]any{"plural": "placeholders", "singular": "placeholder", "kind": "Placeholder", "listKind": "PlaceholderList"},
			"versions": []any{map[string]any{
				"name": release.orDefault().policyVersion, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}},
			}},
		},
	}}
}

// kruiseInstall is what InstallKruiseManifests applies, picked from the rendered manifests.
type kruiseInstall struct {
	namespaces []*unstructured.Unstructured
	crds       []*unstructured.Unstructured
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
}

// selectKruiseManifests picks from objs, the rendering of release, the Namespaces, the
// CustomResourceDefinitions kruise-manager needs for kinds (see kruiseCRDKinds; all of them
// when kinds is empty), the placeholder when it needs one, and both webhook configurations.
// A kind without a CRD is an error, so that a caller cannot run kruise-manager without the
// API it meant to measure.
func selectKruiseManifests(objs []*unstructured.Unstructured, release KruiseRelease, kinds []string) (*kruiseInstall, error) {
	kinds, placeholder := kruiseCRDKinds(kinds)
	in := &kruiseInstall{}
	found := map[string]bool{}
	for _, obj := range objs {
		switch obj.GetKind() {
		case "Namespace":
			in.namespaces = append(in.namespaces, obj)
		case "CustomResourceDefinition":
			kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
			if len(kinds) == 0 || slices.Contains(kinds, kind) {
				in.crds = append(in.crds, obj)
				found[kind] = true
			}
		case "MutatingWebhookConfiguration":
			if obj.GetName() != KruiseMutatingWebhookConfiguration {
				continue
			}
			in.mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, in.mutating); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", obj.GetName(), err)
			}
		case "ValidatingWebhookConfiguration":
			if obj.GetName() != KruiseValidatingWebhookConfiguration {
				continue
			}
			in.validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, in.validating); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", obj.GetName(), err)
			}
		}
	}
	var missing []string
	for _, kind := range kinds {
		if !found[kind] {
			missing = append(missing, kind)
		}
	}
	switch {
	case len(missing) > 0:
		return nil, fmt.Errorf("OpenKruise's manifests have no CustomResourceDefinition of %s", strings.Join(missing, ", "))
	case len(in.namespaces) == 0 || in.mutating == nil || in.validating == nil:
		return nil, fmt.Errorf("OpenKruise's manifests lack the Namespace or %s and %s", KruiseMutatingWebhookConfiguration, KruiseValidatingWebhookConfiguration)
	}
	if placeholder {
		in.crds = append(in.crds, kruisePlaceholderCRD(release))
	}
	if err := parkWebhooks(&in.mutating.ObjectMeta, &in.mutating.Webhooks); err != nil {
		return nil, err
	}
	if err := parkWebhooks(&in.validating.ObjectMeta, &in.validating.Webhooks); err != nil {
		return nil, err
	}
	return in, nil
}

// parkWebhooks moves a configuration's webhooks into the template annotation kruise-manager
// reads them from, and leaves the configuration without any. As rendered, they name
// OpenKruise's in-cluster Service and fail closed: applied as they are, every pod, node or
// custom-resource write they match would be refused until kruise-manager has rewritten them,
// and for good once it has stopped. Parked, the API server calls nothing until
// kruise-manager writes the webhooks it serves, with its own address and CA.
func parkWebhooks[T any](meta *metav1.ObjectMeta, webhooks *[]T) error {
	if _, parked := meta.Annotations[kruiseWebhookTemplateAnnotation]; parked {
		return nil
	}
	template, err := json.Marshal(*webhooks)
	if err != nil {
		return fmt.Errorf("encoding the webhooks of %s: %w", meta.Name, err)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[kruiseWebhookTemplateAnnotation] = string(template)
	*webhooks = nil
	return nil
}

// InstallKruiseManifests prepares a control plane for the kruise-manager of Kruise19; see
// InstallKruiseReleaseManifests.
func InstallKruiseManifests(ctx context.Context, cfg *rest.Config, kinds ...string) error {
	return InstallKruiseReleaseManifests(ctx, cfg, Kruise19, kinds...)
}

// InstallKruiseReleaseManifests prepares a control plane for the release's kruise-manager:
// it applies, from the release's rendered config/default, its Namespaces (kruise-system,
// kruise-daemon-config), the CustomResourceDefinitions of kinds (for example "DaemonSet",
// "PodUnavailableBudget"; all of OpenKruise's when none is given) with those kruise-manager
// cannot run them without (see kruiseCRDKinds), and the two webhook configurations, with
// their webhooks parked (see parkWebhooks), and waits until the CRDs are served.
// kruise-manager runs the controller of every kind whose CRD is installed, so installing
// only the kinds a test or benchmark needs keeps the others idle.
func InstallKruiseReleaseManifests(ctx context.Context, cfg *rest.Config, release KruiseRelease, kinds ...string) error {
	objs, err := KruiseManifests(ctx, release)
	if err != nil {
		return err
	}
	in, err := selectKruiseManifests(objs, release, kinds)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	for _, ns := range in.namespaces {
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.GetName(), Labels: ns.GetLabels()}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, namespace, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns.GetName(), err)
		}
	}
	if err := installCRDObjects(ctx, cfg, in.crds); err != nil {
		return err
	}
	admission := client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, in.mutating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s: %w", in.mutating.Name, err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, in.validating, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s: %w", in.validating.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Installed OpenKruise's manifests", "release", release.orDefault().Version, "kinds", kinds, "crds", len(in.crds))
	return nil
}

// RemoveKruiseWebhooks deletes kruise-manager's two webhook configurations (those already
// gone are not an error). Call it once kruise-manager has stopped: its webhooks fail closed
// and would refuse the writes they match. CRDs whose conversion kruise-manager served (for
// example OpenKruise's DaemonSet) still name its address.
func RemoveKruiseWebhooks(ctx context.Context, client kubernetes.Interface) error {
	admission := client.AdmissionregistrationV1()
	if err := admission.MutatingWebhookConfigurations().Delete(ctx, KruiseMutatingWebhookConfiguration, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", KruiseMutatingWebhookConfiguration, err)
	}
	if err := admission.ValidatingWebhookConfigurations().Delete(ctx, KruiseValidatingWebhookConfiguration, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", KruiseValidatingWebhookConfiguration, err)
	}
	return nil
}

// KruiseManagerOptions configure a kruise-manager run against a ControlPlane whose
// OpenKruise manifests are installed (InstallKruiseManifests, or
// InstallKruiseReleaseManifests of the same release).
type KruiseManagerOptions struct {
	// Release chooses the kruise-manager binary; Kruise19 when zero. The flags below are the
	// same in both releases.
	Release KruiseRelease
	// FeatureGates is --feature-gates; kruise-manager's own defaults when empty.
	// KruiseCIFeatureGates are those of OpenKruise's CI.
	FeatureGates string
	// QPS and Burst are --rest-config-qps and --rest-config-burst, the limits of each of
	// kruise-manager's clients (every controller builds its own from that configuration);
	// left out when zero, so that kruise-manager's defaults apply (30 and 50 in v1.9).
	QPS, Burst int
	// Verbosity is --v; 2 when zero.
	Verbosity int
	// LeaderElection keeps kruise-manager's leader election (a lease in KruiseNamespace).
	// Without it, --enable-leader-election=false, as bosun's managers run in tests.
	LeaderElection bool
	// Pprof serves /debug/pprof, without credentials, on a free loopback port
	// (KruiseManager.PprofPort); off (--enable-pprof=false) otherwise.
	Pprof bool
	// WaitForControllers names controllers, for example "daemonset-controller", whose
	// workers must have started before StartKruiseManager returns. kruise-manager reports
	// healthy and ready before it even adds its controllers (it does so once its webhook is
	// ready), and a controller's workers start once its caches have synced.
	// StartKruiseManager also waits until kruise-manager has gone through all its
	// controllers (see waitSetUp), so that none starts later.
	WaitForControllers []string
	// ExtraArgs are appended after the flags above.
	ExtraArgs []string
}

// kruisePorts are the loopback ports of one kruise-manager.
type kruisePorts struct {
	metrics, health, webhook, pprof int
}

func (o KruiseManagerOptions) args(kubeconfig string, ports kruisePorts) []string {
	verbosity := o.Verbosity
	if verbosity == 0 {
		verbosity = 2
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		// Off its defaults (:8080, :8000), which other processes on the machine may hold.
		"--metrics-addr=127.0.0.1:" + strconv.Itoa(ports.metrics),
		"--health-probe-addr=127.0.0.1:" + strconv.Itoa(ports.health),
		"--enable-leader-election=" + strconv.FormatBool(o.LeaderElection),
		"--v=" + strconv.Itoa(verbosity),
	}
	if o.Pprof {
		args = append(args, "--enable-pprof=true", "--pprof-addr=127.0.0.1:"+strconv.Itoa(ports.pprof))
	} else {
		args = append(args, "--enable-pprof=false")
	}
	if o.QPS > 0 {
		args = append(args, "--rest-config-qps="+strconv.Itoa(o.QPS))
	}
	if o.Burst > 0 {
		args = append(args, "--rest-config-burst="+strconv.Itoa(o.Burst))
	}
	if o.FeatureGates != "" {
		args = append(args, "--feature-gates="+o.FeatureGates)
	}
	return append(args, o.ExtraArgs...)
}

// KruiseManager is a running kruise-manager.
type KruiseManager struct {
	*Process
	// MetricsPort and HealthPort serve /metrics and /healthz, /readyz over plain HTTP on
	// 127.0.0.1; WebhookPort its admission and conversion webhooks (TLS, its own CA);
	// PprofPort /debug/pprof (plain HTTP; 0 without KruiseManagerOptions.Pprof).
	MetricsPort, HealthPort, WebhookPort, PprofPort int
	// Args are the arguments it was started with.
	Args []string

	certDir string
}

// StartKruiseManager runs the kruise-manager of opts.Release (ToolsBinDir, from
// hack/build-kruise.sh) against cp as its admin user, logging to logPath, and returns once
// it serves: /healthz (which 1.8 does not serve) and /readyz answer 200 (readiness includes
// its webhook certificates and the configurations and CRD conversions it writes), both
// webhook configurations name its port, a TLS
// connection to that port verifies against their CA bundle, and the controllers of
// opts.WaitForControllers run their workers. Its webhook listens on 127.0.0.1 as far as
// the configurations go (WEBHOOK_HOST), on all interfaces as kruise-manager binds it. The
// caller stops it.
func StartKruiseManager(ctx context.Context, cp *ControlPlane, opts KruiseManagerOptions, logPath string) (_ *KruiseManager, err error) {
	binary := opts.Release.ManagerBinary()
	path, err := ToolPath(binary)
	if err != nil {
		return nil, fmt.Errorf("%w (%s is built by `hack/build-kruise.sh %s`)", err, binary, binary)
	}
	free, err := FreeLoopbackPorts(4)
	if err != nil {
		return nil, err
	}
	ports := kruisePorts{metrics: free[0], health: free[1], webhook: free[2], pprof: free[3]}
	certDir, err := os.MkdirTemp("", "kruise-webhook-certs-")
	if err != nil {
		return nil, fmt.Errorf("creating kruise-manager's certificate directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(certDir)
		}
	}()
	args := opts.args(cp.KubeconfigPath(), ports)
	process, err := StartProcess(ProcessConfig{
		Name:    binary,
		Path:    path,
		Args:    args,
		LogPath: logPath,
		Env: []string{
			"WEBHOOK_HOST=127.0.0.1",
			"WEBHOOK_PORT=" + strconv.Itoa(ports.webhook),
			"WEBHOOK_CERT_DIR=" + certDir,
		},
	})
	if err != nil {
		return nil, err
	}
	km := &KruiseManager{Process: process, MetricsPort: ports.metrics, HealthPort: ports.health, WebhookPort: ports.webhook, Args: args, certDir: certDir}
	if opts.Pprof {
		km.PprofPort = ports.pprof
	}
	ctx, cancel := context.WithTimeout(ctx, KruiseManagerStartTimeout)
	defer cancel()
	if err := km.waitServing(ctx, cp, opts.Release.healthPaths(), opts.WaitForControllers); err != nil {
		km.Process.Stop(DefaultStopGracePeriod)
		return nil, err
	}
	return km, nil
}

// RunKruiseManager starts kruise-manager for the duration of the test (see
// StartKruiseManager); the OpenKruise manifests must be installed. The end of its log is
// printed if the test fails.
func RunKruiseManager(t testing.TB, cp *ControlPlane, opts KruiseManagerOptions) *KruiseManager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), KruiseManagerStartTimeout)
	defer cancel()
	km, err := StartKruiseManager(ctx, cp, opts, filepath.Join(t.TempDir(), opts.Release.ManagerBinary()+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		km.Stop(DefaultStopGracePeriod)
		if t.Failed() {
			t.Logf("last lines of %s (pid %d):\n%s", km.Name(), km.Pid(), km.LogTail(failureLogLines))
		}
	})
	return km
}

// Stop stops kruise-manager (see Process.Stop) and removes its certificate directory.
func (km *KruiseManager) Stop(grace time.Duration) {
	km.Process.Stop(grace)
	_ = os.RemoveAll(km.certDir)
}

// Kill kills kruise-manager at once and removes its certificate directory.
func (km *KruiseManager) Kill() { km.Stop(0) }

func (km *KruiseManager) waitServing(ctx context.Context, cp *ControlPlane, healthPaths, controllers []string) error {
	for _, path := range healthPaths {
		err := WaitFor(ctx, KruiseManagerStartTimeout, km.Name()+" to answer "+path, func(ctx context.Context) (bool, error) {
			if km.Exited() {
				return false, km.exitError()
			}
			code, _ := httpGet(ctx, fmt.Sprintf("http://127.0.0.1:%d%s", km.HealthPort, path))
			return code == http.StatusOK, nil
		})
		if err != nil {
			return err
		}
	}
	client, err := kubernetes.NewForConfig(cp.Config())
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	var problem string
	err = WaitFor(ctx, KruiseManagerStartTimeout, km.Name()+"'s webhooks to be configured and served", func(ctx context.Context) (bool, error) {
		if km.Exited() {
			return false, km.exitError()
		}
		problem = km.webhookProblem(ctx, client)
		return problem == "", nil
	})
	if err != nil {
		if problem != "" {
			err = fmt.Errorf("%w (last seen: %s)", err, problem)
		}
		return err
	}
	if err := km.waitSetUp(ctx); err != nil {
		return err
	}
	for _, name := range controllers {
		err := WaitFor(ctx, KruiseManagerStartTimeout, km.Name()+"'s "+name+" to start its workers", func(context.Context) (bool, error) {
			if km.Exited() {
				return false, km.exitError()
			}
			log, err := km.Log()
			if err != nil {
				return false, err
			}
			return kruiseWorkersStarted(log, name), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// kruiseSetUpQuiet is how long kruise-manager's log must show no more controller set-up
// before StartKruiseManager takes it as done: longer than one lookup of a kind whose CRD
// is missing (about 16.5 s, logged at its end).
const kruiseSetUpQuiet = 20 * time.Second

// waitSetUp waits until kruise-manager has gone through its list of controllers. It walks
// them in a fixed order once its webhook is ready ("setup controllers"), looking up each
// one's kind first; until it is through it keeps adding controllers in the background,
// which would run into a measurement. It says nothing when it is done, so the wait ends
// once its log has shown no set-up activity (see kruiseSetUpActivity) for kruiseSetUpQuiet.
func (km *KruiseManager) waitSetUp(ctx context.Context) error {
	last, lastChange := -1, time.Now()
	return WaitFor(ctx, KruiseManagerStartTimeout, km.Name()+" to go through all its controllers", func(context.Context) (bool, error) {
		if km.Exited() {
			return false, km.exitError()
		}
		log, err := km.Log()
		if err != nil {
			return false, err
		}
		started, lines := kruiseSetUpActivity(log)
		if !started {
			return false, nil
		}
		if lines != last {
			last, lastChange = lines, time.Now()
		}
		return time.Since(lastChange) >= kruiseSetUpQuiet, nil
	})
}

// kruiseSetUpActivity reports whether a kruise-manager log shows it setting up its
// controllers, and counts the lines of that set-up so far: kind lookups (which it logs when
// a kind is missing) and the event sources of the controllers it adds.
func kruiseSetUpActivity(log string) (started bool, lines int) {
	_, after, found := strings.Cut(log, `"setup controllers"`)
	if !found {
		return false, 0
	}
	for line := range strings.Lines(after) {
		if strings.Contains(line, "discovery.go") || strings.Contains(line, `"Starting EventSource"`) {
			lines++
		}
	}
	return true, lines
}

func (km *KruiseManager) exitError() error {
	return fmt.Errorf("%s exited with status %d:\n%s", km.Name(), km.ExitCode(), km.LogTail(40))
}

// webhookProblem says why kruise-manager's webhooks are not ready for the API server yet:
// a configuration without webhooks, or with one that does not name
// https://127.0.0.1:<WebhookPort> with a CA bundle, or a port whose certificate that bundle
// does not verify. "" when none.
func (km *KruiseManager) webhookProblem(ctx context.Context, client kubernetes.Interface) string {
	admission := client.AdmissionregistrationV1()
	mutating, err := admission.MutatingWebhookConfigurations().Get(ctx, KruiseMutatingWebhookConfiguration, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	validating, err := admission.ValidatingWebhookConfigurations().Get(ctx, KruiseValidatingWebhookConfiguration, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	var configs []admissionregistrationv1.WebhookClientConfig
	for _, wh := range mutating.Webhooks {
		configs = append(configs, wh.ClientConfig)
	}
	for _, wh := range validating.Webhooks {
		configs = append(configs, wh.ClientConfig)
	}
	if len(configs) == 0 {
		return "no webhook written into the configurations yet"
	}
	prefix := fmt.Sprintf("https://127.0.0.1:%d/", km.WebhookPort)
	for _, c := range configs {
		if c.URL == nil || !strings.HasPrefix(*c.URL, prefix) || len(c.CABundle) == 0 {
			return fmt.Sprintf("a webhook is configured as %s, want a URL under %s with a CA bundle", describeClientConfig(c), prefix)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(configs[0].CABundle) {
		return "the configured CA bundle holds no certificate"
	}
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(km.WebhookPort)))
	if err != nil {
		return fmt.Sprintf("the webhook port does not serve a certificate the configured CA verifies: %v", err)
	}
	_ = conn.Close()
	return ""
}

func describeClientConfig(c admissionregistrationv1.WebhookClientConfig) string {
	switch {
	case c.URL != nil:
		return *c.URL
	case c.Service != nil:
		return "service " + c.Service.Namespace + "/" + c.Service.Name
	}
	return "nothing"
}

// kruiseWorkersStarted reports whether a kruise-manager log shows the named controller
// starting its workers, which a controller does once its caches have synced.
func kruiseWorkersStarted(log, controller string) bool {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "Starting workers") &&
			(strings.Contains(line, `controller="`+controller+`"`) || strings.Contains(line, `"controller"="`+controller+`"`)) {
			return true
		}
	}
	return false
}

// Metrics scrapes kruise-manager's /metrics (plain HTTP, no credentials). A manager that
// has exited or answers anything but 200 is an error.
func (km *KruiseManager) Metrics(ctx context.Context) (string, error) {
	if km.Exited() {
		return "", km.exitError()
	}
	code, body := httpGet(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", km.MetricsPort))
	if code != http.StatusOK {
		return "", fmt.Errorf("GET /metrics of %s: status %d: %s", km.Name(), code, body)
	}
	return body, nil
}

// httpGet returns the status code and body of a plain GET; code 0 and the error text when
// no answer came.
func httpGet(ctx context.Context, url string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}
