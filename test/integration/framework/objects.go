package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Object is an API object as the typed clients read and write it.
type Object interface {
	metav1.Object
	runtime.Object
}

// TypedClient is what the typed clients of kubernetes' and bosun's clientsets have in common
// for one resource (PodInterface, NodeInterface, bosun's DaemonSetInterface, ...).
type TypedClient[T Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// statusClient is a TypedClient of a resource with a status subresource.
type statusClient[T Object] interface {
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Objects reads, writes and awaits the objects of one resource for a test, through its typed
// client and with the Env's context. The methods that take a testing.TB fail it on error,
// naming the object; the Try methods return the error instead, for tests of admission.
type Objects[T Object] struct {
	env       *Env
	kind      string
	namespace string // "" for a cluster-scoped resource
	client    TypedClient[T]
	describe  func(T) string
}

// NewObjects returns the objects of kind (as failure messages name it) in namespace ("" for a
// cluster-scoped resource), read and written through client, which must be of that
// namespace. Env has shortcuts for the resources the suites use.
func NewObjects[T Object](e *Env, kind, namespace string, client TypedClient[T]) *Objects[T] {
	return &Objects[T]{env: e, kind: kind, namespace: namespace, client: client, describe: DescribeObject[T]}
}

// DescribedBy returns the same objects with describe rendering the state the waits show when
// they fail (DescribeObject by default).
func (o *Objects[T]) DescribedBy(describe func(T) string) *Objects[T] {
	c := *o
	c.describe = describe
	return &c
}

// ref names one object in failure messages.
func (o *Objects[T]) ref(name string) string {
	if o.namespace == "" {
		return o.kind + " " + name
	}
	return o.kind + " " + o.namespace + "/" + name
}

// TryCreate creates obj and returns it as stored.
func (o *Objects[T]) TryCreate(obj T) (T, error) {
	return o.client.Create(o.env.Ctx, obj, metav1.CreateOptions{})
}

// Create creates obj and returns it as stored.
func (o *Objects[T]) Create(t testing.TB, obj T) T {
	t.Helper()
	created, err := o.TryCreate(obj)
	if err != nil {
		t.Fatalf("creating %s: %v", o.ref(obj.GetName()), err)
	}
	return created
}

// Get returns the live object.
func (o *Objects[T]) Get(t testing.TB, name string) T {
	t.Helper()
	obj, err := o.client.Get(o.env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting %s: %v", o.ref(name), err)
	}
	return obj
}

// TryUpdate applies mutate to the live object's metadata and spec and updates it, again on a
// conflict (controllers write the objects all the time), and returns what was stored.
func (o *Objects[T]) TryUpdate(name string, mutate func(T)) (T, error) {
	return o.write(name, mutate, o.client.Update)
}

// Update is TryUpdate failing the test on error.
func (o *Objects[T]) Update(t testing.TB, name string, mutate func(T)) T {
	t.Helper()
	updated, err := o.TryUpdate(name, mutate)
	if err != nil {
		t.Fatalf("updating %s: %v", o.ref(name), err)
	}
	return updated
}

// UpdateStatus applies mutate to the live object's status and writes it through the status
// subresource, again on a conflict, as the object's controller or a kubelet would.
func (o *Objects[T]) UpdateStatus(t testing.TB, name string, mutate func(T)) T {
	t.Helper()
	updated, err := o.TryUpdateStatus(name, mutate)
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

// TryUpdateStatus is UpdateStatus returning its error.
func (o *Objects[T]) TryUpdateStatus(name string, mutate func(T)) (T, error) {
	status, ok := o.client.(statusClient[T])
	if !ok {
		var none T
		return none, fmt.Errorf("updating the status of %s: the %s client has no status subresource", o.ref(name), o.kind)
	}
	updated, err := o.write(name, mutate, status.UpdateStatus)
	if err != nil {
		return updated, fmt.Errorf("updating the status of %s: %w", o.ref(name), err)
	}
	return updated, nil
}

func (o *Objects[T]) write(name string, mutate func(T), update func(context.Context, T, metav1.UpdateOptions) (T, error)) (T, error) {
	var updated T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := o.client.Get(o.env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(obj)
		updated, err = update(o.env.Ctx, obj, metav1.UpdateOptions{})
		return err
	})
	return updated, err
}

// Delete deletes the object with the API server's default options.
func (o *Objects[T]) Delete(t testing.TB, name string) {
	t.Helper()
	o.DeleteWith(t, name, metav1.DeleteOptions{})
}

// DeleteWith deletes the object with opts.
func (o *Objects[T]) DeleteWith(t testing.TB, name string, opts metav1.DeleteOptions) {
	t.Helper()
	if err := o.client.Delete(o.env.Ctx, name, opts); err != nil {
		t.Fatalf("deleting %s: %v", o.ref(name), err)
	}
}

// WaitFor waits until the object exists and cond holds for it, and returns it. A failure
// names the object and what was awaited and shows the object as last seen.
func (o *Objects[T]) WaitFor(t testing.TB, name, what string, cond func(T) bool) T {
	t.Helper()
	return o.await(t, name, what, false, cond)
}

// WaitForEvenAbsent is WaitFor for a state the object may be in by not existing: cond sees
// the zero T (nil) while it does not.
func (o *Objects[T]) WaitForEvenAbsent(t testing.TB, name, what string, cond func(T) bool) T {
	t.Helper()
	return o.await(t, name, what, true, cond)
}

func (o *Objects[T]) await(t testing.TB, name, what string, absentToo bool, cond func(T) bool) T {
	t.Helper()
	var last T
	seen := false
	o.env.Await(t, o.ref(name)+": "+what, func(ctx context.Context) (bool, error) {
		obj, err := o.client.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && absentToo:
			var none T
			obj = none
		case err != nil:
			return false, err
		}
		last, seen = obj, true
		return cond(obj), nil
	}, func() string {
		if !seen {
			return "<nothing>"
		}
		return o.describe(last)
	})
	return last
}

// WaitForGone waits until the object does not exist.
func (o *Objects[T]) WaitForGone(t testing.TB, name string) {
	t.Helper()
	var last T
	o.env.Await(t, o.ref(name)+" to be deleted", func(ctx context.Context) (bool, error) {
		obj, err := o.client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		last = obj
		return false, err
	}, func() string { return o.describe(last) })
}

// DescribeObject renders an object for failure messages: its generation, labels,
// annotations, owners, deletion and finalizers, and its status as JSON.
func DescribeObject[T Object](obj T) string {
	if v := reflect.ValueOf(obj); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return "<none>"
	}
	status := "?"
	if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
		raw, _ := json.Marshal(u["status"])
		status = string(raw)
	}
	var owners []string
	for _, ref := range obj.GetOwnerReferences() {
		owners = append(owners, fmt.Sprintf("%s/%s (uid %s, controller %v)", ref.Kind, ref.Name, ref.UID, ptr.Deref(ref.Controller, false)))
	}
	return fmt.Sprintf("generation %d, labels %v, annotations %v, owners %v, deleting %v, finalizers %v, status %s",
		obj.GetGeneration(), obj.GetLabels(), obj.GetAnnotations(), owners, obj.GetDeletionTimestamp() != nil, obj.GetFinalizers(), status)
}

// Shortcuts for the resources the suites use, in the test's namespace.

// Pods are the test namespace's pods.
func (e *Env) Pods() *Objects[*corev1.Pod] {
	return NewObjects(e, "pod", e.Namespace, e.Client.CoreV1().Pods(e.Namespace))
}

// ConfigMaps are the test namespace's ConfigMaps.
func (e *Env) ConfigMaps() *Objects[*corev1.ConfigMap] {
	return NewObjects(e, "ConfigMap", e.Namespace, e.Client.CoreV1().ConfigMaps(e.Namespace))
}

// ReplicationControllers are the test namespace's ReplicationControllers.
func (e *Env) ReplicationControllers() *Objects[*corev1.ReplicationController] {
	return NewObjects(e, "ReplicationController", e.Namespace, e.Client.CoreV1().ReplicationControllers(e.Namespace))
}

// Nodes are the cluster's Nodes.
func (e *Env) Nodes() *Objects[*corev1.Node] {
	return NewObjects(e, "Node", "", e.Client.CoreV1().Nodes())
}

// ReplicaSets are the test namespace's apps/v1 ReplicaSets.
func (e *Env) ReplicaSets() *Objects[*appsv1.ReplicaSet] {
	return NewObjects(e, "ReplicaSet", e.Namespace, e.Client.AppsV1().ReplicaSets(e.Namespace))
}

// Deployments are the test namespace's apps/v1 Deployments.
func (e *Env) Deployments() *Objects[*appsv1.Deployment] {
	return NewObjects(e, "Deployment", e.Namespace, e.Client.AppsV1().Deployments(e.Namespace))
}

// DaemonSets are the test namespace's Advanced DaemonSets.
func (e *Env) DaemonSets() *Objects[*appsv1alpha1.DaemonSet] {
	return NewObjects(e, "DaemonSet", e.Namespace, e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace))
}

// PodUnavailableBudgets are the test namespace's PodUnavailableBudgets.
func (e *Env) PodUnavailableBudgets() *Objects[*policyv1alpha1.PodUnavailableBudget] {
	return NewObjects(e, "PodUnavailableBudget", e.Namespace, e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace))
}

// ContainerRecreateRequests are the test namespace's ContainerRecreateRequests.
func (e *Env) ContainerRecreateRequests() *Objects[*appsv1alpha1.ContainerRecreateRequest] {
	return NewObjects(e, "ContainerRecreateRequest", e.Namespace, e.Bosun.AppsV1alpha1().ContainerRecreateRequests(e.Namespace))
}

// NodeImages are the cluster's NodeImages.
func (e *Env) NodeImages() *Objects[*appsv1alpha1.NodeImage] {
	return NewObjects(e, "NodeImage", "", e.Bosun.AppsV1alpha1().NodeImages())
}

// ImagePullJobs are the test namespace's ImagePullJobs.
func (e *Env) ImagePullJobs() *Objects[*appsv1alpha1.ImagePullJob] {
	return NewObjects(e, "ImagePullJob", e.Namespace, e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace))
}
