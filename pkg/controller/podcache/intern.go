package podcache

import (
	"encoding/binary"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Decoding gives every string and map of every pod its own allocation, yet most of a
// pod's strings are the same in every pod of its workload (labels, owner, images, env), of
// its node (node name, host IP) or of the cluster (phase, condition types, "True"), and
// the pods of one revision of a workload carry equal labels and annotations. Sharing one
// copy of each among the cached pods takes about a third off a trimmed pod's heap. Strings are immutable,
// so sharing them cannot be seen; maps could be written through, but no code may write
// to a cached object, shared or not (the integration tests run the manager with client-go's
// cache mutation detector, which fails on such a write).
//
// The tables that find the shared copy must not grow with the cluster's history: label
// values of old revisions and the images of deleted workloads stop being looked up. Each
// keeps two generations and starts a new one when the current one is full, so a value not
// looked up for a whole generation is forgotten (its pods keep their copies), and what a
// generation holds bounds the table's memory. Values longer than internMaxLen are left
// alone: they are rarely shared (messages, JSON annotations) and would fill it fast.
const (
	internMaxLen          = 256
	internGenerationCount = 1 << 15
	internGenerationBytes = 2 << 20
)

// generations maps a value's key to its shared copy, in two generations.
type generations[V any] struct {
	current, previous map[string]V
	currentBytes      int
}

// find returns the copy recorded for key, carrying it into the current generation when
// only the previous one holds it.
func (g *generations[V]) find(key string) (V, bool) {
	if held, ok := g.current[key]; ok {
		return held, true
	}
	held, ok := g.previous[key]
	if ok {
		g.record(key, held)
	}
	return held, ok
}

// record makes value the copy for key, starting a generation when the current one is full.
func (g *generations[V]) record(key string, value V) {
	if len(g.current) >= internGenerationCount || g.currentBytes+len(key) > internGenerationBytes {
		g.previous, g.current, g.currentBytes = g.current, nil, 0
	}
	if g.current == nil {
		g.current = make(map[string]V, len(g.previous))
	}
	g.current[key] = value
	g.currentBytes += len(key)
}

type stringTable struct {
	mu      sync.Mutex
	strings generations[string]
	maps    generations[map[string]string]
	// mapKey and mapKeys are encodeMap's buffers, kept between pods: it runs twice for
	// every pod event.
	mapKey  []byte
	mapKeys []string
}

// sharedStrings is the process's table: every pod informer of the manager trims through it,
// so pods of all its caches share their copies.
var sharedStrings = &stringTable{}

// intern returns the table's copy of s.
func (t *stringTable) intern(s string) string {
	if s == "" || len(s) > internMaxLen {
		return s
	}
	if held, ok := t.strings.find(s); ok {
		return held
	}
	t.strings.record(s, s)
	return s
}

// sharePodStrings replaces the strings and string maps of pod that repeat across pods by
// the table's copies. Strings of one pod alone (its name, UID, IP, container IDs, resource
// version) stay as decoded: looking them up would only churn the table.
func (t *stringTable) sharePodStrings(pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shareMeta(&pod.ObjectMeta)
	t.shareSpec(&pod.Spec)
	t.shareStatus(&pod.Status)
}

func (t *stringTable) shareMeta(meta *metav1.ObjectMeta) {
	meta.Namespace = t.intern(meta.Namespace)
	meta.GenerateName = t.intern(meta.GenerateName)
	meta.Labels = t.shareMap(meta.Labels)
	meta.Annotations = t.shareMap(meta.Annotations)
	for i := range meta.OwnerReferences {
		ref := &meta.OwnerReferences[i]
		ref.APIVersion, ref.Kind, ref.Name = t.intern(ref.APIVersion), t.intern(ref.Kind), t.intern(ref.Name)
		ref.UID = types.UID(t.intern(string(ref.UID)))
	}
	for i := range meta.Finalizers {
		meta.Finalizers[i] = t.intern(meta.Finalizers[i])
	}
}

// shareMap returns the table's copy of a map equal to m, or m itself with its keys and
// values interned when the table has none.
func (t *stringTable) shareMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key, ok := t.encodeMap(m)
	if !ok {
		return t.internMap(m)
	}
	// Looked up with the conversion in the index expression, which does not allocate: most
	// pods find their maps.
	if held, ok := t.maps.current[string(key)]; ok {
		return held
	}
	if held, ok := t.maps.find(string(key)); ok {
		return held
	}
	interned := t.internMap(m)
	t.maps.record(string(key), interned)
	return interned
}

// internMap returns m rebuilt with interned keys and values: a map's keys cannot be
// replaced in place.
func (t *stringTable) internMap(m map[string]string) map[string]string {
	interned := make(map[string]string, len(m))
	for k, v := range m {
		interned[t.intern(k)] = t.intern(v)
	}
	return interned
}

// encodeMap writes m's entries, sorted and each length-prefixed, into t.mapKey: equal maps
// give equal keys and unequal maps unequal ones, whatever bytes their strings hold. Maps
// larger than a generation's share are not encoded (ok is false).
func (t *stringTable) encodeMap(m map[string]string) (key []byte, ok bool) {
	size := 0
	for k, v := range m {
		size += len(k) + len(v)
	}
	if size > 4*internMaxLen {
		return nil, false
	}
	keys := t.mapKeys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.mapKeys = keys
	key = t.mapKey[:0]
	for _, k := range keys {
		key = binary.AppendUvarint(key, uint64(len(k)))
		key = append(key, k...)
		key = binary.AppendUvarint(key, uint64(len(m[k])))
		key = append(key, m[k]...)
	}
	t.mapKey = key
	return key, true
}

func (t *stringTable) shareSpec(spec *corev1.PodSpec) {
	spec.NodeName = t.intern(spec.NodeName)
	spec.NodeSelector = t.shareMap(spec.NodeSelector)
	spec.ServiceAccountName = t.intern(spec.ServiceAccountName)
	spec.DeprecatedServiceAccount = t.intern(spec.DeprecatedServiceAccount)
	spec.SchedulerName = t.intern(spec.SchedulerName)
	spec.PriorityClassName = t.intern(spec.PriorityClassName)
	spec.RestartPolicy = corev1.RestartPolicy(t.intern(string(spec.RestartPolicy)))
	spec.DNSPolicy = corev1.DNSPolicy(t.intern(string(spec.DNSPolicy)))
	spec.Subdomain = t.intern(spec.Subdomain)
	for i := range spec.ReadinessGates {
		gate := &spec.ReadinessGates[i]
		gate.ConditionType = corev1.PodConditionType(t.intern(string(gate.ConditionType)))
	}
	for i := range spec.ImagePullSecrets {
		spec.ImagePullSecrets[i].Name = t.intern(spec.ImagePullSecrets[i].Name)
	}
	for i := range spec.InitContainers {
		t.shareContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		t.shareContainer(&spec.Containers[i])
	}
}

func (t *stringTable) shareContainer(c *corev1.Container) {
	c.Name = t.intern(c.Name)
	c.Image = t.intern(c.Image)
	c.ImagePullPolicy = corev1.PullPolicy(t.intern(string(c.ImagePullPolicy)))
	c.WorkingDir = t.intern(c.WorkingDir)
	for i := range c.Ports {
		port := &c.Ports[i]
		port.Name = t.intern(port.Name)
		port.Protocol = corev1.Protocol(t.intern(string(port.Protocol)))
	}
	for i := range c.Env {
		env := &c.Env[i]
		env.Name, env.Value = t.intern(env.Name), t.intern(env.Value)
		if from := env.ValueFrom; from != nil && from.FieldRef != nil {
			from.FieldRef.APIVersion, from.FieldRef.FieldPath = t.intern(from.FieldRef.APIVersion), t.intern(from.FieldRef.FieldPath)
		}
	}
}

func (t *stringTable) shareStatus(status *corev1.PodStatus) {
	status.Phase = corev1.PodPhase(t.intern(string(status.Phase)))
	status.QOSClass = corev1.PodQOSClass(t.intern(string(status.QOSClass)))
	status.HostIP = t.intern(status.HostIP)
	for i := range status.HostIPs {
		status.HostIPs[i].IP = t.intern(status.HostIPs[i].IP)
	}
	status.NominatedNodeName = t.intern(status.NominatedNodeName)
	status.Reason = t.intern(status.Reason)
	for i := range status.Conditions {
		c := &status.Conditions[i]
		c.Type = corev1.PodConditionType(t.intern(string(c.Type)))
		c.Status = corev1.ConditionStatus(t.intern(string(c.Status)))
		c.Reason, c.Message = t.intern(c.Reason), t.intern(c.Message)
	}
	for i := range status.InitContainerStatuses {
		t.shareContainerStatus(&status.InitContainerStatuses[i])
	}
	for i := range status.ContainerStatuses {
		t.shareContainerStatus(&status.ContainerStatuses[i])
	}
}

func (t *stringTable) shareContainerStatus(s *corev1.ContainerStatus) {
	s.Name, s.Image, s.ImageID = t.intern(s.Name), t.intern(s.Image), t.intern(s.ImageID)
	t.shareContainerState(&s.State)
	t.shareContainerState(&s.LastTerminationState)
}

func (t *stringTable) shareContainerState(state *corev1.ContainerState) {
	if w := state.Waiting; w != nil {
		w.Reason = t.intern(w.Reason)
	}
	if term := state.Terminated; term != nil {
		term.Reason = t.intern(term.Reason)
	}
}
