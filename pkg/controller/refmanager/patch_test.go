package refmanager

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestReleasePatchForGarbageCollector(t *testing.T) {
	body, err := ReleasePatch("dep-uid", []types.UID{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"uid":"dep-uid","ownerReferences":[{"$patch":"delete","uid":"a"},{"$patch":"delete","uid":"b"}]}}`
	if string(body) != want {
		t.Errorf("ReleasePatch =\n%s\nwant\n%s", body, want)
	}
}

func TestMergePatches(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	oldOwnerRef := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "owner-uid"}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "child", UID: "child-uid", ResourceVersion: "42",
		OwnerReferences: []metav1.OwnerReference{other, oldOwnerRef},
		Finalizers:      []string{"keep", "example.com/f"},
	}}
	newRef := *metav1.NewControllerRef(&metav1.ObjectMeta{Name: "t", UID: "owner-uid"}, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"})

	adopt, err := adoptMergePatch(obj, newRef, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantAdopt := `{"metadata":{"resourceVersion":"42","ownerReferences":[` +
		`{"apiVersion":"v1","kind":"ConfigMap","name":"cm","uid":"cm-uid"},` +
		`{"apiVersion":"example.com/v1","kind":"Thing","name":"t","uid":"owner-uid","controller":true,"blockOwnerDeletion":true}]}}`
	if string(adopt) != wantAdopt {
		t.Errorf("adopt merge patch =\n%s\nwant (existing ref upgraded in place, others kept)\n%s", adopt, wantAdopt)
	}

	release, err := ReleaseMergePatch(obj, []types.UID{"owner-uid"}, "example.com/f")
	if err != nil {
		t.Fatal(err)
	}
	wantRelease := `{"metadata":{"resourceVersion":"42","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"cm","uid":"cm-uid"}],"finalizers":["keep"]}}`
	if string(release) != wantRelease {
		t.Errorf("release merge patch =\n%s\nwant\n%s", release, wantRelease)
	}

	last, err := ReleaseMergePatch(obj, []types.UID{"owner-uid", "cm-uid"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{"resourceVersion":"42","ownerReferences":null}}`; string(last) != want {
		t.Errorf("releasing every owner = %s, want %s", last, want)
	}
	// The input object must not be changed by building patches.
	if len(obj.OwnerReferences) != 2 || obj.OwnerReferences[1].Controller != nil || len(obj.Finalizers) != 2 {
		t.Errorf("building patches mutated the object: %+v", obj.ObjectMeta)
	}
}

func TestMergePatcherThroughMetadataClient(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme)
	type call struct {
		resource, namespace, name string
		patchType                 types.PatchType
		body                      map[string]any
	}
	var calls []call
	client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pa := action.(clienttesting.PatchAction)
		var body map[string]any
		if err := json.Unmarshal(pa.GetPatch(), &body); err != nil {
			t.Errorf("patch body is not JSON: %v", err)
		}
		calls = append(calls, call{pa.GetResource().Resource, pa.GetNamespace(), pa.GetName(), pa.GetPatchType(), body})
		return true, &metav1.PartialObjectMetadata{}, nil
	})
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t", UID: "owner-uid"}}
	m := New(owner, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, labels.Everything(), nil,
		&MergePatcher{ObjectKind: "Widget", Client: client, Resource: gvr})
	orphan := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "w-uid", ResourceVersion: "7"}}
	owned, err := m.Claim(context.Background(), orphan, m.SelectorMatches, m.Adopt, m.Release)
	if !owned || err != nil {
		t.Fatalf("Claim = (%v, %v)", owned, err)
	}
	want := []call{{
		resource: "widgets", namespace: "ns", name: "w", patchType: types.MergePatchType,
		body: map[string]any{"metadata": map[string]any{
			"resourceVersion": "7",
			"ownerReferences": []any{map[string]any{
				"apiVersion": "example.com/v1", "kind": "Thing", "name": "t", "uid": "owner-uid",
				"controller": true, "blockOwnerDeletion": true,
			}},
		}},
	}}
	if diff := cmp.Diff(want, calls, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("patch calls (-want +got):\n%s", diff)
	}
}
