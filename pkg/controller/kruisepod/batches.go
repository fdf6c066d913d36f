package kruisepod

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
)

// In-place update batches. Containers with a launch priority (launchpriority.go) are
// updated in place in the order they are launched: first every container without one
// together with those of the highest priority, then, once all of those are ready, the
// next priority, and so on. The in-place update state records the containers of each
// batch (containerBatchesRecord), what later batches will change (next*), and which
// containers must be ready before the next batch goes (preCheckBeforeNext). A container
// whose env reads a label or annotation that a container of the batch changes goes with
// that batch, since the pod's metadata is shared.

// InPlaceUpdatePreCheckBeforeNext is what must hold before the next batch of an in-place
// update is made.
type InPlaceUpdatePreCheckBeforeNext struct {
	// ContainersRequiredReady are the containers of the last batch, which must all be
	// ready.
	ContainersRequiredReady []string `json:"containersRequiredReady,omitempty"`
}

// InPlaceUpdateContainerBatch is one batch of an in-place update: when it was made, and
// its containers, by name, sorted.
type InPlaceUpdateContainerBatch struct {
	Timestamp  metav1.Time `json:"timestamp"`
	Containers []string    `json:"containers"`
}

// NextBatchPending reports whether a later batch of the in-place update recorded in state
// has yet to be made.
func (s *InPlaceUpdateState) NextBatchPending() bool {
	return len(s.NextContainerImages) > 0 || len(s.NextContainerRefMetadata) > 0 || len(s.NextContainerResources) > 0
}

// NextBatchDue reports whether the next batch of pod's in-place update, recorded in state,
// may be made now: one is pending, no grace period is, the containers updated so far run
// what the spec asks for (ContainersUpdated), and those of the last batch are ready.
func NextBatchDue(pod *corev1.Pod, state *InPlaceUpdateState) bool {
	if !state.NextBatchPending() || inGracePeriod(pod) {
		return false
	}
	if !ContainersUpdated(pod, state) {
		return false
	}
	if state.PreCheckBeforeNext == nil {
		return true
	}
	for _, name := range state.PreCheckBeforeNext.ContainersRequiredReady {
		i := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == name })
		if i < 0 || !pod.Status.ContainerStatuses[i].Ready {
			return false
		}
	}
	return true
}

// ApplyNextBatch makes the next batch of the in-place update recorded in pod's state
// annotation (state, as read from pod) at now: the changes recorded for later batches
// are split again, the first of them are put on the pod, and the state records the new
// batch. It returns the changed pod, a new object.
func ApplyNextBatch(pod *corev1.Pod, state *InPlaceUpdateState, now metav1.Time) (*corev1.Pod, error) {
	updated := pod.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	next := state.clone()
	applyBatch(updated, next, state.NextContainerImages, state.NextContainerRefMetadata, state.NextContainerResources, now)
	encoded, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("encoding the in-place update state: %w", err)
	}
	updated.Annotations[appsv1beta1.InPlaceUpdateStateKey] = string(encoded)
	delete(updated.Annotations, appsv1beta1.InPlaceUpdateStateKeyOld)
	return updated, nil
}

// PodUpdater writes pods and reads them live; podcontrol.StatusUpdater is one.
type PodUpdater interface {
	// UpdatePod writes pod and returns the pod the server stored.
	UpdatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// GetPod reads the live pod, not a cached copy: it is what a write that met a
	// conflict is tried again on.
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// UpdateNextBatch writes the next batch of pod's in-place update, due by the cached pod,
// whose state records made batches. On a conflict it reads the live pod and tries again,
// unless a batch was made there meanwhile (by another writer, or by an earlier attempt).
// It returns the written pod, or nil when nothing was written (a pod gone counts as
// nothing to write).
func UpdateNextBatch(ctx context.Context, pods PodUpdater, pod *corev1.Pod, made int, now metav1.Time) (*corev1.Pod, error) {
	var written *corev1.Pod
	_, err := podcontrol.RewritePod(ctx, pods.GetPod, pod, func(current *corev1.Pod) (*corev1.Pod, error) {
		live, err := ReadInPlaceUpdateState(current)
		if err != nil {
			return nil, err
		}
		if live == nil || !live.NextBatchPending() || len(live.ContainerBatchesRecord) != made {
			return nil, nil
		}
		updated, err := ApplyNextBatch(current, live, now)
		if err != nil {
			return nil, err
		}
		stored, err := pods.UpdatePod(ctx, updated)
		if err == nil {
			written = stored
		}
		return stored, err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("updating the next batch of containers of pod %s in place: %w", klog.KObj(pod), err)
	}
	return written, nil
}

// applyBatch puts the first batch of the given container changes onto pod (whose label and
// annotation maps exist) and records it in state: the image IDs the updated containers
// ran, the changes left for later batches, the pre-check of the next batch and the batch
// itself. Resources are never put on the pod (bosun resizes no container in place); those
// of the batch are dropped, those of later batches kept.
func applyBatch(pod *corev1.Pod, state *InPlaceUpdateState, images map[string]string, refMetadata map[string]RefMetadata,
	resources map[string]corev1.ResourceRequirements, now metav1.Time) {
	batch := firstBatch(pod, images, refMetadata, resources)
	known := sets.New[string]()
	for _, container := range pod.Spec.Containers {
		known.Insert(container.Name)
	}
	// A change for a container the pod lacks cannot wait for it: it goes now, as far as it
	// can go at all.
	goesNow := func(name string) bool { return batch.Has(name) || !known.Has(name) }

	state.NextContainerImages, state.NextContainerRefMetadata, state.NextContainerResources = nil, nil, nil
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		image, ok := images[container.Name]
		if !ok {
			continue
		}
		if !goesNow(container.Name) {
			state.NextContainerImages = withKey(state.NextContainerImages, container.Name, image)
			continue
		}
		container.Image = image
		for _, status := range pod.Status.ContainerStatuses {
			if status.Name == container.Name {
				// Made only when there is something to record: OpenKruise writes null otherwise.
				if state.LastContainerStatuses == nil {
					state.LastContainerStatuses = map[string]InPlaceUpdateContainerStatus{}
				}
				state.LastContainerStatuses[container.Name] = InPlaceUpdateContainerStatus{ImageID: status.ImageID}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(resources)) {
		if !goesNow(name) {
			if state.NextContainerResources == nil {
				state.NextContainerResources = map[string]corev1.ResourceRequirements{}
			}
			state.NextContainerResources[name] = resources[name]
		}
	}
	for _, name := range slices.Sorted(maps.Keys(refMetadata)) {
		if goesNow(name) {
			putRefMetadata(pod, refMetadata[name])
			continue
		}
		if state.NextContainerRefMetadata == nil {
			state.NextContainerRefMetadata = map[string]RefMetadata{}
		}
		state.NextContainerRefMetadata[name] = refMetadata[name]
	}

	containers := sets.List(batch)
	state.PreCheckBeforeNext = nil
	if state.NextBatchPending() {
		state.PreCheckBeforeNext = &InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: slices.Clone(containers)}
	}
	state.ContainerBatchesRecord = append(state.ContainerBatchesRecord, InPlaceUpdateContainerBatch{Timestamp: now, Containers: containers})
}

// firstBatch returns the containers of pod that the first batch of the changes updates:
// those without a launch priority, those of the highest priority among the others, and,
// repeatedly, those whose env reads a label or annotation that one of these changes.
func firstBatch(pod *corev1.Pod, images map[string]string, refMetadata map[string]RefMetadata, resources map[string]corev1.ResourceRequirements) sets.Set[string] {
	batch := sets.New[string]()
	var highest []string
	var highestPriority int
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		_, image := images[container.Name]
		_, ref := refMetadata[container.Name]
		_, resource := resources[container.Name]
		if !image && !ref && !resource {
			continue
		}
		priority, ok := LaunchPriority(container)
		switch {
		case !ok:
			batch.Insert(container.Name)
		case highest == nil || priority > highestPriority:
			highest, highestPriority = []string{container.Name}, priority
		case priority == highestPriority:
			highest = append(highest, container.Name)
		}
	}
	batch.Insert(highest...)
	addSharingContainers(batch, refMetadata)
	return batch
}

// addSharingContainers adds to batch every container whose env-read labels or annotations
// share a key with those of a container in batch, until none is left: the pod's metadata
// is shared, so changing a key for one container changes it for the other too.
func addSharingContainers(batch sets.Set[string], refMetadata map[string]RefMetadata) {
	for {
		labels, annotations := sets.New[string](), sets.New[string]()
		for name := range batch {
			labels.Insert(slices.Collect(maps.Keys(refMetadata[name].Labels))...)
			annotations.Insert(slices.Collect(maps.Keys(refMetadata[name].Annotations))...)
		}
		added := false
		for name, ref := range refMetadata {
			if batch.Has(name) {
				continue
			}
			if labels.HasAny(slices.Collect(maps.Keys(ref.Labels))...) || annotations.HasAny(slices.Collect(maps.Keys(ref.Annotations))...) {
				batch.Insert(name)
				added = true
			}
		}
		if !added {
			return
		}
	}
}

// pendingBatches returns the changes that later batches of pod's last in-place update were
// still to make, when the pod is still at that update's revision (its revision label is
// the state's revision, or that revision's hash): a new update of the pod carries them
// on, or the containers would be left at an older revision than the pod says it is at.
func pendingBatches(pod *corev1.Pod) (map[string]string, map[string]RefMetadata) {
	state, err := ReadInPlaceUpdateState(pod)
	if err != nil || state == nil || !state.NextBatchPending() {
		return nil, nil
	}
	label := pod.Labels[appsv1beta1.ControllerRevisionHashLabelKey]
	if label == "" || (state.Revision != label && !strings.HasSuffix(state.Revision, "-"+label)) {
		return nil, nil
	}
	return state.NextContainerImages, state.NextContainerRefMetadata
}

// withPending returns images and refMetadata with the changes pending from pod's last
// in-place update added where the new ones do not say otherwise (per container for images,
// per key for labels and annotations). The maps passed in are not changed.
func withPending(pod *corev1.Pod, images map[string]string, refMetadata map[string]RefMetadata) (map[string]string, map[string]RefMetadata) {
	pendingImages, pendingRefs := pendingBatches(pod)
	if len(pendingImages) == 0 && len(pendingRefs) == 0 {
		return images, refMetadata
	}
	mergedImages := maps.Clone(pendingImages)
	if mergedImages == nil {
		mergedImages = map[string]string{}
	}
	maps.Copy(mergedImages, images)
	mergedRefs := map[string]RefMetadata{}
	for name, pending := range pendingRefs {
		mergedRefs[name] = RefMetadata{Labels: maps.Clone(pending.Labels), Annotations: maps.Clone(pending.Annotations)}
	}
	for name, ref := range refMetadata {
		merged := mergedRefs[name]
		for key, value := range ref.Labels {
			merged.Labels = withKey(merged.Labels, key, value)
		}
		for key, value := range ref.Annotations {
			merged.Annotations = withKey(merged.Annotations, key, value)
		}
		mergedRefs[name] = merged
	}
	if len(mergedRefs) == 0 {
		mergedRefs = nil
	}
	return mergedImages, mergedRefs
}

// clone returns a copy of s that shares no map or slice with it.
func (s *InPlaceUpdateState) clone() *InPlaceUpdateState {
	out := *s
	out.LastContainerStatuses = maps.Clone(s.LastContainerStatuses)
	out.NextContainerImages = maps.Clone(s.NextContainerImages)
	out.NextContainerRefMetadata = maps.Clone(s.NextContainerRefMetadata)
	out.NextContainerResources = maps.Clone(s.NextContainerResources)
	if s.PreCheckBeforeNext != nil {
		out.PreCheckBeforeNext = &InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: slices.Clone(s.PreCheckBeforeNext.ContainersRequiredReady)}
	}
	out.ContainerBatchesRecord = slices.Clone(s.ContainerBatchesRecord)
	return &out
}

// inGracePeriod reports whether pod waits out the grace period of an in-place update.
func inGracePeriod(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[appsv1beta1.InPlaceUpdateGraceKey]; ok {
		return true
	}
	_, ok := pod.Annotations[appsv1beta1.InPlaceUpdateGraceKeyOld]
	return ok
}
