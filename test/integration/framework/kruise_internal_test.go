package framework

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kruiseRendering is a stand-in for OpenKruise's rendered config/default: the documents
// InstallKruiseManifests picks from, and some it must leave alone.
func kruiseRendering(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	const rendering = `
apiVersion: v1
kind: Namespace
metadata: {name: kruise-system, labels: {control-plane: controller-manager}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: daemonsets.apps.kruise.io}
spec: {group: apps.kruise.io, names: {kind: DaemonSet, plural: daemonsets}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: imagepulljobs.apps.kruise.io}
spec: {group: apps.kruise.io, names: {kind: ImagePullJob, plural: imagepulljobs}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clonesets.apps.kruise.io}
spec: {group: apps.kruise.io, names: {kind: CloneSet, plural: clonesets}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kruise-controller-manager, namespace: kruise-system}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: kruise-mutating-webhook-configuration}
webhooks:
- name: mdaemonset.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {service: {name: kruise-webhook-service, namespace: kruise-system, path: /mutate-apps-kruise-io-v1alpha1-daemonset}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: kruise-validating-webhook-configuration}
webhooks:
- name: vpod.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {service: {name: kruise-webhook-service, namespace: kruise-system, path: /validate-pod}}
`
	objs, err := DecodeObjects(strings.NewReader(rendering))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestSelectKruiseManifests(t *testing.T) {
	in, err := selectKruiseManifests(kruiseRendering(t), Kruise19, []string{"DaemonSet"})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.namespaces) != 1 || in.namespaces[0].GetName() != KruiseNamespace {
		t.Errorf("namespaces %v, want %s", in.namespaces, KruiseNamespace)
	}
	var crds []string
	for _, crd := range in.crds {
		crds = append(crds, crd.GetName())
	}
	// The ImagePullJob's comes along (kruise-manager does not start without it), and the
	// placeholder of the policy.kruise.io group.
	if want := []string{"daemonsets.apps.kruise.io", "imagepulljobs.apps.kruise.io", "placeholders.policy.kruise.io"}; !slices.Equal(crds, want) {
		t.Errorf("CRDs %v, want %v", crds, want)
	}

	// The webhooks are parked in the template annotation, whole, and none is active.
	if len(in.mutating.Webhooks) != 0 || len(in.validating.Webhooks) != 0 {
		t.Errorf("active webhooks %v and %v, want none", in.mutating.Webhooks, in.validating.Webhooks)
	}
	var parked []admissionregistrationv1.ValidatingWebhook
	if err := json.Unmarshal([]byte(in.validating.Annotations[kruiseWebhookTemplateAnnotation]), &parked); err != nil {
		t.Fatalf("the validating template does not decode: %v", err)
	}
	if len(parked) != 1 || parked[0].Name != "vpod.kb.io" || parked[0].FailurePolicy == nil || *parked[0].FailurePolicy != admissionregistrationv1.Fail ||
		*parked[0].ClientConfig.Service.Path != "/validate-pod" {
		t.Errorf("parked validating webhooks %+v", parked)
	}
	if !strings.Contains(in.mutating.Annotations[kruiseWebhookTemplateAnnotation], "mdaemonset.kb.io") {
		t.Errorf("the mutating template lacks mdaemonset.kb.io: %s", in.mutating.Annotations)
	}

	// No kinds: every CRD.
	all, err := selectKruiseManifests(kruiseRendering(t), Kruise19, nil)
	if err != nil || len(all.crds) != 3 {
		t.Errorf("all kinds: %d CRDs, %v; want 3", len(all.crds), err)
	}

	// A kind OpenKruise has no CRD for is an error, not a manager without its API.
	if _, err := selectKruiseManifests(kruiseRendering(t), Kruise19, []string{"DaemonSet", "SidecarSet"}); err == nil || !strings.Contains(err.Error(), "SidecarSet") {
		t.Errorf("an unknown kind: %v", err)
	}
	if _, err := selectKruiseManifests(kruiseRendering(t)[1:], Kruise19, nil); err == nil {
		t.Error("a rendering without the Namespace was accepted")
	}
}

func TestKruiseCRDKinds(t *testing.T) {
	tests := []struct {
		kinds       []string
		want        []string
		placeholder bool
	}{
		{nil, nil, false}, // every CRD
		{[]string{"DaemonSet"}, []string{"DaemonSet", "ImagePullJob"}, true},
		{[]string{"NodeImage", "ImagePullJob"}, []string{"NodeImage", "ImagePullJob"}, true},
		{[]string{"PodUnavailableBudget"}, []string{"PodUnavailableBudget", "ImagePullJob", "CloneSet", "StatefulSet"}, false},
	}
	for _, tt := range tests {
		got, placeholder := kruiseCRDKinds(tt.kinds)
		if !slices.Equal(got, tt.want) || placeholder != tt.placeholder {
			t.Errorf("kruiseCRDKinds(%v) = %v, %t; want %v, %t", tt.kinds, got, placeholder, tt.want, tt.placeholder)
		}
	}
	crd := kruisePlaceholderCRD(Kruise19)
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if group != "policy.kruise.io" || len(versions) != 1 || versions[0].(map[string]any)["name"] != "v1beta1" {
		t.Errorf("placeholder CRD in %s %v, want policy.kruise.io v1beta1", group, versions)
	}
	// kruise-manager 1.8 looks for PodUnavailableBudgets in policy.kruise.io/v1alpha1; a
	// placeholder at v1beta1 would leave that group version unknown, which it takes for
	// installed.
	crd = kruisePlaceholderCRD(Kruise18)
	versions, _, _ = unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) != 1 || versions[0].(map[string]any)["name"] != "v1alpha1" {
		t.Errorf("1.8's placeholder CRD serves %v, want v1alpha1 alone", versions)
	}
	// The zero release is 1.9.
	crd = kruisePlaceholderCRD(KruiseRelease{})
	versions, _, _ = unstructured.NestedSlice(crd.Object, "spec", "versions")
	if versions[0].(map[string]any)["name"] != "v1beta1" {
		t.Errorf("the zero release's placeholder CRD serves %v, want v1beta1", versions)
	}
}

// 1.8's rendering: the same namespaces and configurations, only v1alpha1 in the CRDs; the
// placeholder follows the release.
func TestSelectKruiseManifestsOf18(t *testing.T) {
	in, err := selectKruiseManifests(kruiseRendering(t), Kruise18, []string{"DaemonSet"})
	if err != nil {
		t.Fatal(err)
	}
	placeholder := in.crds[len(in.crds)-1]
	versions, _, _ := unstructured.NestedSlice(placeholder.Object, "spec", "versions")
	if placeholder.GetName() != "placeholders.policy.kruise.io" || versions[0].(map[string]any)["name"] != "v1alpha1" {
		t.Errorf("1.8's placeholder is %s %v, want placeholders.policy.kruise.io at v1alpha1", placeholder.GetName(), versions)
	}
	if len(in.mutating.Webhooks) != 0 || len(in.validating.Webhooks) != 0 {
		t.Errorf("active webhooks %v and %v, want none", in.mutating.Webhooks, in.validating.Webhooks)
	}
}

func TestKruiseReleases(t *testing.T) {
	tests := []struct {
		release                  KruiseRelease
		manager, daemon, version string
		healthPaths              []string
	}{
		{Kruise19, "kruise-manager", "kruise-daemon", "v1.9.0", []string{"/healthz", "/readyz"}},
		{KruiseRelease{}, "kruise-manager", "kruise-daemon", "v1.9.0", []string{"/healthz", "/readyz"}},
		// 1.8's manager registers no health check: /healthz answers 404.
		{Kruise18, "kruise-manager-1.8", "kruise-daemon-1.8", "v1.8.2", []string{"/readyz"}},
	}
	for _, tt := range tests {
		if got := tt.release.ManagerBinary(); got != tt.manager {
			t.Errorf("%v: manager binary %s, want %s", tt.release, got, tt.manager)
		}
		if got := tt.release.DaemonBinary(); got != tt.daemon {
			t.Errorf("%v: daemon binary %s, want %s", tt.release, got, tt.daemon)
		}
		if got := tt.release.String(); got != "OpenKruise "+tt.version {
			t.Errorf("%v: named %q, want OpenKruise %s", tt.release, got, tt.version)
		}
		if got := tt.release.healthPaths(); !slices.Equal(got, tt.healthPaths) {
			t.Errorf("%v: health paths %v, want %v", tt.release, got, tt.healthPaths)
		}
	}
	if KruiseManagerBinary != Kruise19.ManagerBinary() {
		t.Errorf("KruiseManagerBinary %s is not 1.9's %s", KruiseManagerBinary, Kruise19.ManagerBinary())
	}
}

// Each release's Version is the one its module under hack/ pins, so that what the tests
// report is what runs.
func TestKruiseReleaseVersionsArePinned(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, release := range []KruiseRelease{Kruise19, Kruise18} {
		data, err := os.ReadFile(filepath.Join(root, "hack", release.toolsModule, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "require " + kruiseModule + " " + release.Version + "\n"; !strings.Contains(string(data), want) {
			t.Errorf("hack/%s/go.mod does not pin %s %s (want a line %q)", release.toolsModule, kruiseModule, release.Version, strings.TrimSpace(want))
		}
	}
}

// A configuration parked already (kruise-manager's own writes leave the annotation) keeps
// its template rather than replacing it with an empty list.
func TestParkWebhooksKeepsAnExistingTemplate(t *testing.T) {
	config := &admissionregistrationv1.MutatingWebhookConfiguration{}
	config.Annotations = map[string]string{kruiseWebhookTemplateAnnotation: `[{"name":"mpod.kb.io"}]`}
	config.Webhooks = []admissionregistrationv1.MutatingWebhook{{Name: "mpod.kb.io"}}
	if err := parkWebhooks(&config.ObjectMeta, &config.Webhooks); err != nil {
		t.Fatal(err)
	}
	if config.Annotations[kruiseWebhookTemplateAnnotation] != `[{"name":"mpod.kb.io"}]` || len(config.Webhooks) != 1 {
		t.Errorf("parkWebhooks changed a parked configuration: %v %v", config.Annotations, config.Webhooks)
	}
}

func TestKruiseManagerArgs(t *testing.T) {
	ports := kruisePorts{metrics: 1001, health: 1002, webhook: 1003, pprof: 1004}
	args := KruiseManagerOptions{}.args("/k", ports)
	want := []string{
		"--kubeconfig=/k", "--metrics-addr=127.0.0.1:1001", "--health-probe-addr=127.0.0.1:1002",
		"--enable-leader-election=false", "--v=2", "--enable-pprof=false",
	}
	if !slices.Equal(args, want) {
		t.Errorf("default args %v, want %v (no rate-limit flags: kruise-manager's defaults)", args, want)
	}
	args = KruiseManagerOptions{QPS: 1000, Burst: 900, Verbosity: 4, LeaderElection: true, Pprof: true, FeatureGates: "A=true", ExtraArgs: []string{"--x"}}.args("/k", ports)
	for _, arg := range []string{
		"--rest-config-qps=1000", "--rest-config-burst=900", "--v=4", "--enable-leader-election=true",
		"--enable-pprof=true", "--pprof-addr=127.0.0.1:1004", "--feature-gates=A=true",
	} {
		if !slices.Contains(args, arg) {
			t.Errorf("args %v lack %s", args, arg)
		}
	}
	if args[len(args)-1] != "--x" {
		t.Errorf("extra args are not last: %v", args)
	}
}

func TestKruiseWorkersStarted(t *testing.T) {
	log := `I1125 23:01:02.000000  1 controller.go:242] "Starting EventSource" controller="daemonset-controller"
I1125 23:01:03.000000  1 controller.go:242] "Starting workers" controller="advanced-daemonset-controller" worker count=3
I1125 23:01:04.000000  1 controller.go:242] "msg"="Starting workers" "controller"="nodeimage-controller" "worker count"=1
`
	for controller, want := range map[string]bool{
		"nodeimage-controller":          true,
		"advanced-daemonset-controller": true,
		"daemonset-controller":          false, // its sources started, its workers not yet
		"imagepulljob-controller":       false,
	} {
		if got := kruiseWorkersStarted(log, controller); got != want {
			t.Errorf("kruiseWorkersStarted(%s) = %t, want %t", controller, got, want)
		}
	}
}

func TestKruiseSetUpActivity(t *testing.T) {
	if started, _ := kruiseSetUpActivity(`I1125 23:09:16.594074 1 main.go:236] "msg"="setup webhook" "logger"="setup"` + "\n"); started {
		t.Error("set-up reported before kruise-manager sets up its controllers")
	}
	log := `I1125 23:08:10.790909 1 discovery.go:74] "Not found kind in group version" kind="BroadcastJob" groupVersion="apps.kruise.io/v1alpha1"
I1125 23:17:01.913835 1 main.go:266] "msg"="setup controllers" "logger"="setup"
I1125 23:17:17.866553 1 discovery.go:74] "Not found kind in group version" kind="AdvancedCronJob" groupVersion="apps.kruise.io/v1beta1"
I1125 23:18:07.742789 1 controller.go:198] "msg"="Starting EventSource" "controller"="daemonset-controller" "source"="kind source: *v1.Pod"
I1125 23:18:07.742789 1 controller.go:242] "msg"="Starting workers" "controller"="daemonset-controller" "worker count"=3
`
	// The lookup before "setup controllers" belongs to the field indexes, not to the set-up.
	if started, lines := kruiseSetUpActivity(log); !started || lines != 2 {
		t.Errorf("kruiseSetUpActivity() = %t, %d; want true, 2", started, lines)
	}
}

// kruise-manager 1.8 logs its set-up and its workers as 1.9 does (lines of a 1.8 run).
func TestKruiseStartUpLogOf18(t *testing.T) {
	log := `I1126 10:13:54.495577   22351 main.go:251] "msg"="setup controllers" "logger"="setup"
I1126 10:13:54.497379   22351 controller.go:173] "msg"="Starting EventSource" "controller"="advancedcronjob-controller" "source"="kind source: *v1alpha1.AdvancedCronJob"
I1126 10:13:54.497395   22351 controller.go:173] "msg"="Starting EventSource" "controller"="advancedcronjob-controller" "source"="kind source: *v1.Job"
I1126 10:13:54.714223   22351 controller.go:215] "msg"="Starting workers" "controller"="daemonset-controller" "worker count"=3
I1126 10:13:55.051557   22351 controller.go:215] "msg"="Starting workers" "controller"="podunavailablebudget-controller" "worker count"=3
`
	if started, lines := kruiseSetUpActivity(log); !started || lines != 2 {
		t.Errorf("kruiseSetUpActivity() = %t, %d; want true, 2", started, lines)
	}
	for controller, want := range map[string]bool{
		"daemonset-controller":            true,
		"podunavailablebudget-controller": true,
		"advancedcronjob-controller":      false, // its sources started, its workers not yet
	} {
		if got := kruiseWorkersStarted(log, controller); got != want {
			t.Errorf("kruiseWorkersStarted(%s) = %t, want %t", controller, got, want)
		}
	}
}
