package containerrecreaterequest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/containerrecreaterequest/crrutil"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// The name of the webhook and the version-less path OpenKruise 1.9 serves it at, so that
// configurations and dashboards written for one work for the other. The path of earlier
// releases, which named the version, is still answered for one release: the
// configurations of replicas not yet upgraded point at it.
const (
	MutatingName       = "mcontainerrecreaterequest.kb.io"
	MutatingPath       = "/mutate-apps-kruise-io-containerrecreaterequest"
	LegacyMutatingPath = "/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest"
)

var (
	crrKind      = appsv1beta1.SchemeGroupVersion.WithKind("ContainerRecreateRequest")
	crrGroupKind = crrKind.GroupKind()
)

// Dependencies are what the webhook reads.
type Dependencies struct {
	// Pods and Nodes are the webhook informers' caches of the target pod and its Node.
	Pods  corelisters.PodLister
	Nodes corelisters.NodeLister
	// LivePods and LiveNodes read what the caches have not seen yet; nil leaves the
	// caches' answer final.
	LivePods  corev1client.PodsGetter
	LiveNodes corev1client.NodesGetter
	// FeatureGate is read on every request; features.DefaultFeatureGate when nil.
	FeatureGate featuregate.FeatureGate
}

// Registrations is the request's mutating webhook, called on CREATE and UPDATE of v1alpha1
// and v1beta1 requests. A request is judged and completed in v1beta1: the fields it sets
// (labels, spec.strategy, spec.containers) are the same in both versions, so the patch
// fits the request as received.
func Registrations(deps Dependencies) []webhook.Registration {
	if deps.FeatureGate == nil {
		deps.FeatureGate = features.DefaultFeatureGate
	}
	h := &handler{Dependencies: deps}
	w := &webhook.ResourceWebhook[appsv1beta1.ContainerRecreateRequest, *appsv1beta1.ContainerRecreateRequest]{
		Kind:     crrKind,
		Resource: "containerrecreaterequests",
		Spokes: []webhook.Spoke[appsv1beta1.ContainerRecreateRequest, *appsv1beta1.ContainerRecreateRequest]{
			webhook.NewSpoke[appsv1alpha1.ContainerRecreateRequest](appsv1alpha1.SchemeGroupVersion.WithKind("ContainerRecreateRequest"), nil,
				appsv1alpha1.ConvertContainerRecreateRequestToV1beta1),
		},
		MutatingName:        MutatingName,
		MutatingPath:        MutatingPath,
		LegacyMutatingPaths: []string{LegacyMutatingPath},
		Mutate:              h.mutate,
		StaleCarriers:       staleCarriers,
	}
	return w.Registrations()
}

type handler struct {
	Dependencies
}

func (h *handler) mutate(ctx context.Context, req *admissionv1.AdmissionRequest, obj, old *appsv1beta1.ContainerRecreateRequest) *admissionv1.AdmissionResponse {
	if obj.Name == "" {
		obj.Name = req.Name
	}
	if old != nil {
		if err := ValidateUpdate(obj, old); err != nil {
			return webhook.Errored(http.StatusForbidden, err)
		}
		return webhook.Allowed()
	}
	return h.admitCreate(ctx, obj)
}

// admitCreate checks and completes a new request; see the package documentation for the
// steps.
func (h *handler) admitCreate(ctx context.Context, obj *appsv1beta1.ContainerRecreateRequest) *admissionv1.AdmissionResponse {
	if !h.FeatureGate.Enabled(features.KruiseDaemon) {
		return webhook.Denied(http.StatusForbidden, "feature-gate %s is not enabled", features.KruiseDaemon)
	}
	if errs := DefaultAndValidateSpec(obj); len(errs) > 0 {
		return invalid(obj.Name, errs)
	}
	pod, node, errs, err := h.target(ctx, obj)
	if err != nil {
		return webhook.Errored(http.StatusInternalServerError, err)
	}
	if len(errs) > 0 {
		return invalid(obj.Name, errs)
	}
	InjectPodFacts(obj, pod, node)
	klog.FromContext(ctx).V(4).Info("Admitting ContainerRecreateRequest", "pod", klog.KObj(pod), "node", node.Name)
	resp, err := webhook.AdditionsResponse([]webhook.Addition{
		{Path: "/metadata/labels", Value: obj.Labels},
		{Path: "/spec/strategy", Value: obj.Spec.Strategy},
		{Path: "/spec/containers", Value: obj.Spec.Containers},
	})
	if err != nil {
		return webhook.Errored(http.StatusInternalServerError, fmt.Errorf("completing ContainerRecreateRequest %s: %w", klog.KObj(obj), err))
	}
	return resp
}

// target reads the request's pod and Node and checks them against the request. It returns
// the field errors of a request that cannot be admitted, or err when a read failed. A pod
// from the cache that does not pass is read again from the API server: the cache may not
// have seen the pod being bound or its containers starting.
func (h *handler) target(ctx context.Context, obj *appsv1beta1.ContainerRecreateRequest) (*corev1.Pod, *corev1.Node, field.ErrorList, error) {
	pod, cached, err := h.pod(ctx, obj.Namespace, obj.Spec.PodName, false)
	if err != nil || pod == nil {
		return nil, nil, podNotFound(obj), err
	}
	errs := ValidateAgainstPod(obj, pod)
	if len(errs) > 0 && cached && h.LivePods != nil {
		if pod, _, err = h.pod(ctx, obj.Namespace, obj.Spec.PodName, true); err != nil || pod == nil {
			return nil, nil, podNotFound(obj), err
		}
		errs = ValidateAgainstPod(obj, pod)
	}
	if len(errs) > 0 {
		return nil, nil, errs, nil
	}
	node, err := h.node(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, nil, nil, err
	}
	if node == nil {
		return nil, nil, field.ErrorList{field.NotFound(field.NewPath("spec", "podName"),
			fmt.Sprintf("pod %s is bound to node %s, which does not exist", obj.Spec.PodName, pod.Spec.NodeName))}, nil
	}
	return pod, node, nil, nil
}

func podNotFound(obj *appsv1beta1.ContainerRecreateRequest) field.ErrorList {
	return field.ErrorList{field.NotFound(field.NewPath("spec", "podName"), obj.Spec.PodName)}
}

// pod returns the named pod, nil when it does not exist, and whether it came from the
// cache. live skips the cache.
func (h *handler) pod(ctx context.Context, namespace, name string, live bool) (*corev1.Pod, bool, error) {
	if !live {
		pod, err := h.Pods.Pods(namespace).Get(name)
		if err == nil {
			return pod, true, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, false, fmt.Errorf("reading pod %s from the cache: %w", klog.KRef(namespace, name), err)
		}
		if h.LivePods == nil {
			return nil, false, nil
		}
	}
	pod, err := h.LivePods.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading pod %s: %w", klog.KRef(namespace, name), err)
	}
	return pod, false, nil
}

// node returns the named Node, nil when it does not exist.
func (h *handler) node(ctx context.Context, name string) (*corev1.Node, error) {
	node, err := h.Nodes.Get(name)
	if err == nil {
		return node, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading node %s from the cache: %w", name, err)
	}
	if h.LiveNodes == nil {
		return nil, nil
	}
	node, err = h.LiveNodes.Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	return node, nil
}

// ValidateUpdate returns why an update may not change the request, or nil: the spec, the
// pod-uid and node-name labels and an unready-acquired annotation once set are fixed, since
// the node agent and the controllers act on them.
func ValidateUpdate(obj, old *appsv1beta1.ContainerRecreateRequest) error {
	var problems []error
	if !specEqual(&obj.Spec, &old.Spec) {
		problems = append(problems, errors.New("spec is immutable"))
	}
	for _, key := range []string{appsv1beta1.ContainerRecreateRequestPodUIDKey, appsv1beta1.ContainerRecreateRequestNodeNameKey} {
		if obj.Labels[key] != old.Labels[key] {
			problems = append(problems, fmt.Errorf("label %s is immutable", key))
		}
	}
	key := appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey
	if was := old.Annotations[key]; was != "" && obj.Annotations[key] != was {
		problems = append(problems, fmt.Errorf("annotation %s is immutable once set", key))
	}
	return errors.Join(problems...)
}

// invalid refuses the request with the status the API server gives an invalid object, one
// cause per field error, but with code 400 (Bad Request), which OpenKruise answers.
func invalid(name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	return webhook.InvalidWithCode(http.StatusBadRequest, crrGroupKind, name, errs)
}

// setLabel sets one label, creating the map when needed; the map is copied so that the
// decoded object's map is never shared.
func setLabel(obj *appsv1beta1.ContainerRecreateRequest, key, value string) {
	labels := maps.Clone(obj.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	obj.Labels = labels
}

// staleCarriers returns the annotations of a v1beta1 request that carry a status field for
// v1alpha1 but disagree with the field as set: the status decides (the manager writes only
// the fields), and the annotation would only mislead whoever reads it. The annotations are
// read as the controllers read them (crrutil).
func staleCarriers(obj *appsv1beta1.ContainerRecreateRequest) []webhook.StaleCarrier {
	var stale []webhook.StaleCarrier
	key := appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey
	if value, ok := obj.Annotations[key]; ok && len(obj.Status.ContainerStatusSnapshot) > 0 {
		want, _ := json.Marshal(obj.Status.ContainerStatusSnapshot)
		parsed, err := crrutil.ParseContainerStatusSnapshot(value)
		got, _ := json.Marshal(parsed)
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, webhook.StaleCarrier{Annotation: key,
				Warning: fmt.Sprintf("metadata.annotations[%s]: removed: it disagrees with status.containerStatusSnapshot, which takes precedence", key)})
		}
	}
	key = appsv1beta1.ContainerRecreateRequestUnreadyAcquiredKey
	if value, ok := obj.Annotations[key]; ok {
		if grace := crrutil.PreRecreateGrace(obj.Status.Conditions); grace != nil {
			t, err := crrutil.ParseUnreadyAcquired(value)
			if err != nil || !t.Truncate(time.Second).Equal(grace.LastTransitionTime.Truncate(time.Second)) {
				stale = append(stale, webhook.StaleCarrier{Annotation: key,
					Warning: fmt.Sprintf("metadata.annotations[%s]: removed: %q disagrees with the %s condition's lastTransitionTime %s, which takes precedence",
						key, value, appsv1beta1.ContainerRecreateRequestPreRecreateGraceType, grace.LastTransitionTime.UTC().Format(time.RFC3339))})
			}
		}
	}
	return stale
}
