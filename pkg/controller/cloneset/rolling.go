package cloneset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset/clonesetutil"
	"github.com/bosun-dev/bosun/pkg/features"
)

// Event reasons of updates. They are OpenKruise's.
const (
	SuccessfulUpdatePodInPlaceReason  = "SuccessfulUpdatePodInPlace"
	FailedUpdatePodInPlaceReason      = "FailedUpdatePodInPlace"
	SuccessfulUpdatePodReCreateReason = "SuccessfulUpdatePodReCreate"
	FailedUpdatePodReCreateReason     = "FailedUpdatePodReCreate"
)

// specifiedDeletePatch labels a pod to be deleted.
var specifiedDeletePatch = []byte(`{"metadata":{"labels":{"` + appsv1beta1.SpecifiedDeleteKey + `":"true"}}}`)

// rollingUpdate moves the CloneSet's pods towards the update revision (or, with gate
// CloneSetPartitionRollback and a grown partition, back to the current one):
//  1. every pod is refreshed first, whatever the strategy and paused or not: its in-place
//     update condition, its lifecycle state, its pod-template-hash label. Any write ends
//     the step: the next sync sees the pods as they now are;
//  2. OnDelete and paused CloneSets go no further;
//  3. the pods still to update are ordered (clonesetutil.UpdateOrder) and limited to what
//     the diffs allow within maxUnavailable;
//  4. each is updated in place when its policy allows and the revisions permit, else
//     labelled for deletion, which the next scale step carries out (after creating its
//     replacement when maxSurge allows); with gate PodUnavailableBudgetUpdateGate only
//     once its PodUnavailableBudget admitted it, and the first refusal ends the step.
func (c *Controller) rollingUpdate(ctx context.Context, v *view, again *requeue) error {
	cs := v.updateSet
	modified := false
	for _, pod := range v.pods {
		changed, err := c.refreshPod(ctx, v, pod, again)
		if err != nil {
			return err
		}
		fixed, err := c.fixPodTemplateHash(ctx, v, pod)
		if err != nil {
			return err
		}
		modified = modified || changed || fixed
	}
	if modified {
		return nil
	}
	strategy := cs.Spec.UpdateStrategy
	if strategy.Type == appsv1beta1.OnDeleteCloneSetUpdateStrategyType || (strategy.RollingUpdate != nil && strategy.RollingUpdate.Paused) {
		return nil
	}
	diffs := c.diffs(ctx, v, func(pod *corev1.Pod) bool { return clonesetutil.AtRevision(pod, v.update.Name) })
	if diffs.Update == 0 {
		return nil
	}
	target := v.update
	if diffs.Update < 0 {
		target = v.current
	}
	var candidates []int
	for i, pod := range v.pods {
		if updateCandidate(pod, clonesetutil.AtRevision(pod, v.update.Name) == (diffs.Update < 0)) {
			candidates = append(candidates, i)
		}
	}
	ordered := clonesetutil.UpdateOrder(strategy.RollingUpdate, v.pods, candidates)
	chosen := c.limitUpdates(v, diffs, ordered, target.Name)
	klog.FromContext(ctx).V(3).Info("Updating pods", "target", target.Name, "update", diffs.Update,
		"maxUnavailable", diffs.UpdateMaxUnavailable, "candidates", len(candidates), "chosen", len(chosen))
	for _, i := range chosen {
		pod := v.pods[i]
		if admitted, err := c.budgetAdmitsUpdate(ctx, pod); err != nil || !admitted {
			if err == nil {
				again.after(budgetRefusalRetry)
			}
			return err
		}
		if err := c.moveToRevision(ctx, v, target, pod, again); err != nil {
			return err
		}
	}
	return nil
}

// budgetRefusalRetry is how soon a CloneSet whose pod update a PodUnavailableBudget refused
// is looked at again: the budget frees up as soon as an updated pod is available again,
// with no event on the CloneSet to tell.
const budgetRefusalRetry = time.Second

// budgetAdmitsUpdate asks, with gate PodUnavailableBudgetUpdateGate, the budget covering pod
// whether the controller may update it, the same decision the pod webhook would make on the
// update (or, for a recreate, on the deletion that follows). An admitted pod is recorded in
// the budget's unavailablePods, which the webhook then honours; a pod that is not available,
// or whose in-place update is not complete, costs nothing. Refusals are recorded on the pod
// as PubPreventPodDeletion events by the decision itself.
func (c *Controller) budgetAdmitsUpdate(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if c.budgets == nil || !c.gates.Enabled(features.PodUnavailableBudgetUpdateGate) {
		return true, nil
	}
	admitted, reason, err := c.budgets.Admit(ctx, pod, policyv1beta1.PubUpdateOperation, ControllerName)
	if err != nil {
		return false, fmt.Errorf("asking the PodUnavailableBudget of pod %s about its update: %w", klog.KObj(pod), err)
	}
	if !admitted {
		klog.FromContext(ctx).V(2).Info("PodUnavailableBudget refuses the update of a pod; trying again later",
			"pod", klog.KObj(pod), "reason", reason, "after", budgetRefusalRetry)
	}
	return admitted, nil
}

// updateCandidate reports whether pod may be updated now, given whether it waits for an
// update at all: not while a preDelete hook holds it, nor while an in-place update of it is
// in its grace period, unless it already went through an in-place update (Updated).
func updateCandidate(pod *corev1.Pod, waiting bool) bool {
	if !waiting {
		return false
	}
	switch clonesetutil.LifecycleState(pod) {
	case appsv1beta1.LifecycleStatePreparingDelete:
		return false
	case appsv1beta1.LifecycleStateUpdated:
		return true
	}
	return !inGracePeriod(pod)
}

// inGracePeriod reports whether an in-place update of pod waits out its grace period.
func inGracePeriod(pod *corev1.Pod) bool {
	if value := pod.Annotations[appsv1beta1.InPlaceUpdateGraceKey]; value != "" {
		return true
	}
	return pod.Annotations[appsv1beta1.InPlaceUpdateGraceKeyOld] != ""
}

// limitUpdates returns the first of ordered (indexes into v.pods) that may be updated now:
// at most |diffs.Update| of them, and only while the pods already unavailable at the target
// revision plus those chosen stay below diffs.UpdateMaxUnavailable; an available pod is
// chosen only while the unavailable pods, itself counted, stay within it.
func (c *Controller) limitUpdates(v *view, diffs clonesetutil.Diffs, ordered []int, target string) []int {
	if n := abs(diffs.Update); n < len(ordered) {
		ordered = ordered[:n]
	}
	var unavailable, targetUnavailable int
	for _, pod := range v.pods {
		if !c.available(v, pod) {
			unavailable++
			if clonesetutil.AtRevision(pod, target) {
				targetUnavailable++
			}
		}
	}
	chosen := 0
	for _, i := range ordered {
		if targetUnavailable+chosen >= diffs.UpdateMaxUnavailable {
			break
		}
		if c.available(v, v.pods[i]) {
			if unavailable >= diffs.UpdateMaxUnavailable {
				break
			}
			unavailable++
		}
		chosen++
	}
	return ordered[:chosen]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// moveToRevision moves pod to revision target: in place when the CloneSet's policy is
// InPlaceIfPossible or InPlaceOnly and the two revisions differ only in what a running pod
// can take, going through the inPlaceUpdate hook first; else, unless the policy is
// InPlaceOnly, by labelling it apps.kruise.io/specified-delete, so that scaling replaces it.
func (c *Controller) moveToRevision(ctx context.Context, v *view, target *appsv1.ControllerRevision, pod *corev1.Pod, again *requeue) error {
	cs := v.updateSet
	var policy appsv1beta1.CloneSetPodUpdateStrategyType
	if rolling := cs.Spec.UpdateStrategy.RollingUpdate; rolling != nil {
		policy = rolling.PodUpdatePolicy
	}
	if policy == appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType || policy == appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
		if plan := c.planInPlace(v, pod, target, policy); plan != nil {
			return c.updateInPlace(ctx, v, pod, target, plan, again)
		}
		if policy == appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType {
			return fmt.Errorf("find Pod %s update strategy is InPlaceOnly but can not update in-place", pod.Name)
		}
		klog.FromContext(ctx).V(2).Info("Pod cannot be updated in place; recreating it", "pod", klog.KObj(pod))
	}
	return c.recreatePod(ctx, v, target, pod)
}

// recreatePod labels pod to be deleted; scaling deletes it and creates its replacement.
func (c *Controller) recreatePod(ctx context.Context, v *view, target *appsv1.ControllerRevision, pod *corev1.Pod) error {
	if _, labelled := pod.Labels[appsv1beta1.SpecifiedDeleteKey]; !labelled {
		patched, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, specifiedDeletePatch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeWarning, FailedUpdatePodReCreateReason,
				"failed to patch pod specified-delete %s for update(revision %s): %v", pod.Name, target.Name, err)
			return fmt.Errorf("labelling pod %s for deletion: %w", klog.KObj(pod), err)
		}
		if err == nil {
			c.podUpdates.Expect(v.key, patched)
		}
	}
	klog.FromContext(ctx).V(2).Info("Labelled pod for recreation", "pod", klog.KObj(pod), "revision", target.Name)
	c.recorder.Eventf(eventObject(v.cs), corev1.EventTypeNormal, SuccessfulUpdatePodReCreateReason,
		"successfully patch pod %s specified-delete for update(revision %s)", pod.Name, target.Name)
	return nil
}

// fixPodTemplateHash gives pod the pod-template-hash label, the hash of its revision, when
// it lacks it (pods written by older controllers), and reports whether it wrote.
func (c *Controller) fixPodTemplateHash(ctx context.Context, v *view, pod *corev1.Pod) (bool, error) {
	if _, ok := pod.Labels[appsv1beta1.PodTemplateHashLabelKey]; ok {
		return false, nil
	}
	body := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, appsv1beta1.PodTemplateHashLabelKey,
		clonesetutil.ShortHash(pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey]))
	patched, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("adding pod-template-hash to pod %s: %w", klog.KObj(pod), err)
	}
	c.podUpdates.Expect(v.key, patched)
	return true, nil
}
