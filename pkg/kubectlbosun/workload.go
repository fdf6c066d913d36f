package kubectlbosun

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/pkg/controller/advanceddaemonset/daemonsetutil"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

// kind is one of the kinds the plugin rolls out: what `kubectl rollout` does for Deployments
// and DaemonSets, done for CloneSets and Advanced DaemonSets, whose rollouts it does not know.
type kind struct {
	// resource is the plural resource name, qualified, as kubectl's errors name a kind.
	resource string
	// singular is the kind, lower case and qualified, as kubectl prints an object's name.
	singular string
	// names are what a user may call the kind on the command line, besides resource.
	names []string
	// get reads the object as a workload.
	get func(ctx context.Context, c *clients, namespace, name string) (workload, error)
	// watch watches the one object from resourceVersion on.
	watch func(ctx context.Context, c *clients, namespace, name, resourceVersion string) (watch.Interface, error)
	// patch patches the object.
	patch func(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte) (runtime.Object, error)
}

var kinds = []kind{
	{
		resource: "clonesets.apps.kruise.io",
		singular: "cloneset.apps.kruise.io",
		names:    []string{"cloneset", "clonesets", "clone"},
		get: func(ctx context.Context, c *clients, namespace, name string) (workload, error) {
			cs, err := c.bosun.AppsV1beta1().CloneSets(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return cloneSet{cs}, nil
		},
		watch: func(ctx context.Context, c *clients, namespace, name, resourceVersion string) (watch.Interface, error) {
			return c.bosun.AppsV1beta1().CloneSets(namespace).Watch(ctx, singleObject(name, resourceVersion))
		},
		patch: func(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte) (runtime.Object, error) {
			return c.bosun.AppsV1beta1().CloneSets(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
		},
	},
	{
		resource: "daemonsets.apps.kruise.io",
		singular: "daemonset.apps.kruise.io",
		// "daemonset" means the Advanced DaemonSet here: the plugin rolls out bosun's kinds only,
		// and `kubectl rollout` has apps/v1's.
		names: []string{"daemonset", "daemonsets", "daemon", "ads", "advanceddaemonset"},
		get: func(ctx context.Context, c *clients, namespace, name string) (workload, error) {
			ds, err := c.bosun.AppsV1beta1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return advancedDaemonSet{ds}, nil
		},
		watch: func(ctx context.Context, c *clients, namespace, name, resourceVersion string) (watch.Interface, error) {
			return c.bosun.AppsV1beta1().DaemonSets(namespace).Watch(ctx, singleObject(name, resourceVersion))
		},
		patch: func(ctx context.Context, c *clients, namespace, name string, pt types.PatchType, data []byte) (runtime.Object, error) {
			return c.bosun.AppsV1beta1().DaemonSets(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
		},
	},
}

func singleObject(name, resourceVersion string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: resourceVersion}
}

// asWorkload wraps an object of one of the kinds.
func asWorkload(obj runtime.Object) (workload, bool) {
	switch o := obj.(type) {
	case *appsv1beta1.CloneSet:
		return cloneSet{o}, true
	case *appsv1beta1.DaemonSet:
		return advancedDaemonSet{o}, true
	}
	return nil, false
}

// clients are the API clients the commands use.
type clients struct {
	kube  kubernetes.Interface
	bosun bosunclientset.Interface
}

// target is the object a command works on.
type target struct {
	kind      kind
	namespace string
	name      string
}

func (t target) String() string { return t.kind.singular + "/" + t.name }

// parseTarget reads "TYPE/NAME" or "TYPE NAME".
func parseTarget(args []string, namespace string) (target, error) {
	var typeName, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		typeName, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2:
		typeName, name = args[0], args[1]
	default:
		return target{}, fmt.Errorf("want one resource as TYPE/NAME or TYPE NAME, for example cloneset/web or daemonset/agent; got %q", strings.Join(args, " "))
	}
	if name == "" {
		return target{}, fmt.Errorf("no name in %q", strings.Join(args, " "))
	}
	lower := strings.ToLower(typeName)
	for _, k := range kinds {
		if lower == k.resource || lower == k.singular {
			return target{kind: k, namespace: namespace, name: name}, nil
		}
		for _, n := range k.names {
			if lower == n {
				return target{kind: k, namespace: namespace, name: name}, nil
			}
		}
	}
	return target{}, fmt.Errorf("unknown resource type %q: kubectl bosun rolls out CloneSets (cloneset, clone) and Advanced DaemonSets (daemonset, ads) of apps.kruise.io; `kubectl rollout` does the built-in kinds", typeName)
}

// workload is a CloneSet or an Advanced DaemonSet as the rollout commands see it.
type workload interface {
	metav1.Object
	runtime.Object
	// progress says how far the rollout has come, in kubectl's words, and whether it is done.
	progress() (message string, done bool)
	template() *corev1.PodTemplateSpec
	paused() bool
}

// pausePatch is the merge patch that sets the update's pause to paused: both kinds keep it in
// spec.updateStrategy.rollingUpdate.paused in v1beta1.
func pausePatch(paused bool) []byte {
	return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%t}}}}`, paused)
}

type cloneSet struct{ *appsv1beta1.CloneSet }

func (cs cloneSet) template() *corev1.PodTemplateSpec { return &cs.Spec.Template }

func (cs cloneSet) paused() bool {
	return cs.Spec.UpdateStrategy.RollingUpdate != nil && cs.Spec.UpdateStrategy.RollingUpdate.Paused
}

func (cs cloneSet) progress() (string, bool) {
	if cs.Generation > cs.Status.ObservedGeneration {
		return "Waiting for CloneSet spec update to be observed...", false
	}
	replicas := int32(1)
	if cs.Spec.Replicas != nil {
		replicas = *cs.Spec.Replicas
	}
	// The controller says how many pods the update is to reach: replicas minus the partition.
	expected := cs.Status.ExpectedUpdatedReplicas
	switch {
	case cs.Status.UpdatedReplicas < expected:
		return fmt.Sprintf("Waiting for CloneSet %q rollout to finish: %d out of %d new replicas have been updated...%s",
			cs.Name, cs.Status.UpdatedReplicas, expected, pausedSuffix(cs.paused())), false
	case cs.Status.Replicas > replicas:
		return fmt.Sprintf("Waiting for CloneSet %q rollout to finish: %d old replicas are pending termination...",
			cs.Name, cs.Status.Replicas-replicas), false
	case cs.Status.UpdatedReadyReplicas < expected:
		return fmt.Sprintf("Waiting for CloneSet %q rollout to finish: %d of %d updated replicas are ready...",
			cs.Name, cs.Status.UpdatedReadyReplicas, expected), false
	}
	if expected < replicas {
		return fmt.Sprintf("partitioned roll out complete: %d new replicas have been updated...", expected), true
	}
	return fmt.Sprintf("cloneset %q successfully rolled out", cs.Name), true
}

type advancedDaemonSet struct{ *appsv1beta1.DaemonSet }

func (ds advancedDaemonSet) template() *corev1.PodTemplateSpec { return &ds.Spec.Template }

func (ds advancedDaemonSet) paused() bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.Paused != nil && *ru.Paused
}

func (ds advancedDaemonSet) progress() (string, bool) {
	if ds.Spec.UpdateStrategy.Type == appsv1beta1.OnDeleteDaemonSetStrategyType {
		return fmt.Sprintf("rollout status is only available for %s strategy type", appsv1beta1.RollingUpdateDaemonSetStrategyType), true
	}
	if ds.Generation > ds.Status.ObservedGeneration {
		return "Waiting for daemon set spec update to be observed...", false
	}
	desired := ds.Status.DesiredNumberScheduled
	// The partition keeps that many pods on the old revision.
	expected := desired - partitionOf(ds.DaemonSet, desired)
	switch {
	case ds.Status.UpdatedNumberScheduled < expected:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...%s",
			ds.Name, ds.Status.UpdatedNumberScheduled, expected, pausedSuffix(ds.paused())), false
	case ds.Status.NumberAvailable < desired:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...",
			ds.Name, ds.Status.NumberAvailable, desired), false
	}
	if expected < desired {
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...", expected), true
	}
	return fmt.Sprintf("daemon set %q successfully rolled out", ds.Name), true
}

// partitionOf is the number of the desired pods an Advanced DaemonSet's partition keeps on
// the old revision, resolved as the controller resolves it.
func partitionOf(ds *appsv1beta1.DaemonSet, desired int32) int32 {
	n, err := daemonsetutil.Partition(ds, int(desired))
	if err != nil {
		return 0
	}
	return min(int32(n), desired)
}

func pausedSuffix(paused bool) string {
	if paused {
		return " (the update is paused: kubectl bosun rollout resume)"
	}
	return ""
}

// revisions returns the ControllerRevisions the workload controls, oldest first.
func revisions(ctx context.Context, c *clients, w workload) ([]appsv1.ControllerRevision, error) {
	list, err := c.kube.AppsV1().ControllerRevisions(w.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the ControllerRevisions of %s: %w", w.GetName(), err)
	}
	var owned []appsv1.ControllerRevision
	for _, rev := range list.Items {
		if ref := metav1.GetControllerOf(&rev); ref != nil && ref.UID == w.GetUID() {
			owned = append(owned, rev)
		}
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Revision < owned[j].Revision })
	return owned, nil
}

// revisionTemplate decodes the pod template a revision records.
func revisionTemplate(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	template, err := kruisepod.TemplateFromRevisionData(rev.Data.Raw)
	if err != nil {
		return nil, fmt.Errorf("reading revision %d (%s): %w", rev.Revision, rev.Name, err)
	}
	return template, nil
}

// recordsTemplate reports whether rev records the workload's current template.
func recordsTemplate(rev *appsv1.ControllerRevision, w workload) bool {
	same, err := kruisepod.MatchesRevisionData(rev.Data.Raw, w.template())
	return err == nil && same
}
