package podcache

import (
	"go/ast"
	"go/types"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
	corev1 "k8s.io/api/core/v1"
)

// The packages whose code runs in bosun-controller-manager with pods from its cache.
var managerPackages = []string{
	"github.com/bosun-dev/bosun/pkg/controller/...",
	"github.com/bosun-dev/bosun/pkg/webhook/...",
	"github.com/bosun-dev/bosun/pkg/controllermanager/...",
}

// readersOfTrimmedFields are the functions of managerPackages allowed to read or write a
// field Trim drops, each with why it never sees a cached pod's copy of it. A new entry
// needs the same: a function that reads a trimmed field of a cached pod gets zero values.
var readersOfTrimmedFields = map[string]string{
	"pkg/controller/advanceddaemonset/daemonsetutil.NodeEligibility":       "judges the DaemonSet's simulated pod, made from its template",
	"pkg/controller/advanceddaemonset/daemonsetutil.AddDefaultTolerations": "adds tolerations to a template or to the simulated pod",
	"pkg/controller/cloneset.topologyKeys":                                 "reads the CloneSet's template",
	"pkg/webhook/pod.isResize":                                             "compares the admitted pod with its old object, both from the admission request",
	"pkg/webhook/pod.qosClass":                                             "reads pods from the admission request",
	"pkg/webhook/pod.resizePolicy":                                         "reads the admitted pod's containers",
	"pkg/webhook/podtemplate.SetDefaults":                                  "defaults a workload's pod template in admission",
	"pkg/webhook/podtemplate.setContainerDefaults":                         "defaults a workload's pod template in admission",
	"pkg/webhook/podtemplate.setVolumeDefaults":                            "defaults a workload's pod template in admission",
	"pkg/webhook/podtemplate.ValidateVolumes":                              "validates a workload's pod template in admission",
}

// A field Trim drops, named by the struct type that holds it.
type trimmedField struct{ typ, field string }

func (f trimmedField) String() string { return f.typ + "." + f.field }

// TestNoManagerCodeReadsATrimmedField fails when code of the manager reads or writes a
// field that Trim drops from cached pods, outside the functions listed above. The trimmed
// fields are found by trimming a pod with every field set, so that a field added to Trim
// is checked without a change here. Reads through reflection (encoding a whole container)
// are not seen: kruisepod.LegacyContainerHash encodes a whole container, the hash of kubelets
// before 1.31, which on a trimmed pod does not match, so that the image IDs decide.
func TestNoManagerCodeReadsATrimmedField(t *testing.T) {
	trimmed := trimmedFields(t)
	if len(trimmed) < 10 {
		t.Fatalf("Trim drops only %v from a pod with every field set", trimmed)
	}
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  "../../..",
	}, managerPackages...)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("loaded %d packages, want the manager's", len(pkgs))
	}
	readers := map[string][]string{} // function → the trimmed fields it touches
	for _, pkg := range pkgs {
		for _, e := range pkg.Errors {
			t.Fatalf("loading %s: %v", pkg.PkgPath, e)
		}
		if pkg.PkgPath == "github.com/bosun-dev/bosun/pkg/controller/podcache" {
			continue // the trimming itself
		}
		for _, file := range pkg.Syntax {
			for _, decl := range file.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				function := fn.Name.Name
				if fn.Recv != nil {
					function = strings.TrimPrefix(typeName(pkg.TypesInfo.TypeOf(fn.Recv.List[0].Type)), pkg.PkgPath+".") + "." + function
				}
				name := strings.TrimPrefix(pkg.PkgPath, "github.com/bosun-dev/bosun/") + "." + function
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					selection := pkg.TypesInfo.Selections[sel]
					if selection == nil || selection.Kind() != types.FieldVal {
						return true
					}
					f := trimmedField{typ: typeName(declaringStruct(selection)), field: sel.Sel.Name}
					if trimmed[f] && !slices.Contains(readers[name], f.String()) {
						readers[name] = append(readers[name], f.String())
					}
					return true
				})
			}
		}
	}
	for name, fields := range readers {
		if _, allowed := readersOfTrimmedFields[name]; !allowed {
			t.Errorf("%s reads %v, which the manager's pod cache drops (podcache.Trim): read the live pod, or add the function to readersOfTrimmedFields with why it never sees a cached pod", name, fields)
		}
	}
	for name := range readersOfTrimmedFields {
		if _, reads := readers[name]; !reads {
			t.Errorf("readersOfTrimmedFields lists %s, which reads no trimmed field: drop it", name)
		}
	}
}

// declaringStruct is the struct type that declares the field selection selects, which for
// a promoted field (a Volume's ConfigMap, declared by its embedded VolumeSource) is not the
// type selected from.
func declaringStruct(selection *types.Selection) types.Type {
	t := selection.Recv()
	path := selection.Index()
	for _, i := range path[:len(path)-1] {
		t = structOf(t).Field(i).Type()
	}
	return t
}

// structOf is the struct behind t, through pointers and names.
func structOf(t types.Type) *types.Struct {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	return t.Underlying().(*types.Struct)
}

// typeName names the struct type behind t (through pointers), as reflect names it.
func typeName(t types.Type) string {
	for {
		p, ok := t.(*types.Pointer)
		if !ok {
			break
		}
		t = p.Elem()
	}
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() == nil {
		return ""
	}
	return named.Obj().Pkg().Path() + "." + named.Obj().Name()
}

// trimmedFields trims a pod with every field set and returns the fields Trim changed.
func trimmedFields(t *testing.T) map[trimmedField]bool {
	var pod corev1.Pod
	fill(reflect.ValueOf(&pod).Elem(), 0)
	before := pod.DeepCopy()
	if _, err := Trim(&pod); err != nil {
		t.Fatal(err)
	}
	changed := map[trimmedField]bool{}
	diffFields(reflect.ValueOf(before).Elem(), reflect.ValueOf(&pod).Elem(), changed)
	var names []string
	for f := range changed {
		names = append(names, f.String())
	}
	sort.Strings(names)
	t.Logf("Trim changes %d fields: %s", len(names), strings.Join(names, ", "))
	return changed
}

// fill sets every exported field reachable from v: one element per slice and map, a
// value for every pointer, 1, true and "x" for scalars. Types with unexported state
// (times, quantities) are left zero.
func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth+1)
	case reflect.Map:
		key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key, depth+1)
		fill(elem, depth+1)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(key, elem)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	}
}

// diffFields records in changed the fields of struct a that differ in b: the field itself
// when b's is zero, a scalar or a slice of another length, else the fields inside it.
func diffFields(a, b reflect.Value, changed map[trimmedField]bool) {
	for i := 0; i < a.NumField(); i++ {
		field := a.Type().Field(i)
		x, y := a.Field(i), b.Field(i)
		if !field.IsExported() || reflect.DeepEqual(x.Interface(), y.Interface()) {
			continue
		}
		name := trimmedField{typ: a.Type().PkgPath() + "." + a.Type().Name(), field: field.Name}
		switch {
		case y.IsZero():
			changed[name] = true
		case x.Kind() == reflect.Struct:
			diffFields(x, y, changed)
		case x.Kind() == reflect.Pointer && x.Elem().Kind() == reflect.Struct:
			diffFields(x.Elem(), y.Elem(), changed)
		case x.Kind() == reflect.Slice && x.Len() == y.Len() && x.Type().Elem().Kind() == reflect.Struct:
			for j := 0; j < x.Len(); j++ {
				diffFields(x.Index(j), y.Index(j), changed)
			}
		default:
			changed[name] = true
		}
	}
}
