package kruisepod

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/imageref"
)

// InPlaceUpdateState is the JSON kept in a pod's inplace-update-state annotation while and
// after it is updated in place. The field names, and their order, are OpenKruise's: the
// same update is written byte for byte as OpenKruise writes it.
type InPlaceUpdateState struct {
	Revision              string                                  `json:"revision"`
	UpdateTimestamp       metav1.Time                             `json:"updateTimestamp"`
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses"`
	// UpdateEnvFromMetadata says that labels or annotations the containers' env reads
	// changed: the update is done only once the node agent reports, in the
	// runtime-containers-meta annotation, containers started with the new values.
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata,omitempty"`
	// UpdateResources says that an update resized containers, which only OpenKruise does;
	// kept so that its state survives a rewrite.
	UpdateResources bool `json:"updateResources,omitempty"`
	UpdateImages    bool `json:"updateImages,omitempty"`
	// NextContainerImages, NextContainerRefMetadata and NextContainerResources are what
	// later batches (batches.go) will change, per container: images, the labels and
	// annotations its env reads, and resources (OpenKruise's resizes, which bosun drops).
	NextContainerImages      map[string]string                      `json:"nextContainerImages,omitempty"`
	NextContainerRefMetadata map[string]RefMetadata                 `json:"nextContainerRefMetadata,omitempty"`
	NextContainerResources   map[string]corev1.ResourceRequirements `json:"nextContainerResources,omitempty"`
	// PreCheckBeforeNext is what must hold before the next batch is made.
	PreCheckBeforeNext *InPlaceUpdatePreCheckBeforeNext `json:"preCheckBeforeNext,omitempty"`
	// ContainerBatchesRecord lists the batches made so far, first first.
	ContainerBatchesRecord []InPlaceUpdateContainerBatch `json:"containerBatchesRecord,omitempty"`
}

// InPlaceUpdateContainerStatus is what a container ran before its image was replaced.
type InPlaceUpdateContainerStatus struct {
	ImageID string `json:"imageID,omitempty"`
}

// ReadInPlaceUpdateState returns the state recorded on pod (under the current or the
// legacy key), or nil when the pod was never updated in place.
func ReadInPlaceUpdateState(pod *corev1.Pod) (*InPlaceUpdateState, error) {
	raw, ok := pod.Annotations[appsv1alpha1.InPlaceUpdateStateKey]
	if !ok {
		if raw, ok = pod.Annotations[appsv1alpha1.InPlaceUpdateStateKeyOld]; !ok {
			return nil, nil
		}
	}
	state := &InPlaceUpdateState{}
	if err := json.Unmarshal([]byte(raw), state); err != nil {
		return nil, fmt.Errorf("decoding in-place update state of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return state, nil
}

// InPlaceUpdate is what updating a pod from one revision to another in place changes.
type InPlaceUpdate struct {
	// Images maps container names to their new images.
	Images map[string]string
	// SetLabels and SetAnnotations are written onto the pod; RemoveLabels and
	// RemoveAnnotations are taken off it.
	SetLabels, SetAnnotations       map[string]string
	RemoveLabels, RemoveAnnotations []string
	// ContainerRefMetadata holds, per container, the changed labels and annotations its
	// env reads (planned with env from metadata only); they are written onto the pod with
	// that container's update, and the node agent restarts the container so that the
	// kubelet gives it the new values. UpdateEnvFromMetadata says there are such.
	ContainerRefMetadata  map[string]RefMetadata
	UpdateEnvFromMetadata bool
}

// RefMetadata is the labels and annotations a container's env reads. It is encoded as the
// object metadata OpenKruise records there, creationTimestamp null included, so that the
// in-place update state and grace annotations read the same whoever wrote them.
type RefMetadata struct {
	Labels      map[string]string
	Annotations map[string]string
}

// refMetadataJSON is RefMetadata's encoding: a zero creationTimestamp is null in the
// Kubernetes libraries OpenKruise is built on.
type refMetadataJSON struct {
	CreationTimestamp *struct{}         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
}

// MarshalJSON encodes m as OpenKruise's object metadata.
func (m RefMetadata) MarshalJSON() ([]byte, error) {
	return json.Marshal(refMetadataJSON{Labels: m.Labels, Annotations: m.Annotations})
}

// UnmarshalJSON reads the labels and annotations of object metadata; the rest is ignored.
func (m *RefMetadata) UnmarshalJSON(data []byte) error {
	var decoded refMetadataJSON
	if err := json.Unmarshal(data, &decoded); err != nil {
		return err
	}
	m.Labels, m.Annotations = decoded.Labels, decoded.Annotations
	return nil
}

// imagePath matches a JSON-pointer path to a container image in revision data.
var imagePath = regexp.MustCompile(`^/spec/template/spec/containers/([0-9]+)/image$`)

// metadataPaths are the revision-data paths whose changes the pod can take in place.
var metadataPaths = []string{"/spec/template/metadata/labels", "/spec/template/metadata/annotations"}

// PlanInPlaceUpdate compares the data of two revisions and returns the in-place update
// that moves a pod from the old to the new one. It returns nil when the revisions are equal
// or when anything other than container images (replaced, not added or removed) and
// template labels and annotations differs: the kubelet can restart a container with a new
// image, but any other change needs a new pod.
//
// With envFromMetadata, a label or annotation added to or changed in the template's map
// (not one removed, nor the whole map appearing) that the env of a container of the new
// template reads through a fieldRef becomes that container's ContainerRefMetadata, as
// OpenKruise's gate InPlaceUpdateEnvFromMetadata does; every other metadata change is
// set or removed as usual.
func PlanInPlaceUpdate(oldData, newData []byte, envFromMetadata bool) (*InPlaceUpdate, error) {
	var before, after any
	if err := json.Unmarshal(oldData, &before); err != nil {
		return nil, fmt.Errorf("decoding old revision data: %w", err)
	}
	if err := json.Unmarshal(newData, &after); err != nil {
		return nil, fmt.Errorf("decoding new revision data: %w", err)
	}
	var changes []jsonChange
	diffJSON("", before, after, &changes)
	if len(changes) == 0 {
		return nil, nil
	}
	for _, change := range changes {
		switch {
		case change.op == opReplace && imagePath.MatchString(change.path):
		case slices.ContainsFunc(metadataPaths, func(p string) bool { return change.path == p || strings.HasPrefix(change.path, p+"/") }):
		default:
			return nil, nil
		}
	}
	oldTemplate, err := TemplateFromRevisionData(oldData)
	if err != nil {
		return nil, err
	}
	newTemplate, err := TemplateFromRevisionData(newData)
	if err != nil {
		return nil, err
	}
	update := &InPlaceUpdate{Images: map[string]string{}}
	for i, container := range newTemplate.Spec.Containers {
		if oldTemplate.Spec.Containers[i].Image != container.Image {
			update.Images[container.Name] = container.Image
		}
	}
	if envFromMetadata {
		update.takeRefMetadata(changes, oldTemplate, newTemplate)
	}
	update.SetLabels, update.RemoveLabels = metadataChanges(oldTemplate.Labels, newTemplate.Labels)
	update.SetAnnotations, update.RemoveAnnotations = metadataChanges(oldTemplate.Annotations, newTemplate.Annotations)
	return update, nil
}

// metadataKeyPaths are the revision-data path prefixes of single labels and annotations.
const (
	labelKeyPath      = "/spec/template/metadata/labels/"
	annotationKeyPath = "/spec/template/metadata/annotations/"
)

// pointerUnescaper turns an escaped JSON-pointer token back into the key it names.
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// takeRefMetadata moves the labels and annotations that changes add or change and that a
// container of newTemplate reads through its env into the update's ContainerRefMetadata,
// taking them out of both templates so that they are not also set as plain metadata.
func (u *InPlaceUpdate) takeRefMetadata(changes []jsonChange, oldTemplate, newTemplate *corev1.PodTemplateSpec) {
	for _, change := range changes {
		if change.op != opAdd && change.op != opReplace {
			continue
		}
		token, isLabel := strings.CutPrefix(change.path, labelKeyPath)
		if !isLabel {
			var isAnnotation bool
			if token, isAnnotation = strings.CutPrefix(change.path, annotationKeyPath); !isAnnotation {
				continue
			}
		}
		key := pointerUnescaper.Replace(token)
		value := newTemplate.Annotations[key]
		if isLabel {
			value = newTemplate.Labels[key]
		}
		for i := range newTemplate.Spec.Containers {
			container := &newTemplate.Spec.Containers[i]
			if !ReferencesMetadata(container, isLabel, key) {
				continue
			}
			if u.ContainerRefMetadata == nil {
				u.ContainerRefMetadata = map[string]RefMetadata{}
			}
			ref := u.ContainerRefMetadata[container.Name]
			if isLabel {
				ref.Labels = withKey(ref.Labels, key, value)
				delete(oldTemplate.Labels, key)
				delete(newTemplate.Labels, key)
			} else {
				ref.Annotations = withKey(ref.Annotations, key, value)
				delete(oldTemplate.Annotations, key)
				delete(newTemplate.Annotations, key)
			}
			u.ContainerRefMetadata[container.Name] = ref
			u.UpdateEnvFromMetadata = true
		}
	}
}

// withKey returns m (made when nil) with key set to value.
func withKey(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

func metadataChanges(before, after map[string]string) (set map[string]string, remove []string) {
	set = map[string]string{}
	for key, value := range after {
		if old, ok := before[key]; !ok || old != value {
			set[key] = value
		}
	}
	for _, key := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[key]; !ok {
			remove = append(remove, key)
		}
	}
	return set, remove
}

// ApplyInPlaceUpdate changes pod (a copy the caller owns) to revision hash with update,
// recording in the state annotation what the containers ran before, and returns false
// when the pod lacks one of the containers to update. Containers with launch priorities
// are updated in batches (batches.go): this makes the first. What later batches of the
// pod's previous update had still to do is done with this update.
func ApplyInPlaceUpdate(pod *corev1.Pod, update *InPlaceUpdate, hash string, now metav1.Time) bool {
	for name := range update.Images {
		if !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }) {
			return false
		}
	}
	images, refMetadata := withPending(pod, update.Images, update.ContainerRefMetadata)
	state := InPlaceUpdateState{
		Revision:              hash,
		UpdateTimestamp:       now,
		UpdateEnvFromMetadata: update.UpdateEnvFromMetadata || len(refMetadata) > 0,
		UpdateImages:          len(images) > 0,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Labels, update.SetLabels)
	maps.Copy(pod.Annotations, update.SetAnnotations)
	for _, key := range update.RemoveLabels {
		delete(pod.Labels, key)
	}
	for _, key := range update.RemoveAnnotations {
		delete(pod.Annotations, key)
	}
	applyBatch(pod, &state, images, refMetadata, nil, now)
	pod.Labels[appsv1alpha1.ControllerRevisionHashLabelKey] = hash
	encoded, _ := json.Marshal(state)
	pod.Annotations[appsv1alpha1.InPlaceUpdateStateKey] = string(encoded)
	delete(pod.Annotations, appsv1alpha1.InPlaceUpdateStateKeyOld)
	return true
}

// putRefMetadata writes the labels and annotations a container's env reads onto pod,
// whose label and annotation maps exist.
func putRefMetadata(pod *corev1.Pod, ref RefMetadata) {
	maps.Copy(pod.Labels, ref.Labels)
	maps.Copy(pod.Annotations, ref.Annotations)
}

// InPlaceUpdateCompleted reports whether the in-place update recorded in state has taken
// effect on pod: no grace period is pending, no later batch of containers waits, and the
// updated containers run what the spec asks for (ContainersUpdated).
func InPlaceUpdateCompleted(pod *corev1.Pod, state *InPlaceUpdateState) bool {
	if _, inGrace := pod.Annotations[appsv1alpha1.InPlaceUpdateGraceKey]; inGrace {
		return false
	}
	if _, inGrace := pod.Annotations[appsv1beta1.InPlaceUpdateGraceKeyOld]; inGrace {
		return false
	}
	if state.NextBatchPending() {
		return false
	}
	return ContainersUpdated(pod, state)
}

// ContainersUpdated reports whether the containers the in-place update recorded in state
// changed have been restarted by the kubelet with what the spec asks for:
//   - when the update changed labels or annotations the containers' env reads, the node
//     agent must report (runtime-containers-meta) every spec container under the ID pod
//     status shows, started with the env the pod's metadata gives it now;
//   - then, when the node agent reports every spec container under the ID pod status shows
//     with the kubelet's hash of its spec, the update is done;
//   - otherwise every container whose image was replaced must report another image ID than
//     before, or, when the new image has the same ID, the spec image (an untagged image
//     meaning its latest tag; the registry compared as written), and every container
//     recorded must be in pod status.
func ContainersUpdated(pod *corev1.Pod, state *InPlaceUpdateState) bool {
	reported, err := ReadRuntimeContainerMeta(pod)
	if err != nil {
		return false
	}
	if state.UpdateEnvFromMetadata {
		if reported == nil || !reportedAsSpecified(pod, reported, envFromMetadataMatches) {
			return false
		}
	}
	// A node agent that stopped reporting leaves an old report behind, which then only
	// fails to match: the image IDs decide.
	if reported != nil && reportedAsSpecified(pod, reported, containerHashMatches) {
		return true
	}
	specImages := map[string]string{}
	for _, container := range pod.Spec.Containers {
		specImages[container.Name] = container.Image
	}
	seen := 0
	for _, status := range pod.Status.ContainerStatuses {
		before, recorded := state.LastContainerStatuses[status.Name]
		if !recorded {
			continue
		}
		seen++
		// The image ID did not move: the kubelet has not restarted the container yet, unless
		// the new image happens to resolve to the same ID, which the reported image shows.
		if before.ImageID == status.ImageID && imageref.WithDefaultTag(specImages[status.Name]) != imageref.WithDefaultTag(status.Image) {
			return false
		}
	}
	return seen == len(state.LastContainerStatuses)
}

// reportedAsSpecified reports whether, for every spec container of pod, the node agent's
// report names the container pod status shows (same container ID) and matches says its
// hashes fit the container's spec.
func reportedAsSpecified(pod *corev1.Pod, reported *RuntimeContainerMetaSet, matches func(*corev1.Pod, *corev1.Container, *RuntimeContainerMeta) bool) bool {
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		status := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == container.Name })
		if status < 0 {
			return false
		}
		meta := reported.Container(container.Name)
		if meta == nil || meta.ContainerID != pod.Status.ContainerStatuses[status].ContainerID || !matches(pod, container, meta) {
			return false
		}
	}
	return true
}

// containerHashMatches: the container runs the spec's image, by the kubelet's hash of
// either generation.
func containerHashMatches(_ *corev1.Pod, container *corev1.Container, meta *RuntimeContainerMeta) bool {
	return meta.Hashes.PlainHash == ContainerHash(container) || meta.Hashes.PlainHash == LegacyContainerHash(container)
}

// envFromMetadataMatches: the container runs with the env the pod's labels and
// annotations give it now.
func envFromMetadataMatches(pod *corev1.Pod, container *corev1.Container, meta *RuntimeContainerMeta) bool {
	return meta.Hashes.ExtractedEnvFromMetadataHash == ExpectedEnvFromMetadataHash(container, pod.Labels, pod.Annotations)
}
