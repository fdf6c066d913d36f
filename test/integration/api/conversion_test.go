package api

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"
	bosunscheme "github.com/bosun-dev/client-go/clientset/versioned/scheme"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The wire names these tests check. They are spelled out rather than taken from the api
// module so that a renamed constant cannot silently change the contract.
const (
	progressiveCreatePodKey   = "daemonset.kruise.io/progressive-create-pod"
	pubProtectOperationsKey   = "kruise.io/pub-protect-operations"
	pubProtectTotalKey        = "pub.kruise.io/protect-total-replicas"
	crrSyncContainerStatusKey = "crr.apps.kruise.io/sync-container-statuses"
	crrUnreadyAcquiredKey     = "crr.apps.kruise.io/unready-acquired"
	// The CloneSet's carriers: a label, and the pre-download settings.
	excludePreparingDeleteKey     = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"
	preDownloadParallelismKey     = "apps.kruise.io/image-predownload-parallelism"
	preDownloadTimeoutKey         = "apps.kruise.io/image-predownload-timeout-seconds"
	preDownloadMinUpdatedReadyKey = "apps.kruise.io/image-predownload-min-updated-ready-pods"
	// reservedPrefix starts the annotations in which a conversion records what the other
	// version cannot hold; clients never write them.
	reservedPrefix = "conversion.bosun.dev/"
	// reservedOnV1alpha1 is the reserved annotation of a v1alpha1 object converted from
	// v1beta1.
	reservedOnV1alpha1 = reservedPrefix + "v1beta1"
)

// A DaemonSet written in v1alpha1 with the progressive-create-pod annotation reads in
// v1beta1 with partitionedScaling set, and a v1beta1 writer that changes nothing gives
// v1alpha1 readers back exactly what was written, without reserved annotations.
func TestPartitionAnnotationRoundTrip(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	ctx := testContext(t)

	original := newDaemonSet(ns, "partitioned")
	original.Annotations = map[string]string{progressiveCreatePodKey: "true", "example.com/team": "infra"}
	if _, err := client.AppsV1alpha1().DaemonSets(ns).Create(ctx, original, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1alpha1 DaemonSet: %v", err)
	}

	beta, err := client.AppsV1beta1().DaemonSets(ns).Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the DaemonSet as v1beta1: %v", err)
	}
	if s := beta.Spec.ScaleStrategy; s == nil || !s.PartitionedScaling {
		t.Errorf("v1beta1 spec.scaleStrategy = %+v, want partitionedScaling true", s)
	}
	if got := beta.Annotations[progressiveCreatePodKey]; got != "true" {
		t.Errorf("v1beta1 annotation %s = %q, want it kept as \"true\"", progressiveCreatePodKey, got)
	}
	expectNoReservedAnnotations(t, "v1beta1 view", beta.Annotations)

	if _, err := client.AppsV1beta1().DaemonSets(ns).Update(ctx, beta, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the v1beta1 DaemonSet back unchanged: %v", err)
	}
	alpha, err := client.AppsV1alpha1().DaemonSets(ns).Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the DaemonSet as v1alpha1: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(alpha.Spec, original.Spec) {
		t.Errorf("v1alpha1 spec after the v1beta1 write differs from the original (-original +now):\n%s", jsonDiff(original.Spec, alpha.Spec))
	}
	if !maps.Equal(alpha.Annotations, original.Annotations) {
		t.Errorf("v1alpha1 annotations after the v1beta1 write = %v, want the original %v", alpha.Annotations, original.Annotations)
	}
}

// A DaemonSet written in v1beta1 with partitionedScaling and no annotation reads in
// v1alpha1 with the annotation and a reserved record that its absence must come back; a
// v1alpha1 writer that changes nothing leaves v1beta1 as written, and one that sets the
// annotation to "false" wins: partitioned scaling is off and the annotation stays.
func TestPartitionedScalingFieldRoundTrip(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	ctx := testContext(t)
	alphaClient, betaClient := client.AppsV1alpha1().DaemonSets(ns), client.AppsV1beta1().DaemonSets(ns)

	original := newBetaDaemonSet(ns, "partitioned")
	original.Spec.ScaleStrategy = &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
	if _, err := betaClient.Create(ctx, original, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 DaemonSet: %v", err)
	}

	alpha, err := alphaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the DaemonSet as v1alpha1: %v", err)
	}
	if got := alpha.Annotations[progressiveCreatePodKey]; got != "true" {
		t.Errorf("v1alpha1 annotation %s = %q, want \"true\"", progressiveCreatePodKey, got)
	}
	if _, ok := alpha.Annotations[reservedOnV1alpha1]; !ok {
		t.Errorf("v1alpha1 annotations %v lack %s, which records that v1beta1 had no annotation", alpha.Annotations, reservedOnV1alpha1)
	}

	if _, err := alphaClient.Update(ctx, alpha, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the v1alpha1 DaemonSet back unchanged: %v", err)
	}
	beta, err := betaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the DaemonSet as v1beta1: %v", err)
	}
	if _, ok := beta.Annotations[progressiveCreatePodKey]; ok {
		t.Errorf("v1beta1 annotations after the unchanged v1alpha1 write = %v, want no %s", beta.Annotations, progressiveCreatePodKey)
	}
	expectNoReservedAnnotations(t, "v1beta1 view after the unchanged v1alpha1 write", beta.Annotations)
	if s := beta.Spec.ScaleStrategy; s == nil || !s.PartitionedScaling {
		t.Errorf("v1beta1 spec.scaleStrategy after the unchanged v1alpha1 write = %+v, want partitionedScaling true", s)
	}
	if !apiequality.Semantic.DeepEqual(beta.Spec, original.Spec) {
		t.Errorf("v1beta1 spec after the unchanged v1alpha1 write differs (-original +now):\n%s", jsonDiff(original.Spec, beta.Spec))
	}

	// A v1alpha1 client turns partitioned scaling off the only way it knows.
	alpha, err = alphaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the DaemonSet as v1alpha1: %v", err)
	}
	if alpha.Annotations == nil {
		alpha.Annotations = map[string]string{}
	}
	alpha.Annotations[progressiveCreatePodKey] = "false"
	if _, err := alphaClient.Update(ctx, alpha, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the v1alpha1 DaemonSet with the annotation \"false\": %v", err)
	}
	beta, err = betaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the DaemonSet as v1beta1: %v", err)
	}
	if beta.Spec.ScaleStrategy != nil {
		t.Errorf("v1beta1 spec.scaleStrategy after the v1alpha1 write of \"false\" = %+v, want unset", beta.Spec.ScaleStrategy)
	}
	if got, ok := beta.Annotations[progressiveCreatePodKey]; !ok || got != "false" {
		t.Errorf("v1beta1 annotation %s after the v1alpha1 write = %q (present %v), want \"false\"", progressiveCreatePodKey, got, ok)
	}
	expectNoReservedAnnotations(t, "v1beta1 view after the v1alpha1 write of \"false\"", beta.Annotations)
}

// A budget written in v1beta1 with the fields v1alpha1 lacks keeps all of them through a
// v1alpha1 read-modify-write: the carried ones travel in their annotations, the selector
// in the reserved one, and none of those annotations is left on the v1beta1 object.
func TestIgnoredPodSelectorSurvivesV1alpha1Writers(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	ctx := testContext(t)
	alphaClient, betaClient := client.PolicyV1alpha1().PodUnavailableBudgets(ns), client.PolicyV1beta1().PodUnavailableBudgets(ns)

	original := &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromString("25%")),
			IgnoredPodSelector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"canary": "true"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"batch", "debug"}}},
			},
			ProtectOperations:    []policyv1beta1.PubOperation{"EVICT"},
			ProtectTotalReplicas: ptr.To[int32](3),
		},
	}
	if _, err := betaClient.Create(ctx, original, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 budget: %v", err)
	}

	alpha, err := alphaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the budget as v1alpha1: %v", err)
	}
	for key, want := range map[string]string{pubProtectOperationsKey: "EVICT", pubProtectTotalKey: "3"} {
		if got, ok := alpha.Annotations[key]; !ok || got != want {
			t.Errorf("v1alpha1 annotation %s = %q (present %v), want %q", key, got, ok, want)
		}
	}

	alpha.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	if _, err := alphaClient.Update(ctx, alpha, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating maxUnavailable through v1alpha1: %v", err)
	}
	beta, err := betaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the budget as v1beta1: %v", err)
	}
	if got := beta.Spec.MaxUnavailable; got == nil || *got != intstr.FromInt32(2) {
		t.Errorf("v1beta1 maxUnavailable = %v, want the v1alpha1 writer's 2", got)
	}
	if !apiequality.Semantic.DeepEqual(beta.Spec.IgnoredPodSelector, original.Spec.IgnoredPodSelector) {
		t.Errorf("v1beta1 ignoredPodSelector after the v1alpha1 write differs (-original +now):\n%s",
			jsonDiff(original.Spec.IgnoredPodSelector, beta.Spec.IgnoredPodSelector))
	}
	if !apiequality.Semantic.DeepEqual(beta.Spec.ProtectOperations, original.Spec.ProtectOperations) {
		t.Errorf("v1beta1 protectOperations = %v, want %v", beta.Spec.ProtectOperations, original.Spec.ProtectOperations)
	}
	if got := beta.Spec.ProtectTotalReplicas; got == nil || *got != 3 {
		t.Errorf("v1beta1 protectTotalReplicas = %v, want 3", ptrString(got))
	}
	for _, key := range []string{pubProtectOperationsKey, pubProtectTotalKey} {
		if v, ok := beta.Annotations[key]; ok {
			t.Errorf("v1beta1 annotations carry %s=%q; the object written in v1beta1 had none", key, v)
		}
	}
	expectNoReservedAnnotations(t, "v1beta1 view", beta.Annotations)
}

// A budget whose protect-total-replicas annotation is not a number — one stored as
// v1alpha1 before the CRDs gained v1beta1, one created in v1alpha1 after — reads in both
// versions, and a v1beta1 LIST holding them succeeds: the field stays unset and the
// annotation is kept.
func TestInvalidCarrierNeverBreaksList(t *testing.T) {
	cp := framework.StartTestControlPlane(t, framework.Options{})
	ctx := testContext(t)
	dir, err := framework.DefaultCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.InstallV1alpha1OnlyCRDs(ctx, cp.Config(), dir); err != nil {
		t.Fatalf("installing the v1alpha1-only CRDs: %v", err)
	}
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	alphaClient, betaClient := client.PolicyV1alpha1().PodUnavailableBudgets(ns), client.PolicyV1beta1().PodUnavailableBudgets(ns)

	invalidBudget := func(name string) *policyv1alpha1.PodUnavailableBudget {
		pub := newPodUnavailableBudget(ns, name)
		pub.Annotations = map[string]string{pubProtectTotalKey: "abc"}
		return pub
	}
	if _, err := alphaClient.Create(ctx, invalidBudget("before-upgrade"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the budget under the v1alpha1-only CRDs: %v", err)
	}
	if _, err := betaClient.Get(ctx, "before-upgrade", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("reading as v1beta1 before the upgrade: err = %v, want NotFound (v1beta1 not served yet)", err)
	}

	if err := framework.InstallCRDs(ctx, cp.Config(), dir); err != nil {
		t.Fatalf("upgrading to the shipped CRDs: %v", err)
	}
	if err := cp.ServeConversion(ctx); err != nil {
		t.Fatalf("serving conversion: %v", err)
	}
	// The API server picks up the conversion address of the updated CRD asynchronously.
	var lastErr error
	err = framework.WaitFor(ctx, 30*time.Second, "the v1alpha1-stored budget to read as v1beta1", func(ctx context.Context) (bool, error) {
		_, lastErr = betaClient.Get(ctx, "before-upgrade", metav1.GetOptions{})
		return lastErr == nil, nil
	})
	if err != nil {
		t.Fatalf("%v; last error: %v", err, lastErr)
	}
	stored := storedVersions(ctx, t, cp, "podunavailablebudgets.policy.kruise.io")
	if !strings.Contains(strings.Join(stored, ","), "v1alpha1") {
		t.Fatalf("status.storedVersions = %v; the budget created first must be stored as v1alpha1", stored)
	}

	if _, err := alphaClient.Create(ctx, invalidBudget("after-upgrade"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the budget in v1alpha1 after the upgrade: %v", err)
	}

	checkBeta := func(what string, pub *policyv1beta1.PodUnavailableBudget) {
		t.Helper()
		if pub.Spec.ProtectTotalReplicas != nil {
			t.Errorf("%s: v1beta1 protectTotalReplicas = %d, want unset for the annotation \"abc\"", what, *pub.Spec.ProtectTotalReplicas)
		}
		if got, ok := pub.Annotations[pubProtectTotalKey]; !ok || got != "abc" {
			t.Errorf("%s: v1beta1 annotation %s = %q (present %v), want \"abc\" kept", what, pubProtectTotalKey, got, ok)
		}
	}
	for _, name := range []string{"before-upgrade", "after-upgrade"} {
		alpha, err := alphaClient.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("reading %s as v1alpha1: %v", name, err)
		} else if got := alpha.Annotations[pubProtectTotalKey]; got != "abc" {
			t.Errorf("%s: v1alpha1 annotation %s = %q, want \"abc\"", name, pubProtectTotalKey, got)
		}
		beta, err := betaClient.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("reading %s as v1beta1: %v", name, err)
			continue
		}
		checkBeta("GET "+name, beta)
	}

	list, err := betaClient.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the namespace's budgets as v1beta1: %v", err)
	}
	if len(list.Items) != 2 {
		t.Errorf("v1beta1 LIST returned %d budgets, want 2", len(list.Items))
	}
	for i := range list.Items {
		checkBeta("LIST item "+list.Items[i].Name, &list.Items[i])
	}
	if _, err := alphaClient.List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing the namespace's budgets as v1alpha1: %v", err)
	}
}

// A NodeImage pull secret's mode, written in v1beta1, survives a v1alpha1 client's
// read-modify-write: bosun's v1alpha1 schema has the field too, so nothing prunes it.
func TestNodeImageModeSurvivesV1alpha1Writers(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	ctx := testContext(t)
	alphaClient, betaClient := client.AppsV1alpha1().NodeImages(), client.AppsV1beta1().NodeImages()

	const image = "registry.example/agent"
	original := &appsv1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-node"},
		Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{image: {
			PullSecrets: []appsv1beta1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "pull-secret", Mode: "batch"}},
			Tags:        []appsv1beta1.ImageTagSpec{{Tag: "1.0", Version: 1}},
		}}},
	}
	if _, err := betaClient.Create(ctx, original, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 NodeImage: %v", err)
	}
	t.Cleanup(func() { _ = betaClient.Delete(context.Background(), original.Name, metav1.DeleteOptions{}) })

	alpha, err := alphaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the NodeImage as v1alpha1: %v", err)
	}
	if alpha.Labels == nil {
		alpha.Labels = map[string]string{}
	}
	alpha.Labels["example.com/zone"] = "a"
	if _, err := alphaClient.Update(ctx, alpha, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("adding a label through v1alpha1: %v", err)
	}

	beta, err := betaClient.Get(ctx, original.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the NodeImage as v1beta1: %v", err)
	}
	if beta.Labels["example.com/zone"] != "a" {
		t.Errorf("v1beta1 labels = %v, want the v1alpha1 writer's example.com/zone=a", beta.Labels)
	}
	if !apiequality.Semantic.DeepEqual(beta.Spec, original.Spec) {
		t.Errorf("v1beta1 spec after the v1alpha1 write differs (-original +now):\n%s", jsonDiff(original.Spec, beta.Spec))
	}
	if secrets := beta.Spec.Images[image].PullSecrets; len(secrets) != 1 || secrets[0].Mode != "batch" {
		t.Errorf("v1beta1 pull secrets = %+v, want mode batch kept", secrets)
	}
}

// fuzzedObjectsPerCase is how many objects each kind and direction must get through the
// round trip.
const fuzzedObjectsPerCase = 200

// maxFuzzAttempts bounds the objects generated for one kind and direction, refused ones
// included.
const maxFuzzAttempts = 2000

// fuzzWorkers is how many round trips of one kind and direction run at once: each is a
// handful of sequential requests, so a few in flight keep the API server busy.
const fuzzWorkers = 6

// fuzzKind describes one kind for the fuzzed round trip.
type fuzzKind struct {
	kind       string
	group      string
	resource   string
	namespaced bool
	// carriers are the v1alpha1 annotations (and labels) that stand for v1beta1 fields,
	// with values that parse and values that do not.
	carriers []carrier
}

// carrier is an annotation, or with label a label, that carries a field, and how to pick
// a value for it.
type carrier struct {
	key   string
	label bool
	value func(g *schemaGenerator) string
}

// schemalessSpecFields are, by kind, the fields of spec that the CRD stores schemaless:
// the conversion passes them through as sent, so they are compared as JSON, not as the Go
// types (which would drop their unknown fields) decode them.
var schemalessSpecFields = map[string][]string{
	"DaemonSet": {"template"},
	"CloneSet":  {"template", "volumeClaimTemplates"},
}

// oneOf picks among fixed values, or sometimes free text.
func oneOf(values ...string) func(g *schemaGenerator) string {
	return func(g *schemaGenerator) string {
		if g.rand.IntN(6) == 0 {
			return g.text(0, 8)
		}
		return values[g.rand.IntN(len(values))]
	}
}

// labelOneOf is oneOf for a label, whose free values must be label values.
func labelOneOf(values ...string) func(g *schemaGenerator) string {
	return func(g *schemaGenerator) string {
		if g.rand.IntN(6) == 0 {
			return g.labelValue()
		}
		return values[g.rand.IntN(len(values))]
	}
}

// preDownloadValues are values of the pre-download annotations: numbers that parse,
// numbers out of range and text that does not.
var preDownloadValues = []string{"1", "3", "10", "0", "-1", "2147483647", "2147483648", "+5", "007", " 4", "50%", "abc", ""}

var fuzzKinds = []fuzzKind{{
	kind: "DaemonSet", group: "apps.kruise.io", resource: "daemonsets", namespaced: true,
	carriers: []carrier{{key: progressiveCreatePodKey, value: oneOf("true", "true", "false", "", "True", "1")}},
}, {
	kind: "PodUnavailableBudget", group: "policy.kruise.io", resource: "podunavailablebudgets", namespaced: true,
	carriers: []carrier{
		{key: pubProtectOperationsKey, value: oneOf("DELETE", "EVICT", "DELETE,EVICT", "UPDATE,RESIZE", "DELETE,UPDATE,EVICT,RESIZE",
			"", " DELETE, EVICT", "DELETE,,EVICT", ",", "delete", "FOO", "EVICT,EVICT")},
		{key: pubProtectTotalKey, value: oneOf("1", "3", "250", "2147483647", "0", "-2", "abc", "2147483648", "+5", "007", " 4", "")},
	},
}, {
	kind: "ContainerRecreateRequest", group: "apps.kruise.io", resource: "containerrecreaterequests", namespaced: true,
	carriers: []carrier{
		{key: crrSyncContainerStatusKey, value: oneOf(
			`[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://0123"}]`,
			`[{"name":"app","ready":false,"restartCount":0},{"name":"sidecar","ready":true,"restartCount":1}]`,
			`[{"name":"app"}]`, `[{"name":"app","ready":true,"restartCount":1,"extra":5}]`,
			`[]`, ` [ ] `, `null`, `{}`, `[{"restartCount":"x"}]`, `not json`, ``)},
		{key: crrUnreadyAcquiredKey, value: func(g *schemaGenerator) string {
			switch g.rand.IntN(5) {
			case 0:
				return g.timestamp()
			case 1: // another zone, fractions of a second
				t, _ := time.Parse(time.RFC3339, g.timestamp())
				return t.In(time.FixedZone("", 2*3600)).Add(250 * time.Millisecond).Format(time.RFC3339Nano)
			default:
				return oneOf("2024-05-01T10:00:00Z", "2024-13-01T00:00:00Z", "2024-05-01 10:00:00", "yesterday", "")(g)
			}
		}},
	},
}, {
	kind: "CloneSet", group: "apps.kruise.io", resource: "clonesets", namespaced: true,
	carriers: []carrier{
		{key: excludePreparingDeleteKey, label: true, value: labelOneOf("true", "true", "false", "", "True", "1")},
		{key: preDownloadParallelismKey, value: oneOf(preDownloadValues...)},
		{key: preDownloadTimeoutKey, value: oneOf(preDownloadValues...)},
		{key: preDownloadMinUpdatedReadyKey, value: oneOf(preDownloadValues...)},
	},
}, {
	kind: "NodeImage", group: "apps.kruise.io", resource: "nodeimages",
}, {
	kind: "ImagePullJob", group: "apps.kruise.io", resource: "imagepulljobs", namespaced: true,
}, {
	kind: "ImageListPullJob", group: "apps.kruise.io", resource: "imagelistpulljobs", namespaced: true,
}}

// fuzzLabel marks the fuzzed objects of one test run, so the cluster-scoped ones can be
// removed afterwards.
const fuzzLabel = "bosun.dev/conversion-fuzz"

// Random objects valid under each kind's schema survive a round trip through the API
// server: created in one version (status through /status), read in the other, written
// back unchanged, read in the first, they equal what was created, carriers with valid
// and invalid values included. Both directions, every kind.
func TestFuzzedRoundTripThroughAPIServer(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := dynamic.NewForConfigOrDie(cp.Config())
	dir, err := framework.DefaultCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := crdSchemas(dir)
	if err != nil {
		t.Fatalf("reading the CRD schemas: %v", err)
	}
	began := time.Now()
	for _, kind := range fuzzKinds {
		versions := schemas[kind.kind]
		if versions["v1alpha1"] == nil || versions["v1beta1"] == nil {
			t.Fatalf("the CRDs in %s have no v1alpha1 and v1beta1 schema of %s", dir, kind.kind)
		}
		gvr := schema.GroupVersionResource{Group: kind.group, Resource: kind.resource}
		if !kind.namespaced {
			t.Cleanup(func() {
				gvr.Version = "v1beta1"
				_ = client.Resource(gvr).DeleteCollection(context.Background(), metav1.DeleteOptions{},
					metav1.ListOptions{LabelSelector: fuzzLabel + "=" + ns})
			})
		}
		for _, first := range []string{"v1alpha1", "v1beta1"} {
			run := &fuzzRun{
				kind: kind, client: client, namespace: ns, schema: versions[first],
				first: first, second: map[string]string{"v1alpha1": "v1beta1", "v1beta1": "v1alpha1"}[first],
			}
			t.Run(kind.kind+"/created-in-"+first, run.run)
		}
	}
	t.Logf("fuzzed round trips of %d kinds in both directions took %v", len(fuzzKinds), time.Since(began).Round(time.Millisecond))
}

// fuzzRun is the fuzzed round trip of one kind created in one version.
type fuzzRun struct {
	kind          fuzzKind
	client        dynamic.Interface
	namespace     string
	schema        schemaNode
	first, second string
	seed          uint64

	mu sync.Mutex
	// covered holds the schema paths generated in the objects that went through.
	covered map[string]bool
	// withReserved counts the objects that went through whose view in the other version
	// carried a reserved annotation: the conversion had something to restore.
	withReserved int
}

// outcome of one generated object.
type outcome int

const (
	accepted outcome = iota
	refusedAtCreate
	refusedAtStatus
)

func (f *fuzzRun) run(t *testing.T) {
	// The seed depends on nothing but the case, and each attempt's source on nothing but
	// the seed and its number, so a failure names what reproduces it.
	h := fnv.New64a()
	h.Write([]byte(f.kind.kind + "/" + f.first))
	f.seed = h.Sum64()
	f.covered = map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var (
		next, passed, failures   atomic.Int64
		refusedCreate, refusedSt atomic.Int64
		wg                       sync.WaitGroup
	)
	began := time.Now()
	for range fuzzWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for passed.Load() < fuzzedObjectsPerCase && failures.Load() < 3 && ctx.Err() == nil {
				attempt := next.Add(1) - 1
				if attempt >= maxFuzzAttempts {
					return
				}
				result, err := f.roundTrip(ctx, attempt)
				switch {
				case err != nil:
					failures.Add(1)
					t.Errorf("seed %#x, attempt %d: %v", f.seed, attempt, err)
				case result == accepted:
					passed.Add(1)
				case result == refusedAtCreate:
					refusedCreate.Add(1)
				case result == refusedAtStatus:
					refusedSt.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	refused := refusedCreate.Load() + refusedSt.Load()
	total := passed.Load() + refused
	rate := 0.0
	if total > 0 {
		rate = 100 * float64(refused) / float64(total)
	}
	t.Logf("%s created in %s: %d round trips passed (%d read in %s with a reserved annotation), %d objects refused with 422 (%d at create, %d at /status): rejection rate %.1f%%, in %v",
		f.kind.kind, f.first, passed.Load(), f.withReserved, f.second, refused, refusedCreate.Load(), refusedSt.Load(), rate,
		time.Since(began).Round(time.Millisecond))
	if failures.Load() == 0 && passed.Load() < fuzzedObjectsPerCase {
		t.Errorf("only %d of %d objects got through within %d attempts (%v)", passed.Load(), fuzzedObjectsPerCase, total, ctx.Err())
	}
	// Every field of the schema must have been through the round trip, or the run says
	// nothing about it.
	if failures.Load() == 0 {
		var missing []string
		for _, path := range schemaPaths(f.schema) {
			if !f.covered[path] {
				missing = append(missing, path)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%d schema fields of %s %s were in no object that went through: %s",
				len(missing), f.kind.kind, f.first, strings.Join(missing, ", "))
		}
	}
}

// generate returns the object of an attempt, in the first version, status included, and
// the schema paths it holds.
func (f *fuzzRun) generate(attempt int64) (*unstructured.Unstructured, map[string]bool) {
	g := newSchemaGenerator(rand.New(rand.NewPCG(f.seed, uint64(attempt))))
	name := fmt.Sprintf("%s-%s-%d", strings.ToLower(f.kind.kind), f.first, attempt)
	metadata := map[string]any{"name": name}
	if f.kind.namespaced {
		metadata["namespace"] = f.namespace
	} else {
		metadata["name"] = f.namespace + "-" + name // cluster scoped: keep runs apart
	}
	labels := map[string]any{fuzzLabel: f.namespace}
	for range g.rand.IntN(3) {
		labels[g.qualifiedName()] = g.labelValue()
	}
	metadata["labels"] = labels
	annotations := map[string]any{}
	for range g.rand.IntN(3) {
		annotations[g.qualifiedName()] = g.text(0, 12)
	}
	for _, c := range f.kind.carriers {
		if g.rand.IntN(2) != 0 {
			continue
		}
		if c.label {
			labels[c.key] = c.value(g)
		} else {
			annotations[c.key] = c.value(g)
		}
	}
	if len(annotations) > 0 {
		metadata["annotations"] = annotations
	}
	obj := map[string]any{
		"apiVersion": f.kind.group + "/" + f.first,
		"kind":       f.kind.kind,
		"metadata":   metadata,
	}
	if spec, ok := g.topLevel(f.schema, "spec"); ok {
		obj["spec"] = spec
	}
	if g.rand.IntN(5) != 0 {
		if status, ok := g.topLevel(f.schema, "status"); ok {
			obj["status"] = status
		}
	}
	return &unstructured.Unstructured{Object: obj}, g.generated
}

func (f *fuzzRun) resource(version string) dynamic.ResourceInterface {
	gvr := schema.GroupVersionResource{Group: f.kind.group, Version: version, Resource: f.kind.resource}
	if f.kind.namespaced {
		return f.client.Resource(gvr).Namespace(f.namespace)
	}
	return f.client.Resource(gvr)
}

// roundTrip runs one attempt. Objects the API server refuses (422) before the round trip
// starts are the generator's misses; every other failure is the test's.
func (f *fuzzRun) roundTrip(ctx context.Context, attempt int64) (outcome, error) {
	want, paths := f.generate(attempt)
	describe := func() string {
		data, _ := yaml.Marshal(want.Object)
		return "the object created in " + f.first + ":\n" + string(data)
	}

	first, second := f.resource(f.first), f.resource(f.second)
	create := want.DeepCopy()
	unstructured.RemoveNestedField(create.Object, "status")
	created, err := first.Create(ctx, create, metav1.CreateOptions{})
	if apierrors.IsInvalid(err) {
		return refusedAtCreate, nil
	} else if err != nil {
		return 0, fmt.Errorf("creating in %s: %w\n%s", f.first, err, describe())
	}
	if status, ok := want.Object["status"]; ok {
		created.Object["status"] = status
		if _, err := first.UpdateStatus(ctx, created, metav1.UpdateOptions{}); apierrors.IsInvalid(err) {
			return refusedAtStatus, nil
		} else if err != nil {
			return 0, fmt.Errorf("writing the status in %s: %w\n%s", f.first, err, describe())
		}
	}

	other, err := second.Get(ctx, want.GetName(), metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading in %s: %w\n%s", f.second, err, describe())
	}
	// What the API server serves in the other version is bosun's conversion, not merely
	// something that converts back: a conversion that got both directions wrong alike
	// would pass the round trip alone.
	converted, err := convertedByAPIModule(want, f.second)
	if err != nil {
		return 0, fmt.Errorf("converting with the api module: %w\n%s", err, describe())
	}
	if diff, err := objectDiff(converted, other); err != nil {
		return 0, fmt.Errorf("comparing: %w\n%s", err, describe())
	} else if diff != "" {
		return 0, fmt.Errorf("read in %s, the object is not the api module's conversion of the created one (-converted +served):\n%s\n%s",
			f.second, diff, describe())
	}
	if _, err := second.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		data, _ := yaml.Marshal(other.Object)
		return 0, fmt.Errorf("writing back unchanged in %s: %w\nas read in %s:\n%s\n%s", f.second, err, f.second, data, describe())
	}
	got, err := first.Get(ctx, want.GetName(), metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading back in %s: %w\n%s", f.first, err, describe())
	}
	if diff, err := objectDiff(want, got); err != nil {
		return 0, fmt.Errorf("comparing: %w\n%s", err, describe())
	} else if diff != "" {
		data, _ := yaml.Marshal(other.Object)
		return 0, fmt.Errorf("after the round trip through %s the object differs (-created +now):\n%s\nas read in %s:\n%s\n%s",
			f.second, diff, f.second, data, describe())
	}
	f.mu.Lock()
	maps.Copy(f.covered, paths)
	for key := range other.GetAnnotations() {
		if strings.HasPrefix(key, reservedPrefix) {
			f.withReserved++
			break
		}
	}
	f.mu.Unlock()
	return accepted, nil
}

// objectDiff compares two objects of one kind and version as their Go type, the
// metadata the API server manages left out, and the kind's schemaless spec fields (pod
// and claim templates) as JSON. It returns "" when they are equal.
func objectDiff(want, got *unstructured.Unstructured) (string, error) {
	want, got = want.DeepCopy(), got.DeepCopy()
	var diffs []string
	for _, field := range schemalessSpecFields[want.GetKind()] {
		wantValue, _, _ := unstructured.NestedFieldNoCopy(want.Object, "spec", field)
		gotValue, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", field)
		if mustJSON(wantValue) != mustJSON(gotValue) {
			diffs = append(diffs, "spec."+field+":\n"+cmp.Diff(wantValue, gotValue))
		}
		unstructured.RemoveNestedField(want.Object, "spec", field)
		unstructured.RemoveNestedField(got.Object, "spec", field)
	}
	wantTyped, err := typed(want)
	if err != nil {
		return "", err
	}
	gotTyped, err := typed(got)
	if err != nil {
		return "", err
	}
	for _, obj := range []runtime.Object{wantTyped, gotTyped} {
		m, err := meta.Accessor(obj)
		if err != nil {
			return "", err
		}
		m.SetResourceVersion("")
		m.SetGeneration(0)
		m.SetManagedFields(nil)
		m.SetCreationTimestamp(metav1.Time{})
		m.SetUID("")
	}
	if !apiequality.Semantic.DeepEqual(wantTyped, gotTyped) {
		diffs = append(diffs, jsonDiff(wantTyped, gotTyped))
	}
	return strings.Join(diffs, "\n"), nil
}

// convertedByAPIModule returns obj converted to version by the api module's conversion
// functions, the ones bosun's /convert serves; the kind's schemaless spec fields are
// passed through as they are.
func convertedByAPIModule(obj *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()
	schemaless := map[string]any{}
	for _, field := range schemalessSpecFields[obj.GetKind()] {
		if value, found, _ := unstructured.NestedFieldCopy(obj.Object, "spec", field); found {
			schemaless[field] = value
		}
		unstructured.RemoveNestedField(obj.Object, "spec", field)
	}
	in, err := typed(obj)
	if err != nil {
		return nil, err
	}
	target := obj.GroupVersionKind()
	target.Version = version
	out, err := bosunscheme.Scheme.New(target)
	if err != nil {
		return nil, fmt.Errorf("no Go type for %s: %w", target, err)
	}
	if err := bosunscheme.Scheme.Convert(in, out, nil); err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", obj.GroupVersionKind(), version, err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return nil, err
	}
	converted := &unstructured.Unstructured{Object: content}
	converted.SetGroupVersionKind(target)
	for _, field := range sortedKeys(schemaless) {
		if err := unstructured.SetNestedField(converted.Object, schemaless[field], "spec", field); err != nil {
			return nil, err
		}
	}
	return converted, nil
}

// typed decodes obj into its version's Go type, through JSON as the conversion webhook
// and clients do.
func typed(obj *unstructured.Unstructured) (runtime.Object, error) {
	out, err := bosunscheme.Scheme.New(obj.GroupVersionKind())
	if err != nil {
		return nil, fmt.Errorf("no Go type for %s: %w", obj.GroupVersionKind(), err)
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("decoding %s into its Go type: %w", obj.GroupVersionKind(), err)
	}
	return out, nil
}

// jsonDiff shows how two values differ in their JSON form.
func jsonDiff(want, got any) string {
	return cmp.Diff(toJSONValue(want), toJSONValue(got))
}

func toJSONValue(v any) any {
	var out any
	if err := json.Unmarshal([]byte(mustJSON(v)), &out); err != nil {
		panic(err)
	}
	return out
}

func expectNoReservedAnnotations(t *testing.T, what string, annotations map[string]string) {
	t.Helper()
	for key := range annotations {
		if strings.HasPrefix(key, reservedPrefix) {
			t.Errorf("%s carries the reserved annotation %s=%s", what, key, annotations[key])
		}
	}
}

func storedVersions(ctx context.Context, t *testing.T, cp *framework.ControlPlane, crd string) []string {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	obj, err := dynamic.NewForConfigOrDie(cp.Config()).Resource(gvr).Get(ctx, crd, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading CRD %s: %v", crd, err)
	}
	versions, _, _ := unstructured.NestedStringSlice(obj.Object, "status", "storedVersions")
	return versions
}

func newBetaDaemonSet(namespace, name string) *appsv1beta1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/agent:1.0"}}},
			},
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
					Type:           appsv1beta1.StandardRollingUpdateType,
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
