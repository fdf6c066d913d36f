package podcache

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// oneCopy reports whether a and b are the same copy of a string, not only equal ones.
func oneCopy(a, b string) bool { return a == b && unsafe.StringData(a) == unsafe.StringData(b) }

func oneMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// decodedTrimmed returns the i-th workload pod as an informer caches it: decoded from the
// API server's bytes, each string its own allocation, then trimmed.
func decodedTrimmed(t *testing.T, i int) *corev1.Pod {
	t.Helper()
	pod := decodePod(t, encodedWorkloadPods(t, i+1)[i], true)
	if pod == nil {
		t.FailNow()
	}
	return pod
}

// Two pods of one workload hold one copy of what their workload gave them, and of the
// cluster's common words; what is theirs alone stays theirs.
func TestPodsOfAWorkloadShareTheirCopies(t *testing.T) {
	a, b := decodedTrimmed(t, 7), decodedTrimmed(t, 47)
	other := decodedTrimmed(t, 8)
	shared := map[string][2]string{
		"namespace":                 {a.Namespace, b.Namespace},
		"owner's UID":               {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		"owner's name":              {a.OwnerReferences[0].Name, b.OwnerReferences[0].Name},
		"image":                     {a.Spec.Containers[0].Image, b.Spec.Containers[0].Image},
		"env value":                 {a.Spec.Containers[0].Env[0].Value, b.Spec.Containers[0].Env[0].Value},
		"env field path":            {a.Spec.Containers[1].Env[1].ValueFrom.FieldRef.FieldPath, b.Spec.Containers[1].Env[1].ValueFrom.FieldRef.FieldPath},
		"port name":                 {a.Spec.Containers[0].Ports[0].Name, b.Spec.Containers[0].Ports[0].Name},
		"phase":                     {string(a.Status.Phase), string(b.Status.Phase)},
		"condition type":            {string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)},
		"container status image ID": {a.Status.ContainerStatuses[0].ImageID, b.Status.ContainerStatuses[0].ImageID},
		"readiness gate":            {string(a.Spec.ReadinessGates[0].ConditionType), string(b.Spec.ReadinessGates[0].ConditionType)},
		"phase of another workload": {string(a.Status.Phase), string(other.Status.Phase)},
	}
	for what, pair := range shared {
		if !oneCopy(pair[0], pair[1]) {
			t.Errorf("%s: %q and %q are two copies", what, pair[0], pair[1])
		}
	}
	if !oneMap(a.Labels, b.Labels) || !oneMap(a.Annotations, b.Annotations) {
		t.Error("two pods of one revision hold two copies of equal labels or annotations")
	}
	if oneMap(a.Labels, other.Labels) || other.Labels["app"] != "web-8" || a.Labels["app"] != "web-7" {
		t.Errorf("pods of two workloads share labels: %v and %v", a.Labels, other.Labels)
	}
	if !oneMap(a.Annotations, other.Annotations) {
		t.Error("pods of two workloads with equal annotations hold two copies")
	}
	if a.Name == b.Name || a.UID == b.UID || a.Status.ContainerStatuses[0].ContainerID == b.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("pods 7 and 47 came out with one name, UID or container ID: %s, %s", a.Name, b.Name)
	}
}

// Maps are shared only when equal, whatever their order or the bytes their strings hold;
// a map too large to look up keeps its own copy, its strings still shared.
func TestMapsAreSharedOnlyWhenEqual(t *testing.T) {
	table := &stringTable{}
	ab := table.shareMap(map[string]string{"ab": "c"})
	if got := table.shareMap(map[string]string{"a": "bc"}); oneMap(ab, got) {
		t.Errorf("{ab: c} and {a: bc} share one map: %v", got)
	}
	if got := table.shareMap(map[string]string{"a": "b\x01\x01c"}); oneMap(table.shareMap(map[string]string{"a": "b", "\x01c": ""}), got) {
		t.Errorf("maps whose concatenations match share one map: %v", got)
	}
	first := table.shareMap(map[string]string{"x": "1", "y": "2", "z": "3"})
	if got := table.shareMap(map[string]string{"z": "3", "y": "2", "x": "1"}); !oneMap(first, got) {
		t.Error("equal maps hold two copies")
	}
	if got := table.shareMap(map[string]string{"x": "1", "y": "2"}); oneMap(first, got) || len(got) != 2 {
		t.Errorf("a map with one entry less is shared with the larger one: %v", got)
	}

	large := map[string]string{"note": strings.Repeat("n", internMaxLen), "team": "a"}
	for i := range 4 {
		large[fmt.Sprint("k", i)] = strings.Repeat("v", internMaxLen)
	}
	sharedLarge := table.shareMap(large)
	again := map[string]string{}
	for k, v := range large {
		again[strings.Clone(k)] = strings.Clone(v)
	}
	if got := table.shareMap(again); oneMap(sharedLarge, got) || !reflect.DeepEqual(got, large) {
		t.Errorf("a large map was shared, or changed: %v", got)
	} else if !oneCopy(got["team"], sharedLarge["team"]) {
		t.Error("the strings of a large map are not shared")
	}
}

// A string looked up now and then stays shared across generations; one not looked up for
// two generations is forgotten, and the table does not grow past two of them.
func TestTableKeepsTwoGenerations(t *testing.T) {
	table := &stringTable{}
	kept, forgotten := table.intern(strings.Clone("kept")), table.intern(strings.Clone("forgotten"))
	for i := range 2 * internGenerationCount {
		table.intern(fmt.Sprint("filler-", i))
		if i%(internGenerationCount/2) == 0 && !oneCopy(table.intern(strings.Clone("kept")), kept) {
			t.Fatalf("after %d other strings, a string looked up within each generation was given a new copy", i)
		}
	}
	if oneCopy(table.intern(strings.Clone("forgotten")), forgotten) {
		t.Error("a string not looked up for two generations is still held")
	}
	if n := len(table.strings.current) + len(table.strings.previous); n > 2*internGenerationCount {
		t.Errorf("the table holds %d strings, more than two generations", n)
	}

	long := strings.Repeat("x", internMaxLen+1)
	if got := table.intern(strings.Clone(long)); oneCopy(got, table.intern(strings.Clone(long))) {
		t.Error("a string longer than internMaxLen was shared")
	}

	bytes := &stringTable{}
	for i := range 4 * internGenerationBytes / internMaxLen {
		bytes.intern(fmt.Sprintf("%0*d", internMaxLen, i))
	}
	if bytes.strings.currentBytes > internGenerationBytes || len(bytes.strings.previous)*internMaxLen > internGenerationBytes {
		t.Errorf("a generation of long strings holds %d bytes, more than %d", bytes.strings.currentBytes, internGenerationBytes)
	}
}

// Informers trim from their own goroutines: the table is shared by all of them.
func TestConcurrentTrims(t *testing.T) {
	var wg sync.WaitGroup
	encoded := encodedWorkloadPods(t, 8*50)
	pods := make([]*corev1.Pod, len(encoded))
	for w := range 8 {
		wg.Go(func() {
			for i := w * 50; i < (w+1)*50; i++ {
				pods[i] = decodePod(t, encoded[i], true)
			}
		})
	}
	wg.Wait()
	for i, pod := range pods {
		if pod == nil {
			continue
		}
		if want := workloadPod(i); pod.Name != want.Name || !reflect.DeepEqual(pod.Labels, want.Labels) || pod.Spec.Containers[0].Image != want.Spec.Containers[0].Image {
			t.Errorf("pod %d came out as %s %v %s", i, pod.Name, pod.Labels, pod.Spec.Containers[0].Image)
		}
	}
}
