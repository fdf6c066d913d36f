package kruisepod

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/dump"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// RuntimeContainerMetaSet is the JSON of a pod's runtime-containers-meta annotation, which
// the node agent writes: the containers the runtime runs for the pod, one per container
// status, with the hashes in-place updates are checked against. The field names are
// OpenKruise's, whose node agent writes the same annotation.
type RuntimeContainerMetaSet struct {
	Containers []RuntimeContainerMeta `json:"containers"`
}

// RuntimeContainerMeta is one running container: its name, its ID as pod status writes it
// ("<runtime>://<id>"), the restart count it was started with, and its hashes.
type RuntimeContainerMeta struct {
	Name         string                 `json:"name"`
	ContainerID  string                 `json:"containerID"`
	RestartCount int32                  `json:"restartCount"`
	Hashes       RuntimeContainerHashes `json:"hashes"`
}

// RuntimeContainerHashes are a container's hashes. PlainHash is the one the kubelet
// recorded on the container when it created it (ContainerHash of the spec it ran).
// ExtractedEnvFromMetadataHash is RunningEnvFromMetadataHash of the environment the
// container actually runs with; 0 until the node agent could read it.
type RuntimeContainerHashes struct {
	PlainHash                    uint64 `json:"plainHash"`
	ExtractedEnvFromMetadataHash uint64 `json:"extractedEnvFromMetadataHash,omitempty"`
}

// ReadRuntimeContainerMeta returns what the node agent reported in pod's
// runtime-containers-meta annotation, or nil when it reported nothing.
func ReadRuntimeContainerMeta(pod *corev1.Pod) (*RuntimeContainerMetaSet, error) {
	raw, ok := pod.Annotations[appsv1beta1.RuntimeContainersMetaKey]
	if !ok {
		return nil, nil
	}
	set := &RuntimeContainerMetaSet{}
	if err := json.Unmarshal([]byte(raw), set); err != nil {
		return nil, fmt.Errorf("decoding the runtime containers meta of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return set, nil
}

// Container returns the entry of the container called name, or nil.
func (s *RuntimeContainerMetaSet) Container(name string) *RuntimeContainerMeta {
	for i := range s.Containers {
		if s.Containers[i].Name == name {
			return &s.Containers[i]
		}
	}
	return nil
}

// ContainerHash is the hash the kubelet records on every container it creates (the
// io.kubernetes.container.hash annotation, in hexadecimal) and restarts the container on
// when it changes: since Kubernetes 1.31 it covers the container's name and image only.
func ContainerHash(c *corev1.Container) uint64 {
	encoded, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	return deepHash(encoded)
}

// LegacyContainerHash is the container hash of kubelets before 1.31, over the whole
// container spec. Nodes that still run such a kubelet report it.
func LegacyContainerHash(c *corev1.Container) uint64 {
	encoded, _ := json.Marshal(c)
	return deepHash(encoded)
}

// deepHash is FNV-1a (32 bit) over the kubelet's deep print of v (k8s.io/utils/dump.ForHash),
// the way the kubelet and OpenKruise hash containers and environments.
func deepHash(v any) uint64 {
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%v", dump.ForHash(v))
	return uint64(h.Sum32())
}

// The metadata a container's env can read through a fieldRef, as fieldRef paths name them.
const (
	labelsFieldPath      = "metadata.labels"
	annotationsFieldPath = "metadata.annotations"
)

// envFromMetadataExcluded are env names left out of env-from-metadata hashes: OpenKruise's
// SidecarSet manages them by itself, and they change without the container restarting.
var envFromMetadataExcluded = []string{"SIDECARSET_VERSION", "SIDECARSET_VERSION_ALT"}

// metadataRef is an env var of a container that takes its value from one pod label or
// annotation: path is labelsFieldPath or annotationsFieldPath, key the label or
// annotation.
type metadataRef struct {
	env, path, key string
}

// metadataRefs returns the env vars of c that read one label or annotation of the pod
// (fieldRef "metadata.labels['<key>']" or "metadata.annotations['<key>']"), in the
// container's order. A var with a plain value, or another source, is not one.
func metadataRefs(c *corev1.Container) []metadataRef {
	var refs []metadataRef
	for _, env := range c.Env {
		if env.Value != "" || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || slices.Contains(envFromMetadataExcluded, env.Name) {
			continue
		}
		path, key, ok := splitSubscriptedFieldPath(env.ValueFrom.FieldRef.FieldPath)
		if !ok || (path != labelsFieldPath && path != annotationsFieldPath) {
			continue
		}
		refs = append(refs, metadataRef{env: env.Name, path: path, key: key})
	}
	return refs
}

// splitSubscriptedFieldPath splits a fieldRef path of the form "<path>['<key>']" into path
// and key, as the API server's downward API reads it; ok is false for any other form.
func splitSubscriptedFieldPath(fieldPath string) (path, key string, ok bool) {
	rest, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	path, key, found = strings.Cut(rest, "['")
	if !found || path == "" {
		return "", "", false
	}
	return path, key, true
}

// ReferencesMetadata reports whether an env var of c reads the pod label (labels true) or
// annotation (labels false) key.
func ReferencesMetadata(c *corev1.Container, labels bool, key string) bool {
	path := annotationsFieldPath
	if labels {
		path = labelsFieldPath
	}
	return slices.ContainsFunc(metadataRefs(c), func(ref metadataRef) bool { return ref.path == path && ref.key == key })
}

// ExpectedEnvFromMetadataHash is the hash of the env vars of c that read pod labels or
// annotations, with the values the kubelet would give them today from labels and
// annotations (a missing key reads as empty). A container started now has this
// RunningEnvFromMetadataHash.
func ExpectedEnvFromMetadataHash(c *corev1.Container, labels, annotations map[string]string) uint64 {
	var envs []corev1.EnvVar
	for _, ref := range metadataRefs(c) {
		value := labels[ref.key]
		if ref.path == annotationsFieldPath {
			value = annotations[ref.key]
		}
		envs = append(envs, corev1.EnvVar{Name: ref.env, Value: value})
	}
	return envHash(envs)
}

// RunningEnvFromMetadataHash is the hash of the env vars of c that read pod labels or
// annotations, with the values the running container has (lookup returns the value of one
// env var of the container; a missing one reads as empty).
func RunningEnvFromMetadataHash(c *corev1.Container, lookup func(name string) (string, error)) (uint64, error) {
	var envs []corev1.EnvVar
	for _, ref := range metadataRefs(c) {
		value, err := lookup(ref.env)
		if err != nil {
			return 0, err
		}
		envs = append(envs, corev1.EnvVar{Name: ref.env, Value: value})
	}
	return envHash(envs), nil
}

// envHash hashes env vars sorted by name (keeping the order of equal names) the way
// OpenKruise's node agent and controllers do, so that either side can check what the
// other reported: the deep print of their JSON. No vars hash as JSON null.
func envHash(envs []corev1.EnvVar) uint64 {
	slices.SortStableFunc(envs, func(a, b corev1.EnvVar) int { return cmp.Compare(a.Name, b.Name) })
	encoded, _ := json.Marshal(envs)
	return deepHash(encoded)
}
