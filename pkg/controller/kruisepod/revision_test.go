package kruisepod

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRevisionDataGolden(t *testing.T) {
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"b": "2", "a": "1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
	}
	// Written by hand: OpenKruise's bytes for this template.
	const golden = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"image":"img:v1","name":"c","resources":{}}]}}}}`
	data, err := RevisionData(template)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != golden {
		t.Errorf("RevisionData =\n%s\nwant\n%s", data, golden)
	}
	// Newer OpenKruise builds leave the null timestamp out; both must be recognised.
	const withoutTimestamp = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"image":"img:v1","name":"c","resources":{}}]}}}}`
	for _, data := range []string{golden, withoutTimestamp} {
		if ok, err := MatchesRevisionData([]byte(data), template); err != nil || !ok {
			t.Errorf("MatchesRevisionData(%s) = %v, %v", data, ok, err)
		}
	}
	if ok, _ := MatchesRevisionData([]byte(`{"spec":{}}`), template); ok {
		t.Error("other data matched")
	}
	back, err := TemplateFromRevisionData(data)
	if err != nil || back.Spec.Containers[0].Image != "img:v1" {
		t.Errorf("TemplateFromRevisionData = %+v, %v", back, err)
	}
}
