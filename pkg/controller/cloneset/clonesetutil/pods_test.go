package clonesetutil

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestPickInstanceIDs(t *testing.T) {
	taken := func(ids ...string) func(string) bool {
		return func(id string) bool { return slices.Contains(ids, id) }
	}
	sequence := func(ids ...string) func() string {
		return func() string {
			id := ids[0]
			ids = ids[1:]
			return id
		}
	}
	for _, tc := range []struct {
		name     string
		n        int
		reusable []string
		taken    []string
		random   []string
		want     []string
	}{
		{"reusable first", 3, []string{"r1", "r2"}, nil, []string{"x1"}, []string{"r1", "r2", "x1"}},
		{"no more than asked", 1, []string{"r1", "r2"}, nil, nil, []string{"r1"}},
		{"a reusable ID whose pod still exists is skipped", 2, []string{"r1", "r2"}, []string{"r1"}, []string{"x1"}, []string{"r2", "x1"}},
		{"random IDs in use are drawn again", 2, nil, []string{"x1"}, []string{"x1", "x2", "x2", "x3"}, []string{"x2", "x3"}},
		{"duplicates and empty IDs are skipped", 2, []string{"", "r1", "r1"}, nil, []string{"x1"}, []string{"r1", "x1"}},
	} {
		got := PickInstanceIDs(tc.n, tc.reusable, taken(tc.taken...), sequence(tc.random...))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: PickInstanceIDs = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewPodAndClaims(t *testing.T) {
	cs := testCloneSet()
	cs.Spec.Template.Annotations = map[string]string{"t": "1"}
	cs.Spec.Template.Finalizers = []string{"f"}
	cs.Spec.Template.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "logs", Labels: map[string]string{"kind": "logs"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "data"}},
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pod, err := NewPod(cs, "web-64c75dc87", "bcd2f", false, now)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "web-bcd2f" || pod.Namespace != "ns" || pod.GenerateName != "web-" {
		t.Errorf("pod %s/%s (generateName %q), want ns/web-bcd2f (web-)", pod.Namespace, pod.Name, pod.GenerateName)
	}
	wantLabels := map[string]string{
		"a": "1", "b": "2",
		"controller-revision-hash":            "web-64c75dc87",
		"pod-template-hash":                   "64c75dc87",
		"apps.kruise.io/cloneset-instance-id": "bcd2f",
		"lifecycle.apps.kruise.io/state":      "PreparingNormal",
	}
	if !mapsEqual(pod.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", pod.Labels, wantLabels)
	}
	if !mapsEqual(pod.Annotations, map[string]string{"t": "1", "lifecycle.apps.kruise.io/timestamp": "2026-03-01T12:00:00Z"}) {
		t.Errorf("annotations = %v", pod.Annotations)
	}
	if !slices.Equal(pod.Finalizers, []string{"f"}) {
		t.Errorf("finalizers = %v", pod.Finalizers)
	}
	if len(pod.Spec.ReadinessGates) != 1 || pod.Spec.ReadinessGates[0].ConditionType != appsv1beta1.InPlaceUpdateReady {
		t.Errorf("readiness gates = %v, want InPlaceUpdateReady", pod.Spec.ReadinessGates)
	}
	var volumes []string
	for _, v := range pod.Spec.Volumes {
		claim := ""
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
		volumes = append(volumes, v.Name+":"+claim)
	}
	if want := []string{"data:data-web-bcd2f", "logs:logs-web-bcd2f", "config:"}; !slices.Equal(volumes, want) {
		t.Errorf("volumes = %v, want %v", volumes, want)
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "CloneSet" || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.UID != cs.UID {
		t.Errorf("controller reference = %+v", ref)
	}
	if len(cs.Spec.Template.Spec.ReadinessGates) != 0 || cs.Spec.Template.Labels["controller-revision-hash"] != "" {
		t.Error("NewPod changed the CloneSet's template")
	}

	short, err := NewPod(cs, "web-64c75dc87", "bcd2f", true, now)
	if err != nil {
		t.Fatal(err)
	}
	if short.Labels["controller-revision-hash"] != "64c75dc87" {
		t.Errorf("with CloneSetShortHash the revision label is %q, want the hash alone", short.Labels["controller-revision-hash"])
	}

	claims := NewClaims(cs, "bcd2f")
	if len(claims) != 2 || claims[0].Name != "data-web-bcd2f" || claims[1].Name != "logs-web-bcd2f" {
		t.Fatalf("claims = %v", claims)
	}
	logs := claims[1]
	if !mapsEqual(logs.Labels, map[string]string{"kind": "logs", "a": "1", "apps.kruise.io/cloneset-instance-id": "bcd2f"}) || logs.Namespace != "ns" {
		t.Errorf("claim labels = %v, namespace %q", logs.Labels, logs.Namespace)
	}
	if ref := metav1.GetControllerOf(logs); ref == nil || ref.UID != cs.UID {
		t.Errorf("claim controller reference = %+v", ref)
	}
	if cs.Spec.VolumeClaimTemplates[0].Labels["a"] != "" {
		t.Error("NewClaims changed the templates")
	}
}

func TestIsSpecifiedDelete(t *testing.T) {
	cs := testCloneSet()
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"p1"}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}}, true},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p2", Labels: map[string]string{appsv1beta1.SpecifiedDeleteKey: ""}}}, true},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p3"}}, false},
	} {
		if got := IsSpecifiedDelete(cs, tc.pod); got != tc.want {
			t.Errorf("IsSpecifiedDelete(%s) = %v, want %v", tc.pod.Name, got, tc.want)
		}
	}
}
