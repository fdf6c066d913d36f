package toolkit

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// childKind is a built-in kind of object that refmanager claims, together with the kind
// of owner that claims it in these tests (pods by a ReplicaSet, ReplicaSets by a
// Deployment), so that one table runs against both.
type childKind struct {
	name     string
	ownerGVK schema.GroupVersionKind
	// newOwner creates an owner selecting selectorLabels(name), with finalizers.
	newOwner  func(ctx context.Context, client kubernetes.Interface, ns, name string, finalizers ...string) (metav1.Object, *metav1.LabelSelector, error)
	liveOwner func(client kubernetes.Interface, owner metav1.Object) refmanager.GetLiveFunc
	patcher   func(client kubernetes.Interface) refmanager.Patcher
	create    func(ctx context.Context, client kubernetes.Interface, ns, name string, labels map[string]string, refs []metav1.OwnerReference, finalizers []string) (metav1.Object, error)
	get       func(ctx context.Context, client kubernetes.Interface, ns, name string) (metav1.Object, error)
	// delete removes the object at once (no finalizers are added by the deletion).
	delete func(ctx context.Context, client kubernetes.Interface, ns, name string) error
	// patch sends a raw patch, bypassing refmanager.
	patch func(ctx context.Context, client kubernetes.Interface, ns, name string, pt types.PatchType, body []byte) error
	// claim claims one object through the kind's ClaimX entry point.
	claim func(ctx context.Context, m *refmanager.Manager, obj metav1.Object) (bool, error)
}

var deleteAtOnce = metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}

var podKind = childKind{
	name:     "Pod",
	ownerGVK: replicaSetGVK,
	newOwner: func(ctx context.Context, client kubernetes.Interface, ns, name string, finalizers ...string) (metav1.Object, *metav1.LabelSelector, error) {
		rs := newReplicaSet(ns, name)
		rs.Finalizers = finalizers
		rs, err := client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		if err != nil {
			return nil, nil, err
		}
		return rs, rs.Spec.Selector, nil
	},
	liveOwner: refmanager.LiveReplicaSet,
	patcher: func(client kubernetes.Interface) refmanager.Patcher {
		return refmanager.PodControlPatcher(&podcontrol.Real{Client: client})
	},
	create: func(ctx context.Context, client kubernetes.Interface, ns, name string, labels map[string]string, refs []metav1.OwnerReference, finalizers []string) (metav1.Object, error) {
		return client.CoreV1().Pods(ns).Create(ctx, newPod(ns, name, labels, refs, finalizers), metav1.CreateOptions{})
	},
	get: func(ctx context.Context, client kubernetes.Interface, ns, name string) (metav1.Object, error) {
		return client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	},
	delete: func(ctx context.Context, client kubernetes.Interface, ns, name string) error {
		return client.CoreV1().Pods(ns).Delete(ctx, name, deleteAtOnce)
	},
	patch: func(ctx context.Context, client kubernetes.Interface, ns, name string, pt types.PatchType, body []byte) error {
		_, err := client.CoreV1().Pods(ns).Patch(ctx, name, pt, body, metav1.PatchOptions{})
		return err
	},
	claim: func(ctx context.Context, m *refmanager.Manager, obj metav1.Object) (bool, error) {
		owned, err := m.ClaimPods(ctx, []*corev1.Pod{obj.(*corev1.Pod)})
		return len(owned) == 1, err
	},
}

var replicaSetKind = childKind{
	name:     "ReplicaSet",
	ownerGVK: deploymentGVK,
	newOwner: func(ctx context.Context, client kubernetes.Interface, ns, name string, finalizers ...string) (metav1.Object, *metav1.LabelSelector, error) {
		d := newDeployment(ns, name)
		d.Finalizers = finalizers
		d, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Spec.Selector, nil
	},
	liveOwner: refmanager.LiveDeployment,
	patcher: func(client kubernetes.Interface) refmanager.Patcher {
		return refmanager.ReplicaSetPatcher(client)
	},
	create: func(ctx context.Context, client kubernetes.Interface, ns, name string, labels map[string]string, refs []metav1.OwnerReference, finalizers []string) (metav1.Object, error) {
		rs := newReplicaSet(ns, name)
		// The ReplicaSet's own selector must match its template, whatever labels it has.
		rs.Labels, rs.OwnerReferences, rs.Finalizers = labels, refs, finalizers
		return client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	},
	get: func(ctx context.Context, client kubernetes.Interface, ns, name string) (metav1.Object, error) {
		return client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
	},
	delete: func(ctx context.Context, client kubernetes.Interface, ns, name string) error {
		return client.AppsV1().ReplicaSets(ns).Delete(ctx, name, deleteAtOnce)
	},
	patch: func(ctx context.Context, client kubernetes.Interface, ns, name string, pt types.PatchType, body []byte) error {
		_, err := client.AppsV1().ReplicaSets(ns).Patch(ctx, name, pt, body, metav1.PatchOptions{})
		return err
	},
	claim: func(ctx context.Context, m *refmanager.Manager, obj metav1.Object) (bool, error) {
		owned, err := m.ClaimReplicaSets(ctx, []*appsv1.ReplicaSet{obj.(*appsv1.ReplicaSet)})
		return len(owned) == 1, err
	},
}

var builtinKinds = []childKind{podKind, replicaSetKind}

// newOwnerAndManager creates an owner of kind's owner kind and the Manager a controller
// would build for it, with the kind's patcher wrapped to count writes.
func newOwnerAndManager(ctx context.Context, t *testing.T, client kubernetes.Interface, kind childKind, ns, name string, finalizers ...string) (metav1.Object, *refmanager.Manager, *countingPatcher) {
	t.Helper()
	owner, selector, err := kind.newOwner(ctx, client, ns, name)
	if err != nil {
		t.Fatalf("creating the owner: %v", err)
	}
	patcher := &countingPatcher{Patcher: kind.patcher(client)}
	m, err := newManager(owner, kind.ownerGVK, selector, kind.liveOwner(client, owner), patcher, finalizers...)
	if err != nil {
		t.Fatal(err)
	}
	return owner, m, patcher
}
