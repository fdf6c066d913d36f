// Package webhooktest helps the admission webhooks' unit tests read the answers they get,
// and the fuzz targets find their seeds.
package webhooktest

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"
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

// sampleFiles are the repository's files of sample objects, as users write them, relative
// to the module's root: the seeds of the fuzz targets.
var sampleFiles = []string{
	"test/integration/api/testdata/openkruise-objects.yaml",
	"docs/examples/*.yaml",
	"pkg/webhook/cloneset/testdata/cloneset-v1*.json",
}

// SampleObjects returns the JSON of every object of the repository's sample files, in the
// versions they are written in. The test's working directory must be in the module.
func SampleObjects(t testing.TB) [][]byte {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above the working directory")
		}
		root = parent
	}
	var objects [][]byte
	for _, pattern := range sampleFiles {
		paths, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no sample file %s: %v", pattern, err)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range strings.Split(string(data), "\n---\n") {
				object, err := yaml.YAMLToJSON([]byte(doc))
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if !bytes.Equal(object, []byte("null")) {
					objects = append(objects, object)
				}
			}
		}
	}
	return objects
}
