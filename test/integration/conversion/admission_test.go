package conversion

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// admissionControllers are the controllers whose admission webhooks the tests send requests
// to: the manager serves the webhooks of the controllers it runs.
const admissionControllers = "advanceddaemonset,podunavailablebudget,containerrecreaterequest,imagepulljob"

// startAdmissionManager runs bosun-controller-manager with admissionControllers and their
// webhooks until the test ends, and returns once the API server calls each of them.
func (e *testEnv) startAdmissionManager(t *testing.T) *framework.ControllerManager {
	t.Helper()
	ds := alphaDaemonSet("admission-probe")
	pub := &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "admission-probe"},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "admission-probe"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	crr := alphaRequest("admission-probe", "admission-probe", "app")
	job := alphaJob("admission-probe", "registry.example/probe:1")
	sendDS := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Create(ctx, ds, framework.DryRunCreate)
	}
	sendPUB := func(ctx context.Context) {
		_, _ = e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace).Create(ctx, pub, framework.DryRunCreate)
	}
	sendJob := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Create(ctx, job, framework.DryRunCreate)
	}
	return framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP,
		framework.ControllerManagerOptions{Controllers: admissionControllers},
		framework.WebhookProbe{Webhook: "mdaemonset.kb.io", Send: sendDS},
		framework.WebhookProbe{Webhook: "vdaemonset.kb.io", Send: sendDS},
		framework.WebhookProbe{Webhook: "mpodunavailablebudget.kb.io", Send: sendPUB},
		framework.WebhookProbe{Webhook: "vpodunavailablebudget.kb.io", Send: sendPUB},
		framework.WebhookProbe{Webhook: "mcontainerrecreaterequest.kb.io", Send: func(ctx context.Context) {
			// Refused or not (the pod does not exist), the request reaches the webhook.
			_, _ = e.Bosun.AppsV1alpha1().ContainerRecreateRequests(e.Namespace).Create(ctx, crr, framework.DryRunCreate)
		}},
		framework.WebhookProbe{Webhook: "mimagepulljob.kb.io", Send: sendJob},
		framework.WebhookProbe{Webhook: "vimagepulljob.kb.io", Send: sendJob},
	)
}

// warningRecorder keeps the warnings the API server returns with its answers.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (r *warningRecorder) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// take returns the warnings received since the last call.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

// A v1beta1 budget whose protect-total-replicas annotation disagrees with
// spec.protectTotalReplicas is admitted with the field deciding: the annotation is removed and
// the client warned. An annotation that agrees stays, without a warning; an update that makes
// it disagree is treated like a create.
func TestStaleCarrierRemovedWithWarning(t *testing.T) {
	e := setup(t)
	e.startAdmissionManager(t)
	warnings := &warningRecorder{}
	config := e.CP.Config()
	config.WarningHandler = warnings
	budgets := bosunclient.NewForConfigOrDie(config).PolicyV1beta1().PodUnavailableBudgets(e.Namespace)
	newBudget := func(name, total string) *policyv1beta1.PodUnavailableBudget {
		return &policyv1beta1.PodUnavailableBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{protectTotalReplicasKey: total, "example.com/team": "web"}},
			Spec: policyv1beta1.PodUnavailableBudgetSpec{
				Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				MaxUnavailable:       ptr.To(intstr.FromInt32(1)),
				ProtectTotalReplicas: ptr.To[int32](3),
			},
		}
	}
	wantWarning := func(value string) string {
		return fmt.Sprintf("metadata.annotations[%s]: removed: %q disagrees with spec.protectTotalReplicas (3)", protectTotalReplicasKey, value)
	}
	expectRemoved := func(what string, pub *policyv1beta1.PodUnavailableBudget, value string) {
		t.Helper()
		if got, ok := pub.Annotations[protectTotalReplicasKey]; ok {
			t.Errorf("%s: annotation %s = %q stayed, want it removed", what, protectTotalReplicasKey, got)
		}
		if pub.Annotations["example.com/team"] != "web" || pub.Spec.ProtectTotalReplicas == nil || *pub.Spec.ProtectTotalReplicas != 3 {
			t.Errorf("%s: annotations %v, protectTotalReplicas %v; want the other annotation and the field kept", what,
				pub.Annotations, pub.Spec.ProtectTotalReplicas)
		}
		if got := warnings.take(); len(got) != 1 || !strings.Contains(got[0], wantWarning(value)) {
			t.Errorf("%s: warnings %q, want one containing %q", what, got, wantWarning(value))
		}
	}

	stale, err := budgets.Create(e.Ctx, newBudget("stale", "5"), metav1.CreateOptions{})
	framework.MustSucceed(t, "creating a v1beta1 budget with protectTotalReplicas 3 and annotation \"5\"", err)
	expectRemoved("create", stale, "5")
	// v1alpha1 readers see the field's value in the annotation.
	if alpha := e.PodUnavailableBudgets().Get(t, "stale"); alpha.Annotations[protectTotalReplicasKey] != "3" {
		t.Errorf("v1alpha1 view has annotation %s = %q, want \"3\"", protectTotalReplicasKey, alpha.Annotations[protectTotalReplicasKey])
	}

	agreeing, err := budgets.Create(e.Ctx, newBudget("agreeing", "3"), metav1.CreateOptions{})
	framework.MustSucceed(t, "creating a v1beta1 budget whose annotation agrees with protectTotalReplicas", err)
	if agreeing.Annotations[protectTotalReplicasKey] != "3" {
		t.Errorf("an agreeing annotation was changed: %v", agreeing.Annotations)
	}
	if got := warnings.take(); len(got) != 0 {
		t.Errorf("warnings %q for an agreeing annotation, want none", got)
	}

	// The budget controller writes the status meanwhile: each attempt starts from the latest
	// budget, and only the warnings of the one that succeeds count.
	var updated *policyv1beta1.PodUnavailableBudget
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := budgets.Get(e.Ctx, "agreeing", metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Annotations[protectTotalReplicasKey] = "7"
		warnings.take()
		updated, err = budgets.Update(e.Ctx, latest, metav1.UpdateOptions{})
		return err
	})
	framework.MustSucceed(t, "updating the annotation to disagree with protectTotalReplicas", err)
	expectRemoved("update", updated, "7")
}

// admissionCase is one object, written by a v1alpha1 client, whose v1beta1 form (its
// conversion, without the reserved annotations, as a v1beta1 client would write it) must get
// the same answer from admission.
type admissionCase[A any] struct {
	name string
	obj  A
	// code is the HTTP code both versions are refused with; 0 when both are admitted.
	code int32
	// names is a text both refusals carry, usually the field.
	names string
}

// object is a typed API object of bosun's clientset.
type object interface {
	metav1.Object
	runtime.Object
}

// expectSameAdmission sends every case, by dry-run creation, in v1alpha1 (createAlpha) and in
// v1beta1 (createBeta of up(obj)), and checks both get the answer the case wants. For an
// admitted object it also checks that defaulting commutes with conversion: up of what
// v1alpha1 admission made of the object equals what v1beta1 admission made of its
// conversion, up to the reserved annotations.
func expectSameAdmission[A, B object](t *testing.T, ctx context.Context, cases []admissionCase[A], up func(A) B,
	createAlpha func(context.Context, A) (A, error), createBeta func(context.Context, B) (B, error), specOf func(B) any) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			beta := up(c.obj)
			beta.SetAnnotations(withoutReserved(beta.GetAnnotations()))
			beta.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			alphaGot, alphaErr := createAlpha(ctx, c.obj)
			betaGot, betaErr := createBeta(ctx, beta)
			alphaCode, betaCode := framework.StatusCode(alphaErr), framework.StatusCode(betaErr)
			if alphaCode != betaCode || alphaCode != c.code || (alphaErr == nil) != (c.code == 0) {
				t.Fatalf("v1alpha1 answered %d (%v), v1beta1 %d (%v); want both %d", alphaCode, alphaErr, betaCode, betaErr, c.code)
			}
			if c.code != 0 {
				for version, err := range map[string]error{"v1alpha1": alphaErr, "v1beta1": betaErr} {
					if !strings.Contains(err.Error(), c.names) {
						t.Errorf("the %s refusal %q does not name %q", version, err, c.names)
					}
				}
				return
			}
			converted := up(alphaGot)
			if !apiequality.Semantic.DeepEqual(specOf(converted), specOf(betaGot)) {
				t.Errorf("defaulting does not commute with conversion:\nv1alpha1 admitted, converted: %s\nv1beta1 admitted:             %s",
					toJSON(specOf(converted)), toJSON(specOf(betaGot)))
			}
			if a, b := withoutReserved(converted.GetAnnotations()), withoutReserved(betaGot.GetAnnotations()); !maps.Equal(a, b) {
				t.Errorf("annotations after admission: v1alpha1 converted %v, v1beta1 %v", a, b)
			}
			if a, b := converted.GetLabels(), betaGot.GetLabels(); !maps.Equal(a, b) {
				t.Errorf("labels after admission: v1alpha1 converted %v, v1beta1 %v", a, b)
			}
		})
	}
}

// dryRun is the CreateOptions of the requests: admitted and validated, never stored.
var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// Objects of every kind with webhooks, valid and invalid, get the same answer and HTTP code in
// both versions, and admitted ones the same defaults.
func TestAdmissionAnswersBothVersionsAlike(t *testing.T) {
	e := setup(t)
	e.startAdmissionManager(t)
	ns := e.Namespace
	ctx := e.Ctx

	t.Run("DaemonSet", func(t *testing.T) {
		dsWith := func(name string, mutate func(*appsv1alpha1.DaemonSet)) *appsv1alpha1.DaemonSet {
			ds := alphaDaemonSet(name)
			mutate(ds)
			return ds
		}
		rolling := func(ru appsv1alpha1.RollingUpdateDaemonSet) func(*appsv1alpha1.DaemonSet) {
			return func(ds *appsv1alpha1.DaemonSet) {
				ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &ru}
			}
		}
		expectSameAdmission(t, ctx, []admissionCase[*appsv1alpha1.DaemonSet]{
			{name: "minimal", obj: alphaDaemonSet("ds")},
			{name: "partitioned by annotation", obj: dsWith("ds", func(ds *appsv1alpha1.DaemonSet) {
				ds.Annotations = map[string]string{progressiveCreatePodKey: "true"}
			})},
			{name: "surging rollout", obj: dsWith("ds", rolling(appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.DeprecatedSurgingRollingUpdateType}))},
			{name: "in-place rollout with partition", obj: dsWith("ds", rolling(appsv1alpha1.RollingUpdateDaemonSet{
				Type: appsv1alpha1.InplaceRollingUpdateType, Partition: ptr.To(intstr.FromInt32(1)),
			}))},
			{name: "restartPolicy OnFailure", code: http.StatusUnprocessableEntity, names: "spec.template.spec.restartPolicy",
				obj: dsWith("ds", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure })},
			{name: "selector not matching the template", code: http.StatusUnprocessableEntity, names: "spec.template.metadata.labels",
				obj: dsWith("ds", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"app": "other"} })},
			{name: "maxSurge with maxUnavailable", code: http.StatusUnprocessableEntity, names: "spec.updateStrategy.rollingUpdate.maxSurge",
				obj: dsWith("ds", rolling(appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.StandardRollingUpdateType, MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				}))},
		}, func(a *appsv1alpha1.DaemonSet) *appsv1beta1.DaemonSet {
			b := &appsv1beta1.DaemonSet{}
			appsv1alpha1.ConvertDaemonSetToV1beta1(a, b)
			return b
		}, func(ctx context.Context, ds *appsv1alpha1.DaemonSet) (*appsv1alpha1.DaemonSet, error) {
			return e.Bosun.AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, dryRun)
		}, func(ctx context.Context, ds *appsv1beta1.DaemonSet) (*appsv1beta1.DaemonSet, error) {
			return e.Bosun.AppsV1beta1().DaemonSets(ns).Create(ctx, ds, dryRun)
		}, func(ds *appsv1beta1.DaemonSet) any { return ds.Spec })
	})

	t.Run("PodUnavailableBudget", func(t *testing.T) {
		pubWith := func(mutate func(*policyv1alpha1.PodUnavailableBudget)) *policyv1alpha1.PodUnavailableBudget {
			pub := alphaBudget("pub")
			mutate(pub)
			return pub
		}
		expectSameAdmission(t, ctx, []admissionCase[*policyv1alpha1.PodUnavailableBudget]{
			{name: "selector and maxUnavailable", obj: alphaBudget("pub")},
			{name: "carried operations and total", obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Annotations = map[string]string{protectOperationsKey: "EVICT,DELETE", protectTotalReplicasKey: "3"}
			})},
			{name: "percentage minAvailable", obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Spec.MaxUnavailable, p.Spec.MinAvailable = nil, ptr.To(intstr.FromString("50%"))
			})},
			{name: "neither selector nor targetRef", code: http.StatusBadRequest, names: "spec.selector",
				obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.Selector = nil })},
			{name: "maxUnavailable and minAvailable", code: http.StatusBadRequest, names: "spec.minAvailable",
				obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(1)) })},
			{name: "unparseable total replicas", code: http.StatusBadRequest, names: "metadata.annotations[" + protectTotalReplicasKey + "]",
				obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) {
					p.Annotations = map[string]string{protectTotalReplicasKey: "abc"}
				})},
			// Carriers the v1beta1 fields cannot hold stay annotations in v1beta1, so both
			// versions are judged by the annotation rules.
			{name: "total replicas below 1 (no override)", obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Annotations = map[string]string{protectTotalReplicasKey: "0"}
			})},
			{name: "operations with spaces", obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) {
				p.Annotations = map[string]string{protectOperationsKey: "EVICT, DELETE"}
			})},
			{name: "unknown operation", code: http.StatusBadRequest, names: "metadata.annotations[" + protectOperationsKey + "]",
				obj: pubWith(func(p *policyv1alpha1.PodUnavailableBudget) {
					p.Annotations = map[string]string{protectOperationsKey: "DELETE,REBOOT"}
				})},
		}, func(a *policyv1alpha1.PodUnavailableBudget) *policyv1beta1.PodUnavailableBudget {
			b := &policyv1beta1.PodUnavailableBudget{}
			policyv1alpha1.ConvertPodUnavailableBudgetToV1beta1(a, b)
			return b
		}, func(ctx context.Context, p *policyv1alpha1.PodUnavailableBudget) (*policyv1alpha1.PodUnavailableBudget, error) {
			return e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, p, dryRun)
		}, func(ctx context.Context, p *policyv1beta1.PodUnavailableBudget) (*policyv1beta1.PodUnavailableBudget, error) {
			return e.Bosun.PolicyV1beta1().PodUnavailableBudgets(ns).Create(ctx, p, dryRun)
		}, func(p *policyv1beta1.PodUnavailableBudget) any { return p.Spec })
	})

	t.Run("ContainerRecreateRequest", func(t *testing.T) {
		e.createRunningPod(t, "web", e.CreateNode(t, e.NewNode("a", nil, time.Now())).Name, "app")
		expectSameAdmission(t, ctx, []admissionCase[*appsv1alpha1.ContainerRecreateRequest]{
			{name: "a running pod's container", obj: alphaRequest("crr", "web", "app")},
			{name: "short deadline", code: http.StatusBadRequest, names: "spec.activeDeadlineSeconds", obj: func() *appsv1alpha1.ContainerRecreateRequest {
				r := alphaRequest("crr", "web", "app")
				r.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
				return r
			}()},
			{name: "unknown container", code: http.StatusBadRequest, names: "spec.containers[0].name", obj: alphaRequest("crr", "web", "nope")},
			{name: "missing pod", code: http.StatusBadRequest, names: "spec.podName", obj: alphaRequest("crr", "missing", "app")},
		}, func(a *appsv1alpha1.ContainerRecreateRequest) *appsv1beta1.ContainerRecreateRequest {
			b := &appsv1beta1.ContainerRecreateRequest{}
			appsv1alpha1.ConvertContainerRecreateRequestToV1beta1(a, b)
			return b
		}, func(ctx context.Context, r *appsv1alpha1.ContainerRecreateRequest) (*appsv1alpha1.ContainerRecreateRequest, error) {
			return e.Bosun.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, r, dryRun)
		}, func(ctx context.Context, r *appsv1beta1.ContainerRecreateRequest) (*appsv1beta1.ContainerRecreateRequest, error) {
			return e.Bosun.AppsV1beta1().ContainerRecreateRequests(ns).Create(ctx, r, dryRun)
		}, func(r *appsv1beta1.ContainerRecreateRequest) any { return r.Spec })
	})

	t.Run("ImagePullJob", func(t *testing.T) {
		expectSameAdmission(t, ctx, []admissionCase[*appsv1alpha1.ImagePullJob]{
			{name: "an image", obj: alphaJob("job", "registry.example/app:1.2")},
			{name: "unparseable image", code: http.StatusBadRequest, names: "spec.image", obj: alphaJob("job", "Registry.Example/App:1.2!")},
			{name: "selector and podSelector", code: http.StatusUnprocessableEntity, names: "selector and podSelector are mutually exclusive", obj: func() *appsv1alpha1.ImagePullJob {
				j := alphaJob("job", "registry.example/app:1.2")
				j.Spec.Selector = &appsv1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}
				j.Spec.PodSelector = &appsv1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
				return j
			}()},
		}, func(a *appsv1alpha1.ImagePullJob) *appsv1beta1.ImagePullJob {
			b := &appsv1beta1.ImagePullJob{}
			appsv1alpha1.ConvertImagePullJobToV1beta1(a, b)
			return b
		}, func(ctx context.Context, j *appsv1alpha1.ImagePullJob) (*appsv1alpha1.ImagePullJob, error) {
			return e.Bosun.AppsV1alpha1().ImagePullJobs(ns).Create(ctx, j, dryRun)
		}, func(ctx context.Context, j *appsv1beta1.ImagePullJob) (*appsv1beta1.ImagePullJob, error) {
			return e.Bosun.AppsV1beta1().ImagePullJobs(ns).Create(ctx, j, dryRun)
		}, func(j *appsv1beta1.ImagePullJob) any { return j.Spec })
	})
}

// alphaJob is a v1alpha1 ImagePullJob of image.
func alphaJob(name, image string) *appsv1alpha1.ImagePullJob {
	return &appsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1alpha1.ImagePullJobSpec{Image: image}}
}

// createRunningPod creates a pod bound to node with the named containers, and writes its
// status as a kubelet would once they all run: what a ContainerRecreateRequest needs.
func (e *testEnv) createRunningPod(t *testing.T, name, node string, containers ...string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: image})
	}
	e.Pods().Create(t, pod)
	e.Pods().UpdateStatus(t, name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		p.Status.ContainerStatuses = nil
		for i, c := range containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c, Image: image, ImageID: "registry.example/agent@sha256:" + strings.Repeat("0", 64), Ready: true, Started: ptr.To(true),
				ContainerID: fmt.Sprintf("containerd://%064x", i+1),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			})
		}
	})
}
