package conversion

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
)

const (
	daemonSetKind = "DaemonSet"
	cloneSetKind  = "CloneSet"
)

// schemalessField is a field of spec that a kind's CRD stores schemaless, unknown fields
// kept.
type schemalessField struct {
	name string
	// omitempty says that the Go type leaves the field out when it is empty, so that an
	// encoded object may lack it.
	omitempty bool
}

// schemalessFields are, by kind, the schemaless fields of spec: pod templates and claim
// templates, whose unknown fields the Go types would drop.
var schemalessFields = map[string][]schemalessField{
	daemonSetKind: {{name: "template"}},
	cloneSetKind:  {{name: "template"}, {name: "volumeClaimTemplates", omitempty: true}},
}

// convertibleKinds are the kinds whose CRDs may send their objects here, each served as
// every one of versions.
var convertibleKinds = []schema.GroupKind{
	{Group: appsv1alpha1.GroupName, Kind: daemonSetKind},
	{Group: appsv1alpha1.GroupName, Kind: cloneSetKind},
	{Group: appsv1alpha1.GroupName, Kind: "ContainerRecreateRequest"},
	{Group: appsv1alpha1.GroupName, Kind: "NodeImage"},
	{Group: appsv1alpha1.GroupName, Kind: "ImagePullJob"},
	{Group: appsv1alpha1.GroupName, Kind: "ImageListPullJob"},
	{Group: policyv1alpha1.GroupName, Kind: "PodUnavailableBudget"},
}

// versions are the versions every convertible kind is served as.
var versions = []string{appsv1alpha1.SchemeGroupVersion.Version, appsv1beta1.SchemeGroupVersion.Version}

// newScheme returns a scheme holding both versions of the convertible kinds and the
// conversions between them.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme,
		policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the conversion scheme: %w", err)
		}
	}
	for _, gk := range convertibleKinds {
		for _, v := range versions {
			if gvk := gk.WithVersion(v); !scheme.Recognizes(gvk) {
				return nil, fmt.Errorf("building the conversion scheme: the api module has no type for %s", gvk)
			}
		}
	}
	return scheme, nil
}

// convertible reports whether gvk is a kind and version this handler converts.
func convertible(gvk schema.GroupVersionKind) bool {
	return slices.Contains(convertibleKinds, gvk.GroupKind()) && slices.Contains(versions, gvk.Version)
}

// servedGroupVersion reports whether gv is a version a convertible kind may be converted
// to.
func servedGroupVersion(gv schema.GroupVersion) bool {
	return slices.ContainsFunc(convertibleKinds, func(gk schema.GroupKind) bool { return gk.Group == gv.Group }) &&
		slices.Contains(versions, gv.Version)
}

// objectHead is what is read of an object before it is decoded into its type.
type objectHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

// readHead reads the head of the object raw, and returns the object's fields. A name or
// namespace that is not a string is left empty: the decoding into the object's type reports
// it.
func readHead(raw []byte) (objectHead, []member, error) {
	var head objectHead
	members, err := objectMembers(raw)
	if err != nil {
		return head, nil, err
	}
	for _, m := range members {
		switch m.name {
		case "apiVersion":
			if err := json.Unmarshal(m.value(raw), &head.APIVersion); err != nil {
				return head, nil, fmt.Errorf("apiVersion: %w", err)
			}
		case "kind":
			if err := json.Unmarshal(m.value(raw), &head.Kind); err != nil {
				return head, nil, fmt.Errorf("kind: %w", err)
			}
		case "metadata":
			fields, err := objectMembers(m.value(raw))
			if err != nil {
				continue
			}
			for _, f := range fields {
				switch f.name {
				case "name":
					_ = json.Unmarshal(f.value(m.value(raw)), &head.Metadata.Name)
				case "namespace":
					_ = json.Unmarshal(f.value(m.value(raw)), &head.Metadata.Namespace)
				}
			}
		}
	}
	return head, members, nil
}

// describe names the object in messages.
func (h objectHead) describe() string {
	name := h.Metadata.Name
	if h.Metadata.Namespace != "" {
		name = h.Metadata.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s %q", h.APIVersion, h.Kind, name)
}

// converter converts single objects through a scheme.
type converter struct {
	scheme *runtime.Scheme
}

// convertedObject is the outcome of converting one object.
type convertedObject struct {
	// data is the object in the desired version.
	data json.RawMessage
	// kind is the object's kind, once known to be convertible.
	kind string
	// dropped counts the reserved-annotation records the conversion could not honour.
	dropped int
}

// errUnconvertible marks a failure that is the object's or the request's: an unknown
// group, kind or version, or an object that does not decode into its type.
var errUnconvertible = errors.New("cannot convert")

// convert returns the object whose JSON is raw in version desired. Its errors wrap
// errUnconvertible, except for failures of this code, which no object should cause.
func (c *converter) convert(raw json.RawMessage, desired schema.GroupVersion) (convertedObject, error) {
	head, members, err := readHead(raw)
	if err != nil {
		return convertedObject{}, fmt.Errorf("%w: not a Kubernetes object: %w", errUnconvertible, err)
	}
	from, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return convertedObject{}, fmt.Errorf("%w %s: %w", errUnconvertible, head.describe(), err)
	}
	gvk := from.WithKind(head.Kind)
	if !convertible(gvk) {
		return convertedObject{}, fmt.Errorf("%w %s: not a kind and version this webhook converts", errUnconvertible, head.describe())
	}
	converted := convertedObject{kind: head.Kind}
	if from.Group != desired.Group {
		return converted, fmt.Errorf("%w %s to %s: another API group", errUnconvertible, head.describe(), desired)
	}
	if from.Version == desired.Version {
		converted.data = raw
		return converted, nil
	}

	body, carried := []byte(raw), map[string][]byte(nil)
	if fields := schemalessFields[head.Kind]; fields != nil {
		if body, carried, err = cutSpecFields(raw, members, fields); err != nil {
			return converted, fmt.Errorf("%w %s: %w", errUnconvertible, head.describe(), err)
		}
	}
	in, err := c.scheme.New(gvk)
	if err != nil {
		return converted, fmt.Errorf("creating a %s: %w", gvk, err)
	}
	target := desired.WithKind(head.Kind)
	out, err := c.scheme.New(target)
	if err != nil {
		return converted, fmt.Errorf("creating a %s: %w", target, err)
	}
	if err := utiljson.Unmarshal(body, in); err != nil {
		return converted, fmt.Errorf("%w %s: it does not decode: %w", errUnconvertible, head.describe(), err)
	}
	var drops dropCount
	if err := c.scheme.Convert(in, out, &drops); err != nil {
		return converted, fmt.Errorf("converting %s to %s: %w", head.describe(), desired, err)
	}
	out.GetObjectKind().SetGroupVersionKind(target)
	data, err := json.Marshal(out)
	if err != nil {
		return converted, fmt.Errorf("encoding %s as %s: %w", head.describe(), desired, err)
	}
	for _, f := range schemalessFields[head.Kind] {
		if data, err = putSpecField(data, f, carried[f.name]); err != nil {
			return converted, fmt.Errorf("restoring spec.%s of %s: %w", f.name, head.describe(), err)
		}
	}
	converted.data, converted.dropped = data, drops.dropped
	return converted, nil
}

// dropCount is the drop recorder a conversion is given as its context.
type dropCount struct {
	dropped int
}

var (
	_ appsv1alpha1.ConversionDropRecorder   = (*dropCount)(nil)
	_ policyv1alpha1.ConversionDropRecorder = (*dropCount)(nil)
)

// ConversionDropped is told how many reserved-annotation records the conversion of one
// object, of the kind the converter already knows, could not honour or write.
func (d *dropCount) ConversionDropped(_ string, dropped int) {
	d.dropped += dropped
}

// nullValue stands in for a schemaless field while the rest of the object is decoded: the
// field decodes as if it were absent.
var nullValue = []byte("null")

// cutSpecFields returns an object's JSON, whose fields are members, with the given fields
// of spec null, and the JSON of each of those fields that is present, so that the typed
// conversion neither loses their unknown fields nor fails on values their schema, being
// none, did not constrain.
func cutSpecFields(obj []byte, members []member, fields []schemalessField) ([]byte, map[string][]byte, error) {
	cut := map[string][]byte{}
	var splices []splice
	// Every occurrence, should a name appear twice: the decoding would read each of them.
	// The last one is carried.
	for _, m := range members {
		if m.name != "spec" || isNull(m.value(obj)) {
			continue
		}
		specFields, err := objectMembers(m.value(obj))
		if err != nil {
			return nil, nil, fmt.Errorf("spec: %w", err)
		}
		for _, f := range specFields {
			if !slices.ContainsFunc(fields, func(s schemalessField) bool { return s.name == f.name }) {
				continue
			}
			cut[f.name] = f.value(m.value(obj))
			splices = append(splices, splice{m.valueStart + f.valueStart, m.valueStart + f.valueEnd, nullValue})
		}
	}
	if splices == nil {
		return obj, nil, nil
	}
	return applySplices(obj, splices), cut, nil
}

// putSpecField sets the field of spec of an object that encoding/json wrote to value, or
// removes it when value is nil.
func putSpecField(obj []byte, field schemalessField, value []byte) ([]byte, error) {
	members, err := objectMembers(obj)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.name != "spec" {
			continue
		}
		spec := m.value(obj)
		fields, err := objectMembers(spec)
		if err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
		for i, f := range fields {
			if f.name != field.name {
				continue
			}
			if value != nil {
				return applySplices(obj, []splice{{m.valueStart + f.valueStart, m.valueStart + f.valueEnd, value}}), nil
			}
			// Removed with the comma that separates it from a neighbour.
			start, end := f.start, f.valueEnd
			switch {
			case i+1 < len(fields):
				end = fields[i+1].start
			case i > 0:
				start = fields[i-1].valueEnd
			}
			return applySplices(obj, []splice{{m.valueStart + start, m.valueStart + end, nil}}), nil
		}
		if !field.omitempty {
			// The Go type always writes this field.
			return nil, fmt.Errorf("no spec.%s in the encoded object", field.name)
		}
		if value == nil {
			return obj, nil
		}
		// Added as the last field of spec, whose closing brace encoding/json wrote last.
		name, err := json.Marshal(field.name)
		if err != nil {
			return nil, err
		}
		added := append(append(name, ':'), value...)
		if len(fields) > 0 {
			added = append([]byte{','}, added...)
		}
		end := m.valueEnd - 1
		if obj[end] != '}' {
			return nil, errors.New("spec does not end with its closing brace")
		}
		return applySplices(obj, []splice{{end, end, added}}), nil
	}
	// The Go types always write spec.
	return nil, errors.New("no spec in the encoded object")
}
