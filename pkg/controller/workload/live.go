package workload

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// live reads a workload of a kind bosun does not cache: its metadata, then its /scale
// subresource. A kind the API server does not serve has no objects, so it is nil, nil like
// a missing object.
func (f *Finder) live(ctx context.Context, namespace string, gk schema.GroupKind, version, name string) (*Workload, error) {
	mapping, err := f.restMapping(gk, version)
	if meta.IsNoMatchError(err) {
		klog.FromContext(ctx).V(4).Info("Owner kind is not served", "kind", gk, "name", name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up %s %s: mapping the kind to a resource: %w", gk, klog.KRef(namespace, name), err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		namespace = ""
	}
	obj, err := f.metadata.Resource(mapping.Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting the metadata of %s %s: %w", gk, klog.KRef(namespace, name), err)
	}
	w := newWorkload(mapping.GroupVersionKind, obj)
	if err := f.readScale(ctx, w, mapping.Resource.GroupResource()); err != nil {
		return nil, err
	}
	return w, nil
}

// restMapping maps gk to its resource, preferring the version the reference was written
// with and falling back to the preferred one, so that a reference written with a version
// the API server no longer serves still finds the object.
func (f *Finder) restMapping(gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	if version != "" {
		mapping, err := f.mapper.RESTMapping(gk, version)
		if !meta.IsNoMatchError(err) {
			return mapping, err
		}
	}
	return f.mapper.RESTMapping(gk)
}

// readScale fills in w's replicas and selector from its /scale subresource. A workload
// without one (the API server answers NotFound or MethodNotSupported, or the scale client
// cannot map it) is left without a replica count and selector.
func (f *Finder) readScale(ctx context.Context, w *Workload, resource schema.GroupResource) error {
	s, err := f.scales.Scales(w.Namespace).Get(ctx, resource, w.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err) {
		klog.FromContext(ctx).V(4).Info("Owner has no scale subresource", "resource", resource, "workload", klog.KRef(w.Namespace, w.Name), "reason", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting the scale of %s %s: %w", resource, klog.KRef(w.Namespace, w.Name), err)
	}
	w.Replicas, w.HasReplicas = s.Spec.Replicas, true
	w.Selector = scaleSelector(s.Status.Selector)
	return nil
}

// scaleSelector parses a scale's status.selector; nil when it is empty (the workload does
// not publish one) or does not parse, as an empty selector would select every pod.
func scaleSelector(s string) labels.Selector {
	if s == "" {
		return nil
	}
	selector, err := labels.Parse(s)
	if err != nil {
		return nil
	}
	return selector
}
