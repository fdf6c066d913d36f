package advanceddaemonset

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/pkg/features"
)

// nodeRevisions is what runs on one node during a rollout: at most one pod of the current
// revision and one of an old one. ok is false when either kind has more than one pod;
// manage cleans such nodes up first.
type nodeRevisions struct {
	current, old *corev1.Pod
	ok           bool
}

// revisionsOn sorts the node's pods that are not being deleted by revision.
func (v *view) revisionsOn(node string) nodeRevisions {
	revisions := nodeRevisions{ok: true}
	for _, pod := range v.activePods(node) {
		slot := &revisions.old
		if v.updated(pod) {
			slot = &revisions.current
		}
		if *slot != nil {
			revisions.ok = false
		}
		*slot = pod
	}
	return revisions
}

// rolloutNodes returns the nodes the rollout may roll, in the order it takes them: nodes
// already updated or being updated first, then the others (only those the rolling
// selector picks, when there is one), walking node names from the largest down. The
// partition takes the last nodes off the list, so the pods it keeps on old revisions sit
// on the lexicographically smallest node names.
func rolloutNodes(v *view) []string {
	names := map[string]bool{}
	for name := range v.podsByNode {
		if _, exists := v.nodeByName[name]; exists {
			names[name] = true
		}
	}
	for _, node := range v.nodes {
		if v.eligible[node.Name].ShouldRun {
			names[node.Name] = true
		}
	}
	var selector labels.Selector
	if rolling := daemonsetutil.RollingUpdate(v.ds); rolling != nil && rolling.Selector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(rolling.Selector); err != nil {
			selector = labels.Nothing()
		}
	}
	var updated, updating, selected, rest []string
	descending := slices.Sorted(maps.Keys(names))
	slices.Reverse(descending)
	for _, name := range descending {
		revisions := v.revisionsOn(name)
		switch {
		case !revisions.ok || revisions.current != nil:
			updated = append(updated, name)
		case revisions.old == nil || kruisepod.IsPreparingDelete(revisions.old):
			updating = append(updating, name)
		case selector != nil && selector.Matches(labels.Set(v.nodeByName[name].Labels)):
			selected = append(selected, name)
		default:
			rest = append(rest, name)
		}
	}
	ordered := append(updated, updating...)
	if selector != nil {
		ordered = append(ordered, selected...)
	} else {
		ordered = append(ordered, rest...)
	}
	partition, err := daemonsetutil.Partition(v.ds, v.desired)
	if err != nil {
		partition = len(names)
	}
	limit := len(names) - partition
	if limit <= 0 {
		return nil
	}
	return ordered[:min(limit, len(ordered))]
}

// rollingUpdate replaces old pods on the rollout's nodes within the DaemonSet's budget:
// without surge, old pods are deleted (or updated in place) while at most maxUnavailable
// nodes lack an available pod; with surge, new pods are created next to old ones, and old
// ones deleted once the new ones are available.
func (c *Controller) rollingUpdate(ctx context.Context, v *view, h history, again *requeue) error {
	maxSurge, maxUnavailable, err := daemonsetutil.SurgeAndUnavailable(v.ds, v.desired)
	if err != nil {
		return err
	}
	nodes := rolloutNodes(v)
	if len(nodes) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	if maxSurge == 0 {
		strict := c.gates.Enabled(features.AdvancedDaemonSetStrictMaxUnavailable)
		replace := podsToReplace(v, nodes, maxUnavailable, strict)
		if len(replace) == 0 {
			return nil
		}
		logger.V(2).Info("Replacing old pods", "count", len(replace), "maxUnavailable", maxUnavailable)
		var inPlaceErr error
		if daemonsetutil.InPlaceIfPossible(v.ds) {
			replace, inPlaceErr = c.updateInPlace(ctx, v, h, replace)
		}
		if err := c.syncNodes(ctx, v, replace, nil); err != nil {
			return err
		}
		return inPlaceErr
	}
	creates, deletes := surgePlan(v, nodes, maxSurge)
	if len(creates) == 0 && len(deletes) == 0 {
		return nil
	}
	logger.V(2).Info("Surging new pods", "creating", len(creates), "deleting", len(deletes), "maxSurge", maxSurge)
	return c.syncNodes(ctx, v, deletes, creates)
}

// podsToReplace picks the old pods to replace on nodes when the rollout does not surge.
// Nodes without an available pod use up maxUnavailable; an available old pod is replaced
// only while budget is left. An old pod that is unavailable anyway is replaced regardless
// of the budget, as OpenKruise does, unless strict is set: then its replacement counts
// against the budget too, and such pods go first. An old pod this controller took out of
// service for an in-place update that did not get through (the manager died between the
// two writes, or the second failed) is not unavailable "anyway": it is replaced, so that
// the update is finished, and counts against the budget like the update it is.
func podsToReplace(v *view, nodes []string, maxUnavailable int, strict bool) []*corev1.Pod {
	var (
		numUnavailable int
		interrupted    []*corev1.Pod
		unavailableOld []*corev1.Pod
		availableOld   []*corev1.Pod
	)
	for _, node := range nodes {
		revisions := v.revisionsOn(node)
		if !revisions.ok {
			numUnavailable++
			continue
		}
		oldGone := revisions.old == nil || kruisepod.IsPreparingDelete(revisions.old)
		switch {
		case oldGone && revisions.current == nil, !oldGone && revisions.current != nil:
			numUnavailable++
		case oldGone:
			if !v.available(revisions.current) {
				numUnavailable++
			}
			if kruisepod.IsPreparingDelete(revisions.current) {
				numUnavailable++
			}
		case kruisepod.InPlaceUpdateStarted(revisions.old):
			numUnavailable++
			interrupted = append(interrupted, revisions.old)
		case !v.available(revisions.old):
			unavailableOld = append(unavailableOld, revisions.old)
		case numUnavailable < maxUnavailable:
			availableOld = append(availableOld, revisions.old)
		}
	}
	budget := max(maxUnavailable-numUnavailable, 0)
	if !strict {
		return slices.Concat(interrupted, unavailableOld, availableOld[:min(budget, len(availableOld))])
	}
	replace := unavailableOld[:min(budget, len(unavailableOld))]
	budget -= len(replace)
	return slices.Concat(interrupted, replace, availableOld[:min(budget, len(availableOld))])
}

// surgePlan picks, for a surging rollout on nodes, where to create a new pod next to an
// old one and which old pods to delete because their replacement is available. Nodes whose
// new pod is not available yet use up maxSurge; an unavailable old pod gets its
// replacement regardless.
func surgePlan(v *view, nodes []string, maxSurge int) (creates []string, deletes []*corev1.Pod) {
	var (
		numSurge   int
		candidates []string
	)
	for _, node := range nodes {
		revisions := v.revisionsOn(node)
		switch {
		case !revisions.ok:
			numSurge++
		case revisions.old == nil || kruisepod.IsPreparingDelete(revisions.old):
		case revisions.current == nil:
			if !v.available(revisions.old) {
				creates = append(creates, node)
			} else if numSurge < maxSurge {
				candidates = append(candidates, node)
			}
		case !v.available(revisions.current) || kruisepod.IsPreparingDelete(revisions.current):
			numSurge++
		default:
			deletes = append(deletes, revisions.old)
		}
	}
	budget := max(maxSurge-numSurge, 0)
	return append(creates, candidates[:min(budget, len(candidates))]...), deletes
}

// nodesWithBothRevisions reports whether some node runs pods of the current and of an
// old revision at once: a rollout is under way there, and without looking again it could
// stall.
func nodesWithBothRevisions(v *view) bool {
	for node := range v.podsByNode {
		pods := v.activePods(node)
		if slices.ContainsFunc(pods, v.updated) && slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return !v.updated(p) }) {
			return true
		}
	}
	return false
}

// readyPods returns the ready pods among pods, for availability checks.
func readyPods(pods []*corev1.Pod) []*corev1.Pod {
	var ready []*corev1.Pod
	for _, pod := range pods {
		if podutil.IsPodReady(pod) {
			ready = append(ready, pod)
		}
	}
	return ready
}
