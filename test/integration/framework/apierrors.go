package framework

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// StatusCode returns the HTTP status code of an API error, or 0 for any other error.
func StatusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// MustSucceed fails the test if err, the outcome of what, is not nil.
func MustSucceed(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v, want it allowed", what, err)
	}
}

// ExpectRefused marks the test failed unless err, the outcome of what, is an API error of
// HTTP code whose message contains every one of contains.
func ExpectRefused(t testing.TB, what string, err error, code int32, contains ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s was allowed, want HTTP %d", what, code)
		return
	}
	if got := StatusCode(err); got != code {
		t.Errorf("%s: HTTP %d (%v), want %d", what, got, err, code)
		return
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q does not contain %q", what, err.Error(), s)
		}
	}
}
