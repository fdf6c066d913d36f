package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	bosunscheme "github.com/bosun-dev/client-go/clientset/versioned/scheme"
)

// difference is one field that is not what it was under OpenKruise.
type difference struct {
	// Kind is an OpenKruise kind, Pod or ControllerRevision; Version the API version the
	// object was read in ("" for pods and revisions).
	Kind, Version string
	// Object is namespace/name (name for cluster-scoped objects).
	Object string
	// Path names the field: metadata.annotations[key], spec.template.spec..., status.x, or
	// "object" when the whole object appeared or went.
	Path string
	// Before and After are the field's JSON values (nil: unset).
	Before, After any
}

func (d difference) String() string {
	where := d.Kind
	if d.Version != "" {
		where += " " + d.Version
	}
	return fmt.Sprintf("%s %s: %s: %s -> %s", where, d.Object, d.Path, render(d.Before), render(d.After))
}

// allowedDifference is a difference the specification expects, in one field of one object,
// with a check of both values.
type allowedDifference struct {
	Kind, Version, Object, Path string
	// Check returns why the values are not the expected ones, nil when they are.
	Check func(before, after any) error
	// Why says why the two managers differ there.
	Why string
}

func (a allowedDifference) matches(d difference) bool {
	return a.Kind == d.Kind && a.Version == d.Version && a.Object == d.Object && a.Path == d.Path
}

// verdict sorts the differences of a comparison into expected and unexpected ones, and
// names the expected ones that did not occur.
type verdict struct {
	unexpected []difference
	expected   []expectedSeen
	missing    []allowedDifference
}

type expectedSeen struct {
	difference
	why string
}

func (v verdict) ok() bool { return len(v.unexpected) == 0 && len(v.missing) == 0 }

// judge splits diffs by allowed and possible. Every allowed difference must occur: each
// names a loss of OpenKruise's that the run exercises, so its absence means the run did not
// show it. A possible difference may occur or not (it shows only when OpenKruise happened to
// leave something behind, say an error of a sync it retried); when it does, its check
// applies as an allowed one's.
func judge(diffs []difference, allowed, possible []allowedDifference) verdict {
	var v verdict
	seen := make([]bool, len(allowed))
	for _, d := range diffs {
		matches := func(a allowedDifference) bool { return a.matches(d) }
		var match allowedDifference
		required := slices.IndexFunc(allowed, matches)
		if required >= 0 {
			match = allowed[required]
		} else if i := slices.IndexFunc(possible, matches); i >= 0 {
			match = possible[i]
		} else {
			v.unexpected = append(v.unexpected, d)
			continue
		}
		if err := match.Check(d.Before, d.After); err != nil {
			d.Path += " (" + err.Error() + ")"
			v.unexpected = append(v.unexpected, d)
			continue
		}
		if required >= 0 {
			seen[required] = true
		}
		v.expected = append(v.expected, expectedSeen{difference: d, why: match.Why})
	}
	for i, a := range allowed {
		if !seen[i] {
			v.missing = append(v.missing, a)
		}
	}
	return v
}

// compareObjects compares every object of before and after that was read in version,
// the way a takeover must leave them: metadata (uid, generation, creation time, labels,
// annotations, finalizers, owner references, deletion time) and spec exactly, status
// semantically (apimachinery's semantic equality of bosun's typed status: unset and empty
// are equal, times compare to the second). Objects present in only one of them are
// differences too.
func compareObjects(version string, before, after map[objectKey]*unstructured.Unstructured) []difference {
	var diffs []difference
	for _, key := range unionKeys(before, after) {
		b, a := before[key], after[key]
		switch {
		case a == nil:
			diffs = append(diffs, difference{Kind: key.Kind, Version: version, Object: key.object(), Path: "object", Before: "present", After: "absent"})
			continue
		case b == nil:
			diffs = append(diffs, difference{Kind: key.Kind, Version: version, Object: key.object(), Path: "object", Before: "absent", After: "present"})
			continue
		}
		add := func(path string, bv, av any) {
			for _, d := range diffValues(path, bv, av) {
				d.Kind, d.Version, d.Object = key.Kind, version, key.object()
				diffs = append(diffs, d)
			}
		}
		for _, field := range comparedMetadata {
			add("metadata."+field, b.Object["metadata"].(map[string]any)[field], a.Object["metadata"].(map[string]any)[field])
		}
		add("spec", b.Object["spec"], a.Object["spec"])
		bs, as, err := typedStatuses(b, a)
		if err != nil {
			diffs = append(diffs, difference{Kind: key.Kind, Version: version, Object: key.object(), Path: "status", Before: "?", After: err.Error()})

			continue
		}
		if !apiequality.Semantic.DeepEqual(bs, as) {
			add("status", normalize(jsonValue(bs)), normalize(jsonValue(as)))
		}
	}
	return diffs
}

// comparedMetadata are the metadata fields a takeover must not change. resourceVersion
// and managedFields change with every status write, which is allowed.
var comparedMetadata = []string{"uid", "generation", "creationTimestamp", "deletionTimestamp",
	"labels", "annotations", "finalizers", "ownerReferences"}

// typedStatuses decodes the status of both objects into bosun's Go type of their kind and
// version.
func typedStatuses(before, after *unstructured.Unstructured) (any, any, error) {
	decode := func(u *unstructured.Unstructured) (any, error) {
		obj, err := bosunscheme.Scheme.New(u.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("no Go type for %s: %w", u.GroupVersionKind(), err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return nil, fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		status := reflect.ValueOf(obj).Elem().FieldByName("Status")
		if !status.IsValid() {
			return nil, fmt.Errorf("%s has no status", u.GroupVersionKind())
		}
		return status.Interface(), nil
	}
	b, err := decode(before)
	if err != nil {
		return nil, nil, err
	}
	a, err := decode(after)
	return b, a, err
}

// jsonValue is v as the JSON tree the API shows.
func jsonValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return err.Error()
	}
	return out
}

// normalize drops nulls, empty maps and empty lists, which semantic equality treats as
// unset, so that the listed differences are the ones that made the statuses unequal.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if n := normalize(e); n != nil {
				out[k] = n
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(t) == 0 {
			return nil
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// diffValues lists the leaves where two JSON trees differ. Lists of different lengths
// differ as a whole.
func diffValues(path string, b, a any) []difference {
	if reflect.DeepEqual(b, a) {
		return nil
	}
	bm, bok := b.(map[string]any)
	am, aok := a.(map[string]any)
	// An unset map differs from a set one key by key.
	if bok && a == nil {
		am, aok = map[string]any{}, true
	}
	if aok && b == nil {
		bm, bok = map[string]any{}, true
	}
	if bok && aok {
		var diffs []difference
		keys := map[string]bool{}
		for k := range bm {
			keys[k] = true
		}
		for k := range am {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			diffs = append(diffs, diffValues(childPath(path, k), bm[k], am[k])...)
		}
		return diffs
	}
	bl, bok := b.([]any)
	al, aok := a.([]any)
	if bok && aok && len(bl) == len(al) {
		var diffs []difference
		for i := range bl {
			diffs = append(diffs, diffValues(fmt.Sprintf("%s[%d]", path, i), bl[i], al[i])...)
		}
		return diffs
	}
	return []difference{{Path: path, Before: b, After: a}}
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

func childPath(path, key string) string {
	if plainKey.MatchString(key) && !strings.HasSuffix(path, ".labels") && !strings.HasSuffix(path, ".annotations") {
		return path + "." + key
	}
	return path + "[" + key + "]"
}

func render(v any) string {
	if v == nil {
		return "<unset>"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	data := strings.TrimSuffix(b.String(), "\n")
	const limit = 300
	if len(data) > limit {
		return data[:limit] + "…"
	}
	return data
}

func unionKeys[V any](maps ...map[objectKey]V) []objectKey {
	seen := map[objectKey]bool{}
	var keys []objectKey
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	return keys
}

// comparePods reports every pod that went or came, and of every other pod each label,
// annotation and image that changed: a takeover must create, delete and rewrite none.
func comparePods(before, after map[string]pod) []difference {
	var diffs []difference
	for _, name := range sortedKeys(before, after) {
		b, a := before[name], after[name]
		if b.UID != a.UID {
			diffs = append(diffs, difference{Kind: "Pod", Object: name, Path: "metadata.uid", Before: orAbsent(b.UID), After: orAbsent(a.UID)})
			continue
		}
		for _, d := range diffValues("", podTree(b), podTree(a)) {
			d.Kind, d.Object, d.Path = "Pod", name, strings.TrimPrefix(d.Path, ".")
			diffs = append(diffs, d)
		}
	}
	return diffs
}

// podTree is the part of a pod that comparePods compares beside its UID, with the paths
// the API shows.
func podTree(p pod) any {
	return jsonValue(map[string]any{
		"metadata": map[string]any{"labels": p.Labels, "annotations": p.Annotations},
		"images":   p.Images,
	})
}

// compareClaims reports every PersistentVolumeClaim that went or came.
func compareClaims(before, after map[string]string) []difference {
	var diffs []difference
	for _, name := range sortedKeys(before, after) {
		if b, a := before[name], after[name]; b != a {
			diffs = append(diffs, difference{Kind: "PersistentVolumeClaim", Object: name, Path: "metadata.uid", Before: orAbsent(b), After: orAbsent(a)})
		}
	}
	return diffs
}

// compareRevisions reports every ControllerRevision that came, went or changed its data,
// labels, revision number or owner.
func compareRevisions(before, after map[string]revision) []difference {
	var diffs []difference
	for _, name := range sortedKeys(before, after) {
		b, bok := before[name]
		a, aok := after[name]
		switch {
		case !aok:
			diffs = append(diffs, difference{Kind: "ControllerRevision", Object: name, Path: "object", Before: "present", After: "absent"})
		case !bok:
			diffs = append(diffs, difference{Kind: "ControllerRevision", Object: name, Path: "object", Before: "absent", After: "present"})
		default:
			for _, d := range diffValues("", b.tree(), a.tree()) {
				d.Kind, d.Object, d.Path = "ControllerRevision", name, strings.TrimPrefix(d.Path, ".")
				diffs = append(diffs, d)
			}
		}
	}
	return diffs
}

func orAbsent(s string) string {
	if s == "" {
		return "<absent>"
	}
	return s
}

func sortedKeys[V any](maps ...map[string]V) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}
