package pod

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// EventPubPreventPodDeletion is the reason of the Warning event recorded on a pod whose
// disruption a budget refused (whatever the operation: OpenKruise's name).
const EventPubPreventPodDeletion = "PubPreventPodDeletion"

// denialResource is the resource denial messages name. OpenKruise's messages spell it in
// the singular, and clients match on them, so this does too.
var denialResource = schema.GroupResource{Group: policyv1beta1.GroupName, Resource: "podunavailablebudget"}

// Why a budget refuses; the messages are OpenKruise's.
const (
	causeNoBudget = "pub unavailable allowed is negative"
	causeTooMany  = "DisruptedPods and UnavailablePods map too big - too many unavailable not confirmed by PUB controller"
)

// budgetDenial is a budget's refusal of a disruption. It is the error the spend returns
// through budget.Cache, which hands it back unchanged.
type budgetDenial struct {
	cause string
	// message is the whole answer, `podunavailablebudget.policy.kruise.io "<pub>" is
	// forbidden: <cause>`.
	message string
}

func (d *budgetDenial) Error() string { return d.message }

func newBudgetDenial(pubName, cause string) *budgetDenial {
	return &budgetDenial{cause: cause, message: apierrors.NewForbidden(denialResource, pubName, errors.New(cause)).Error()}
}

// decide judges a disruption of a tagged pod against its budget, and pays for it when the
// budget allows.
func (h *handler) decide(ctx context.Context, d *disruption) *admissionv1.AdmissionResponse {
	logger := klog.FromContext(ctx)
	pod := d.pod
	// The annotation exempts a pod from every budget, so it needs no lookup; the budget's
	// own ignoredPodSelector is checked once the budget is read.
	if pubutil.NoProtect(pod) {
		return webhook.Allowed()
	}
	pubName := pubutil.RelatedBudget(pod)
	pub, err := h.Budgets.PodUnavailableBudgets(pod.Namespace).Get(pubName)
	available := pubutil.IsAvailable(pod)
	if !available && (err != nil || !pubutil.BoolAnnotation(pub, pubutil.ProtectNotReadyAnnotation)) {
		// An unavailable pod costs no budget to disrupt, whether or not its budget exists.
		return webhook.Allowed()
	}
	if apierrors.IsNotFound(err) {
		// The budget is gone (often with the workload the pod belongs to): nothing to protect.
		return webhook.Allowed()
	}
	if err != nil {
		return errorAnswer(fmt.Errorf("reading PodUnavailableBudget %s from the cache: %w", klog.KRef(pod.Namespace, pubName), err))
	}
	if pubutil.Exempt(pub, pod) {
		// Matched by the budget's ignoredPodSelector: let go like a no-protect pod, whatever
		// the budget has left and without spending it.
		return webhook.Allowed()
	}
	if pub.Status.DesiredAvailable == 0 || !pubutil.ProtectedOperations(pub).Has(d.op) || recorded(pub, pod.Name) {
		return webhook.Allowed()
	}

	if !available {
		// The budget protects unavailable pods too: disrupting one changes nothing while the
		// budget is met, so it costs nothing, and is refused once it is not (when many pods
		// failed at once, say), since the pod may be one about to recover. It guards deletion
		// and eviction only: updating an unavailable pod is often what repairs it.
		if d.op == policyv1beta1.PubUpdateOperation || d.op == policyv1beta1.PubResizeOperation {
			return webhook.Allowed()
		}
		if budgetMet(h.Cache.Freshest(pub)) {
			return webhook.Allowed()
		}
		// Refusing on a copy that lags the controller's last recount would turn away a pod
		// the budget already has room for: ask the API server before saying no.
		live, err := h.Client.PolicyV1beta1().PodUnavailableBudgets(pub.Namespace).Get(ctx, pub.Name, metav1.GetOptions{})
		if err == nil && live.UID == pub.UID && budgetMet(live) {
			return webhook.Allowed()
		}
		return h.refuse(ctx, d, pub, newBudgetDenial(pub.Name, causeNoBudget))
	}

	// Spend shares one status write among the requests that arrive while another is in
	// flight: a node drain evicts many pods of one budget at once.
	alreadyRecorded := false
	err = h.Cache.Spend(ctx, h.Client, pub, func(pub *policyv1beta1.PodUnavailableBudget) (bool, error) {
		// The informer's copy may lag behind this process's own writes: check again on the
		// fresh one, so a retried request is never charged twice.
		alreadyRecorded = recorded(pub, pod.Name)
		if alreadyRecorded {
			return false, nil
		}
		if pub.Status.UnavailableAllowed <= 0 {
			return false, newBudgetDenial(pub.Name, causeNoBudget)
		}
		if len(pub.Status.DisruptedPods)+len(pub.Status.UnavailablePods) > pubutil.MaxRecordedPods {
			return false, newBudgetDenial(pub.Name, causeTooMany)
		}
		pub.Status.UnavailableAllowed--
		now := metav1.NewTime(h.Clock.Now())
		if d.op == policyv1beta1.PubUpdateOperation {
			if pub.Status.UnavailablePods == nil {
				pub.Status.UnavailablePods = map[string]metav1.Time{}
			}
			pub.Status.UnavailablePods[pod.Name] = now
		} else {
			if pub.Status.DisruptedPods == nil {
				pub.Status.DisruptedPods = map[string]metav1.Time{}
			}
			pub.Status.DisruptedPods[pod.Name] = now
		}
		return !d.dryRun, nil
	})
	var denial *budgetDenial
	switch {
	case err == nil:
		logger.V(4).Info("Budget admitted a pod disruption", "pod", klog.KObj(pod), "podUnavailableBudget", klog.KObj(pub),
			"operation", d.op, "dryRun", d.dryRun, "alreadyRecorded", alreadyRecorded)
		return webhook.Allowed()
	case errors.As(err, &denial):
		return h.refuse(ctx, d, pub, denial)
	case apierrors.IsNotFound(err):
		// Deleted while this ran: nothing to protect any more. (Refusing here once blocked
		// garbage collection of a workload and its budget together.)
		return webhook.Allowed()
	case apierrors.IsConflict(err):
		logger.Info("Budget could not be spent due to conflicts", "pod", klog.KObj(pod), "podUnavailableBudget", klog.KObj(pub), "err", err)
		return h.denied(d, pub, fmt.Sprintf("PodUnavailableBudget %s could not be spent for pod %s due to conflicts with concurrent updates; try again",
			klog.KObj(pub), pod.Name))
	default:
		return webhook.Denied(http.StatusForbidden, "%v", err)
	}
}

// recorded reports whether the pod's disruption was already admitted and is still counted.
func recorded(pub *policyv1beta1.PodUnavailableBudget, podName string) bool {
	_, disrupted := pub.Status.DisruptedPods[podName]
	_, unavailable := pub.Status.UnavailablePods[podName]
	return disrupted || unavailable
}

// refuse answers a budget's refusal, after counting, recording and logging it.
func (h *handler) refuse(ctx context.Context, d *disruption, pub *policyv1beta1.PodUnavailableBudget, denial *budgetDenial) *admissionv1.AdmissionResponse {
	budgetDenials.WithLabelValues(ownerLabel(d.pod), d.user).Inc()
	if h.Recorder != nil {
		h.Recorder.Eventf(d.pod, corev1.EventTypeWarning, EventPubPreventPodDeletion,
			"PodUnavailableBudget %s prevents the %s of the pod: %s", pub.Name, operationNoun(d.op), denial.cause)
	}
	klog.FromContext(ctx).Info("Budget denied a pod disruption", "pod", klog.KObj(d.pod), "podUnavailableBudget", klog.KObj(pub),
		"operation", d.op, "user", d.user, "dryRun", d.dryRun, "reason", denial.cause)
	return h.denied(d, pub, denial.message)
}

// denied is the refusal of a disruption: 403, or 429 for an eviction under a budget that
// asks eviction clients to retry.
func (h *handler) denied(d *disruption, pub *policyv1beta1.PodUnavailableBudget, message string) *admissionv1.AdmissionResponse {
	code := int32(http.StatusForbidden)
	if d.eviction && pubutil.BoolAnnotation(pub, pubutil.RetryDeniedEvictionsAnnotation) {
		code = http.StatusTooManyRequests
	}
	return webhook.Denied(code, "%s", message)
}

// operationNoun names an operation in event messages.
func operationNoun(op policyv1beta1.PubOperation) string {
	switch op {
	case policyv1beta1.PubDeleteOperation:
		return "deletion"
	case policyv1beta1.PubEvictOperation:
		return "eviction"
	case policyv1beta1.PubUpdateOperation:
		return "update"
	case policyv1beta1.PubResizeOperation:
		return "resize"
	}
	return strings.ToLower(string(op))
}

// budgetMet reports whether as many pods are available as the budget wants.
func budgetMet(pub *policyv1beta1.PodUnavailableBudget) bool {
	return pub.Status.CurrentAvailable >= pub.Status.DesiredAvailable
}
