package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

func TestServeAllowed(t *testing.T) {
	var got *admissionv1.AdmissionRequest
	s := newTestServer(t, ServerOptions{}, "allowed.bosun.test", HandlerFunc(
		func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			got = req
			return Allowed()
		}))
	sent := newRequest("uid-1", nil)

	resp := readResponse(t, post(testContext(t), s.Handler(), "/allowed.bosun.test", reviewBody(t, sent)), "uid-1")

	if !resp.Allowed || resp.Result != nil || resp.Patch != nil {
		t.Errorf("response %+v, want allowed without result or patch", resp)
	}
	if diff := cmp.Diff(sent, got); diff != "" {
		t.Errorf("handler got another request than sent (-sent +got):\n%s", diff)
	}
}

func TestServeDenied(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "denied.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Denied(http.StatusForbidden, "DaemonSets in %s are managed elsewhere", "kube-system")
		}))

	resp := readResponse(t, post(testContext(t), s.Handler(), "/denied.bosun.test", reviewBody(t, newRequest("uid-1", nil))), "uid-1")

	want := &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Message: "DaemonSets in kube-system are managed elsewhere",
	}
	if resp.Allowed {
		t.Error("response allows the request")
	}
	if diff := cmp.Diff(want, resp.Result); diff != "" {
		t.Errorf("unexpected result (-want +got):\n%s", diff)
	}
}

func TestServeInvalid(t *testing.T) {
	gk := schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	errs := field.ErrorList{
		field.Invalid(field.NewPath("spec", "updateStrategy", "rollingUpdate", "maxUnavailable"), "0", "must not be 0 when maxSurge is 0"),
		field.Required(field.NewPath("spec", "selector"), ""),
	}
	s := newTestServer(t, ServerOptions{}, "invalid.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Invalid(gk, "agent", errs)
		}))

	resp := readResponse(t, post(testContext(t), s.Handler(), "/invalid.bosun.test", reviewBody(t, newRequest("uid-1", nil))), "uid-1")

	if resp.Allowed {
		t.Error("response allows the request")
	}
	want := apierrors.NewInvalid(gk, "agent", errs).ErrStatus
	if diff := cmp.Diff(&want, resp.Result); diff != "" {
		t.Errorf("result is not the API server's Invalid status (-want +got):\n%s", diff)
	}
	if resp.Result.Code != http.StatusUnprocessableEntity || len(resp.Result.Details.Causes) != 2 {
		t.Errorf("result %+v, want code 422 and two causes", resp.Result)
	}
}

func TestServePatchRoundTrip(t *testing.T) {
	original := []byte(`{"apiVersion":"apps/v1","kind":"DaemonSet",` +
		`"metadata":{"name":"agent","namespace":"kube-system","labels":{"app":"agent"},"annotations":{"example.com/old":"x"}},` +
		`"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},` +
		`"spec":{"containers":[{"name":"agent","image":"agent:1"}]}}}}`)
	s := newTestServer(t, ServerOptions{}, "mutate.bosun.test", HandlerFunc(
		func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var ds appsv1.DaemonSet
			if err := json.Unmarshal(req.Object.Raw, &ds); err != nil {
				return Errored(http.StatusBadRequest, err)
			}
			delete(ds.Annotations, "example.com/old")
			ds.Spec.Template.Spec.Containers[0].Image = "agent:2"
			resp, err := AdditionsResponse([]Addition{
				{Path: "/metadata/labels/app.kubernetes.io~1managed-by", Value: "bosun"},
				{Path: "/metadata/annotations", Value: ds.Annotations},
				{Path: "/spec/template/spec/containers", Value: ds.Spec.Template.Spec.Containers},
			})
			if err != nil {
				return Errored(http.StatusInternalServerError, err)
			}
			return resp
		}))

	resp := readResponse(t, post(testContext(t), s.Handler(), "/mutate.bosun.test", reviewBody(t, newRequest("uid-1", original))), "uid-1")

	if !resp.Allowed {
		t.Fatalf("response denies the request: %+v", resp.Result)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
	}
	patched, err := applyJSONPatch(original, resp.Patch)
	if err != nil {
		t.Fatalf("applying the patch %s: %v", resp.Patch, err)
	}
	// The containers, set whole from the typed object, carry the empty resources it encodes;
	// nothing else of the original is rewritten.
	wantJSON := []byte(`{"apiVersion":"apps/v1","kind":"DaemonSet",` +
		`"metadata":{"name":"agent","namespace":"kube-system","labels":{"app":"agent","app.kubernetes.io/managed-by":"bosun"},"annotations":{}},` +
		`"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},` +
		`"spec":{"containers":[{"name":"agent","image":"agent:2","resources":{}}]}}}}`)
	if diff := cmp.Diff(canonicalJSON(t, wantJSON), canonicalJSON(t, patched)); diff != "" {
		t.Errorf("patched object differs from the mutated one (-want +got):\n%s\npatch: %s", diff, resp.Patch)
	}
}

// badReview is a review with a valid request, for editing into a bad one.
const badReviewRequest = `"request":{"uid":"uid-1","kind":{"group":"apps","version":"v1","kind":"DaemonSet"},` +
	`"resource":{"group":"apps","version":"v1","resource":"daemonsets"},"operation":"CREATE","userInfo":{}}`

func TestServeRefusesBadReviews(t *testing.T) {
	const v1 = `"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"`
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "empty", body: "", want: "bad AdmissionReview: empty body"},
		{name: "only white space", body: " \n", want: "bad AdmissionReview: empty body"},
		{name: "truncated", body: `{` + v1 + `,"request":{"uid":`,
			want: "bad AdmissionReview: malformed JSON at byte 78: unexpected end of JSON input"},
		{name: "syntax error", body: `{` + v1 + `,}`,
			want: "bad AdmissionReview: malformed JSON at byte 62: invalid character '}' looking for beginning of object key string"},
		{name: "trailing document", body: `{` + v1 + `,` + badReviewRequest + `}{}`,
			want: "bad AdmissionReview: malformed JSON at byte 248: invalid character '{' after top-level value"},
		{name: "trailing garbage", body: `{` + v1 + `,` + badReviewRequest + `} x`,
			want: "bad AdmissionReview: malformed JSON at byte 249: invalid character 'x' after top-level value"},
		{name: "too deep", body: strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
			want: "bad AdmissionReview: malformed JSON at byte 10001: invalid character '[' exceeded max depth"},
		{name: "duplicate top-level field", body: `{` + v1 + `,"kind":"AdmissionReview",` + badReviewRequest + `}`,
			want: `bad AdmissionReview: duplicate field "kind"`},
		{name: "duplicate request field",
			body: `{` + v1 + `,` + strings.Replace(badReviewRequest, `"uid":"uid-1",`, `"uid":"uid-1","uid":"uid-2",`, 1) + `}`,
			want: `bad AdmissionReview: duplicate field "request.uid"`},
		{name: "duplicate field spelled with an escape",
			body: `{` + v1 + `,` + strings.Replace(badReviewRequest, `"uid":"uid-1",`, `"uid":"uid-1","u\u0069d":"uid-2",`, 1) + `}`,
			want: `bad AdmissionReview: duplicate field "request.uid"`},
		{name: "duplicate field in an array element",
			body: `{` + v1 + `,` + strings.Replace(badReviewRequest, `"userInfo":{}`,
				`"object":{"spec":{"containers":[{"name":"a"},{"name":"b","name":"c"}]}},"userInfo":{}`, 1) + `}`,
			want: `bad AdmissionReview: duplicate field "request.object.spec.containers[1].name"`},
		{name: "v1beta1", body: `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",` + badReviewRequest + `}`,
			want: `bad AdmissionReview: apiVersion "admission.k8s.io/v1beta1" is not admission.k8s.io/v1`},
		{name: "no apiVersion", body: `{"kind":"AdmissionReview",` + badReviewRequest + `}`,
			want: `bad AdmissionReview: apiVersion "" is not admission.k8s.io/v1`},
		{name: "wrong kind", body: `{"apiVersion":"admission.k8s.io/v1","kind":"Pod",` + badReviewRequest + `}`,
			want: `bad AdmissionReview: kind "Pod" is not AdmissionReview`},
		{name: "no request", body: `{` + v1 + `}`, want: "bad AdmissionReview: no request"},
		{name: "null request", body: `{` + v1 + `,"request":null}`, want: "bad AdmissionReview: no request"},
		{name: "request in the wrong case", body: `{` + v1 + `,` + strings.Replace(badReviewRequest, `"request"`, `"Request"`, 1) + `}`,
			want: "bad AdmissionReview: no request"},
		{name: "empty uid", body: `{` + v1 + `,` + strings.Replace(badReviewRequest, `"uid-1"`, `""`, 1) + `}`,
			want: "bad AdmissionReview: request.uid is empty"},
		{name: "request of the wrong type", body: `{` + v1 + `,"request":"CREATE"}`,
			want: "bad AdmissionReview: json: cannot unmarshal string into Go struct field AdmissionReview.request of type v1.AdmissionRequest"},
		{name: "not an object", body: `[]`,
			want: "bad AdmissionReview: json: cannot unmarshal array into Go value of type v1.AdmissionReview"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, ServerOptions{}, "strict.bosun.test", HandlerFunc(
				func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
					t.Error("handler called for a bad review")
					return Allowed()
				}))

			w := post(testContext(t), s.Handler(), "/strict.bosun.test", []byte(tt.body))

			if w.Code != http.StatusBadRequest {
				t.Errorf("HTTP status %d, want 400", w.Code)
			}
			if got := w.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/plain") {
				t.Errorf("Content-Type %q, want text/plain", got)
			}
			if got := strings.TrimSuffix(w.Body.String(), "\n"); got != tt.want {
				t.Errorf("message\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestServeToleratesUnknownFields(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "tolerant.bosun.test", HandlerFunc(
		func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			if req.Operation != admissionv1.Create {
				return Denied(http.StatusBadRequest, "operation %q", req.Operation)
			}
			return Allowed()
		}))
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","fromTheFuture":{"a":1},` +
		strings.Replace(badReviewRequest, `"userInfo":{}`, `"userInfo":{"newField":true},"newRequestField":[1,2]`, 1) + `}`

	resp := readResponse(t, post(testContext(t), s.Handler(), "/tolerant.bosun.test", []byte(body)), "uid-1")

	if !resp.Allowed {
		t.Errorf("response denies the request: %+v", resp.Result)
	}
}

func TestServeRefusesWhatTheAPIServerDoesNotSend(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "http.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Allowed()
		}))
	valid := reviewBody(t, newRequest("uid-1", nil))
	tests := []struct {
		name        string
		method      string
		contentType string
		body        []byte
		// unknownLength sends the body without a Content-Length.
		unknownLength bool
		wantStatus    int
		wantMessage   string
	}{
		{name: "GET", method: http.MethodGet, contentType: "application/json", body: valid,
			wantStatus: http.StatusMethodNotAllowed, wantMessage: "method GET is not allowed: admission reviews are POSTed"},
		{name: "PUT", method: http.MethodPut, contentType: "application/json", body: valid,
			wantStatus: http.StatusMethodNotAllowed, wantMessage: "method PUT is not allowed: admission reviews are POSTed"},
		{name: "text", method: http.MethodPost, contentType: "text/plain", body: valid,
			wantStatus: http.StatusUnsupportedMediaType, wantMessage: `Content-Type "text/plain" is not application/json`},
		{name: "no content type", method: http.MethodPost, body: valid,
			wantStatus: http.StatusUnsupportedMediaType, wantMessage: `Content-Type "" is not application/json`},
		{name: "YAML", method: http.MethodPost, contentType: "application/yaml", body: valid,
			wantStatus: http.StatusUnsupportedMediaType, wantMessage: `Content-Type "application/yaml" is not application/json`},
		{name: "JSON with a charset", method: http.MethodPost, contentType: "application/json; charset=utf-8", body: valid,
			wantStatus: http.StatusOK},
		{name: "too large", method: http.MethodPost, contentType: "application/json", body: make([]byte, maxRequestBytes+1),
			wantStatus: http.StatusRequestEntityTooLarge, wantMessage: "request body larger than 7340032 bytes"},
		{name: "too large, without Content-Length", method: http.MethodPost, contentType: "application/json",
			body: make([]byte, maxRequestBytes+1), unknownLength: true,
			wantStatus: http.StatusRequestEntityTooLarge, wantMessage: "request body larger than 7340032 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequestWithContext(testContext(t), tt.method, "/http.bosun.test", bytes.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			if tt.unknownLength {
				r.ContentLength = -1
			}
			w := httptest.NewRecorder()

			s.Handler().ServeHTTP(w, r)

			if w.Code != tt.wantStatus {
				t.Fatalf("HTTP status %d, want %d; body: %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantStatus == http.StatusOK {
				readResponse(t, w, "uid-1")
				return
			}
			if got := strings.TrimSuffix(w.Body.String(), "\n"); got != tt.wantMessage {
				t.Errorf("message %q, want %q", got, tt.wantMessage)
			}
			if allow := w.Header().Get("Allow"); (tt.wantStatus == http.StatusMethodNotAllowed) != (allow == http.MethodPost) {
				t.Errorf("Allow header %q", allow)
			}
		})
	}
}

// TestServeAcceptsLargestObjects sends the review of an update whose object and old object
// are both as large as the API server stores.
func TestServeAcceptsLargestObjects(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "large.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Allowed()
		}))
	object := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"blob":"` +
		strings.Repeat("a", 3<<20) + `"}}`)
	req := newRequest("uid-1", object)
	req.Operation = admissionv1.Update
	req.OldObject.Raw = object

	readResponse(t, post(testContext(t), s.Handler(), "/large.bosun.test", reviewBody(t, req)), "uid-1")
}

func TestServeUnknownPath(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "known.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Allowed()
		}))

	for _, path := range []string{"/", "/unknown", "/known.bosun.test/", "/known.bosun.test/x"} {
		if w := post(testContext(t), s.Handler(), path, reviewBody(t, newRequest("uid-1", nil))); w.Code != http.StatusNotFound {
			t.Errorf("%s: HTTP status %d, want 404", path, w.Code)
		}
	}
}

func TestServeRecoversFromPanics(t *testing.T) {
	var calls int
	s := newTestServer(t, ServerOptions{}, "panic.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			calls++
			if calls == 1 {
				panic("the secret is 42")
			}
			return Allowed()
		}))

	w := post(testContext(t), s.Handler(), "/panic.bosun.test", reviewBody(t, newRequest("uid-1", nil)))
	if strings.Contains(w.Body.String(), "secret") {
		t.Errorf("the panic value reached the caller: %s", w.Body)
	}
	resp := readResponse(t, w, "uid-1")
	want := &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonInternalError,
		Message: "internal error in webhook panic.bosun.test",
	}
	if resp.Allowed {
		t.Error("response allows the request")
	}
	if diff := cmp.Diff(want, resp.Result); diff != "" {
		t.Errorf("unexpected result (-want +got):\n%s", diff)
	}

	// The server goes on serving.
	resp = readResponse(t, post(testContext(t), s.Handler(), "/panic.bosun.test", reviewBody(t, newRequest("uid-2", nil))), "uid-2")
	if !resp.Allowed {
		t.Errorf("second request denied: %+v", resp.Result)
	}
}

func TestServeNoResponse(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "nil.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return nil
		}))

	resp := readResponse(t, post(testContext(t), s.Handler(), "/nil.bosun.test", reviewBody(t, newRequest("uid-1", nil))), "uid-1")

	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusInternalServerError ||
		resp.Result.Message != "internal error in webhook nil.bosun.test" {
		t.Errorf("response %+v, want an internal error", resp)
	}
}

func TestServeTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	release := make(chan struct{})
	handlerDone := make(chan struct{})
	var remaining time.Duration
	var hasDeadline bool
	s := newTestServer(t, ServerOptions{RequestTimeout: timeout}, "slow.bosun.test", HandlerFunc(
		func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			defer close(handlerDone)
			var deadline time.Time
			deadline, hasDeadline = ctx.Deadline()
			remaining = time.Until(deadline)
			<-release
			// What a late handler may do must not disturb the answer already given.
			req.UID = "changed"
			return Allowed()
		}))

	start := time.Now()
	w := post(testContext(t), s.Handler(), "/slow.bosun.test", reviewBody(t, newRequest("uid-1", nil)))
	elapsed := time.Since(start)
	close(release)
	<-handlerDone

	resp := readResponse(t, w, "uid-1")
	want := &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusGatewayTimeout,
		Reason:  metav1.StatusReasonTimeout,
		Message: "webhook slow.bosun.test timed out after 100ms",
	}
	if diff := cmp.Diff(want, resp.Result); diff != "" {
		t.Errorf("unexpected result (-want +got):\n%s", diff)
	}
	if elapsed < timeout || elapsed > 10*timeout {
		t.Errorf("answered after %v, want about %v", elapsed, timeout)
	}
	if !hasDeadline || remaining <= 0 || remaining > timeout {
		t.Errorf("handler context deadline in %v (set: %v), want at most %v", remaining, hasDeadline, timeout)
	}
}

func TestServeHandlerDeadlineIsTheRequestsWhenEarlier(t *testing.T) {
	s := newTestServer(t, ServerOptions{RequestTimeout: time.Hour}, "deadline.bosun.test", HandlerFunc(
		func(ctx context.Context, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			deadline, ok := ctx.Deadline()
			if !ok || time.Until(deadline) > time.Minute {
				return Denied(http.StatusInternalServerError, "deadline %v (set: %v)", deadline, ok)
			}
			return Allowed()
		}))
	ctx, cancel := context.WithTimeout(testContext(t), time.Minute)
	defer cancel()

	resp := readResponse(t, post(ctx, s.Handler(), "/deadline.bosun.test", reviewBody(t, newRequest("uid-1", nil))), "uid-1")

	if !resp.Allowed {
		t.Errorf("handler saw the wrong deadline: %s", resp.Result.Message)
	}
}

func TestServeContextLogger(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(t.Context(), logger)
	s := newTestServer(t, ServerOptions{}, "logging.bosun.test", HandlerFunc(
		func(ctx context.Context, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			klog.FromContext(ctx).Info("Looking at the object")
			return Allowed()
		}))

	readResponse(t, post(ctx, s.Handler(), "/logging.bosun.test", reviewBody(t, newRequest("uid-1", nil))), "uid-1")

	var values []string
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if entry.Message == "Looking at the object" {
			for _, v := range entry.WithKVList {
				values = append(values, fmt.Sprint(v))
			}
		}
	}
	want := []string{"webhook", "logging.bosun.test", "uid", "uid-1", "kind", "DaemonSet",
		"namespace", "kube-system", "name", "agent", "operation", "CREATE"}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("handler's logger values (-want +got):\n%s", diff)
	}
}

// TestServeSharedResponse runs requests concurrently against a handler that returns one
// response for all: the server must not write into it (the race detector watches).
func TestServeSharedResponse(t *testing.T) {
	shared := Allowed()
	s := newTestServer(t, ServerOptions{}, "shared.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return shared
		}))

	var wg sync.WaitGroup
	for i := range 8 {
		uid := fmt.Sprintf("uid-%d", i)
		wg.Go(func() {
			readResponse(t, post(testContext(t), s.Handler(), "/shared.bosun.test", reviewBody(t, newRequest(uid, nil))), uid)
		})
	}
	wg.Wait()
	if shared.UID != "" {
		t.Errorf("the server wrote UID %q into the handler's response", shared.UID)
	}
}

func TestServeMetrics(t *testing.T) {
	const name = "metrics.bosun.test"
	s := newTestServer(t, ServerOptions{}, name, HandlerFunc(
		func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			switch req.Operation {
			case admissionv1.Create:
				return Allowed()
			case admissionv1.Update:
				return Denied(http.StatusForbidden, "no updates")
			}
			return &admissionv1.AdmissionResponse{Allowed: false}
		}))
	before := readWebhookMetrics(t, name)
	send := func(op admissionv1.Operation) {
		req := newRequest("uid-1", nil)
		req.Operation = op
		readResponse(t, post(testContext(t), s.Handler(), "/"+name, reviewBody(t, req)), "uid-1")
	}

	send(admissionv1.Create)
	send(admissionv1.Create)
	send(admissionv1.Update)
	send("TOUCH") // neither allowed nor denied with a code
	post(testContext(t), s.Handler(), "/"+name, []byte("{"))

	got := readWebhookMetrics(t, name).minus(before)
	want := webhookMetrics{
		requests: map[string]map[string]float64{
			"CREATE":  {"true": 2},
			"UPDATE":  {"false": 1},
			"unknown": {"false": 1, "error": 1},
		},
		// A denial without a code is a 400 to the API server.
		rejections: map[string]float64{"403": 1, "400": 1},
		durations:  5,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(webhookMetrics{})); diff != "" {
		t.Errorf("metrics of the webhook (-want +got):\n%s", diff)
	}
}

// webhookMetrics are the values of one webhook's metrics.
type webhookMetrics struct {
	// requests is bosun_webhook_requests_total by operation and allowed.
	requests map[string]map[string]float64
	// rejections is bosun_webhook_rejections_total by code.
	rejections map[string]float64
	// durations is the number of bosun_webhook_request_duration_seconds samples.
	durations uint64
}

func readWebhookMetrics(t *testing.T, webhook string) webhookMetrics {
	t.Helper()
	m := webhookMetrics{requests: map[string]map[string]float64{}}
	for _, op := range []string{"CREATE", "UPDATE", "DELETE", "CONNECT", "unknown"} {
		values, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "bosun_webhook_requests_total",
			map[string]string{"webhook": webhook, "operation": op}, "allowed")
		if err != nil {
			t.Fatal(err)
		}
		m.requests[op] = values
	}
	var err error
	m.rejections, err = testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "bosun_webhook_rejections_total",
		map[string]string{"webhook": webhook}, "code")
	if err != nil {
		t.Fatal(err)
	}
	durations, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "bosun_webhook_request_duration_seconds",
		map[string]string{"webhook": webhook})
	if err != nil {
		t.Fatal(err)
	}
	m.durations = durations.GetAggregatedSampleCount()
	return m
}

// minus is what m counts beyond before, without the values that did not change.
func (m webhookMetrics) minus(before webhookMetrics) webhookMetrics {
	subtract := func(now, then map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range now {
			if d := v - then[k]; d != 0 {
				out[k] = d
			}
		}
		return out
	}
	out := webhookMetrics{requests: map[string]map[string]float64{}, durations: m.durations - before.durations}
	for op, values := range m.requests {
		if d := subtract(values, before.requests[op]); len(d) > 0 {
			out.requests[op] = d
		}
	}
	out.rejections = subtract(m.rejections, before.rejections)
	return out
}

// BenchmarkServe measures a request for a typical object, from body to answer.
func BenchmarkServe(b *testing.B) {
	s := newTestServer(b, ServerOptions{}, "bench.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Allowed()
		}))
	ds := appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", Labels: map[string]string{"app": "agent"}},
	}
	ds.Spec.Template.Spec.Containers = make([]corev1.Container, 20)
	for i := range ds.Spec.Template.Spec.Containers {
		ds.Spec.Template.Spec.Containers[i].Name = fmt.Sprintf("container-%d", i)
		ds.Spec.Template.Spec.Containers[i].Image = "registry.example.com/agent:1"
		ds.Spec.Template.Spec.Containers[i].Args = []string{"--verbose", "--port=8080", "--config=/etc/agent.yaml"}
	}
	object, err := json.Marshal(&ds)
	if err != nil {
		b.Fatal(err)
	}
	body := reviewBody(b, newRequest("uid-1", object))
	b.SetBytes(int64(len(body)))

	for b.Loop() {
		if w := post(b.Context(), s.Handler(), "/bench.bosun.test", body); w.Code != http.StatusOK {
			b.Fatalf("HTTP status %d", w.Code)
		}
	}
}

// manyNames is the fields "k0":0 to "k<n-1>":0, comma-separated.
func manyNames(n int) string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	return strings.Join(fields, ",")
}

func TestFindDuplicateField(t *testing.T) {
	tests := []struct {
		doc  string
		want string
	}{
		{`{}`, ""},
		{`"a"`, ""},
		{`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, ""},
		{`{"a":"x","a":"y"}`, "a"},
		{`{"a":{"b":1,"c":{"d":[1,{"e":1,"e":2}]}}}`, "a.c.d[1].e"},
		{`[[{"a":1}],[{"b":1},{"c":1,"c":2}]]`, "[1][1].c"},
		// Strings holding what delimits fields elsewhere, and escaped quotes.
		{`{"a":"\",\"a\":{","b\"":"[,]","b\\":"}","a\"":1}`, ""},
		{`{"a\"":1,"a\u0022":2}`, `a"`},
		{`{"k":["\\",{"x":1}],"l":{"x":1,"y":"\\\""},"k":0}`, "k"},
		// The same name in sibling objects, and an object after a closed one.
		{`{"o":{"a":1},"p":{"a":1},"q":[{"a":1},{"a":1}],"o":1}`, "o"},
		// Invalid UTF-8 decodes to U+FFFD: these two names are one field.
		{"{\"a\":{\"\xff\":1,\"\xfe\":2}}", "a.\ufffd"},
		// Objects with more names than are compared one by one, and names after a large
		// object closed.
		{`{"l":{` + manyNames(40) + `,"k39":0}}`, "l.k39"},
		{`{"l":{` + manyNames(40) + `,"k":{"a":[{"x":1,"x":2}]}}}`, "l.k.a[0].x"},
		{`{"l":{` + manyNames(40) + `},"k0":1,"m":{` + manyNames(20) + `},"l":1}`, "l"},
	}
	// A duplicate whose path is empty, every name on it being "" (found by
	// FuzzFindDuplicateField: it passed for no duplicate).
	if path, found := findDuplicateField([]byte(`{"":{"":"","":{}}}`)); !found || path != "" {
		t.Errorf("findDuplicateField of a duplicate empty name = %q, %t; want \"\", true", path, found)
	}
	for _, tt := range tests {
		if !json.Valid([]byte(tt.doc)) {
			t.Fatalf("test document %s is not valid JSON", tt.doc)
		}
		if got, found := findDuplicateField([]byte(tt.doc)); got != tt.want || found != (tt.want != "") {
			t.Errorf("findDuplicateField(%s) = %q, %t; want %q", tt.doc, got, found, tt.want)
		}
	}
}
