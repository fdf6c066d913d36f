package clonesetutil

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
)

// InstanceIDLength is the length of the instance IDs that name a CloneSet's pods; they are
// drawn from the vowel-free alphabet of k8s.io/apimachinery's rand.String.
const InstanceIDLength = 5

// InstanceID returns the instance ID a pod or claim carries, "" when none.
func InstanceID(obj metav1.Object) string {
	return obj.GetLabels()[appsv1beta1.CloneSetInstanceID]
}

// PodName returns the name of the CloneSet's pod with instance ID id.
func PodName(csName, id string) string {
	return csName + "-" + id
}

// ClaimName returns the name of the claim from template claim of the CloneSet's pod with
// instance ID id.
func ClaimName(claim, csName, id string) string {
	return claim + "-" + csName + "-" + id
}

// PickInstanceIDs returns n instance IDs for new pods: first the reusable ones (the IDs of
// claims no pod uses, in order), then fresh ones drawn from random that taken rejects and
// that were not picked already. An ID taken rejects is never returned, reusable or not:
// a pod of that name may still exist, and creating another one under it would fail for as
// long as it does.
func PickInstanceIDs(n int, reusable []string, taken func(id string) bool, random func() string) []string {
	picked := sets.New[string]()
	ids := make([]string, 0, n)
	for _, id := range reusable {
		if len(ids) == n {
			return ids
		}
		if id == "" || picked.Has(id) || taken(id) {
			continue
		}
		picked.Insert(id)
		ids = append(ids, id)
	}
	for len(ids) < n {
		id := random()
		if picked.Has(id) || taken(id) {
			continue
		}
		picked.Insert(id)
		ids = append(ids, id)
	}
	return ids
}

// NewPod returns the pod with instance ID id that cs (the CloneSet with the template of
// revision revisionName applied) creates: the template's labels, annotations, finalizers
// and spec; the revision labels (controller-revision-hash the full revision name, or only
// its hash with gate CloneSetShortHash; pod-template-hash its hash), the instance ID, the
// lifecycle state PreparingNormal with its timestamp at now; the InPlaceUpdateReady
// readiness gate, which every pod gets whatever the update strategy, so that a later
// in-place update can take it out of service; a volume per claim template, which replaces
// a template volume of the same name; and the controller reference to cs.
func NewPod(cs *appsv1beta1.CloneSet, revisionName, id string, shortHash bool, now time.Time) (*corev1.Pod, error) {
	pod, err := podcontrol.PodFromTemplate(&cs.Spec.Template, cs, metav1.NewControllerRef(cs, ControllerKind))
	if err != nil {
		return nil, err
	}
	pod.Name = PodName(cs.Name, id)
	pod.Namespace = cs.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	WriteRevisionLabels(pod.Labels, revisionName, shortHash)
	pod.Labels[appsv1beta1.CloneSetInstanceID] = id
	kruisepod.SetLifecycleState(pod, appsv1beta1.LifecycleStatePreparingNormal, now)
	kruisepod.AddReadinessGate(&pod.Spec, appsv1beta1.InPlaceUpdateReady)
	pod.Spec.Volumes = claimVolumes(cs, pod, id)
	return pod, nil
}

// WriteRevisionLabels sets the revision labels of a pod at revision revisionName.
func WriteRevisionLabels(labels map[string]string, revisionName string, shortHash bool) {
	short := ShortHash(revisionName)
	labels[appsv1beta1.ControllerRevisionHashLabelKey] = revisionName
	if shortHash {
		labels[appsv1beta1.ControllerRevisionHashLabelKey] = short
	}
	labels[appsv1beta1.PodTemplateHashLabelKey] = short
}

// claimVolumes returns the pod's volumes with one volume per claim template, mounting the
// pod's claim under the template's name, first (sorted by name), then the pod's other
// volumes.
func claimVolumes(cs *appsv1beta1.CloneSet, pod *corev1.Pod, id string) []corev1.Volume {
	claims := map[string]string{}
	for _, template := range cs.Spec.VolumeClaimTemplates {
		claims[template.Name] = ClaimName(template.Name, cs.Name, id)
	}
	if len(claims) == 0 {
		return pod.Spec.Volumes
	}
	volumes := make([]corev1.Volume, 0, len(claims)+len(pod.Spec.Volumes))
	for _, name := range slices.Sorted(maps.Keys(claims)) {
		volumes = append(volumes, corev1.Volume{
			Name: name,
			VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claims[name]},
			},
		})
	}
	for _, volume := range pod.Spec.Volumes {
		if _, replaced := claims[volume.Name]; !replaced {
			volumes = append(volumes, volume)
		}
	}
	return volumes
}

// NewClaims returns the claims of the CloneSet's pod with instance ID id, one per claim
// template, sorted by template name: the template with the name ClaimName gives, the
// template's labels plus the CloneSet's matchLabels and the instance ID, and a controller
// reference to the CloneSet.
func NewClaims(cs *appsv1beta1.CloneSet, id string) []*corev1.PersistentVolumeClaim {
	claims := make([]*corev1.PersistentVolumeClaim, 0, len(cs.Spec.VolumeClaimTemplates))
	for i := range cs.Spec.VolumeClaimTemplates {
		claim := cs.Spec.VolumeClaimTemplates[i].DeepCopy()
		claim.Name = ClaimName(cs.Spec.VolumeClaimTemplates[i].Name, cs.Name, id)
		claim.Namespace = cs.Namespace
		if claim.Labels == nil {
			claim.Labels = map[string]string{}
		}
		if cs.Spec.Selector != nil {
			maps.Copy(claim.Labels, cs.Spec.Selector.MatchLabels)
		}
		claim.Labels[appsv1beta1.CloneSetInstanceID] = id
		claim.OwnerReferences = append(claim.OwnerReferences, *metav1.NewControllerRef(cs, ControllerKind))
		claims = append(claims, claim)
	}
	slices.SortFunc(claims, func(a, b *corev1.PersistentVolumeClaim) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return claims
}

// IsSpecifiedDelete reports whether pod is to be deleted: it carries the
// apps.kruise.io/specified-delete label (any value), or podsToDelete names it.
func IsSpecifiedDelete(cs *appsv1beta1.CloneSet, pod *corev1.Pod) bool {
	if _, ok := pod.Labels[appsv1beta1.SpecifiedDeleteKey]; ok {
		return true
	}
	return slices.Contains(cs.Spec.ScaleStrategy.PodsToDelete, pod.Name)
}
