package containerrecreaterequest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// betaOf is the v1beta1 form of a v1alpha1 request, as a v1beta1 client writes it.
func betaOf(r *appsv1alpha1.ContainerRecreateRequest) *appsv1beta1.ContainerRecreateRequest {
	out := &appsv1beta1.ContainerRecreateRequest{}
	appsv1alpha1.ConvertContainerRecreateRequestToV1beta1(r.DeepCopy(), out)
	delete(out.Annotations, appsv1alpha1.V1alpha1ConversionAnnotation)
	out.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "ContainerRecreateRequest"}
	return out
}

// A request is completed with the same patch, or refused with the same code, in both
// versions.
func TestBothVersions(t *testing.T) {
	noContainers := request()
	badDeadline := request("app")
	badDeadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	for _, tc := range []struct {
		name string
		in   *appsv1alpha1.ContainerRecreateRequest
		code int32
	}{
		{"complete", request("app", "sidecar"), 0},
		{"no containers", noContainers, http.StatusBadRequest},
		{"deadline below 3", badDeadline, http.StatusBadRequest},
		{"unknown container", request("nope"), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.cached(t, runningPod(), node("node-a", nil))
			alpha := f.handle(t, admissionv1.Create, tc.in, nil)
			f.version = "v1beta1"
			beta := f.handle(t, admissionv1.Create, betaOf(tc.in), nil)
			if tc.code == 0 {
				if !alpha.Allowed || !beta.Allowed || string(alpha.Patch) != string(beta.Patch) {
					t.Errorf("v1alpha1 %+v patch %s; v1beta1 %+v patch %s; want both allowed with the same patch", alpha.Result, alpha.Patch, beta.Result, beta.Patch)
				}
				return
			}
			expectDenied(t, alpha, tc.code, "")
			expectDenied(t, beta, tc.code, "")
			if alpha.Result.Message != beta.Result.Message {
				t.Errorf("messages differ: v1alpha1 %q, v1beta1 %q", alpha.Result.Message, beta.Result.Message)
			}
		})
	}
}

// Updates are judged alike in both versions: the spec is immutable.
func TestUpdateBothVersions(t *testing.T) {
	f := newFixture(t)
	f.cached(t, runningPod(), node("node-a", nil))
	old := admitted(t, request("app"), f.handle(t, admissionv1.Create, request("app"), nil))
	changed := old.DeepCopy()
	changed.Spec.TTLSecondsAfterFinished = ptr.To[int32](5)
	for _, version := range []string{"v1alpha1", "v1beta1"} {
		f.version = version
		var object, oldObject any = changed, old
		if version == "v1beta1" {
			object, oldObject = betaOf(changed), betaOf(old)
		}
		expectDenied(t, f.handle(t, admissionv1.Update, object, oldObject), http.StatusForbidden, "spec is immutable")
	}
}

// Other versions are refused with a 400, and a client may not write the reserved
// annotations of conversion.
func TestUnknownVersionAndReservedAnnotation(t *testing.T) {
	f := newFixture(t)
	f.cached(t, runningPod(), node("node-a", nil))
	f.version = "v2"
	expectDenied(t, f.handle(t, admissionv1.Create, request("app"), nil), http.StatusBadRequest, "only, not apps.kruise.io/v2")
	f.version = "v1beta1"
	reserved := betaOf(request("app"))
	reserved.Annotations = map[string]string{appsv1alpha1.V1alpha1ConversionAnnotation: "{}"}
	expectDenied(t, f.handle(t, admissionv1.Create, reserved, nil), http.StatusBadRequest, "reserved for version conversion")
}

// A v1beta1 write whose status disagrees with the annotations carrying it for v1alpha1
// loses those annotations, with a warning; agreeing ones, and v1alpha1 writes, are kept.
func TestStaleCarriers(t *testing.T) {
	f := newFixture(t)
	f.cached(t, runningPod(), node("node-a", nil))
	admittedAlpha := admitted(t, request("app"), f.handle(t, admissionv1.Create, request("app"), nil))
	old := betaOf(admittedAlpha)
	old.Status.ContainerStatusSnapshot = []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "app", Ready: true, RestartCount: 2, ContainerID: "containerd://aaa"}}
	grace := metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old.Status.Conditions = []metav1.Condition{{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, LastTransitionTime: grace, Reason: "PreRecreateGrace"}}
	old.Annotations = map[string]string{
		"crr.apps.kruise.io/sync-container-statuses": `[{"name":"app","ready":false,"restartCount":1}]`,
		"crr.apps.kruise.io/unready-acquired":        "2026-01-02T03:04:05Z",
	}
	f.version = "v1beta1"
	resp := f.handle(t, admissionv1.Update, old, old)
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if want := `[{"op":"remove","path":"/metadata/annotations/crr.apps.kruise.io~1sync-container-statuses"}]`; string(resp.Patch) != want {
		t.Errorf("patch %s, want %s", resp.Patch, want)
	}
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "status.containerStatusSnapshot") {
		t.Errorf("warnings %q, want one about the snapshot", resp.Warnings)
	}

	agreeing := old.DeepCopy()
	agreeing.Annotations["crr.apps.kruise.io/sync-container-statuses"] = `[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://aaa"}]`
	agreeing.Annotations["crr.apps.kruise.io/unready-acquired"] = "2026-01-02T03:04:06Z"
	resp = f.handle(t, admissionv1.Update, agreeing, agreeing)
	if want := `[{"op":"remove","path":"/metadata/annotations/crr.apps.kruise.io~1unready-acquired"}]`; !resp.Allowed || string(resp.Patch) != want {
		t.Errorf("answer %+v patch %s, want allowed with %s", resp.Result, resp.Patch, want)
	}

	// A stale carrier removed from a new request comes before the defaults of the patch.
	created := betaOf(request("app"))
	created.Status.ContainerStatusSnapshot = old.Status.ContainerStatusSnapshot
	created.Annotations = map[string]string{"crr.apps.kruise.io/sync-container-statuses": "not json"}
	resp = f.handle(t, admissionv1.Create, created, nil)
	if !resp.Allowed || !strings.HasPrefix(string(resp.Patch), `[{"op":"remove","path":"/metadata/annotations/crr.apps.kruise.io~1sync-container-statuses"},{"op":"add"`) {
		t.Errorf("answer %+v patch %s, want the removal then the defaults", resp.Result, resp.Patch)
	}

	f.version = "v1alpha1"
	stale := admittedAlpha.DeepCopy()
	stale.Annotations = map[string]string{"crr.apps.kruise.io/sync-container-statuses": "not json"}
	if resp := f.handle(t, admissionv1.Update, stale, stale); !resp.Allowed || resp.Patch != nil || len(resp.Warnings) > 0 {
		t.Errorf("v1alpha1 write: %+v patch %s warnings %q, want allowed unchanged", resp.Result, resp.Patch, resp.Warnings)
	}
}
