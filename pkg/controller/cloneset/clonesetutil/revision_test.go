package clonesetutil

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func claimTemplate(name, request, limit string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)},
				Limits:   corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(limit)},
			},
		},
	}
}

// The expected hashes are the ones OpenKruise v1.9.0's own unit tests assert for the same
// templates (pkg/util/volumeclaimtemplate, cases "single-pvc", "multi-pvcs", "nil-pvc").
func TestVolumeClaimTemplatesHash(t *testing.T) {
	one := claimTemplate("pvc-1", "1Gi", "2Gi")
	two := claimTemplate("pvc-2", "2Gi", "4Gi")
	for _, tc := range []struct {
		name      string
		templates []corev1.PersistentVolumeClaim
		want      string
	}{
		{"none", nil, ""},
		{"one", []corev1.PersistentVolumeClaim{one}, "1129974074"},
		{"two", []corev1.PersistentVolumeClaim{one, two}, "510584408"},
		{"two, given out of order", []corev1.PersistentVolumeClaim{two, one}, "510584408"},
	} {
		if got := VolumeClaimTemplatesHash(tc.templates); got != tc.want {
			t.Errorf("%s: VolumeClaimTemplatesHash = %q, want %q", tc.name, got, tc.want)
		}
	}
	// Labels and other metadata do not enter the hash.
	labelled := one
	labelled.Labels = map[string]string{"x": "y"}
	if got := VolumeClaimTemplatesHash([]corev1.PersistentVolumeClaim{labelled}); got != "1129974074" {
		t.Errorf("labels changed the hash: %s", got)
	}
	// The dump of the JSON "null" that OpenKruise hashes for no templates (it then writes ""
	// instead): the same value, 86995377, shows the dump matches byte for byte.
	if got := hashOfJSON(nil); got != 86995377 {
		t.Errorf("hash of null = %d, want 86995377", got)
	}
}

func testCloneSet() *appsv1beta1.CloneSet {
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "ns", UID: types.UID("cs-uid"),
			Annotations: map[string]string{"note": "x", appsv1beta1.ConversionAnnotationPrefix + "spec": "{}"},
		},
		Spec: appsv1beta1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"b": "2", "a": "1"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
			},
		},
	}
}

func TestNewRevision(t *testing.T) {
	cs := testCloneSet()
	revision, err := NewRevision(cs, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Data: OpenKruise's bytes for this template (kruisepod's golden revision data). The
	// hash of those bytes with collision count 0 is 64c75dc87 (see the hash package's
	// ControllerRevisionHash test, computed outside Go).
	const data = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"image":"img:v1","name":"c","resources":{}}]}}}}`
	if string(revision.Data.Raw) != data {
		t.Errorf("data = %s\nwant %s", revision.Data.Raw, data)
	}
	if revision.Name != "web-64c75dc87" || revision.Namespace != "ns" || revision.Revision != 3 {
		t.Errorf("revision %s/%s number %d, want ns/web-64c75dc87 number 3", revision.Namespace, revision.Name, revision.Revision)
	}
	wantLabels := map[string]string{"a": "1", "b": "2", "controller.kubernetes.io/hash": "64c75dc87"}
	if !mapsEqual(revision.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", revision.Labels, wantLabels)
	}
	wantAnnotations := map[string]string{"note": "x", "kruise.io/cloneset-volumeclaimtemplate-hash": ""}
	if !mapsEqual(revision.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v, want %v", revision.Annotations, wantAnnotations)
	}
	ref := metav1.GetControllerOf(revision)
	if ref == nil || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "CloneSet" || ref.Name != "web" || ref.UID != "cs-uid" ||
		ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference = %+v", ref)
	}
	if cs.Annotations[appsv1beta1.ConversionAnnotationPrefix+"spec"] == "" {
		t.Error("NewRevision changed the CloneSet's annotations")
	}

	// Another collision count names another revision over the same data.
	bumped, err := NewRevision(cs, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if bumped.Name != "web-64c75dc86" || RevisionNameFor("web", revision.Data.Raw, 1) != bumped.Name {
		t.Errorf("with collision count 1: %s, RevisionNameFor %s, want web-64c75dc86", bumped.Name, RevisionNameFor("web", revision.Data.Raw, 1))
	}
	long := strings.Repeat("n", 250)
	if name := RevisionName(long, "h"); name != strings.Repeat("n", 223)+"-h" {
		t.Errorf("RevisionName of a long name = %d characters", len(name))
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestAtRevisionAndShortHash(t *testing.T) {
	pod := func(label string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1beta1.ControllerRevisionHashLabelKey: label}}}
	}
	for _, tc := range []struct {
		label, revision string
		want            bool
	}{
		{"web-abc", "web-abc", true},
		{"abc", "web-abc", true},       // written with CloneSetShortHash
		{"other-abc", "web-abc", true}, // only the hash part counts
		{"web-abd", "web-abc", false},
		{"", "web-abc", false},
	} {
		if got := AtRevision(pod(tc.label), tc.revision); got != tc.want {
			t.Errorf("AtRevision(%q, %q) = %v, want %v", tc.label, tc.revision, got, tc.want)
		}
	}
	if ShortHash("a-b-c") != "c" || ShortHash("abc") != "abc" {
		t.Errorf("ShortHash is wrong")
	}
}

func TestEqualRevisionsAndSort(t *testing.T) {
	rev := func(name string, number int64, data, hashLabel string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RevisionHashLabelKey: hashLabel}},
			Data:       runtime.RawExtension{Raw: []byte(data)}, Revision: number,
		}
	}
	a := rev("a", 1, `{"x":1}`, "bcd")
	if !EqualRevisions(a, rev("b", 2, `{"x":1}`, "fgh")) {
		t.Error("same data, safe-encoded hashes: not equal")
	}
	if EqualRevisions(a, rev("b", 2, `{"x":2}`, "bcd")) {
		t.Error("other data: equal")
	}
	if EqualRevisions(rev("a", 1, `{"x":1}`, "12"), rev("b", 1, `{"x":1}`, "13")) {
		t.Error("numeric hash labels that differ: equal")
	}
	if !EqualRevisions(nil, nil) || EqualRevisions(a, nil) {
		t.Error("nil handling")
	}

	revisions := []*appsv1.ControllerRevision{rev("c", 3, "", ""), rev("b", 1, "", ""), rev("a", 1, "", ""), rev("d", 2, "", "")}
	SortRevisions(revisions)
	var names []string
	for _, r := range revisions {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "a,b,d,c" {
		t.Errorf("sorted = %v, want a,b,d,c", names)
	}
	if NextRevisionNumber(revisions) != 4 || NextRevisionNumber(nil) != 1 {
		t.Error("NextRevisionNumber is wrong")
	}
}
