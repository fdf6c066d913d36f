package kruisepod

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// InPlaceUpdateSpec is the JSON of a pod's inplace-update-grace annotation: an in-place
// update that waits out a grace period (the pod already reads as updated and out of
// service) and what it will change then. The field names are shared with OpenKruise, so
// either controller finishes what the other began.
type InPlaceUpdateSpec struct {
	Revision        string            `json:"revision"`
	ContainerImages map[string]string `json:"containerImages,omitempty"`
	// ContainerRefMetadata holds, per container, the labels and annotations its env reads
	// (OpenKruise's env-from-metadata updates); they are put on the pod with the images.
	ContainerRefMetadata map[string]RefMetadata `json:"containerRefMetadata,omitempty"`
	// ContainerResources are in-place resizes, which bosun does not make; kept so that a
	// spec OpenKruise wrote survives a rewrite.
	ContainerResources map[string]corev1.ResourceRequirements `json:"containerResources,omitempty"`
	// MetaDataPatch is a strategic merge patch of the pod's metadata.
	MetaDataPatch         []byte `json:"metaDataPatch,omitempty"`
	UpdateEnvFromMetadata bool   `json:"updateEnvFromMetadata,omitempty"`
	GraceSeconds          int32  `json:"graceSeconds,omitempty"`
}

// GraceSpec returns the spec of update that waits graceSeconds before it changes a pod,
// for revision revision.
func (update *InPlaceUpdate) GraceSpec(revision string, graceSeconds int32) (*InPlaceUpdateSpec, error) {
	spec := &InPlaceUpdateSpec{Revision: revision, GraceSeconds: graceSeconds}
	if len(update.Images) > 0 {
		spec.ContainerImages = maps.Clone(update.Images)
	}
	metadata := map[string]any{}
	if changes := metadataPatch(update.SetLabels, update.RemoveLabels); changes != nil {
		metadata["labels"] = changes
	}
	if changes := metadataPatch(update.SetAnnotations, update.RemoveAnnotations); changes != nil {
		metadata["annotations"] = changes
	}
	if len(metadata) > 0 {
		patch, err := json.Marshal(map[string]any{"metadata": metadata})
		if err != nil {
			return nil, fmt.Errorf("encoding the metadata patch of an in-place update: %w", err)
		}
		spec.MetaDataPatch = patch
	} else if update.UpdateEnvFromMetadata {
		// The template's metadata changed, only in keys the env reads: OpenKruise records an
		// empty patch then.
		spec.MetaDataPatch = []byte("{}")
	}
	if update.UpdateEnvFromMetadata {
		spec.ContainerRefMetadata = maps.Clone(update.ContainerRefMetadata)
		spec.UpdateEnvFromMetadata = true
	}
	return spec, nil
}

// metadataPatch returns the patch of one metadata map that sets set and removes remove
// (null values), or nil when there is nothing to change.
func metadataPatch(set map[string]string, remove []string) map[string]any {
	if len(set) == 0 && len(remove) == 0 {
		return nil
	}
	changes := map[string]any{}
	for key, value := range set {
		changes[key] = value
	}
	for _, key := range remove {
		changes[key] = nil
	}
	return changes
}

// ReadInPlaceUpdateGrace returns the in-place update pod waits to carry out (under the
// current or the legacy annotation key), or nil when none waits.
func ReadInPlaceUpdateGrace(pod *corev1.Pod) (*InPlaceUpdateSpec, error) {
	raw, ok := pod.Annotations[appsv1beta1.InPlaceUpdateGraceKey]
	if !ok || raw == "" {
		if raw, ok = pod.Annotations[appsv1beta1.InPlaceUpdateGraceKeyOld]; !ok || raw == "" {
			return nil, nil
		}
	}
	spec := &InPlaceUpdateSpec{}
	if err := json.Unmarshal([]byte(raw), spec); err != nil {
		return nil, fmt.Errorf("decoding the in-place update grace of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return spec, nil
}

// RemoveInPlaceUpdateGrace drops the grace annotation, under both keys, from pod.
func RemoveInPlaceUpdateGrace(pod *corev1.Pod) {
	delete(pod.Annotations, appsv1beta1.InPlaceUpdateGraceKey)
	delete(pod.Annotations, appsv1beta1.InPlaceUpdateGraceKeyOld)
}

// DeferInPlaceUpdate records on pod (a copy the caller owns) an in-place update to
// revision that waits out spec.GraceSeconds from now: the pod reads as at the revision and
// carries the update's state (without the containers' last statuses, recorded when the
// update is carried out) and spec, but runs as it did. What later batches of the pod's
// previous update had still to do is added to the spec.
func DeferInPlaceUpdate(pod *corev1.Pod, spec *InPlaceUpdateSpec, now metav1.Time) error {
	carried := *spec
	carried.ContainerImages, carried.ContainerRefMetadata = withPending(pod, spec.ContainerImages, spec.ContainerRefMetadata)
	carried.UpdateEnvFromMetadata = spec.UpdateEnvFromMetadata || len(carried.ContainerRefMetadata) > 0
	spec = &carried
	state := InPlaceUpdateState{
		Revision:              spec.Revision,
		UpdateTimestamp:       now,
		UpdateImages:          len(spec.ContainerImages) > 0,
		UpdateEnvFromMetadata: spec.UpdateEnvFromMetadata,
	}
	encodedState, err := json.Marshal(state)
	if err != nil {
		return err
	}
	encodedSpec, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey] = spec.Revision
	pod.Annotations[appsv1beta1.InPlaceUpdateStateKey] = string(encodedState)
	delete(pod.Annotations, appsv1beta1.InPlaceUpdateStateKeyOld)
	pod.Annotations[appsv1beta1.InPlaceUpdateGraceKey] = string(encodedSpec)
	delete(pod.Annotations, appsv1beta1.InPlaceUpdateGraceKeyOld)
	return nil
}

// GraceRemaining returns how much of spec's grace period is left at now for an update
// recorded in state; 0 or less when it is over.
func GraceRemaining(spec *InPlaceUpdateSpec, state *InPlaceUpdateState, now time.Time) time.Duration {
	return state.UpdateTimestamp.Add(time.Duration(spec.GraceSeconds) * time.Second).Sub(now)
}

// FinishInPlaceUpdate carries out on pod, at now, the update spec deferred: its metadata
// patch, and the first batch (batches.go) of the labels and annotations its containers'
// env reads and of its images, recording in the update's state (state, as read from pod)
// what the updated containers ran before and what later batches will do; the grace
// annotation goes. It returns the changed pod, a new object.
func FinishInPlaceUpdate(pod *corev1.Pod, spec *InPlaceUpdateSpec, state *InPlaceUpdateState, now metav1.Time) (*corev1.Pod, error) {
	updated := pod.DeepCopy()
	if len(spec.MetaDataPatch) > 0 {
		original, err := json.Marshal(updated)
		if err != nil {
			return nil, err
		}
		patched, err := strategicpatch.StrategicMergePatch(original, spec.MetaDataPatch, &corev1.Pod{})
		if err != nil {
			return nil, fmt.Errorf("applying the metadata patch of an in-place update: %w", err)
		}
		updated = &corev1.Pod{}
		if err := json.Unmarshal(patched, updated); err != nil {
			return nil, err
		}
	}
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	next := state.clone()
	applyBatch(updated, next, spec.ContainerImages, spec.ContainerRefMetadata, spec.ContainerResources, now)
	encoded, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	updated.Annotations[appsv1beta1.InPlaceUpdateStateKey] = string(encoded)
	delete(updated.Annotations, appsv1beta1.InPlaceUpdateStateKeyOld)
	RemoveInPlaceUpdateGrace(updated)
	return updated, nil
}
