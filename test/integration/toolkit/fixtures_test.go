package toolkit

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"

	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// holdFinalizer keeps an object in place after its deletion, with a deletionTimestamp,
// since nothing in these tests ever removes it. keepFinalizer is one the toolkit must
// leave alone.
const (
	holdFinalizer = "bosun.dev/test-hold"
	keepFinalizer = "bosun.dev/test-keep"
)

var (
	replicaSetGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
	daemonSetGVK  = appsv1alpha1.SchemeGroupVersion.WithKind("DaemonSet")

	replicaSetsGVR   = appsv1.SchemeGroupVersion.WithResource("replicasets")
	daemonSetsGVR    = appsv1alpha1.SchemeGroupVersion.WithResource("daemonsets")
	imagePullJobsGVR = appsv1alpha1.SchemeGroupVersion.WithResource("imagepulljobs")
)

// setup returns a context bounded to a minute that logs to t, the shared control plane,
// an admin clientset and a fresh namespace.
func setup(t *testing.T) (context.Context, *framework.ControlPlane, kubernetes.Interface, string) {
	t.Helper()
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{Timeout: time.Minute, LogToTest: true})
	return e.Ctx, e.CP, e.Client, e.Namespace
}

// selectorLabels are the labels an owner named name selects.
func selectorLabels(name string) map[string]string {
	return map[string]string{"app": name}
}

// strangerLabels match no owner's selector.
var strangerLabels = map[string]string{"app": "stranger"}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1.0"}}}
}

// newReplicaSet is an apps/v1 ReplicaSet with no replicas selecting selectorLabels(name).
func newReplicaSet(namespace, name string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selectorLabels(name)},
				Spec:       podSpec(),
			},
		},
	}
}

// newDeployment is an apps/v1 Deployment with no replicas selecting selectorLabels(name).
func newDeployment(namespace, name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selectorLabels(name)},
				Spec:       podSpec(),
			},
		},
	}
}

// newAdvancedDaemonSet is an apps.kruise.io/v1alpha1 DaemonSet selecting
// selectorLabels(name).
func newAdvancedDaemonSet(namespace, name string) *appsv1alpha1.DaemonSet {
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selectorLabels(name)},
				Spec:       podSpec(),
			},
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type:           appsv1alpha1.StandardRollingUpdateType,
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
}

// newImagePullJob is a minimal valid ImagePullJob.
func newImagePullJob(namespace, name string, labels map[string]string, refs []metav1.OwnerReference) *appsv1alpha1.ImagePullJob {
	return &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, OwnerReferences: refs},
		Spec: appsv1alpha1.ImagePullJobSpec{
			Image: "registry.example/app:1.0",
			ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				Parallelism:      ptr.To(intstr.FromInt32(1)),
				CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always},
			},
		},
	}
}

// newPod is an unscheduled pod. Without a node, the API server deletes it at once
// instead of waiting for a kubelet, which lets tests re-create it under the same name.
func newPod(namespace, name string, labels map[string]string, refs []metav1.OwnerReference, finalizers []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, Labels: labels,
			OwnerReferences: refs, Finalizers: finalizers,
		},
		Spec: podSpec(),
	}
}

// refKind names the ownerReferences the tests put on objects, relative to the owner
// under test.
type refKind int

const (
	// ownerController is the owner's controller reference, as the toolkit writes it.
	ownerController refKind = iota
	// ownerPlain is a non-controller reference to the owner.
	ownerPlain
	// otherPlain is a non-controller reference to some other object.
	otherPlain
	// otherController is another object's controller reference.
	otherController
)

// testRefs resolves refKinds for one owner; other is a made-up object (the API server
// does not check that owners exist).
type testRefs struct {
	owner    metav1.Object
	ownerGVK schema.GroupVersionKind
	otherUID types.UID
}

func newTestRefs(owner metav1.Object, ownerGVK schema.GroupVersionKind) testRefs {
	return testRefs{owner: owner, ownerGVK: ownerGVK, otherUID: uuid.NewUUID()}
}

func (r testRefs) get(kinds ...refKind) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	for _, kind := range kinds {
		switch kind {
		case ownerController:
			refs = append(refs, *metav1.NewControllerRef(r.owner, r.ownerGVK))
		case ownerPlain:
			refs = append(refs, metav1.OwnerReference{
				APIVersion: r.ownerGVK.GroupVersion().String(), Kind: r.ownerGVK.Kind,
				Name: r.owner.GetName(), UID: r.owner.GetUID(),
			})
		case otherPlain:
			refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: r.otherUID})
		case otherController:
			refs = append(refs, metav1.OwnerReference{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other", UID: r.otherUID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			})
		}
	}
	return refs
}

// newManager builds the Manager a bosun controller would build for owner: its selector,
// a live deletion recheck and the kind's patcher.
func newManager(owner metav1.Object, ownerGVK schema.GroupVersionKind, selector *metav1.LabelSelector, getLive refmanager.GetLiveFunc, patcher refmanager.Patcher, finalizers ...string) (*refmanager.Manager, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, err
	}
	if sel.Empty() {
		sel = labels.Nothing()
	}
	canAdopt := refmanager.RecheckDeletionTimestamp(owner, ownerGVK.Kind, getLive)
	return refmanager.New(owner, ownerGVK, sel, canAdopt, patcher, finalizers...), nil
}

// liveMetadata reads owner's metadata live through the metadata client, which serves any
// resource, built-in or custom, as a GetLiveFunc.
func liveMetadata(client metadata.Interface, resource schema.GroupVersionResource, owner metav1.Object) refmanager.GetLiveFunc {
	return func(ctx context.Context) (metav1.Object, error) {
		obj, err := client.Resource(resource).Namespace(owner.GetNamespace()).Get(ctx, owner.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return obj, nil
	}
}

// countingPatcher counts the writes a Manager attempts.
type countingPatcher struct {
	refmanager.Patcher
	adopts, releases int
}

func (p *countingPatcher) Adopt(ctx context.Context, obj metav1.Object, ref metav1.OwnerReference, finalizers []string) error {
	p.adopts++
	return p.Patcher.Adopt(ctx, obj, ref, finalizers)
}

func (p *countingPatcher) Release(ctx context.Context, obj metav1.Object, ownerUID types.UID, finalizers []string) error {
	p.releases++
	return p.Patcher.Release(ctx, obj, ownerUID, finalizers)
}

// orNil turns an empty slice into nil, so that comparisons do not tell "no items" from
// "no list" (the API server omits empty lists).
func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
