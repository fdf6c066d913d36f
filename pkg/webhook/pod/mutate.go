package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

// Mutation is one change the mutating pod webhook makes to the pods being created.
type Mutation struct {
	// Name says what the mutation does, in logs.
	Name string
	// Mutate changes pod, the pod being created as the mutations before it left it, with its
	// namespace taken from the request when the object has none. It returns the additions
	// that make the same change to the object as the earlier mutations' additions left it,
	// none when it leaves the pod alone. A pod's nil map or slice is a member the object
	// lacks (or holds as null), which is added whole, since "add" needs the parent member to
	// exist; so the pod passed on must show exactly the change the additions make.
	//
	// An error refuses the pod. A mutation whose change can be skipped (one that a
	// controller makes later, say) logs its error and returns no additions instead.
	Mutate func(ctx context.Context, req *admissionv1.AdmissionRequest, pod *corev1.Pod) ([]webhook.Addition, error)
}

// MutatingWebhook is the mutating pod webhook (mpod.kb.io), which several controllers'
// pods need: each enabled controller adds the mutations it relies on while the manager
// builds the webhooks, and the webhook applies them to every new pod in the order they
// were added. The manager builds the webhooks of the enabled controllers in the order of
// their names, so no mutation may depend on another's change.
type MutatingWebhook struct {
	mu         sync.RWMutex
	mutations  []Mutation
	registered bool
}

// NewMutatingWebhook returns the webhook without mutations.
func NewMutatingWebhook() *MutatingWebhook {
	return &MutatingWebhook{}
}

// Add adds mutations to the webhook. The first call returns the webhook's registration and
// later calls none: the webhook is served once, by whichever enabled controller adds its
// mutations first, and runs the mutations of all of them.
func (w *MutatingWebhook) Add(mutations ...Mutation) []webhook.Registration {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mutations = append(w.mutations, mutations...)
	if w.registered {
		return nil
	}
	w.registered = true
	return []webhook.Registration{{
		Name:  MutatingName,
		Path:  MutatingPath,
		Type:  webhook.Mutating,
		Rules: podRules("pods", admissionregistrationv1.Create),
		// No mutation is needed for a pod to run: the budget controller tags the pods the
		// webhook missed, and a pod without the KruisePodReady gate is only left out of its
		// owner's not-ready marks. So an outage must not stop pods from being created.
		FailurePolicy:     ptr.To(admissionregistrationv1.Ignore),
		NamespaceSelector: outsideControlPlane(),
		Handler:           w,
	}}
}

// Handle applies the mutations to a pod being created and answers with the additions they
// made. A pod it cannot decode is let through unchanged; a mutation's error refuses it.
func (w *MutatingWebhook) Handle(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return webhook.Allowed()
	}
	logger := klog.FromContext(ctx)
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		logger.Error(err, "Cannot decode a new pod; admitting it unchanged")
		return webhook.Allowed()
	}
	// The API server puts the request's namespace into the object after admission; the
	// mutations look it up already.
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	w.mu.RLock()
	mutations := w.mutations
	w.mu.RUnlock()

	var additions []webhook.Addition
	var applied []string
	for _, m := range mutations {
		more, err := m.Mutate(ctx, req, pod)
		if err != nil {
			return webhook.Errored(http.StatusInternalServerError, fmt.Errorf("%s of the new pod: %w", m.Name, err))
		}
		if len(more) > 0 {
			additions = append(additions, more...)
			applied = append(applied, m.Name)
		}
	}
	resp, err := webhook.AdditionsResponse(additions)
	if err != nil {
		return webhook.Errored(http.StatusInternalServerError, fmt.Errorf("building the patch of the new pod: %w", err))
	}
	if len(applied) > 0 {
		logger.V(4).Info("Mutated a new pod", "mutations", applied)
	}
	return resp
}
