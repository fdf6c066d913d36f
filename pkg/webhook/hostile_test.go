package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// Bodies no API server sends, built to cost the server as much as possible: the server
// must refuse each with a 4xx saying why, before a webhook sees it, at a memory cost
// bounded by the request size limit rather than by what the sender chose.

// hostileReviewHead starts an AdmissionReview whose request.object follows.
const hostileReviewHead = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-1",` +
	`"kind":{"group":"apps","version":"v1","kind":"DaemonSet"},"resource":{"group":"apps","version":"v1","resource":"daemonsets"},` +
	`"operation":"CREATE","userInfo":{},"object":`

// hostileReview is the AdmissionReview of object.
func hostileReview(object string) []byte {
	return []byte(hostileReviewHead + object + `}}`)
}

// oversizedReview is a well-formed review of size bytes, an object of one large string.
func oversizedReview(size int) []byte {
	empty := len(hostileReview(`{"data":""}`))
	return hostileReview(`{"data":"` + strings.Repeat("a", size-empty) + `"}`)
}

// nestedReview is a review whose object nests objects levels deep.
func nestedReview(levels int) []byte {
	return hostileReview(strings.Repeat(`{"a":`, levels) + `1` + strings.Repeat(`}`, levels))
}

// duplicateKeyReview is a review whose object's labels are keys distinct labels followed
// by the first one again: the duplicate is found only after every other key is read.
func duplicateKeyReview(keys int) []byte {
	var b strings.Builder
	b.WriteString(`{"metadata":{"labels":{`)
	for i := range keys {
		fmt.Fprintf(&b, `"k%d":"",`, i)
	}
	b.WriteString(`"k0":"again"}}}`)
	return hostileReview(b.String())
}

// hostileBodies are the bodies of TestServeRefusesHostileBodies and BenchmarkRefusal.
func hostileBodies() []struct {
	name string
	body []byte
	// unknownLength sends the body without a Content-Length.
	unknownLength bool
	wantStatus    int
	wantMessage   string
} {
	oversized := oversizedReview(64 << 20)
	return []struct {
		name          string
		body          []byte
		unknownLength bool
		wantStatus    int
		wantMessage   string
	}{
		{name: "oversized 64 MiB", body: oversized,
			wantStatus: http.StatusRequestEntityTooLarge, wantMessage: "request body larger than 7340032 bytes"},
		{name: "oversized 64 MiB without Content-Length", body: oversized, unknownLength: true,
			wantStatus: http.StatusRequestEntityTooLarge, wantMessage: "request body larger than 7340032 bytes"},
		{name: "nested 100000 levels", body: nestedReview(100_000), wantStatus: http.StatusBadRequest,
			wantMessage: "bad AdmissionReview: malformed JSON at byte 50246: invalid character '{' exceeded max depth"},
		{name: "duplicate key after 3 others", body: duplicateKeyReview(4), wantStatus: http.StatusBadRequest,
			wantMessage: `bad AdmissionReview: duplicate field "request.object.metadata.labels.k0"`},
		{name: "duplicate key after 500000 others", body: duplicateKeyReview(500_000), wantStatus: http.StatusBadRequest,
			wantMessage: `bad AdmissionReview: duplicate field "request.object.metadata.labels.k0"`},
	}
}

// postHostile sends body to the webhook at path of handler, without a Content-Length when
// unknownLength.
func postHostile(ctx context.Context, handler http.Handler, path string, body []byte, unknownLength bool) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if unknownLength {
		r.ContentLength = -1
	}
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	return w
}

func TestServeRefusesHostileBodies(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "hostile.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			t.Error("handler called for a hostile body")
			return Allowed()
		}))
	for _, tt := range hostileBodies() {
		t.Run(tt.name, func(t *testing.T) {
			w := postHostile(testContext(t), s.Handler(), "/hostile.bosun.test", tt.body, tt.unknownLength)
			if w.Code != tt.wantStatus {
				t.Errorf("HTTP status %d, want %d", w.Code, tt.wantStatus)
			}
			if got := strings.TrimSuffix(w.Body.String(), "\n"); got != tt.wantMessage {
				t.Errorf("message\n%s\nwant\n%s", got, tt.wantMessage)
			}
		})
	}
}

// The deepest nesting encoding/json reads, 10,000 levels counting the review's own two,
// reaches the webhook.
func TestServeAcceptsNestingUpToTheDecodersLimit(t *testing.T) {
	s := newTestServer(t, ServerOptions{}, "nested.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Allowed()
		}))
	readResponse(t, post(testContext(t), s.Handler(), "/nested.bosun.test", nestedReview(10_000-2)), "uid-1")
	if w := post(testContext(t), s.Handler(), "/nested.bosun.test", nestedReview(10_000-1)); w.Code != http.StatusBadRequest {
		t.Errorf("one level deeper: HTTP status %d, want 400", w.Code)
	}
}

// BenchmarkRefusal measures what refusing each hostile body costs: B/req is the memory
// allocated per request, B/body that divided by the body's size. The webhook allows
// everything: a hostile body that reached it would be answered 200, not refused.
func BenchmarkRefusal(b *testing.B) {
	s := newTestServer(b, ServerOptions{}, "hostile.bosun.test", HandlerFunc(
		func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return Allowed()
		}))
	bodies := hostileBodies()
	// Bodies that are read, for comparison: the deepest, and one of many small objects,
	// which the duplicate-field scan once paid for with a map each.
	bodies = append(bodies, bodies[2], bodies[2])
	bodies[len(bodies)-2].name, bodies[len(bodies)-2].body = "nested 9998 levels (accepted)", nestedReview(10_000-2)
	bodies[len(bodies)-1].name = "450000 small objects (accepted)"
	bodies[len(bodies)-1].body = hostileReview(`{"items":[` + strings.Repeat(`{"a":1,"b":2},`, 450_000) + `{}]}`)
	bodies[len(bodies)-2].wantStatus, bodies[len(bodies)-1].wantStatus = http.StatusOK, http.StatusOK
	for _, tt := range bodies {
		b.Run(strings.ReplaceAll(tt.name, " ", "-"), func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if w := postHostile(b.Context(), s.Handler(), "/hostile.bosun.test", tt.body, tt.unknownLength); w.Code != tt.wantStatus {
					b.Fatalf("HTTP status %d, want %d", w.Code, tt.wantStatus)
				}
			}
			runtime.ReadMemStats(&after)
			perRequest := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
			b.ReportMetric(perRequest, "B/req")
			b.ReportMetric(perRequest/float64(len(tt.body)), "B/body")
		})
	}
}

// FuzzFindDuplicateField holds findDuplicateField to encoding/json's reading of field
// names on any valid JSON: it finds the first field an object names twice, as a reading of
// the tokens in order finds it, and only that.
func FuzzFindDuplicateField(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `"a"`, `{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, `{"a":"x","a":"y"}`,
		`{"a":{"b":1,"c":{"d":[1,{"e":1,"e":2}]}}}`, `[[{"a":1}],[{"b":1},{"c":1,"c":2}]]`,
		`{"a":"\",\"a\":{","b\"":"[,]","b\\":"}","a\"":1}`, `{"a\"":1,"a\u0022":2}`,
		"{\"\xff\":1,\"\xfe\":2}", `{"\u00e9":1,"é":2}`,
		string(duplicateKeyReview(40)), string(nestedReview(20)),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		want, wantFound, err := firstDuplicateField(dec, "")
		if err != nil {
			t.Fatalf("reading %q: %v", data, err)
		}
		if got, found := findDuplicateField(data); got != want || found != wantFound {
			t.Fatalf("findDuplicateField(%q) = %q, %t; want %q, %t", data, got, found, want, wantFound)
		}
	})
}

// firstDuplicateField reads the JSON value dec is at, at path, and returns the path of the
// first field an object of it names twice, and whether there is one.
func firstDuplicateField(dec *json.Decoder, path string) (string, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			name := tok.(string)
			field := name
			if path != "" {
				field = path + "." + name
			}
			if seen[name] {
				return field, true, nil
			}
			seen[name] = true
			if dup, found, err := firstDuplicateField(dec, field); found || err != nil {
				return dup, found, err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if dup, found, err := firstDuplicateField(dec, fmt.Sprintf("%s[%d]", path, i)); found || err != nil {
				return dup, found, err
			}
		}
	default:
		return "", false, nil
	}
	_, err = dec.Token() // the closing delimiter
	return "", false, err
}
