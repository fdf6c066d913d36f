package workload

import (
	"fmt"

	kruiseappsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// The kinds read from listers. They are matched by group and kind, so that any version of
// them names the cached object.
const (
	kindReplicaSet            = "ReplicaSet"
	kindDeployment            = "Deployment"
	kindStatefulSet           = "StatefulSet"
	kindReplicationController = "ReplicationController"
	kindDaemonSet             = "DaemonSet"
)

// fromCache reads the workload from its lister. cached is false when gk is not a kind
// read from a lister, or its lister is nil: the caller then reads it live.
func (f *Finder) fromCache(namespace string, gk schema.GroupKind, name string) (w *Workload, cached bool, err error) {
	switch {
	case gk == schema.GroupKind{Group: appsv1.GroupName, Kind: kindReplicaSet} && f.listers.ReplicaSets != nil:
		w, err = fromLister(namespace, name, f.listers.ReplicaSets.ReplicaSets(namespace).Get, replicaSetWorkload)
	case gk == schema.GroupKind{Group: appsv1.GroupName, Kind: kindDeployment} && f.listers.Deployments != nil:
		w, err = fromLister(namespace, name, f.listers.Deployments.Deployments(namespace).Get, deploymentWorkload)
	case gk == schema.GroupKind{Group: appsv1.GroupName, Kind: kindStatefulSet} && f.listers.StatefulSets != nil:
		w, err = fromLister(namespace, name, f.listers.StatefulSets.StatefulSets(namespace).Get, statefulSetWorkload)
	case gk == schema.GroupKind{Group: corev1.GroupName, Kind: kindReplicationController} && f.listers.ReplicationControllers != nil:
		w, err = fromLister(namespace, name, f.listers.ReplicationControllers.ReplicationControllers(namespace).Get, replicationControllerWorkload)
	case gk == schema.GroupKind{Group: kruiseappsv1beta1.GroupName, Kind: kindDaemonSet} && f.listers.DaemonSets != nil:
		w, err = fromLister(namespace, name, f.listers.DaemonSets.DaemonSets(namespace).Get, f.daemonSetWorkload)
	default:
		return nil, false, nil
	}
	return w, true, err
}

// fromLister gets name with get and converts it; a missing object is nil, nil.
func fromLister[T metav1.Object](namespace, name string, get func(string) (T, error), convert func(T) *Workload) (*Workload, error) {
	obj, err := get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s from the informer cache: %w", klog.KRef(namespace, name), err)
	}
	return convert(obj), nil
}

func replicaSetWorkload(rs *appsv1.ReplicaSet) *Workload {
	w := newWorkload(appsv1.SchemeGroupVersion.WithKind(kindReplicaSet), rs)
	w.Replicas, w.HasReplicas = replicasOrOne(rs.Spec.Replicas), true
	w.Selector = labelSelector(rs.Spec.Selector)
	return w
}

func deploymentWorkload(d *appsv1.Deployment) *Workload {
	w := newWorkload(appsv1.SchemeGroupVersion.WithKind(kindDeployment), d)
	w.Replicas, w.HasReplicas = replicasOrOne(d.Spec.Replicas), true
	w.Selector = labelSelector(d.Spec.Selector)
	return w
}

func statefulSetWorkload(ss *appsv1.StatefulSet) *Workload {
	w := newWorkload(appsv1.SchemeGroupVersion.WithKind(kindStatefulSet), ss)
	w.Replicas, w.HasReplicas = replicasOrOne(ss.Spec.Replicas), true
	w.Selector = labelSelector(ss.Spec.Selector)
	return w
}

func replicationControllerWorkload(rc *corev1.ReplicationController) *Workload {
	w := newWorkload(corev1.SchemeGroupVersion.WithKind(kindReplicationController), rc)
	w.Replicas, w.HasReplicas = replicasOrOne(rc.Spec.Replicas), true
	// The API server defaults an empty selector to the template's labels, so an empty one
	// here means an object that never went through it: say nothing rather than "everything".
	if len(rc.Spec.Selector) > 0 {
		w.Selector = labels.SelectorFromSet(rc.Spec.Selector)
	}
	return w
}

// daemonSetWorkload counts an Advanced DaemonSet's pods only when asked to: it has no
// replicas field and no /scale, and OpenKruise gives it no count, so budgets over its pods
// protect nothing unless they state their total themselves.
func (f *Finder) daemonSetWorkload(ds *kruiseappsv1beta1.DaemonSet) *Workload {
	w := newWorkload(kruiseappsv1beta1.SchemeGroupVersion.WithKind(kindDaemonSet), ds)
	if f.daemonSetReplicas {
		w.Replicas, w.HasReplicas = ds.Status.DesiredNumberScheduled, true
	}
	w.Selector = labelSelector(ds.Spec.Selector)
	return w
}

// replicasOrOne reads a spec.replicas field the way the API server defaults it.
func replicasOrOne(replicas *int32) int32 {
	if replicas == nil {
		return 1
	}
	return *replicas
}

// labelSelector converts a workload's selector; nil when there is none or it is invalid,
// which the API server's validation leaves only to objects that bypassed it (and which
// would otherwise select nothing or everything).
func labelSelector(ls *metav1.LabelSelector) labels.Selector {
	if ls == nil {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil
	}
	return selector
}
