package framework

import (
	"encoding/json"
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
	in, err := selectKruiseManifests(kruiseRendering(t), []string{"DaemonSet"})
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
	all, err := selectKruiseManifests(kruiseRendering(t), nil)
	if err != nil || len(all.crds) != 3 {
		t.Errorf("all kinds: %d CRDs, %v; want 3", len(all.crds), err)
	}

	// A kind OpenKruise has no CRD for is an error, not a manager without its API.
	if _, err := selectKruiseManifests(kruiseRendering(t), []string{"DaemonSet", "SidecarSet"}); err == nil || !strings.Contains(err.Error(), "SidecarSet") {
		t.Errorf("an unknown kind: %v", err)
	}
	if _, err := selectKruiseManifests(kruiseRendering(t)[1:], nil); err == nil {
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
	crd := kruisePlaceholderCRD()
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if group != "policy.kruise.io" || len(versions) != 1 || versions[0].(map[string]any)["name"] != "v1beta1" {
		t.Errorf("placeholder CRD in %s %v, want policy.kruise.io v1beta1", group, versions)
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
