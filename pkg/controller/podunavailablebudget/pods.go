package podunavailablebudget

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kruiseappsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/pubutil"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/controller/workload"
)

// unknownReplicas is what an owner without a replica count adds to a selector budget's
// expected count. OpenKruise counts such an owner as -1, which makes a maxUnavailable
// budget over its pods protect nothing; budgets written for OpenKruise rely on that, and
// pub.kruise.io/protect-total-replicas is the way out.
const unknownReplicas = -1

// ownedPodsOnly are the targetRef kinds whose pods are found only through owner
// references. For any other kind, a workload none of whose pods name it (its pods belong
// to something it drives) covers the pods its scale selector matches instead.
var ownedPodsOnly = map[schema.GroupKind]bool{
	replicaSetKind:  true,
	deploymentKind:  true,
	statefulSetKind: true,
	{Group: corev1.GroupName, Kind: "ReplicationController"}:  true,
	{Group: kruiseappsv1beta1.GroupName, Kind: "CloneSet"}:    true,
	{Group: kruiseappsv1beta1.GroupName, Kind: "StatefulSet"}: true,
}

// coverage is what one sync found a budget to cover.
type coverage struct {
	// pods are the active pods the budget covers.
	pods []*corev1.Pod
	// expected is the number of pods the budget expects, the base of its percentages.
	expected int32
}

// resolveCoverage finds the active pods pub covers and the number of pods it expects.
// override is the expected pod count the budget sets, nil when it sets none; it replaces
// the computed count.
func (c *Controller) resolveCoverage(ctx context.Context, pub *policyv1beta1.PodUnavailableBudget, override *int32) (coverage, error) {
	if pub.Spec.TargetReference != nil {
		return c.targetCoverage(ctx, pub, override)
	}
	return c.selectorCoverage(ctx, pub, override)
}

// targetCoverage resolves a targetRef budget: the pods of the target workload and its
// replica count. A target that is missing or being deleted covers nothing; one scaled to
// zero too (its pods are on their way out). A target without a replica count (a kind
// without /scale) expects zero pods unless override says otherwise, but its pods are still
// covered, so that a budget setting a total or a minAvailable count protects them.
func (c *Controller) targetCoverage(ctx context.Context, pub *policyv1beta1.PodUnavailableBudget, override *int32) (coverage, error) {
	ref := pub.Spec.TargetReference
	logger := klog.FromContext(ctx)
	target, err := c.finder.Get(ctx, pub.Namespace, metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name})
	if err != nil {
		return coverage{}, fmt.Errorf("looking up the target %s %s: %w", ref.Kind, ref.Name, err)
	}
	var cov coverage
	if override != nil {
		cov.expected = *override
	}
	switch {
	case target == nil:
		logger.V(4).Info("Target workload does not exist", "kind", ref.Kind, "name", ref.Name)
		return cov, nil
	case target.Deleting:
		logger.V(4).Info("Target workload is being deleted", "kind", ref.Kind, "name", ref.Name)
		return cov, nil
	case target.HasReplicas && target.Replicas == 0:
		return cov, nil
	}
	if override == nil && target.HasReplicas {
		cov.expected = target.Replicas
	}

	cov.pods, err = c.podsControlledBy(ctx, pub.Namespace, target)
	if err != nil {
		return coverage{}, err
	}
	if len(cov.pods) == 0 && !ownedPodsOnly[target.GroupKind()] && target.Selector != nil && !target.Selector.Empty() {
		if cov.pods, err = c.activePods(pub.Namespace, target.Selector); err != nil {
			return coverage{}, err
		}
	}
	return cov, nil
}

// podsControlledBy returns the active pods of namespace that target owns directly, or that
// it controls through the chain above their controller: a Deployment through its
// ReplicaSets, and with feature PodUnavailableBudgetOwnerChain any workload at any depth.
// A pod whose chain passes through a workload being deleted before reaching target is not
// covered: it goes with that workload (the ReplicaSets of an old revision, say).
//
// Every pod change of a covered workload queues the budget, so during a rollout this runs
// for nearly every pod write; it visits the namespace's controllers, each decided once,
// and reads the pods of the covered ones only, instead of every pod of the namespace.
func (c *Controller) podsControlledBy(ctx context.Context, namespace string, target *workload.Workload) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	// A pod controlled through the chain may also name target in another reference.
	added := map[types.UID]bool{}
	addActive := func(objs []any) {
		for _, obj := range objs {
			pod, ok := obj.(*corev1.Pod)
			if !ok || added[pod.UID] || !pubutil.IsActive(pod) {
				continue
			}
			added[pod.UID] = true
			pods = append(pods, pod)
		}
	}

	shared, err := c.podIndexer.ByIndex(sharedOwnerIndex, sharedOwnerKey(namespace, target.UID))
	if err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s that %s %s owns: %w", namespace, target.Kind, target.Name, err)
	}
	addActive(shared)

	// The controller index holds one key per controller of a namespace ("<ns>/<kind>/…")
	// and one for its orphans ("<ns>"), which the prefix leaves out.
	prefix := namespace + "/"
	for _, key := range c.podIndexer.ListIndexFuncValues(podutil.PodControllerIndex) {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		controlled, err := c.podIndexer.ByIndex(podutil.PodControllerIndex, key)
		if err != nil {
			return nil, fmt.Errorf("listing the pods of controller %s: %w", key, err)
		}
		covered, err := c.controllerCovered(ctx, namespace, controlled, target)
		if err != nil {
			return nil, err
		}
		if covered {
			addActive(controlled)
		}
	}
	return pods, nil
}

// controllerCovered reports whether target covers the pods of one controller, given those
// pods (all of one controller reference, read from the first).
func (c *Controller) controllerCovered(ctx context.Context, namespace string, controlled []any, target *workload.Workload) (bool, error) {
	if len(controlled) == 0 {
		return false, nil
	}
	pod, ok := controlled[0].(*corev1.Pod)
	if !ok {
		return false, nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	switch {
	case ref == nil:
		return false, nil
	case ref.UID == target.UID:
		return true, nil
	case !c.followsChain(ref):
		return false, nil
	}
	return c.chainReaches(ctx, namespace, ref, target)
}

// chainReaches reports whether target is in the controller chain starting at ref, with no
// workload being deleted on the way.
func (c *Controller) chainReaches(ctx context.Context, namespace string, ref *metav1.OwnerReference, target *workload.Workload) (bool, error) {
	chain, err := c.finder.Chain(ctx, namespace, ref)
	if err != nil {
		return false, fmt.Errorf("looking up the controllers above %s %s: %w", ref.Kind, ref.Name, err)
	}
	for _, w := range chain {
		if w.UID == target.UID {
			return true, nil
		}
		if w.Deleting {
			return false, nil
		}
	}
	return false, nil
}

// selectorCoverage resolves a selector budget: the active pods its selector matches, and
// the sum of the replica counts of their distinct counting owners (workload.Finder's
// CountingOwner: the Deployment of a ReplicaSet's pods, or the top of the chain with
// feature PodUnavailableBudgetOwnerChain). Pods without a controller add nothing, nor does
// an owner that is gone or being deleted; an owner without a replica count adds
// unknownReplicas, and so does one whose own controller is gone (a ReplicaSet whose
// Deployment was just deleted, which the garbage collector is about to delete with its
// pods: its replicas must not keep those pods protected, and OpenKruise too stops counting
// them once the Deployment is gone). With override the owners are not looked up at all.
func (c *Controller) selectorCoverage(ctx context.Context, pub *policyv1beta1.PodUnavailableBudget, override *int32) (coverage, error) {
	selector, err := budgetSelector(pub)
	if err != nil {
		return coverage{}, err
	}
	pods, err := c.activePods(pub.Namespace, selector)
	if err != nil {
		return coverage{}, err
	}
	cov := coverage{pods: pods}
	if override != nil {
		cov.expected = *override
		return cov, nil
	}
	lookedUp := map[types.UID]bool{}
	counted := map[types.UID]bool{}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || lookedUp[ref.UID] {
			continue
		}
		lookedUp[ref.UID] = true
		owner, err := c.finder.CountingOwner(ctx, pub.Namespace, ref)
		if err != nil {
			return coverage{}, fmt.Errorf("looking up the owner of pod %s: %w", klog.KObj(pod), err)
		}
		if owner == nil || owner.Deleting || counted[owner.UID] {
			continue
		}
		counted[owner.UID] = true
		if owner.HasReplicas && !owner.ControllerGone {
			cov.expected += owner.Replicas
		} else {
			cov.expected += unknownReplicas
		}
	}
	return cov, nil
}

// activePods returns the active pods of namespace that selector matches.
func (c *Controller) activePods(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.pods.Pods(namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s matching %s: %w", namespace, selector, err)
	}
	var pods []*corev1.Pod
	for _, pod := range all {
		if pubutil.IsActive(pod) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}
