package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// disruption is what a validating request asks to do to a pod.
type disruption struct {
	// pod is the subject: the pod as it is before the operation.
	pod *corev1.Pod
	op  policyv1beta1.PubOperation
	// dryRun requests are judged, and refused, like the real ones but spend nothing.
	dryRun   bool
	eviction bool
	user     string
}

// validate answers both validating webhooks: it works out which pod the request would
// disrupt, and how, and lets decide judge it. Requests that disrupt nothing a budget
// protects are allowed here.
func (h *handler) validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	d, answer := h.disruption(ctx, req)
	if answer != nil {
		return answer
	}
	if pubutil.RelatedBudget(d.pod) == "" {
		// Pods are protected once tagged; the controller tags those the mutating webhook
		// missed.
		return webhook.Allowed()
	}
	return h.decide(ctx, d)
}

// disruption decodes the request into the disruption it asks for, or returns the answer when
// there is nothing to judge or the request cannot be read.
func (h *handler) disruption(ctx context.Context, req *admissionv1.AdmissionRequest) (*disruption, *admissionv1.AdmissionResponse) {
	deleteOn := h.FeatureGate.Enabled(features.PodUnavailableBudgetDeleteGate)
	d := &disruption{user: req.UserInfo.Username}
	switch req.Operation {
	case admissionv1.Delete:
		if !deleteOn || req.SubResource != "" || len(req.OldObject.Raw) == 0 {
			return nil, webhook.Allowed()
		}
		pod, err := decodePod(req.OldObject.Raw, "oldObject")
		if err != nil {
			return nil, errorAnswer(err)
		}
		dryRun, err := isDryRun(req)
		if err != nil {
			return nil, errorAnswer(err)
		}
		d.pod, d.op, d.dryRun = pod, policyv1beta1.PubDeleteOperation, dryRun

	case admissionv1.Update:
		if !h.FeatureGate.Enabled(features.PodUnavailableBudgetUpdateGate) || req.SubResource != "" {
			return nil, webhook.Allowed()
		}
		pod, err := decodePod(req.Object.Raw, "object")
		if err != nil {
			return nil, errorAnswer(err)
		}
		if pubutil.RelatedBudget(pod) == "" {
			return nil, webhook.Allowed()
		}
		old, err := decodePod(req.OldObject.Raw, "oldObject")
		if err != nil {
			return nil, errorAnswer(err)
		}
		labelAdded := unavailableLabelAdded(old, pod)
		if !labelAdded && apiequality.Semantic.DeepEqual(old.Spec, pod.Spec) {
			return nil, webhook.Allowed()
		}
		dryRun, err := isDryRun(req)
		if err != nil {
			return nil, errorAnswer(err)
		}
		d.pod, d.op, d.dryRun = old, policyv1beta1.PubUpdateOperation, dryRun
		if !labelAdded && isResize(old, pod) {
			d.op = policyv1beta1.PubResizeOperation
		}

	case admissionv1.Create:
		if !deleteOn || req.SubResource != "eviction" {
			return nil, webhook.Allowed()
		}
		// policy/v1 and v1beta1 Evictions have the same fields.
		eviction := &policyv1.Eviction{}
		if len(req.Object.Raw) == 0 {
			return nil, errorAnswer(fmt.Errorf("request.object is empty"))
		}
		if err := json.Unmarshal(req.Object.Raw, eviction); err != nil {
			return nil, errorAnswer(fmt.Errorf("decoding request.object as an Eviction: %w", err))
		}
		pod, err := h.evictedPod(ctx, req.Namespace, req.Name)
		if apierrors.IsNotFound(err) {
			// The API server answers the eviction of a pod that does not exist with a 404
			// of its own.
			return nil, webhook.Allowed()
		}
		if err != nil {
			return nil, errorAnswer(err)
		}
		dryRun, err := isDryRun(req)
		if err != nil {
			return nil, errorAnswer(err)
		}
		if eviction.DeleteOptions != nil && slices.Contains(eviction.DeleteOptions.DryRun, metav1.DryRunAll) {
			dryRun = true
		}
		d.pod, d.op, d.dryRun, d.eviction = pod, policyv1beta1.PubEvictOperation, dryRun, true

	default:
		return nil, webhook.Allowed()
	}
	return d, nil
}

// errorAnswer refuses a request the webhook could not judge: it could not decode it, or a
// lookup it needs failed.
func errorAnswer(err error) *admissionv1.AdmissionResponse {
	return webhook.Errored(http.StatusBadRequest, err)
}

// decodePod decodes what the request holds under name. Unknown fields are ignored: the pod
// is only read, and a newer API server's fields must not make every deletion fail.
func decodePod(raw []byte, name string) (*corev1.Pod, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("request.%s is empty", name)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		return nil, fmt.Errorf("decoding request.%s as a Pod: %w", name, err)
	}
	return pod, nil
}

// isDryRun reports whether the request is a dry run, from the review's own flag or the
// operation's options (DeleteOptions, UpdateOptions and CreateOptions all spell it dryRun).
func isDryRun(req *admissionv1.AdmissionRequest) (bool, error) {
	if req.DryRun != nil && *req.DryRun {
		return true, nil
	}
	if len(req.Options.Raw) == 0 {
		return false, nil
	}
	var options struct {
		DryRun []string `json:"dryRun,omitempty"`
	}
	if err := json.Unmarshal(req.Options.Raw, &options); err != nil {
		return false, fmt.Errorf("decoding request.options: %w", err)
	}
	return slices.Contains(options.DryRun, metav1.DryRunAll), nil
}

// unavailableLabelAdded reports whether the update adds a label that makes the pod count as
// unavailable: that is a disruption even when nothing else changes.
func unavailableLabelAdded(old, pod *corev1.Pod) bool {
	for key := range pod.Labels {
		if _, had := old.Labels[key]; had {
			continue
		}
		if strings.HasPrefix(key, policyv1beta1.PubUnavailablePodLabelPrefix) {
			return true
		}
	}
	return false
}

// evictedPod returns the pod an eviction names: from the cache, or, when the cache has not
// seen it yet, from the API server. A pod created and made Ready a moment ago can be evicted
// before the informer delivers it, and must not pass unchecked.
func (h *handler) evictedPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := h.Pods.Pods(namespace).Get(name)
	if err == nil {
		return pod, nil
	}
	if !apierrors.IsNotFound(err) || h.LivePods == nil {
		return nil, fmt.Errorf("reading pod %s from the cache: %w", klog.KRef(namespace, name), err)
	}
	pod, err = h.LivePods.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading pod %s: %w", klog.KRef(namespace, name), err)
	}
	return pod, nil
}
