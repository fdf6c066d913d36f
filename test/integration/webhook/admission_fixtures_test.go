package webhook

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The objects and answers of the tests that send every kind of admission request: those of
// a replica being killed and those of no replica at all.

const (
	// budgetDeniedMessage is the reason a budget with nothing left to spend gives.
	budgetDeniedMessage = "pub unavailable allowed is negative"
	// webhookImage is the image of every pod and template: nothing runs it.
	webhookImage = "registry.example/web:1.0"
)

// admissionRemove is what the admission tests leave behind for the cleanup to remove: the
// budgets, workloads, requests and pods of their namespace.
var admissionRemove = []string{
	"podunavailablebudgets.policy.kruise.io", "clonesets.apps.kruise.io", "daemonsets.apps.kruise.io",
	"containerrecreaterequests.apps.kruise.io", "replicasets.apps", "pods",
}

// ---- Builders, all in v1beta1 unless named otherwise ----

func betaDaemonSet(name string) *appsv1beta1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					// On no node: the controller of a stored DaemonSet makes no pods.
					NodeSelector: map[string]string{"bosun.dev/no-such-node": "true"},
					Containers:   []corev1.Container{{Name: "main", Image: webhookImage}},
				},
			},
		},
	}
}

// invalidAlphaDaemonSet is a v1alpha1 DaemonSet that the validating webhook refuses: its
// pods could not restart.
func invalidAlphaDaemonSet(name string) *appsv1alpha1.DaemonSet {
	ds := daemonSet(name)
	ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	return ds
}

// cloneSet has no replicas, so that the controller of a stored one makes no pods.
func cloneSet(name string) *appsv1beta1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: webhookImage}}},
			},
		},
	}
}

func budget(name string, selector map[string]string, maxUnavailable intstr.IntOrString) *policyv1beta1.PodUnavailableBudget {
	return &policyv1beta1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: selector},
			MaxUnavailable: &maxUnavailable,
		},
	}
}

// staleCarrierBudget is a valid budget whose v1alpha1 annotation disagrees with its field:
// the mutating webhook removes the annotation.
func staleCarrierBudget(name string) *policyv1beta1.PodUnavailableBudget {
	b := budget(name, map[string]string{"app": name}, intstr.FromInt32(1))
	b.Spec.ProtectOperations = []policyv1beta1.PubOperation{policyv1beta1.PubDeleteOperation}
	b.Annotations = map[string]string{policyv1beta1.PubProtectOperationAnnotation: string(policyv1beta1.PubEvictOperation)}
	return b
}

// invalidBudget sets both limits, which the validating webhook refuses.
func invalidBudget(name string) *policyv1beta1.PodUnavailableBudget {
	b := budget(name, map[string]string{"app": name}, intstr.FromInt32(1))
	b.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	return b
}

// kruisePod is a pod of an apps.kruise.io controller, which the mutating webhook gives the
// KruisePodReady readiness gate. The CloneSet does not exist: no controller acts on the pod.
func kruisePod(name string, labels map[string]string) *corev1.Pod {
	pod := plainPod(name, labels)
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: "CloneSet", Name: "absent",
		UID: types.UID("absent-cloneset-uid"), Controller: ptr.To(true),
	}}
	return pod
}

func plainPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: webhookImage}}},
	}
}

// hasReadinessGate reports whether the mutating pod webhook gave pod the KruisePodReady gate.
func hasReadinessGate(pod *corev1.Pod) bool {
	for _, gate := range pod.Spec.ReadinessGates {
		if gate.ConditionType == appsv1beta1.KruisePodReadyConditionType {
			return true
		}
	}
	return false
}

// relatedBudget is the budget the mutating pod webhook tagged pod with, or "".
func relatedBudget(pod *corev1.Pod) string {
	if name := pod.Annotations[policyv1beta1.PodRelatedPubAnnotation]; name != "" {
		return name
	}
	return pod.Annotations[policyv1beta1.PodRelatedPubAnnotationNew]
}

var dryRunDelete = metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}

// evict asks for a dry-run eviction of the named pod, once: the typed client would repeat
// an answer carrying Retry-After.
func evict(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	eviction := &policyv1.Eviction{
		TypeMeta:      metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta:    metav1.ObjectMeta{Name: name, Namespace: namespace},
		DeleteOptions: &dryRunDelete,
	}
	return client.CoreV1().RESTClient().Post().Namespace(namespace).Resource("pods").Name(name).SubResource("eviction").
		MaxRetries(0).Body(eviction).Do(ctx).Error()
}

// ---- Answers ----

// wrongUnlessAdmitted returns what is wrong with the answer to a request that must be
// admitted, or "".
func wrongUnlessAdmitted(err error) string {
	if err != nil {
		return fmt.Sprintf("refused: HTTP %d %v", framework.StatusCode(err), err)
	}
	return ""
}

// wrongUnlessDenied returns what is wrong with the answer to a request that webhook must
// refuse with HTTP code (any when 0) and a message containing contains, or "".
func wrongUnlessDenied(err error, webhook string, code int32, contains string) string {
	if err == nil {
		return "admitted, want it refused by " + webhook
	}
	got := framework.StatusCode(err)
	if (code != 0 && got != code) || !strings.Contains(err.Error(), `admission webhook "`+webhook+`" denied the request`) ||
		!strings.Contains(err.Error(), contains) {
		return fmt.Sprintf("HTTP %d %v; want %s's refusal (HTTP %d, %q)", got, err, webhook, code, contains)
	}
	return ""
}

// ---- A budget with nothing to spend, and one with room ----

// budgetFixture is a budget over pods that are Ready, owned by a ReplicaSet that no
// controller acts on, so that the budget's status stays as its controller first wrote it.
type budgetFixture struct {
	name string
	pods []string
}

// newBudgetFixture creates a budget called name with maxUnavailable over n Ready pods
// labelled app=<name> (<name>-0, <name>-1, ...), tagged by the mutating pod webhook, and
// waits until the controller has counted them and left unavailableAllowed at allowed.
func (e *testEnv) newBudgetFixture(t *testing.T, name string, n int, maxUnavailable intstr.IntOrString, allowed int32) *budgetFixture {
	t.Helper()
	labels := map[string]string{"app": name}
	if _, err := e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace).Create(e.Ctx, budget(name, labels, maxUnavailable), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating budget %s: %v", name, err)
	}
	owner := e.ReplicaSets().Create(t, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: webhookImage}}},
			},
		},
	})
	f := &budgetFixture{name: name}
	for i := range n {
		pod := plainPod(fmt.Sprintf("%s-%d", name, i), labels)
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
		created := e.Pods().Create(t, pod)
		if relatedBudget(created) != name {
			t.Fatalf("pod %s was created without the tag of budget %s: %v", created.Name, name, created.Annotations)
		}
		e.SetPodRunning(t, created.Name, true, time.Time{})
		f.pods = append(f.pods, created.Name)
	}
	e.Await(t, fmt.Sprintf("budget %s to count %d available pods and allow %d disruptions", name, n, allowed), func(ctx context.Context) (bool, error) {
		b, err := e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := b.Status
		return s.ObservedGeneration == b.Generation && s.TotalReplicas == int32(n) && s.CurrentAvailable == int32(n) &&
			s.UnavailableAllowed == allowed && len(s.DisruptedPods) == 0, nil
	}, nil)
	return f
}
