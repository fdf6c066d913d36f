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
// after it is updated in place. The field names are shared with OpenKruise.
type InPlaceUpdateState struct {
	Revision              string                                  `json:"revision"`
	UpdateTimestamp       metav1.Time                             `json:"updateTimestamp"`
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses"`
	UpdateImages          bool                                    `json:"updateImages,omitempty"`
	UpdateEnvFromMetadata bool                                    `json:"updateEnvFromMetadata,omitempty"`
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
func PlanInPlaceUpdate(oldData, newData []byte) (*InPlaceUpdate, error) {
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
	update.SetLabels, update.RemoveLabels = metadataChanges(oldTemplate.Labels, newTemplate.Labels)
	update.SetAnnotations, update.RemoveAnnotations = metadataChanges(oldTemplate.Annotations, newTemplate.Annotations)
	return update, nil
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
// when the pod lacks one of the containers to update.
func ApplyInPlaceUpdate(pod *corev1.Pod, update *InPlaceUpdate, hash string, now metav1.Time) bool {
	state := InPlaceUpdateState{
		Revision:              hash,
		UpdateTimestamp:       now,
		LastContainerStatuses: map[string]InPlaceUpdateContainerStatus{},
		UpdateImages:          len(update.Images) > 0,
	}
	for name, image := range update.Images {
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
		if i < 0 {
			return false
		}
		pod.Spec.Containers[i].Image = image
		for _, status := range pod.Status.ContainerStatuses {
			if status.Name == name {
				state.LastContainerStatuses[name] = InPlaceUpdateContainerStatus{ImageID: status.ImageID}
			}
		}
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
	pod.Labels[appsv1alpha1.ControllerRevisionHashLabelKey] = hash
	encoded, _ := json.Marshal(state)
	pod.Annotations[appsv1alpha1.InPlaceUpdateStateKey] = string(encoded)
	delete(pod.Annotations, appsv1alpha1.InPlaceUpdateStateKeyOld)
	return true
}

// InPlaceUpdateCompleted reports whether the in-place update recorded in state has taken
// effect on pod: every updated container that reports status either runs another image ID
// than before or reports the image its spec asks for, and no grace period is pending.
func InPlaceUpdateCompleted(pod *corev1.Pod, state *InPlaceUpdateState) bool {
	if _, inGrace := pod.Annotations[appsv1alpha1.InPlaceUpdateGraceKey]; inGrace {
		return false
	}
	if _, inGrace := pod.Annotations[appsv1beta1.InPlaceUpdateGraceKeyOld]; inGrace {
		return false
	}
	specImages := map[string]string{}
	for _, container := range pod.Spec.Containers {
		specImages[container.Name] = container.Image
	}
	for _, status := range pod.Status.ContainerStatuses {
		before, updated := state.LastContainerStatuses[status.Name]
		if !updated || before.ImageID != status.ImageID {
			continue
		}
		// The image ID did not move: the kubelet has not restarted the container yet, unless
		// the new image happens to resolve to the same ID, which the reported image shows.
		// An untagged image means its latest tag; the registry is compared as written.
		if imageref.WithDefaultTag(specImages[status.Name]) != imageref.WithDefaultTag(status.Image) {
			return false
		}
	}
	return true
}
