package webhook

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
)

// CheckKind refuses a request about anything but want. A webhook's rules ask for one kind,
// and the API server converts requests made through other versions, so anything else is a
// misconfigured webhook: decoding it as want would judge the wrong object.
func CheckKind(req *admissionv1.AdmissionRequest, want schema.GroupVersionKind) error {
	got := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	if got != want {
		return fmt.Errorf("this webhook admits %s only, not %s", want, got)
	}
	return nil
}

// DecodeStrict decodes what a request holds under name ("object" or "oldObject") into into,
// an object of kind want, strictly: field names match case-sensitively, and duplicate or
// unknown fields are refused. A field the webhook's types do not know is a field it did not
// judge, and one a patch computed from the typed object would silently drop.
func DecodeStrict(raw []byte, name string, want schema.GroupVersionKind, into runtime.Object) error {
	// The review's decoding leaves a null object empty.
	if len(raw) == 0 {
		return fmt.Errorf("request.%s is empty", name)
	}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, into)
	if err != nil {
		return fmt.Errorf("decoding request.%s as a %s: %w", name, want.Kind, err)
	}
	if len(strictErrs) > 0 {
		problems := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			problems[i] = e.Error()
		}
		return fmt.Errorf("decoding request.%s as a %s: %s", name, want.Kind, strings.Join(problems, "; "))
	}
	if got := into.GetObjectKind().GroupVersionKind(); !got.Empty() && got != want {
		return fmt.Errorf("request.%s is %s %s, not a %s", name, got.GroupVersion(), got.Kind, want)
	}
	return nil
}
