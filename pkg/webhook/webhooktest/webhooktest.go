// Package webhooktest helps the admission webhooks' unit tests read the answers they get.
package webhooktest

import (
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// Verdict is what matters of an answer when two are compared, such as the answers to one
// object written in two versions: "allowed", or the status text of the code and the fields
// the denial names, comma-separated.
func Verdict(resp *admissionv1.AdmissionResponse) string {
	if resp.Allowed {
		return "allowed"
	}
	var fields []string
	if resp.Result.Details != nil {
		for _, c := range resp.Result.Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	return http.StatusText(int(resp.Result.Code)) + " " + strings.Join(fields, ",")
}

// ExpectRefusedFields checks resp, the answer to what: with no fields it must allow the
// object, otherwise refuse it with a 400 whose message names every one of fields.
func ExpectRefusedFields(t testing.TB, what string, resp *admissionv1.AdmissionResponse, fields []string) {
	t.Helper()
	if len(fields) == 0 {
		if !resp.Allowed {
			t.Fatalf("%s denied: %v", what, resp.Result)
		}
		return
	}
	if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Fatalf("%s answer %v, want a 400", what, resp.Result)
	}
	for _, f := range fields {
		if !strings.Contains(resp.Result.Message, f) {
			t.Errorf("%s message %q does not name %s", what, resp.Result.Message, f)
		}
	}
}
