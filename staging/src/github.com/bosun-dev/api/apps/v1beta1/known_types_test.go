package v1beta1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestSchemeRegistration checks that every kind is served under apps.kruise.io/v1beta1
// with its OpenKruise kind name, and that the shared meta types are registered too (clients
// need ListOptions and friends to list and watch).
func TestSchemeRegistration(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("adding types to scheme: %v", err)
	}
	want := map[string]runtime.Object{
		"DaemonSet":                    &DaemonSet{},
		"DaemonSetList":                &DaemonSetList{},
		"ContainerRecreateRequest":     &ContainerRecreateRequest{},
		"ContainerRecreateRequestList": &ContainerRecreateRequestList{},
		"NodeImage":                    &NodeImage{},
		"NodeImageList":                &NodeImageList{},
		"ImagePullJob":                 &ImagePullJob{},
		"ImagePullJobList":             &ImagePullJobList{},
		"ImageListPullJob":             &ImageListPullJob{},
		"ImageListPullJobList":         &ImageListPullJobList{},
		"CloneSet":                     &CloneSet{},
		"CloneSetList":                 &CloneSetList{},
		"ListOptions":                  &metav1.ListOptions{},
		"WatchEvent":                   &metav1.WatchEvent{},
	}
	if gv := SchemeGroupVersion.String(); gv != "apps.kruise.io/v1beta1" {
		t.Fatalf("group version is %s, want apps.kruise.io/v1beta1", gv)
	}
	for kind, obj := range want {
		gvk := SchemeGroupVersion.WithKind(kind)
		if !scheme.Recognizes(gvk) {
			t.Errorf("scheme does not recognise %s", gvk)
			continue
		}
		got, err := scheme.New(gvk)
		if err != nil {
			t.Errorf("creating %s: %v", gvk, err)
			continue
		}
		if reflect.TypeOf(got) != reflect.TypeOf(obj) {
			t.Errorf("%s maps to %T, want %T", gvk, got, obj)
		}
	}
	known := scheme.KnownTypes(SchemeGroupVersion)
	for kind := range known {
		if _, ok := want[kind]; !ok && reflect.TypeOf(known[kind]).PkgPath() == reflect.TypeOf(DaemonSet{}).PkgPath() {
			t.Errorf("scheme has kind %s of this package that the test does not know; add it", kind)
		}
	}
}
