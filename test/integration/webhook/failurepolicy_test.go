package webhook

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// allWebhookControllers are every controller with admission webhooks: a manager running
	// them serves every webhook bosun has.
	allWebhookControllers = streamControllers + ",containerrecreaterequest-controller,nodeimage-controller," +
		"imagepulljob-controller,imagelistpulljob-controller,container-launch-priority-controller"
	mutatingConfiguration = "bosun-mutating-webhook-configuration"
	// installDoc is the operator's guide, whose table says what fails closed and what fails
	// open.
	installDoc = "../../../docs/install.md"
)

// policyProbe is a request that one webhook judges.
type policyProbe struct {
	webhook string
	// send makes the request and returns how many of the webhook's mutations the admitted
	// object carries, with the error.
	send func(ctx context.Context) (mutations int, err error)
	// mutations is how many a replica makes. A probe with none is refused by the webhook
	// with code (any when 0) and a message containing contains.
	mutations int
	code      int32
	contains  string
}

// While no replica answers, each webhook's request meets the webhook's failure policy, and
// that policy is the one docs/install.md gives it.
//
// One manager runs every controller that has webhooks, so that every webhook bosun has is
// configured. The test reads the failure policy of each from the configurations the
// manager wrote (that is, from the registrations) and requires the same set of webhooks and
// policies in docs/install.md's table, and a probe for each: a request the webhook judges,
// which with the manager up is refused by it or carries its mutations. Then the manager is
// stopped; its configurations stay. A webhook whose policy is Fail must have its request
// refused with the API server's "failed calling webhook" error naming it (HTTP 500); one
// whose policy is Ignore must have it admitted without its mutations. The mutating webhooks
// are checked first; the validating ones after the mutating configuration is deleted, so
// that each is the first webhook its request meets (the API server calls every mutating
// webhook before any validating one). What the webhooks never see goes through: pod
// deletions, evictions and creations in kube-system, and deletions of the kinds they judge.
func TestFailurePolicyWithNoReplica(t *testing.T) {
	e := setupEnv(t, framework.EnvOptions{Timeout: testTimeout, WaitTimeout: waitTimeout, Remove: admissionRemove})
	cm := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: allWebhookControllers, Webhooks: true})
	restricted := e.nodeRestrictionFixture(t)
	probes := e.policyProbes(t, restricted)
	framework.WaitForWebhooksCalled(e.Ctx, t, e.CP, []framework.WebhookProbe{
		{Webhook: "vdaemonset.kb.io", Send: func(ctx context.Context) { _, _ = probes["vdaemonset.kb.io"].send(ctx) }},
		{Webhook: "mpod.kb.io", Send: func(ctx context.Context) { _, _ = probes["mpod.kb.io"].send(ctx) }},
	}, cm)
	e.newBudgetFixture(t, "guarded", 1, intstr.FromInt32(0), 0)
	systemPod := e.kubeSystemPod(t)
	if _, err := e.Bosun.AppsV1beta1().DaemonSets(e.Namespace).Create(e.Ctx, betaDaemonSet("stored"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet stored: %v", err)
	}

	// The policies: as written, as documented, and probed.
	configured := e.configuredPolicies(t)
	documented := documentedPolicies(t)
	if !maps.Equal(configured, documented) {
		t.Errorf("the configurations' failure policies differ from %s's table:\nconfigured %v\ndocumented %v", installDoc, configured, documented)
	}
	if got, want := slices.Sorted(maps.Keys(probes)), slices.Sorted(maps.Keys(configured)); !slices.Equal(got, want) {
		t.Fatalf("the test probes webhooks %v, the manager configured %v", got, want)
	}
	t.Logf("failure policies: %v", configured)

	// With the manager up, each probe is judged by its webhook.
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		p := probes[name]
		var wrong string
		e.Await(t, name+" to judge its probe", func(ctx context.Context) (bool, error) {
			mutations, err := p.send(ctx)
			switch {
			case p.mutations == 0:
				wrong = wrongUnlessDenied(err, name, p.code, p.contains)
			case err != nil:
				wrong = wrongUnlessAdmitted(err)
			case mutations != p.mutations:
				wrong = fmt.Sprintf("admitted with %d of its %d mutations", mutations, p.mutations)
			default:
				wrong = ""
			}
			return wrong == "", nil
		}, func() string { return wrong })
	}

	// No replica: the configurations stay, nobody answers.
	cm.Stop(framework.DefaultStopGracePeriod)
	mutating, validating := e.configurations(t)
	if mutating == nil || validating == nil {
		t.Fatalf("the stopped manager's configurations are gone (mutating %v, validating %v): nothing would fail closed", mutating != nil, validating != nil)
	}
	for _, hook := range mutating.Webhooks {
		e.expectPolicy(t, probes[hook.Name], *hook.FailurePolicy)
	}
	e.expectUnjudged(t, systemPod)

	admission := e.Client.AdmissionregistrationV1()
	if err := admission.MutatingWebhookConfigurations().Delete(e.Ctx, mutatingConfiguration, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the mutating configuration: %v", err)
	}
	// The API server sees the deletion through an informer: wait until a request with a
	// mutating webhook reaches its validating one.
	var last string
	e.Await(t, "the API server to drop the mutating configuration", func(ctx context.Context) (bool, error) {
		_, err := probes["vdaemonset.kb.io"].send(ctx)
		last = fmt.Sprint(err)
		return err != nil && strings.Contains(err.Error(), `failed calling webhook "vdaemonset.kb.io"`), nil
	}, func() string { return last })
	for _, hook := range validating.Webhooks {
		e.expectPolicy(t, probes[hook.Name], *hook.FailurePolicy)
	}
}

// expectPolicy checks the answer to p, sent while no replica answers, against policy.
func (e *testEnv) expectPolicy(t *testing.T, p policyProbe, policy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	mutations, err := p.send(e.Ctx)
	t.Logf("%s (%s), no replica: %d mutations, %v", p.webhook, policy, mutations, err)
	switch policy {
	case admissionregistrationv1.Fail:
		if err == nil || framework.StatusCode(err) != http.StatusInternalServerError ||
			!strings.Contains(err.Error(), fmt.Sprintf("failed calling webhook %q", p.webhook)) {
			t.Errorf("%s (Fail) with no replica: %v (HTTP %d), want HTTP 500 failed calling webhook %q", p.webhook, err, framework.StatusCode(err), p.webhook)
		}
	case admissionregistrationv1.Ignore:
		if err != nil || mutations != 0 {
			t.Errorf("%s (Ignore) with no replica: %v, %d mutations; want it admitted with none", p.webhook, err, mutations)
		}
	default:
		t.Errorf("%s has failure policy %q", p.webhook, policy)
	}
}

// expectUnjudged checks that what no webhook is called for goes through with no replica: a
// pod created, evicted and deleted in kube-system, a DaemonSet's status written and the
// DaemonSet deleted.
func (e *testEnv) expectUnjudged(t *testing.T, systemPod string) {
	t.Helper()
	pod, err := e.Client.CoreV1().Pods(metav1.NamespaceSystem).Create(e.Ctx, kruisePod("probe", nil), framework.DryRunCreate)
	if err != nil || hasReadinessGate(pod) {
		t.Errorf("creating a pod in kube-system with no replica: %v; want it admitted without a readiness gate", err)
	}
	if err := evict(e.Ctx, e.Client, metav1.NamespaceSystem, systemPod); err != nil {
		t.Errorf("evicting a pod in kube-system with no replica: %v", err)
	}
	if err := e.Client.CoreV1().Pods(metav1.NamespaceSystem).Delete(e.Ctx, systemPod, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a pod in kube-system with no replica: %v", err)
	}
	daemonSets := e.Bosun.AppsV1beta1().DaemonSets(e.Namespace)
	ds, err := daemonSets.Get(e.Ctx, "stored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Status.CurrentNumberScheduled = 42
	if _, err := daemonSets.UpdateStatus(e.Ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Errorf("writing a DaemonSet's status with no replica: %v", err)
	}
	if err := daemonSets.Delete(e.Ctx, "stored", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a DaemonSet with no replica: %v", err)
	}
}

// kubeSystemPod creates a pod in kube-system, deleted when the test ends if it still exists.
func (e *testEnv) kubeSystemPod(t *testing.T) string {
	t.Helper()
	name := "bosun-webhook-probe-" + e.Namespace
	if _, err := e.Client.CoreV1().Pods(metav1.NamespaceSystem).Create(e.Ctx, plainPod(name, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s in kube-system: %v", name, err)
	}
	e.OnCleanup(func(ctx context.Context) error {
		err := e.Client.CoreV1().Pods(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !strings.Contains(err.Error(), "not found") {
			return err
		}
		return nil
	})
	return name
}

// configurations reads bosun's two webhook configurations (nil when one is missing).
func (e *testEnv) configurations(t *testing.T) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	admission := e.Client.AdmissionregistrationV1()
	mutating, err := admission.MutatingWebhookConfigurations().Get(e.Ctx, mutatingConfiguration, metav1.GetOptions{})
	if err != nil {
		t.Logf("reading %s: %v", mutatingConfiguration, err)
		mutating = nil
	}
	validating, err := admission.ValidatingWebhookConfigurations().Get(e.Ctx, validatingConfiguration, metav1.GetOptions{})
	if err != nil {
		t.Logf("reading %s: %v", validatingConfiguration, err)
		validating = nil
	}
	return mutating, validating
}

// configuredPolicies are the failure policies of the webhooks the manager configured, by
// webhook name.
func (e *testEnv) configuredPolicies(t *testing.T) map[string]string {
	t.Helper()
	mutating, validating := e.configurations(t)
	if mutating == nil || validating == nil {
		t.Fatal("the manager wrote no webhook configurations")
	}
	policies := map[string]string{}
	for _, hook := range mutating.Webhooks {
		policies[hook.Name] = string(ptr.Deref(hook.FailurePolicy, ""))
	}
	for _, hook := range validating.Webhooks {
		policies[hook.Name] = string(ptr.Deref(hook.FailurePolicy, ""))
	}
	return policies
}

var (
	// docWebhook is a webhook's name in the first column of install.md's table, docPolicy a
	// failure policy in the third.
	docWebhook = regexp.MustCompile("`([a-z0-9.-]+\\.(?:kb\\.io|bosun\\.dev))`")
	docPolicy  = regexp.MustCompile("^ *`(Fail|Ignore)` *$")
)

// documentedPolicies reads the failure policies from the table of docs/install.md whose
// rows name webhooks: `name`, `name` | what it is called on | `Fail` or `Ignore` | ...
func documentedPolicies(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(installDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	policies := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		cells := strings.Split(scanner.Text(), "|")
		// A table row: "", then four cells, then "".
		if len(cells) != 6 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		names := docWebhook.FindAllStringSubmatch(cells[1], -1)
		policy := docPolicy.FindStringSubmatch(cells[3])
		if len(names) == 0 || policy == nil {
			continue
		}
		for _, name := range names {
			if _, twice := policies[name[1]]; twice {
				t.Errorf("%s names webhook %s twice", installDoc, name[1])
			}
			policies[name[1]] = policy[1]
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if len(policies) == 0 {
		t.Fatalf("%s has no table of the webhooks' failure policies", installDoc)
	}
	return policies
}

// policyProbes are a probe per webhook, by webhook name, in the namespace holding the
// budget fixture guarded and the objects of node restricted. Everything is written in
// v1beta1, which needs no conversion.
func (e *testEnv) policyProbes(t *testing.T, restricted nodeObjects) map[string]policyProbe {
	ns := e.Namespace
	apps, policy := e.Bosun.AppsV1beta1(), e.Bosun.PolicyV1beta1()
	pods := e.Client.CoreV1().Pods(ns)
	count := func(marks ...bool) int {
		n := 0
		for _, mark := range marks {
			if mark {
				n++
			}
		}
		return n
	}
	nodeImage := func(ttl *int32) *appsv1beta1.NodeImage {
		return &appsv1beta1.NodeImage{
			ObjectMeta: metav1.ObjectMeta{Name: "bosun-webhook-probe-" + ns},
			Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{
				"nginx": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "1.25", PullPolicy: &appsv1beta1.ImageTagPullPolicy{TTLSecondsAfterFinished: ttl}}}},
			}},
		}
	}
	pullJob := func(image string) *appsv1beta1.ImagePullJob {
		return &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: appsv1beta1.ImagePullJobSpec{Image: image}}
	}
	listJob := func(images ...string) *appsv1beta1.ImageListPullJob {
		return &appsv1beta1.ImageListPullJob{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: appsv1beta1.ImageListPullJobSpec{Images: images}}
	}
	invalidDaemonSet := betaDaemonSet("invalid")
	invalidDaemonSet.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	invalidCloneSet := cloneSet("invalid")
	invalidCloneSet.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	elsewhereConfig, err := e.CP.DaemonConfig(e.Ctx, e.NodeName("elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := bosunclientset.NewForConfig(elsewhereConfig)
	if err != nil {
		t.Fatal(err)
	}
	dryRunPatch := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}

	list := []policyProbe{
		{webhook: "mdaemonset.kb.io", mutations: 1, send: func(ctx context.Context) (int, error) {
			ds, err := apps.DaemonSets(ns).Create(ctx, betaDaemonSet("valid"), framework.DryRunCreate)
			if err != nil {
				return 0, err
			}
			return count(ds.Spec.RevisionHistoryLimit != nil), nil
		}},
		{webhook: "vdaemonset.kb.io", code: http.StatusUnprocessableEntity, contains: "spec.template.spec.restartPolicy", send: func(ctx context.Context) (int, error) {
			_, err := apps.DaemonSets(ns).Create(ctx, invalidDaemonSet, framework.DryRunCreate)
			return 0, err
		}},
		{webhook: "mcloneset.kb.io", mutations: 1, send: func(ctx context.Context) (int, error) {
			cs, err := apps.CloneSets(ns).Create(ctx, cloneSet("valid"), framework.DryRunCreate)
			if err != nil {
				return 0, err
			}
			return count(cs.Spec.RevisionHistoryLimit != nil), nil
		}},
		{webhook: "vcloneset.kb.io", contains: "spec.template.spec.restartPolicy", send: func(ctx context.Context) (int, error) {
			_, err := apps.CloneSets(ns).Create(ctx, invalidCloneSet, framework.DryRunCreate)
			return 0, err
		}},
		{webhook: "mpodunavailablebudget.kb.io", mutations: 1, send: func(ctx context.Context) (int, error) {
			b, err := policy.PodUnavailableBudgets(ns).Create(ctx, staleCarrierBudget("stale"), framework.DryRunCreate)
			if err != nil {
				return 0, err
			}
			_, stale := b.Annotations[policyv1beta1.PubProtectOperationAnnotation]
			return count(!stale), nil
		}},
		{webhook: "vpodunavailablebudget.kb.io", code: http.StatusBadRequest, send: func(ctx context.Context) (int, error) {
			_, err := policy.PodUnavailableBudgets(ns).Create(ctx, invalidBudget("invalid"), framework.DryRunCreate)
			return 0, err
		}},
		{webhook: "mcontainerrecreaterequest.kb.io", code: http.StatusBadRequest, contains: "spec.podName", send: func(ctx context.Context) (int, error) {
			crr := &appsv1beta1.ContainerRecreateRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "probe"},
				Spec: appsv1beta1.ContainerRecreateRequestSpec{
					PodName: "missing", Containers: []appsv1beta1.ContainerRecreateRequestContainer{{Name: "main"}},
				},
			}
			_, err := apps.ContainerRecreateRequests(ns).Create(ctx, crr, framework.DryRunCreate)
			return 0, err
		}},
		{webhook: "mnodeimage.kb.io", mutations: 1, send: func(ctx context.Context) (int, error) {
			ni, err := apps.NodeImages().Create(ctx, nodeImage(ptr.To[int32](300)), framework.DryRunCreate)
			if err != nil {
				return 0, err
			}
			return count(ni.Spec.Images["nginx"].Tags[0].CreatedAt != nil), nil
		}},
		{webhook: "vnodeimage.kb.io", code: http.StatusBadRequest, contains: "ttlSecondsAfterFinished", send: func(ctx context.Context) (int, error) {
			_, err := apps.NodeImages().Create(ctx, nodeImage(nil), framework.DryRunCreate)
			return 0, err
		}},
		{webhook: "mimagepulljob.kb.io", mutations: 1, send: func(ctx context.Context) (int, error) {
			job, err := apps.ImagePullJobs(ns).Create(ctx, pullJob("nginx:1.25"), framework.DryRunCreate)
			if err != nil {
				return 0, err
			}
			return count(slices.Contains(job.Finalizers, appsv1beta1.ImagePullJobProtectionFinalizer)), nil
		}},
		{webhook: "vimagepulljob.kb.io", code: http.StatusBadRequest, contains: "spec.image", send: func(ctx context.Context) (int, error) {
			_, err := apps.ImagePullJobs(ns).Create(ctx, pullJob("Not A Reference"), framework.DryRunCreate)
			return 0, err
		}},
		{webhook: "mimagelistpulljob-v1beta1.kb.io", mutations: 1, send: func(ctx context.Context) (int, error) {
			job, err := apps.ImageListPullJobs(ns).Create(ctx, listJob("nginx:1.25"), framework.DryRunCreate)
			if err != nil {
				return 0, err
			}
			return count(job.Spec.CompletionPolicy.Type != ""), nil
		}},
		{webhook: "vimagelistpulljob-v1beta1.kb.io", code: http.StatusBadRequest, contains: "spec.images[1]", send: func(ctx context.Context) (int, error) {
			_, err := apps.ImageListPullJobs(ns).Create(ctx, listJob("nginx:1.25", "nginx:1.25"), framework.DryRunCreate)
			return 0, err
		}},
		{webhook: "mpod.kb.io", mutations: 2, send: func(ctx context.Context) (int, error) {
			pod, err := pods.Create(ctx, kruisePod("new", map[string]string{"app": "guarded"}), framework.DryRunCreate)
			if err != nil {
				return 0, err
			}
			return count(hasReadinessGate(pod), relatedBudget(pod) != ""), nil
		}},
		{webhook: "vpod.kb.io", code: http.StatusForbidden, contains: budgetDeniedMessage, send: func(ctx context.Context) (int, error) {
			return 0, pods.Delete(ctx, "guarded-0", dryRunDelete)
		}},
		{webhook: "vpodeviction.kb.io", code: http.StatusForbidden, contains: budgetDeniedMessage, send: func(ctx context.Context) (int, error) {
			return 0, evict(ctx, e.Client, ns, "guarded-0")
		}},
		// Another node's agent writes the status of the node's NodeImage and request.
		{webhook: noderestriction.NodeImageName, code: http.StatusForbidden, contains: "may not write NodeImage", send: func(ctx context.Context) (int, error) {
			_, err := elsewhere.AppsV1beta1().NodeImages().Patch(ctx, restricted.node, types.MergePatchType, []byte(`{"status":{"desired":0}}`), dryRunPatch, "status")
			return 0, err
		}},
		{webhook: noderestriction.ContainerRecreateRequestName, code: http.StatusForbidden, contains: "may not write ContainerRecreateRequest", send: func(ctx context.Context) (int, error) {
			_, err := elsewhere.AppsV1beta1().ContainerRecreateRequests(ns).Patch(ctx, restricted.request, types.MergePatchType, []byte(`{"status":{"phase":"Pending"}}`), dryRunPatch, "status")
			return 0, err
		}},
	}
	probes := map[string]policyProbe{}
	for _, p := range list {
		probes[p.webhook] = p
	}
	return probes
}

// nodeObjects are a Node's NodeImage (named after it) and a ContainerRecreateRequest of a
// pod on it, which only that node's agent may write.
type nodeObjects struct {
	node    string
	request string
}

// nodeRestrictionFixture creates a Node, its NodeImage, a running pod on it and a request
// to recreate the pod's container, labelled with the Node by the mutating webhook.
func (e *testEnv) nodeRestrictionFixture(t *testing.T) nodeObjects {
	t.Helper()
	node := e.CreateNode(t, e.NewNode("restricted", nil, time.Now())).Name
	nodeImage := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if _, err := e.Bosun.AppsV1beta1().NodeImages().Create(e.Ctx, nodeImage, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating NodeImage %s: %v", node, err)
	}
	e.OnCleanup(func(ctx context.Context) error {
		err := e.Bosun.AppsV1beta1().NodeImages().Delete(ctx, node, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	pod := plainPod("restricted", nil)
	pod.Spec.NodeName = node
	e.Pods().Create(t, pod)
	e.Pods().UpdateStatus(t, pod.Name, func(pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: webhookImage, Ready: true,
			ContainerID: "containerd://" + strings.Repeat("ab", 32),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	})
	request := &appsv1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "restricted"},
		Spec: appsv1beta1.ContainerRecreateRequestSpec{PodName: pod.Name,
			Containers: []appsv1beta1.ContainerRecreateRequestContainer{{Name: "main"}}},
	}
	created, err := e.Bosun.AppsV1beta1().ContainerRecreateRequests(e.Namespace).Create(e.Ctx, request, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ContainerRecreateRequest %s: %v", request.Name, err)
	}
	if got := created.Labels[appsv1beta1.ContainerRecreateRequestNodeNameKey]; got != node {
		t.Fatalf("ContainerRecreateRequest %s is labelled with node %q, want %q", created.Name, got, node)
	}
	return nodeObjects{node: node, request: created.Name}
}
