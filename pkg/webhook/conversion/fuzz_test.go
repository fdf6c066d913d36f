package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/webhook/webhooktest"
)

// FuzzConversionRoundTrip sends an object, as the API server would, through the CRD
// conversion webhook to the other version of its group and back. Whatever the object, the
// webhook must answer a well-formed ConversionReview for its UID and never fail on its own
// account (500, which a panic in a conversion function becomes). When the object is of a
// convertible kind and decodes into its Go type, both conversions must succeed, the first
// must be the api module's conversion of the typed object, and the round trip must give back
// the object sent: the same Go object, and the schemaless pod and claim templates as sent.
//
// The reserved annotations of conversion are left out of objects: only conversion writes
// them, and admission refuses them from clients.
func FuzzConversionRoundTrip(f *testing.F) {
	for _, k := range kindFixtures() {
		f.Add([]byte(k.alpha))
		f.Add([]byte(k.beta))
	}
	for _, object := range webhooktest.SampleObjects(f) {
		f.Add(object)
	}
	for _, object := range []string{
		``, `null`, `[]`, `{}`, `"x"`, `{"apiVersion":"apps.kruise.io/v1alpha1"}`,
		`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet"}`,
		`{"apiVersion":"apps.kruise.io/v1beta1","kind":"CloneSet","spec":null}`,
		`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet","spec":{"template":5,"minReadySeconds":"x"}}`,
		`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","spec":{"template":{"a":1}},"spec":{"volumeClaimTemplates":[{}]}}`,
		`{"apiVersion":"apps.kruise.io/v1beta1","kind":"CloneSet","spec":{"volumeClaimTemplates":null,"template":{}}}`,
		`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet","metadata":{"annotations":{"conversion.bosun.dev/v1alpha1":"{}"}}}`,
		`{"apiVersion":"policy.kruise.io/v1beta1","kind":"PodUnavailableBudget","spec":{"protectOperations":["DELETE,EVICT"]}}`,
		` { "apiVersion" : "apps.kruise.io/v1beta1" , "kind" : "DaemonSet" , "spec" : { "template" : { } } } `,
		`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage","metadata":{"name":"\u00e9\ud800"}}`,
	} {
		f.Add([]byte(object))
	}

	h := newTestHandler(f)
	scheme, err := newScheme()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, object []byte) {
		c := roundTrip{t: t, h: h, scheme: scheme}
		head, members, err := readHead(object)
		from, gvErr := schema.ParseGroupVersion(head.APIVersion)
		if !json.Valid(object) || err != nil || gvErr != nil || !convertible(from.WithKind(head.Kind)) {
			// Not one object for this webhook (the bytes may even be several, or end the
			// review early): it must still answer, and only ever for the objects sent.
			c.convert(object, appsBeta)
			return
		}
		other := map[string]string{"v1alpha1": "v1beta1", "v1beta1": "v1alpha1"}[from.Version]
		to := schema.GroupVersion{Group: from.Group, Version: other}

		if stripped, ok := withoutReservedAnnotations(object); ok {
			object = stripped
			if head, members, err = readHead(object); err != nil {
				t.Fatalf("re-reading the object without its reserved annotations: %v", err)
			}
		}
		sent, templates, err := cutSpecFields(object, members, schemalessFields[head.Kind])
		if err != nil {
			// The webhook cannot take the templates out: it refuses the object.
			c.convertFails(object, to.String())
			return
		}
		orig, err := c.scheme.New(from.WithKind(head.Kind))
		if err != nil {
			t.Fatal(err)
		}
		if err := utiljson.Unmarshal(sent, orig); err != nil {
			c.convertFails(object, to.String())
			return
		}
		// Compared as its Go type writes it, as the webhook writes every object it
		// converts: encoding/json keeps whole seconds of a time, for one.
		orig = c.reread(orig)

		converted := c.convertOK(object, to.String())
		want, err := c.scheme.New(to.WithKind(head.Kind))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.scheme.Convert(orig.DeepCopyObject(), want, nil); err != nil {
			t.Fatalf("the api module cannot convert %s: %v", object, err)
		}
		want.GetObjectKind().SetGroupVersionKind(to.WithKind(head.Kind))
		if got := c.typed(converted, want); !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("the webhook converted %s otherwise than the api module (-module +webhook):\n%s", object, cmp.Diff(want, got))
		}

		back := c.convertOK(converted, from.String())
		if got := c.typed(back, orig); !apiequality.Semantic.DeepEqual(got, orig) {
			t.Fatalf("the round trip through %s changed %s (-sent +back):\n%s\nconverted: %s\nback: %s",
				to, object, cmp.Diff(orig, got), converted, back)
		}
		_, backTemplates, err := c.cut(back, head.Kind)
		if err != nil {
			t.Fatalf("reading the templates of %s: %v", back, err)
		}
		for _, f := range schemalessFields[head.Kind] {
			sentField, backField := templates[f.name], backTemplates[f.name]
			if (sentField == nil) != (backField == nil) || (sentField != nil && !sameJSON(t, sentField, backField)) {
				t.Fatalf("the round trip through %s changed spec.%s from %s to %s", to, f.name, sentField, backField)
			}
		}
	})
}

// withoutReservedAnnotations returns object without the reserved annotations of
// conversion, and whether it had any.
func withoutReservedAnnotations(object []byte) ([]byte, bool) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(object))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	metadata, _ := doc["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	found := false
	for key := range annotations {
		if strings.HasPrefix(key, appsv1beta1.ConversionAnnotationPrefix) {
			delete(annotations, key)
			found = true
		}
	}
	if !found {
		return nil, false
	}
	stripped, err := json.Marshal(doc)
	if err != nil {
		return nil, false
	}
	return stripped, true
}

// roundTrip sends objects through the conversion webhook and reads them back.
type roundTrip struct {
	t      *testing.T
	h      http.Handler
	scheme *runtime.Scheme
}

// convert sends one object to the webhook for version desired, checks that the answer is a
// well-formed review, or a 4xx refusal of the request, that no conversion failed on the
// webhook's own account, and returns the review's response (nil after a refusal).
func (c roundTrip) convert(object []byte, desired string) *conversionResponse {
	t := c.t
	t.Helper()
	// Written out by hand: encoding/json would refuse to embed an object that is not JSON,
	// and would compact the rest.
	body := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"fuzz-uid",` +
		`"desiredAPIVersion":"` + desired + `","objects":[` + string(object) + `]}}`)
	var log bytes.Buffer
	ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&log))))
	w := post(ctx, c.h, body)
	if strings.Contains(log.String(), "panicked") {
		t.Fatalf("converting %s to %s panicked:\n%s", object, desired, log.String())
	}
	if w.Code != http.StatusOK {
		if w.Code < 400 || w.Code >= 500 {
			t.Fatalf("converting %s to %s: HTTP status %d, want 200 or a 4xx: %s", object, desired, w.Code, w.Body)
		}
		return nil
	}
	resp := readReview(t, w, "fuzz-uid")
	switch {
	case resp.Result.Code == http.StatusInternalServerError:
		t.Fatalf("converting %s to %s failed on the webhook's account: %+v\n%s", object, desired, resp.Result, log.String())
	case resp.Result.Status == "Success" && resp.Result.Code != http.StatusOK:
		t.Fatalf("converting %s to %s succeeded with code %d", object, desired, resp.Result.Code)
	case resp.Result.Status != "Success" && (resp.Result.Code != http.StatusUnprocessableEntity || len(resp.ConvertedObjects) != 0):
		t.Fatalf("converting %s to %s failed with %+v and %d objects, want 422 and none", object, desired, resp.Result, len(resp.ConvertedObjects))
	}
	return resp
}

// convertOK converts object to desired, which must succeed, and returns the converted
// object.
func (c roundTrip) convertOK(object []byte, desired string) []byte {
	c.t.Helper()
	resp := c.convert(object, desired)
	if resp == nil || resp.Result.Status != "Success" || len(resp.ConvertedObjects) != 1 {
		c.t.Fatalf("converting %s, which decodes, to %s: %+v, want one object converted", object, desired, resp)
	}
	converted := resp.ConvertedObjects[0]
	if got := field(c.t, converted, "apiVersion"); got != `"`+desired+`"` {
		c.t.Fatalf("converting %s to %s gave apiVersion %s", object, desired, got)
	}
	return converted
}

// convertFails converts object to desired, which must fail on the object's account.
func (c roundTrip) convertFails(object []byte, desired string) {
	c.t.Helper()
	if resp := c.convert(object, desired); resp != nil && resp.Result.Status == "Success" {
		c.t.Fatalf("converting %s, which does not decode, to %s succeeded", object, desired)
	}
}

// cut takes the schemaless fields out of the object raw of kind, as the webhook does.
func (c roundTrip) cut(raw []byte, kind string) ([]byte, map[string][]byte, error) {
	members, err := objectMembers(raw)
	if err != nil {
		return nil, nil, err
	}
	return cutSpecFields(raw, members, schemalessFields[kind])
}

// typed decodes the object raw, which the webhook wrote, into a new object of like's type,
// its schemaless fields left out as the webhook leaves them out of conversion.
func (c roundTrip) typed(raw []byte, like runtime.Object) runtime.Object {
	c.t.Helper()
	cut, _, err := c.cut(raw, like.GetObjectKind().GroupVersionKind().Kind)
	if err != nil {
		c.t.Fatalf("reading %s: %v", raw, err)
	}
	obj, err := c.scheme.New(like.GetObjectKind().GroupVersionKind())
	if err != nil {
		c.t.Fatal(err)
	}
	if err := utiljson.Unmarshal(cut, obj); err != nil {
		c.t.Fatalf("decoding %s, which the webhook wrote: %v", raw, err)
	}
	return obj
}

// reread is obj written as JSON and read back.
func (c roundTrip) reread(obj runtime.Object) runtime.Object {
	c.t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		c.t.Fatalf("encoding %T: %v", obj, err)
	}
	again, err := c.scheme.New(obj.GetObjectKind().GroupVersionKind())
	if err != nil {
		c.t.Fatal(err)
	}
	if err := utiljson.Unmarshal(data, again); err != nil {
		c.t.Fatalf("decoding %s: %v", data, err)
	}
	return again
}
