package podcontrol

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

var podsResource = schema.GroupResource{Resource: "pods"}

func owner(name string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "rs-uid"}}
}

func goodRef() *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "ignored",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"a": "b"},
			Finalizers:  []string{"example.com/f"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
	}
}

// harness wires Real to a fake clientset that names created pods like the API server's
// generateName would, and a FakeRecorder.
type harness struct {
	client   *fake.Clientset
	recorder *record.FakeRecorder
	control  *Real
	writes   []*corev1.Pod
}

func newHarness(objs ...runtime.Object) *harness {
	h := &harness{client: fake.NewClientset(objs...), recorder: record.NewFakeRecorder(100)}
	h.client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = pod.GenerateName + "x7k2p"
		}
		return false, nil, nil
	})
	h.control = &Real{Client: h.client, Recorder: h.recorder, OnWrite: func(pod *corev1.Pod, _ *metav1.OwnerReference) {
		h.writes = append(h.writes, pod)
	}}
	return h
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestInvalidControllerRefSendsNoRequest(t *testing.T) {
	tests := map[string]func(*metav1.OwnerReference) *metav1.OwnerReference{
		"nil":                        func(*metav1.OwnerReference) *metav1.OwnerReference { return nil },
		"empty apiVersion":           func(r *metav1.OwnerReference) *metav1.OwnerReference { r.APIVersion = ""; return r },
		"empty kind":                 func(r *metav1.OwnerReference) *metav1.OwnerReference { r.Kind = ""; return r },
		"controller unset":           func(r *metav1.OwnerReference) *metav1.OwnerReference { r.Controller = nil; return r },
		"controller false":           func(r *metav1.OwnerReference) *metav1.OwnerReference { r.Controller = ptr.To(false); return r },
		"missing blockOwnerDeletion": func(r *metav1.OwnerReference) *metav1.OwnerReference { r.BlockOwnerDeletion = nil; return r },
		"blockOwnerDeletion false":   func(r *metav1.OwnerReference) *metav1.OwnerReference { r.BlockOwnerDeletion = ptr.To(false); return r },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness()
			err := h.control.CreatePods(context.Background(), "ns", template(), owner("rs"), mutate(goodRef()))
			if err == nil {
				t.Fatal("want an error")
			}
			if n := len(h.client.Actions()); n != 0 {
				t.Errorf("%d API requests sent, want none", n)
			}
			if ev := h.events(); len(ev) != 0 {
				t.Errorf("events %v, want none", ev)
			}
		})
	}
}

func TestCreatePodsBuildsPodFromTemplate(t *testing.T) {
	h := newHarness()
	tmpl := template()
	if err := h.control.CreatePods(context.Background(), "ns", tmpl, owner("rs"), goodRef()); err != nil {
		t.Fatal(err)
	}
	actions := h.client.Actions()
	if len(actions) != 1 || actions[0].GetVerb() != "create" || actions[0].GetNamespace() != "ns" {
		t.Fatalf("actions = %v, want one create in ns", actions)
	}
	sent := actions[0].(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    "rs-",
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{"a": "b"},
			Finalizers:      []string{"example.com/f"},
			OwnerReferences: []metav1.OwnerReference{*goodRef()},
		},
		Spec: tmpl.Spec,
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("created pod (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Normal SuccessfulCreate Created pod: rs-x7k2p"}, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(h.writes) != 1 || h.writes[0].Name != "rs-x7k2p" {
		t.Errorf("OnWrite saw %v, want the created pod", h.writes)
	}
}

func TestPodFromTemplateDoesNotAliasTemplate(t *testing.T) {
	tmpl := template()
	pod, err := PodFromTemplate(tmpl, owner("rs"), goodRef())
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels["app"] = "changed"
	pod.Annotations["a"] = "changed"
	pod.Finalizers[0] = "changed"
	pod.Spec.Containers[0].Image = "changed"
	if diff := cmp.Diff(template(), tmpl); diff != "" {
		t.Errorf("changing the pod changed the template (-want +got):\n%s", diff)
	}
}

func TestCreatePodsWithGenerateName(t *testing.T) {
	h := newHarness()
	if err := h.control.CreatePodsWithGenerateName(context.Background(), "ns", template(), owner("rs"), goodRef(), "custom-"); err != nil {
		t.Fatal(err)
	}
	sent := h.client.Actions()[0].(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	if sent.GenerateName != "custom-" {
		t.Errorf("generateName = %q, want custom-", sent.GenerateName)
	}
}

func TestGenerateNamePrefix(t *testing.T) {
	name252 := strings.Repeat("a", 252)
	name253 := strings.Repeat("a", 253)
	tests := map[string]string{
		"rs":    "rs-",
		name252: name252 + "-",
		name253: name253,
	}
	for in, want := range tests {
		if got := GenerateNamePrefix(in); got != want {
			t.Errorf("GenerateNamePrefix(len %d) = len %d %q..., want len %d", len(in), len(got), got[:min(len(got), 8)], len(want))
		}
	}
}

func TestCreatePodsRefusesPodsWithoutLabels(t *testing.T) {
	h := newHarness()
	tmpl := template()
	tmpl.Labels = nil
	err := h.control.CreatePods(context.Background(), "ns", tmpl, owner("rs"), goodRef())
	if err == nil || err.Error() != "unable to create pods, no labels" {
		t.Fatalf("err = %v", err)
	}
	if n := len(h.client.Actions()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

func TestCreatePodsErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(podsResource, "", errors.New("quota exceeded"))
	terminating := apierrors.NewForbidden(podsResource, "", errors.New("namespace ns is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated"}}
	tests := []struct {
		name       string
		apiErr     *apierrors.StatusError
		wantEvents []string
	}{
		{name: "API error: FailedCreate event", apiErr: forbidden, wantEvents: []string{"Warning FailedCreate Error creating: " + forbidden.Error()}},
		{name: "namespace terminating: no event", apiErr: terminating},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness()
			h.client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.apiErr
			})
			err := h.control.CreatePods(context.Background(), "ns", template(), owner("rs"), goodRef())
			if !errors.Is(err, tc.apiErr) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.apiErr)
			}
			if tc.apiErr == terminating && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				t.Error("the NamespaceTerminating cause must stay visible to callers")
			}
			if diff := cmp.Diff(tc.wantEvents, h.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if len(h.writes) != 0 {
				t.Error("OnWrite called for a failed create")
			}
		})
	}
}

func TestDeletePod(t *testing.T) {
	existing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}}
	boom := apierrors.NewInternalError(errors.New("boom"))
	tests := []struct {
		name       string
		reactErr   error
		wantErr    func(error) bool
		wantMsg    string
		wantEvents []string
	}{
		{name: "success", wantErr: func(err error) bool { return err == nil }, wantEvents: []string{"Normal SuccessfulDelete Deleted pod: p1"}},
		{name: "not found: no event, NotFound returned", reactErr: apierrors.NewNotFound(podsResource, "p1"), wantErr: apierrors.IsNotFound},
		{
			name:       "other error",
			reactErr:   boom,
			wantErr:    func(err error) bool { return errors.Is(err, boom) },
			wantMsg:    "unable to delete pods: " + boom.Error(),
			wantEvents: []string{"Warning FailedDelete Error deleting: " + boom.Error()},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(existing)
			if tc.reactErr != nil {
				h.client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.reactErr
				})
			}
			err := h.control.DeletePod(context.Background(), "ns", "p1", owner("rs"))
			if !tc.wantErr(err) {
				t.Errorf("unexpected err %v", err)
			}
			if tc.wantMsg != "" && (err == nil || err.Error() != tc.wantMsg) {
				t.Errorf("err = %v, want message %q", err, tc.wantMsg)
			}
			if diff := cmp.Diff(tc.wantEvents, h.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPatchPod(t *testing.T) {
	existing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1", OwnerReferences: []metav1.OwnerReference{*goodRef()}}}
	h := newHarness(existing)
	var gotRef *metav1.OwnerReference
	h.control.OnWrite = func(pod *corev1.Pod, ref *metav1.OwnerReference) { h.writes = append(h.writes, pod); gotRef = ref }
	body := []byte(`{"metadata":{"labels":{"x":"y"}}}`)
	if err := h.control.PatchPod(context.Background(), "ns", "p1", body); err != nil {
		t.Fatal(err)
	}
	patch := h.client.Actions()[0].(clienttesting.PatchAction)
	if patch.GetPatchType() != types.StrategicMergePatchType || string(patch.GetPatch()) != string(body) {
		t.Errorf("patch = %s %s", patch.GetPatchType(), patch.GetPatch())
	}
	if len(h.writes) != 1 || h.writes[0].Labels["x"] != "y" || gotRef == nil || gotRef.UID != "rs-uid" {
		t.Errorf("OnWrite saw %v with ref %v, want the patched pod and its controller ref", h.writes, gotRef)
	}
	if err := h.control.PatchPod(context.Background(), "ns", "missing", body); !apierrors.IsNotFound(err) {
		t.Errorf("patching a missing pod: err = %v, want NotFound", err)
	}
}

func TestFake(t *testing.T) {
	f := &Fake{CreateLimit: 1}
	ctx := context.Background()
	if err := f.CreatePods(ctx, "ns", template(), owner("rs"), &metav1.OwnerReference{}); err == nil {
		t.Error("Fake must validate the controller ref")
	}
	if err := f.CreatePods(ctx, "ns", template(), owner("rs"), goodRef()); err != nil {
		t.Fatal(err)
	}
	if err := f.CreatePods(ctx, "ns", template(), owner("rs"), goodRef()); err == nil {
		t.Error("create beyond CreateLimit must fail")
	}
	_ = f.DeletePod(ctx, "ns", "p", owner("rs"))
	_ = f.PatchPod(ctx, "ns", "p", []byte("{}"))
	if len(f.Templates) != 1 || len(f.ControllerRefs) != 1 || f.CreateCallCount != 2 || len(f.DeletedPods) != 1 || f.DeletedPods[0] != "ns/p" || len(f.Patches) != 1 {
		t.Errorf("Fake recorded %+v", f)
	}
	f.Clear()
	if len(f.Templates)+len(f.DeletedPods)+len(f.Patches)+f.CreateCallCount != 0 {
		t.Error("Clear left records behind")
	}
}
