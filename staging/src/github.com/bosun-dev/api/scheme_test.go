package api_test

import (
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
)

// servedKinds are the kinds of each group, which both versions must serve.
var servedKinds = map[string][]string{
	"apps.kruise.io":   {"CloneSet", "ContainerRecreateRequest", "DaemonSet", "ImageListPullJob", "ImagePullJob", "NodeImage"},
	"policy.kruise.io": {"PodUnavailableBudget"},
}

// TestAllVersionsInOneScheme registers every group version of the module in one scheme,
// as a client that speaks both versions does, and checks that each kind (and its list) of
// each version resolves to that version's own Go type, and each Go type to exactly its own
// version, so that encoding an object never picks the other version.
func TestAllVersionsInOneScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme,
		policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatalf("adding types to scheme: %v", err)
		}
	}

	packages := map[schema.GroupVersion]string{
		appsv1alpha1.SchemeGroupVersion:   reflect.TypeOf(appsv1alpha1.DaemonSet{}).PkgPath(),
		appsv1beta1.SchemeGroupVersion:    reflect.TypeOf(appsv1beta1.DaemonSet{}).PkgPath(),
		policyv1alpha1.SchemeGroupVersion: reflect.TypeOf(policyv1alpha1.PodUnavailableBudget{}).PkgPath(),
		policyv1beta1.SchemeGroupVersion:  reflect.TypeOf(policyv1beta1.PodUnavailableBudget{}).PkgPath(),
	}
	for _, gv := range []schema.GroupVersion{
		{Group: "apps.kruise.io", Version: "v1alpha1"}, {Group: "apps.kruise.io", Version: "v1beta1"},
		{Group: "policy.kruise.io", Version: "v1alpha1"}, {Group: "policy.kruise.io", Version: "v1beta1"},
	} {
		pkg, ok := packages[gv]
		if !ok {
			t.Fatalf("no package declares group version %s", gv)
		}
		var own []string
		for kind, typ := range scheme.KnownTypes(gv) {
			if typ.PkgPath() == pkg {
				own = append(own, kind)
			}
		}
		sort.Strings(own)
		var want []string
		for _, kind := range servedKinds[gv.Group] {
			want = append(want, kind, kind+"List")
		}
		sort.Strings(want)
		if !reflect.DeepEqual(own, want) {
			t.Errorf("%s registers kinds %v, want %v", gv, own, want)
		}

		for _, kind := range want {
			gvk := gv.WithKind(kind)
			obj, err := scheme.New(gvk)
			if err != nil {
				t.Errorf("creating %s: %v", gvk, err)
				continue
			}
			if got := reflect.TypeOf(obj).Elem().PkgPath(); got != pkg {
				t.Errorf("%s is created as %T from %s, want a type of %s", gvk, obj, got, pkg)
			}
			gvks, _, err := scheme.ObjectKinds(obj)
			if err != nil {
				t.Errorf("looking up the kind of %T: %v", obj, err)
				continue
			}
			if len(gvks) != 1 || gvks[0] != gvk {
				t.Errorf("%T is registered as %v, want only %s", obj, gvks, gvk)
			}
		}
	}
}
