package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// ReservedAnnotationPrefix starts the annotations in which version conversion records what
// the other version of an object cannot hold. Only conversion writes them: a client that
// sets one could make a later conversion restore content the client never had the right to
// write in that version.
const ReservedAnnotationPrefix = appsv1beta1.ConversionAnnotationPrefix

// resourcePointer is *T for an API type T with object metadata, such as
// *appsv1beta1.NodeImage.
type resourcePointer[T any] interface {
	*T
	runtime.Object
	metav1.Object
}

// ResourceWebhook is what a resource's defaulting webhook, validating webhook or both have
// in common: both are called on CREATE and UPDATE of one resource in every version it is
// served in, let every other operation through, and decode the object strictly in the
// version the request names (see DecodeAdmitted), answering 400 when it does not decode,
// is of another kind, or of a version the webhook does not serve. The resource supplies
// its defaults per version and its judgement once, on the hub version.
//
// T is the hub version's API type and PT its pointer, for example
// ResourceWebhook[appsv1beta1.DaemonSet, *appsv1beta1.DaemonSet].
type ResourceWebhook[T any, PT resourcePointer[T]] struct {
	// Kind is the kind admitted in its hub version, and Resource its plural name
	// ("daemonsets").
	Kind     schema.GroupVersionKind
	Resource string
	// Spokes are the other versions the kind is served in. A request in a spoke version is
	// defaulted as that version and judged as its conversion to the hub.
	Spokes []Spoke[T, PT]

	// MutatingName and MutatingPath name the defaulting webhook, registered when Default,
	// StaleCarriers or Mutate is set; the server also answers on LegacyMutatingPaths.
	MutatingName, MutatingPath string
	LegacyMutatingPaths        []string
	// Default sets the defaults of an object in the hub version in place and returns the
	// additions that make the same changes to the object as received, so that nothing else
	// the user wrote is rewritten (see AdditionsResponse). req tells a creation from an
	// update.
	Default func(req *admissionv1.AdmissionRequest, obj PT) []Addition
	// StaleCarriers returns, for an object written in the hub version, the annotations
	// that carry one of its fields for an older version but disagree with the field as
	// set, each with the warning telling the client so. The field wins: the defaulting
	// webhook removes them, since converting the object down would replace them anyway,
	// and a reader of the annotation would otherwise see a value nobody means.
	StaleCarriers func(obj PT) []StaleCarrier

	// Mutate, for a resource whose defaulting webhook also judges (it needs other objects
	// to do either), replaces Default: it is given the object and, on UPDATE, the old
	// object in the hub version, prepared as for Validate, and answers with a patch whose
	// paths mean the same in every version, or a denial. Stale carriers of a hub-version
	// write are removed before its patch applies.
	Mutate func(ctx context.Context, req *admissionv1.AdmissionRequest, obj, old PT) *admissionv1.AdmissionResponse

	// ValidatingName and ValidatingPath name the validating webhook, registered when
	// Validate is set; the server also answers on LegacyValidatingPaths.
	ValidatingName, ValidatingPath string
	LegacyValidatingPaths          []string
	// Validate judges the object in the hub version. Its namespace is filled in from the
	// request when empty, as the API server does before storing it. On an UPDATE, old is
	// the object before the update, decoded as strictly (400 when it does not decode) and
	// converted like the object; on a CREATE it is nil.
	Validate func(ctx context.Context, req *admissionv1.AdmissionRequest, obj, old PT) *admissionv1.AdmissionResponse
	// OldObjectUnused leaves old nil on UPDATE too, for a resource judged on the object
	// alone: the old object is then neither decoded nor able to fail the request.
	OldObjectUnused bool
}

// StaleCarrier is an annotation to remove from an object written in the hub version, and
// the warning returned to the client about it.
type StaleCarrier struct {
	Annotation string
	Warning    string
}

// Spoke is a version of a kind other than its hub: how to decode an object of that
// version, default it, and convert it to the hub. Build one with NewSpoke.
type Spoke[T any, PT resourcePointer[T]] struct {
	kind schema.GroupVersionKind
	// decode decodes raw strictly as this version and returns its metadata as received
	// and its conversion to the hub.
	decode func(raw []byte, name string) (metav1.Object, PT, error)
	// mutate answers a defaulting request in this version; nil when it has no defaults.
	mutate func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse
}

// NewSpoke describes version kind of a resource whose hub type is T: objects of this
// version decode into S, are defaulted by defaults (none when nil) and are converted to
// the hub by up.
func NewSpoke[S any, PS resourcePointer[S], T any, PT resourcePointer[T]](kind schema.GroupVersionKind, defaults func(req *admissionv1.AdmissionRequest, obj PS) []Addition, up func(in PS, out PT)) Spoke[T, PT] {
	s := Spoke[T, PT]{
		kind: kind,
		decode: func(raw []byte, name string) (metav1.Object, PT, error) {
			obj, err := DecodeStrictNew[S, PS](raw, name, kind)
			if err != nil {
				return nil, nil, err
			}
			hub := PT(new(T))
			// The conversion may share memory with its input: convert a copy, and keep the
			// object as received for the checks of its own metadata.
			up(obj.DeepCopyObject().(PS), hub)
			return obj, hub, nil
		},
	}
	if defaults != nil {
		s.mutate = func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			obj, err := DecodeStrictNew[S, PS](req.Object.Raw, "object", kind)
			if err != nil {
				return Errored(http.StatusBadRequest, err)
			}
			if answer := reservedAnnotations(req, obj); answer != nil {
				return answer
			}
			resp, err := AdditionsResponse(defaults(req, obj))
			if err != nil {
				return Errored(http.StatusInternalServerError, fmt.Errorf("defaulting %s %s: %w", kind.Kind, klog.KRef(req.Namespace, req.Name), err))
			}
			return resp
		}
	}
	return s
}

// Registrations are the defaulting webhook (when Default, StaleCarriers or Mutate is set) and then
// the validating one (when Validate is set), each for CREATE and UPDATE of the resource in
// every version it is served in.
func (w *ResourceWebhook[T, PT]) Registrations() []Registration {
	var regs []Registration
	if w.Default != nil || w.StaleCarriers != nil || w.Mutate != nil {
		regs = append(regs, Registration{
			Name:        w.MutatingName,
			Path:        w.MutatingPath,
			LegacyPaths: w.LegacyMutatingPaths,
			Type:        Mutating,
			Rules:       w.rules(),
			Handler:     HandlerFunc(w.mutate),
		})
	}
	if w.Validate != nil {
		regs = append(regs, Registration{
			Name:        w.ValidatingName,
			Path:        w.ValidatingPath,
			LegacyPaths: w.LegacyValidatingPaths,
			Type:        Validating,
			Rules:       w.rules(),
			Handler:     HandlerFunc(w.validate),
		})
	}
	return regs
}

// rules name every version, hub last: with matchPolicy Equivalent the API server sends a
// request in the version it was made in whenever that version is listed.
func (w *ResourceWebhook[T, PT]) rules() []admissionregistrationv1.RuleWithOperations {
	rules := ResourceRules(w.Kind.GroupVersion(), w.Resource, admissionregistrationv1.Create, admissionregistrationv1.Update)
	versions := make([]string, 0, len(w.Spokes)+1)
	for _, s := range w.Spokes {
		versions = append(versions, s.kind.Version)
	}
	rules[0].APIVersions = append(versions, w.Kind.Version)
	return rules
}

// dispatch finds the version a CREATE or UPDATE request is in: the hub (spoke nil) or one
// of the spokes. Anything else is answered with a 400.
func (w *ResourceWebhook[T, PT]) dispatch(req *admissionv1.AdmissionRequest) (*Spoke[T, PT], *admissionv1.AdmissionResponse) {
	got := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	if got == w.Kind {
		return nil, nil
	}
	for i := range w.Spokes {
		if got == w.Spokes[i].kind {
			return &w.Spokes[i], nil
		}
	}
	kinds := make([]string, 0, len(w.Spokes)+1)
	for _, s := range w.Spokes {
		kinds = append(kinds, s.kind.String())
	}
	kinds = append(kinds, w.Kind.String())
	return nil, Errored(http.StatusBadRequest, fmt.Errorf("this webhook admits %s only, not %s", strings.Join(kinds, " and "), got))
}

// mutate answers with the patch of the defaults of the request's version and, in the hub
// version, the removal of stale carriers.
func (w *ResourceWebhook[T, PT]) mutate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return Allowed()
	}
	if w.Mutate != nil {
		obj, old, answer := w.decodeHub(req)
		if answer != nil {
			return answer
		}
		var stale []StaleCarrier
		if w.StaleCarriers != nil && req.Kind.Version == w.Kind.Version {
			stale = w.StaleCarriers(obj)
		}
		resp := w.Mutate(ctx, req, obj, old)
		if len(stale) == 0 || resp == nil || !resp.Allowed {
			return resp
		}
		resp, err := withStaleCarriersRemoved(resp, stale)
		if err != nil {
			return Errored(http.StatusInternalServerError, fmt.Errorf("completing %s %s: %w", w.Kind.Kind, klog.KRef(req.Namespace, req.Name), err))
		}
		return resp
	}
	spoke, answer := w.dispatch(req)
	if answer != nil {
		return answer
	}
	if spoke != nil {
		if spoke.mutate == nil {
			if _, _, err := spoke.decode(req.Object.Raw, "object"); err != nil {
				return Errored(http.StatusBadRequest, err)
			}
			return Allowed()
		}
		return spoke.mutate(req)
	}
	obj, err := DecodeStrictNew[T, PT](req.Object.Raw, "object", w.Kind)
	if err != nil {
		return Errored(http.StatusBadRequest, err)
	}
	if answer := reservedAnnotations(req, obj); answer != nil {
		return answer
	}
	var removals, warnings []string
	if w.StaleCarriers != nil {
		for _, stale := range w.StaleCarriers(obj) {
			removals = append(removals, AnnotationPointer(stale.Annotation))
			warnings = append(warnings, stale.Warning)
			annotations := obj.GetAnnotations()
			delete(annotations, stale.Annotation)
			obj.SetAnnotations(annotations)
		}
	}
	var additions []Addition
	if w.Default != nil {
		additions = w.Default(req, obj)
	}
	resp, err := PatchResponse(removals, additions, warnings)
	if err != nil {
		return Errored(http.StatusInternalServerError, fmt.Errorf("defaulting %s %s: %w", w.Kind.Kind, klog.KRef(req.Namespace, req.Name), err))
	}
	return resp
}

// withStaleCarriersRemoved adds to an allowing response the removal of the stale
// carriers, before its own patch, and their warnings.
func withStaleCarriersRemoved(resp *admissionv1.AdmissionResponse, stale []StaleCarrier) (*admissionv1.AdmissionResponse, error) {
	var ops []json.RawMessage
	for _, s := range stale {
		op, err := json.Marshal(jsonPatchOperation{Op: "remove", Path: AnnotationPointer(s.Annotation)})
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		resp.Warnings = append(resp.Warnings, s.Warning)
	}
	if len(resp.Patch) > 0 {
		var own []json.RawMessage
		if err := json.Unmarshal(resp.Patch, &own); err != nil {
			return nil, fmt.Errorf("reading the patch: %w", err)
		}
		ops = append(ops, own...)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	patchType := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &patchType
	return resp, nil
}

// validate answers with Validate's verdict on the object converted to the hub.
func (w *ResourceWebhook[T, PT]) validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return Allowed()
	}
	obj, old, answer := w.decodeHub(req)
	if answer != nil {
		return answer
	}
	return w.Validate(ctx, req, obj, old)
}

// decodeHub decodes the object of a CREATE or UPDATE request and, on UPDATE unless
// OldObjectUnused, the old object, in the request's version, and converts them to the hub.
// The object's namespace is filled in from the request when empty. When it cannot, it
// returns the answer instead: a 400.
func (w *ResourceWebhook[T, PT]) decodeHub(req *admissionv1.AdmissionRequest) (obj, old PT, answer *admissionv1.AdmissionResponse) {
	spoke, answer := w.dispatch(req)
	if answer != nil {
		return nil, nil, answer
	}
	decode := func(raw []byte, name string) (metav1.Object, PT, error) {
		obj, err := DecodeStrictNew[T, PT](raw, name, w.Kind)
		return obj, obj, err
	}
	if spoke != nil {
		decode = spoke.decode
	}
	received, obj, err := decode(req.Object.Raw, "object")
	if err != nil {
		return nil, nil, Errored(http.StatusBadRequest, err)
	}
	if answer := reservedAnnotations(req, received); answer != nil {
		return nil, nil, answer
	}
	if req.Operation == admissionv1.Update && !w.OldObjectUnused {
		if _, old, err = decode(req.OldObject.Raw, "oldObject"); err != nil {
			return nil, nil, Errored(http.StatusBadRequest, err)
		}
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	return obj, old, nil
}

// reservedAnnotations refuses, with a 400, a write that sets a reserved annotation of
// version conversion (ReservedAnnotationPrefix) or changes one. An update may keep one
// unchanged: a client of one version that reads an object converted from another gets the
// annotation with it, and writing the object back as read must keep working.
func reservedAnnotations(req *admissionv1.AdmissionRequest, obj metav1.Object) *admissionv1.AdmissionResponse {
	var keys []string
	var oldAnnotations map[string]string
	for key := range obj.GetAnnotations() {
		if strings.HasPrefix(key, ReservedAnnotationPrefix) {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		var old struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		// The old object is the stored one: it decodes, and a failure only means that
		// nothing is kept from it.
		_ = json.Unmarshal(req.OldObject.Raw, &old)
		oldAnnotations = old.Metadata.Annotations
	}
	var refused []string
	for _, key := range keys {
		if value, ok := oldAnnotations[key]; !ok || value != obj.GetAnnotations()[key] {
			refused = append(refused, key)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	sort.Strings(refused)
	return Denied(http.StatusBadRequest, "metadata.annotations: annotation %s is reserved for version conversion and may not be set or changed by clients",
		strings.Join(refused, ", "))
}

// ObjectName is the name of the object a request is about, for messages: the object's own,
// or the request's when the object carries none.
func ObjectName(req *admissionv1.AdmissionRequest, obj metav1.Object) string {
	if name := obj.GetName(); name != "" {
		return name
	}
	return req.Name
}
