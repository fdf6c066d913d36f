package pod

import (
	"context"
	"errors"
	"net/http"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
)

// InProcess is the validating webhook's decision for the controllers of this process:
// a controller about to disrupt a pod itself asks first, and is answered exactly as its
// request would be, spending the budget the same way. Spending through the budget.Cache the
// webhook shares keeps the two from paying twice or overwriting each other's writes: a pod
// admitted here is recorded in the budget, so the webhook then admits the request itself
// without charging again.
type InProcess struct {
	h *handler
}

// NewInProcess returns the decision on deps. It reads Budgets, Client, Cache, Recorder and
// Clock (the real one when nil); the pod listers and the finder are for the webhooks only.
func NewInProcess(deps Dependencies) *InProcess {
	registerMetrics()
	return &InProcess{h: newHandler(deps)}
}

// Admit judges op on pod, requested by user (the name the refusal metric counts it under),
// and pays for it when the budget allows. A refusal is admitted=false with the reason a
// webhook client would read; err reports a decision that could not be made (the budget
// could not be read), to be retried. Pods that no budget covers, unavailable pods and pods
// whose in-place update is not complete are admitted at no cost.
func (p *InProcess) Admit(ctx context.Context, pod *corev1.Pod, op policyv1beta1.PubOperation, user string) (admitted bool, reason string, err error) {
	if pubutil.RelatedBudget(pod) == "" {
		return true, "", nil
	}
	answer := p.h.decide(ctx, &disruption{pod: pod, op: op, user: user})
	if answer.Allowed {
		return true, "", nil
	}
	var message string
	var code int32
	if answer.Result != nil {
		message, code = answer.Result.Message, answer.Result.Code
	}
	// The decision answers 400 only when it could not judge (errorAnswer); every other
	// refusal is the budget's.
	if code == http.StatusBadRequest {
		return false, "", errors.New(message)
	}
	return false, message, nil
}
