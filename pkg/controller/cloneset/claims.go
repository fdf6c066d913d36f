package cloneset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/controller/expectations"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// podKind is the kind a claim handed over to its pod names as its controller.
var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// cleanupClaims tidies the claims of a CloneSet that does not reuse them, and returns the
// claims of its active pods. A claim whose instance ID belongs to no active pod is either
// handed over to the finished pod with that ID, which the garbage collector then removes
// together with the pod (so a pod's volumes outlive it only as long as the pod object
// does), or, without such a pod, deleted.
func (c *Controller) cleanupClaims(ctx context.Context, cs *appsv1beta1.CloneSet, active, inactive []*corev1.Pod, claims []*corev1.PersistentVolumeClaim) ([]*corev1.PersistentVolumeClaim, error) {
	activeIDs := map[string]bool{}
	for _, pod := range active {
		if id := clonesetutil.InstanceID(pod); id != "" {
			activeIDs[id] = true
		}
	}
	inactiveByID := map[string]*corev1.Pod{}
	for _, pod := range inactive {
		if id := clonesetutil.InstanceID(pod); id != "" {
			inactiveByID[id] = pod
		}
	}
	var kept []*corev1.PersistentVolumeClaim
	for _, claim := range claims {
		id := clonesetutil.InstanceID(claim)
		if activeIDs[id] {
			kept = append(kept, claim)
			continue
		}
		if pod, ok := inactiveByID[id]; ok {
			if err := c.handClaimToPod(ctx, cs, claim, pod); err != nil {
				return nil, err
			}
			continue
		}
		if err := c.deleteUnusedClaim(ctx, cs, claim); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// handClaimToPod replaces claim's reference to cs by a controller reference to pod.
func (c *Controller) handClaimToPod(ctx context.Context, cs *appsv1beta1.CloneSet, claim *corev1.PersistentVolumeClaim, pod *corev1.Pod) error {
	updated := claim.DeepCopy()
	var refs []metav1.OwnerReference
	podReferenced := false
	for _, ref := range updated.OwnerReferences {
		if ref.UID == cs.UID {
			continue
		}
		podReferenced = podReferenced || ref.UID == pod.UID
		refs = append(refs, ref)
	}
	if !podReferenced {
		refs = append(refs, *metav1.NewControllerRef(pod, podKind))
	}
	updated.OwnerReferences = refs
	if _, err := c.kubeClient.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.recorder.Eventf(eventObject(cs), corev1.EventTypeWarning, FailedUpdateReason, "failed to update PVC %s: %v", claim.Name, err)
		return fmt.Errorf("handing claim %s over to pod %s: %w", klog.KObj(claim), pod.Name, err)
	}
	klog.FromContext(ctx).V(3).Info("Handed a claim over to its finished pod", "persistentVolumeClaim", klog.KObj(claim), "pod", klog.KObj(pod))
	return nil
}

// deleteUnusedClaim deletes a claim no pod uses.
func (c *Controller) deleteUnusedClaim(ctx context.Context, cs *appsv1beta1.CloneSet, claim *corev1.PersistentVolumeClaim) error {
	key := queue.KeyForRef(cs.Namespace, cs.Name)
	c.scaleExpectations.Expect(key, expectations.Delete, claimsResource, claim.Name)
	err := c.kubeClient.CoreV1().PersistentVolumeClaims(claim.Namespace).Delete(ctx, claim.Name, metav1.DeleteOptions{})
	if err != nil {
		c.scaleExpectations.Observe(key, expectations.Delete, claimsResource, claim.Name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.recorder.Eventf(eventObject(cs), corev1.EventTypeWarning, FailedDeleteReason, "failed to clean up PVC %s: %v", claim.Name, err)
		return fmt.Errorf("deleting unused claim %s: %w", klog.KObj(claim), err)
	}
	klog.FromContext(ctx).V(3).Info("Deleted a claim no pod uses", "persistentVolumeClaim", klog.KObj(claim))
	return nil
}

// eventObject returns cs with its type set, so that events name it even where the
// recorder's scheme does not know apps.kruise.io.
func eventObject(cs *appsv1beta1.CloneSet) *appsv1beta1.CloneSet {
	if cs.Kind != "" {
		return cs
	}
	typed := *cs
	typed.APIVersion, typed.Kind = controllerKind.GroupVersion().String(), controllerKind.Kind
	return &typed
}
