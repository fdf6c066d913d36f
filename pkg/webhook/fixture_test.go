package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
)

// testContext is a context whose logger writes to the test's log.
func testContext(t testing.TB) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

// newRegistration is a valid registration of handler at /<name>.
func newRegistration(name string, handler Handler) Registration {
	return Registration{
		Name: name,
		Path: "/" + name,
		Type: Validating,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{"apps"},
				APIVersions: []string{"v1"},
				Resources:   []string{"daemonsets"},
			},
		}},
		Handler: handler,
	}
}

// newTestServer is a server with handler registered as webhook name at /<name>.
func newTestServer(t testing.TB, opts ServerOptions, name string, handler Handler) *Server {
	t.Helper()
	s := NewServer(opts)
	if err := s.Register(newRegistration(name, handler)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return s
}

// newRequest is the request of a DaemonSet creation; object is its JSON, or a default one.
func newRequest(uid string, object []byte) *admissionv1.AdmissionRequest {
	if object == nil {
		object = []byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent","namespace":"kube-system"}}`)
	}
	return &admissionv1.AdmissionRequest{
		UID:       types.UID(uid),
		Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
		Namespace: "kube-system",
		Name:      "agent",
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: object},
	}
}

// reviewBody is the body of an AdmissionReview carrying req.
func reviewBody(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatalf("encoding the review: %v", err)
	}
	return body
}

// post sends body to path of handler as the API server would.
func post(ctx context.Context, handler http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	return w
}

// readResponse checks that w holds a well-formed review answering uid and returns its response.
func readResponse(t testing.TB, w *httptest.ResponseRecorder, uid string) *admissionv1.AdmissionResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP status %d, want 200; body: %s", w.Code, w.Body)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q, want application/json", got)
	}
	return parseResponse(t, w.Body.Bytes(), uid)
}

func parseResponse(t testing.TB, body []byte, uid string) *admissionv1.AdmissionResponse {
	t.Helper()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatalf("decoding the response review: %v; body: %s", err, body)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		t.Errorf("response review is %s %s, want admission.k8s.io/v1 AdmissionReview", review.APIVersion, review.Kind)
	}
	if review.Request != nil {
		t.Errorf("response review carries a request")
	}
	if review.Response == nil {
		t.Fatalf("response review has no response: %s", body)
	}
	if string(review.Response.UID) != uid {
		t.Errorf("response UID %q, want %q", review.Response.UID, uid)
	}
	return review.Response
}

// decodeJSONDocument decodes one JSON document into maps, slices and scalars, refusing
// anything after it. Numbers stay json.Number, so that they compare digit for digit.
func decodeJSONDocument(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the end of the JSON document at offset %d", end)
	}
	return doc, nil
}

func TestDecodeJSONDocument(t *testing.T) {
	for _, bad := range []string{``, `{`, `{"a":1}{}`, `{"a":1} x`, `nul`} {
		if _, err := decodeJSONDocument([]byte(bad)); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
	if _, err := decodeJSONDocument([]byte(" {\"a\":1}\n")); err != nil {
		t.Errorf("white space around a document: %v", err)
	}
}

// applyJSONPatch applies an RFC 6902 patch of add, remove and replace operations on object
// members to doc, following the RFC's rules for them: the parent must exist, remove and
// replace need the member, and a path "" replaces the document.
func applyJSONPatch(doc, patch []byte) ([]byte, error) {
	target, err := decodeJSONDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("decoding the document: %w", err)
	}
	// Members rather than a struct, to tell "value": null from no value.
	var members []map[string]json.RawMessage
	if err := json.Unmarshal(patch, &members); err != nil {
		return nil, fmt.Errorf("decoding the patch: %w", err)
	}
	for _, m := range members {
		var op struct{ Op, Path string }
		if err := json.Unmarshal(m["op"], &op.Op); err != nil {
			return nil, fmt.Errorf("decoding op: %w", err)
		}
		if err := json.Unmarshal(m["path"], &op.Path); err != nil {
			return nil, fmt.Errorf("decoding path: %w", err)
		}
		var value any
		if op.Op != "remove" {
			raw, ok := m["value"]
			if !ok {
				return nil, fmt.Errorf("%s %s without a value", op.Op, op.Path)
			}
			if value, err = decodeJSONDocument(raw); err != nil {
				return nil, err
			}
		}
		if op.Path == "" {
			if op.Op == "remove" {
				return nil, fmt.Errorf("cannot remove the whole document")
			}
			target = value
			continue
		}
		if !strings.HasPrefix(op.Path, "/") {
			return nil, fmt.Errorf("path %q does not start with /", op.Path)
		}
		tokens := strings.Split(op.Path[1:], "/")
		for i, token := range tokens {
			tokens[i] = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		}
		parent := target
		for _, token := range tokens[:len(tokens)-1] {
			switch p := parent.(type) {
			case map[string]any:
				parent = p[token]
			case []any:
				i, err := strconv.Atoi(token)
				if err != nil || i < 0 || i >= len(p) {
					return nil, fmt.Errorf("%s: no element %q", op.Path, token)
				}
				parent = p[i]
			default:
				return nil, fmt.Errorf("%s: %q has no members", op.Path, token)
			}
		}
		object, ok := parent.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: the parent is not an object", op.Path)
		}
		key := tokens[len(tokens)-1]
		_, exists := object[key]
		switch op.Op {
		case "add":
			object[key] = value
		case "replace":
			if !exists {
				return nil, fmt.Errorf("replace %s: no such member", op.Path)
			}
			object[key] = value
		case "remove":
			if !exists {
				return nil, fmt.Errorf("remove %s: no such member", op.Path)
			}
			delete(object, key)
		default:
			return nil, fmt.Errorf("unexpected operation %q", op.Op)
		}
	}
	return json.Marshal(target)
}

// canonicalJSON re-encodes a JSON document with sorted keys and no spaces, for comparisons.
func canonicalJSON(t testing.TB, doc []byte) string {
	t.Helper()
	value, err := decodeJSONDocument(doc)
	if err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	out, err := json.Marshal(value)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	return string(out)
}
