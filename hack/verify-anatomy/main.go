// Command verify-anatomy checks mechanically that every controller folder has the anatomy
// docs/architecture.md describes, so that the next controller copies the rule and not a
// drift from it. A controller folder is a package directly under pkg/controller or
// pkg/daemon/controller that declares a `Controller` struct type. Each must have:
//
//   - doc.go, holding the package comment;
//   - a `ControllerName` constant;
//   - `NewController` whose last parameter is `...options.Option`;
//   - its informer handlers registered through `informers.AddHandlers`, and no direct
//     `AddEventHandler` call;
//   - a `syncHandler` field in `Controller`, which tests may replace;
//   - a fixture_test.go, and tests that configure the controller through the same options
//     as production: they never assign a private field of the Controller other than
//     syncHandler and cachesSynced;
//   - exactly one registration, one line long: an entry of builtinControllers in
//     pkg/controllermanager/app/controllers.go or of agentControllers in
//     pkg/daemon/app/controllers.go naming the package's ControllerName.
//
// A folder may break a rule only when docs/architecture.md says why, in the table between
// the markers "<!-- anatomy-exceptions -->" and "<!-- /anatomy-exceptions -->" (a row:
// | `folder` | `rule` | why |). An exception whose rule the folder follows after all is
// reported as stale, so the document stays true.
//
// Usage: go run ./hack/verify-anatomy [repository root]
package main

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

const modulePath = "github.com/bosun-dev/bosun"

// The rules, by the names the exceptions table uses.
const (
	ruleDoc          = "doc.go"
	ruleName         = "ControllerName"
	ruleConstructor  = "NewController"
	ruleHandlers     = "AddHandlers"
	ruleSyncHandler  = "syncHandler"
	ruleFixture      = "fixture_test.go"
	ruleRegistration = "registration"
	ruleTestsOptions = "options"
)

var allRules = []string{ruleDoc, ruleName, ruleConstructor, ruleHandlers, ruleSyncHandler, ruleFixture, ruleRegistration, ruleTestsOptions}

// replaceableHooks are the private fields of a Controller that tests may set: the sync a
// handler test stubs out, and the cache-sync check a fixture without running informers
// cannot pass.
var replaceableHooks = []string{"syncHandler", "cachesSynced"}

// controllerVariables are the names tests give the Controller under test.
var controllerVariables = []string{"c", "ctrl", "controller"}

// controllerParents are the folders whose direct children may be controller folders.
var controllerParents = []string{"pkg/controller", "pkg/daemon/controller"}

// registries are the files and functions whose composite literals register controllers.
var registries = []struct{ file, function string }{
	{"pkg/controllermanager/app/controllers.go", "builtinControllers"},
	{"pkg/daemon/app/controllers.go", "agentControllers"},
}

const architectureDoc = "docs/architecture.md"

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	problems, err := check(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify-anatomy: %v\n", err)
		os.Exit(2)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		fmt.Fprintf(os.Stderr, "%d anatomy problem(s): follow docs/architecture.md (\"Anatomy of a controller\"), or say there why not\n", len(problems))
		os.Exit(1)
	}
	fmt.Println("every controller folder follows the anatomy of docs/architecture.md")
}

// check returns one line per broken rule without an exception and per stale exception.
func check(root string) ([]string, error) {
	folders, err := controllerFolders(root)
	if err != nil {
		return nil, err
	}
	registered, regProblems, err := registrations(root)
	if err != nil {
		return nil, err
	}
	exceptions, err := readExceptions(filepath.Join(root, architectureDoc))
	if err != nil {
		return nil, err
	}

	var problems []string
	problems = append(problems, regProblems...)
	// A registered folder is a controller folder even when its type has another name.
	for folder := range registered {
		if !slices.Contains(folders, folder) {
			folders = append(folders, folder)
		}
	}
	seen := map[string]bool{}
	for _, folder := range folders {
		seen[folder] = true
		broken, err := brokenRules(root, folder, registered[folder])
		if err != nil {
			return nil, err
		}
		for _, rule := range allRules {
			why, broke := broken[rule]
			_, excused := exceptions[exceptionKey{folder, rule}]
			switch {
			case broke && !excused:
				problems = append(problems, fmt.Sprintf("%s: %s: %s", folder, rule, why))
			case !broke && excused:
				problems = append(problems, fmt.Sprintf("%s: %s: %s lists an exception, but the folder follows the rule: remove the row", folder, rule, architectureDoc))
			}
		}
	}
	for key := range exceptions {
		if !seen[key.folder] {
			problems = append(problems, fmt.Sprintf("%s: %s lists an exception for a folder that is not a controller folder", key.folder, architectureDoc))
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// controllerFolders lists the packages directly under controllerParents that declare a
// Controller struct type, relative to root, slash-separated.
func controllerFolders(root string) ([]string, error) {
	var folders []string
	for _, parent := range controllerParents {
		entries, err := os.ReadDir(filepath.Join(root, parent))
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", parent, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			folder := path.Join(parent, e.Name())
			files, err := parseFolder(root, folder)
			if err != nil {
				return nil, err
			}
			if findType(files, "Controller") != nil {
				folders = append(folders, folder)
			}
		}
	}
	return folders, nil
}

// parseFolder parses the non-test Go files of one folder.
func parseFolder(root, folder string) ([]*ast.File, error) {
	matches, err := filepath.Glob(filepath.Join(root, folder, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", m, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// brokenRules returns, for each rule the folder breaks, what is wrong.
func brokenRules(root, folder string, registrations int) (map[string]string, error) {
	files, err := parseFolder(root, folder)
	if err != nil {
		return nil, err
	}
	broken := map[string]string{}

	if doc, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, folder, "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			broken[ruleDoc] = "no doc.go"
		} else {
			return nil, fmt.Errorf("parsing %s/doc.go: %w", folder, err)
		}
	} else if doc.Doc == nil {
		broken[ruleDoc] = "doc.go has no package comment"
	}

	if !declaresConst(files, "ControllerName") {
		broken[ruleName] = "no ControllerName constant"
	}

	if why := constructorProblem(files); why != "" {
		broken[ruleConstructor] = why
	}

	if why := handlersProblem(files); why != "" {
		broken[ruleHandlers] = why
	}

	if st := findType(files, "Controller"); st == nil || !hasField(st, "syncHandler") {
		broken[ruleSyncHandler] = "Controller has no syncHandler field"
	}

	if _, err := os.Stat(filepath.Join(root, folder, "fixture_test.go")); err != nil {
		broken[ruleFixture] = "no fixture_test.go"
	}

	if st := findType(files, "Controller"); st != nil {
		assigned, err := privateFieldAssignments(root, folder, st)
		if err != nil {
			return nil, err
		}
		if len(assigned) > 0 {
			broken[ruleTestsOptions] = "tests assign private fields of Controller instead of passing options: " + strings.Join(assigned, ", ")
		}
	}

	switch registrations {
	case 0:
		broken[ruleRegistration] = "ControllerName is not registered in builtinControllers or agentControllers"
	case 1:
	default:
		broken[ruleRegistration] = fmt.Sprintf("registered %d times", registrations)
	}
	return broken, nil
}

// privateFieldAssignments lists, as file:line field, the assignments in the folder's tests
// to private fields of st (other than the replaceable hooks) through a variable named like
// the controller under test.
func privateFieldAssignments(root, folder string, st *ast.StructType) ([]string, error) {
	private := map[string]bool{}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if !ast.IsExported(n.Name) && !slices.Contains(replaceableHooks, n.Name) {
				private[n.Name] = true
			}
		}
	}
	matches, err := filepath.Glob(filepath.Join(root, folder, "*_test.go"))
	if err != nil {
		return nil, err
	}
	var found []string
	fset := token.NewFileSet()
	for _, m := range matches {
		f, err := parser.ParseFile(fset, m, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", m, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			assign, ok := n.(*ast.AssignStmt)
			if !ok || assign.Tok != token.ASSIGN {
				return true
			}
			for _, lhs := range assign.Lhs {
				sel, ok := lhs.(*ast.SelectorExpr)
				if !ok || !private[sel.Sel.Name] || !namesController(sel.X) {
					continue
				}
				pos := fset.Position(sel.Pos())
				found = append(found, fmt.Sprintf("%s:%d %s", filepath.Base(pos.Filename), pos.Line, sel.Sel.Name))
			}
			return true
		})
	}
	return found, nil
}

// namesController tells whether x is c, ctrl or controller, or a field of that name
// (f.c).
func namesController(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return slices.Contains(controllerVariables, x.Name)
	case *ast.SelectorExpr:
		return slices.Contains(controllerVariables, x.Sel.Name)
	}
	return false
}

func findType(files []*ast.File, name string) *ast.StructType {
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok && ts.Name.Name == name {
					return st
				}
			}
		}
	}
	return nil
}

func hasField(st *ast.StructType, name string) bool {
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == name {
				return true
			}
		}
	}
	return false
}

func declaresConst(files []*ast.File, name string) bool {
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if n.Name == name {
						return true
					}
				}
			}
		}
	}
	return false
}

// constructorProblem says what is wrong with NewController, or "" when it takes options.
func constructorProblem(files []*ast.File) string {
	for _, f := range files {
		optionsName := importName(f, modulePath+"/pkg/controller/options")
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Name.Name != "NewController" {
				continue
			}
			params := fd.Type.Params.List
			if len(params) == 0 {
				return "NewController takes no options"
			}
			ell, ok := params[len(params)-1].Type.(*ast.Ellipsis)
			if !ok {
				return "NewController's last parameter is not ...options.Option"
			}
			sel, ok := ell.Elt.(*ast.SelectorExpr)
			if !ok || optionsName == "" || sel.Sel.Name != "Option" {
				return "NewController's last parameter is not ...options.Option"
			}
			if id, ok := sel.X.(*ast.Ident); !ok || id.Name != optionsName {
				return "NewController's last parameter is not ...options.Option"
			}
			return ""
		}
	}
	return "no NewController function"
}

// handlersProblem says how the folder registers informer handlers other than through
// informers.AddHandlers, or "" when it uses only that.
func handlersProblem(files []*ast.File) string {
	direct, usesToolkit := false, false
	for _, f := range files {
		informersName := importName(f, modulePath+"/pkg/controller/informers")
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "AddEventHandler", "AddEventHandlerWithOptions", "AddEventHandlerWithResyncPeriod":
				direct = true
			case "AddHandlers", "AddRemovableHandlers":
				if id, ok := sel.X.(*ast.Ident); ok && informersName != "" && id.Name == informersName {
					usesToolkit = true
				}
			}
			return true
		})
	}
	switch {
	case direct:
		return "registers informer handlers directly with AddEventHandler instead of informers.AddHandlers"
	case !usesToolkit:
		return "registers no informer handlers through informers.AddHandlers"
	}
	return ""
}

// importName returns the name under which f imports importPath, or "".
func importName(f *ast.File, importPath string) string {
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || p != importPath {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return path.Base(p)
	}
	return ""
}

// registrations counts, per controller folder, the entries of the registries that name its
// ControllerName, and reports entries that are not one-line composite literals.
func registrations(root string) (map[string]int, []string, error) {
	counts := map[string]int{}
	var problems []string
	for _, reg := range registries {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, reg.file), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, fmt.Errorf("parsing %s: %w", reg.file, err)
		}
		imports := map[string]string{}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = p
		}
		var fn *ast.FuncDecl
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == reg.function {
				fn = fd
			}
		}
		if fn == nil {
			return nil, nil, fmt.Errorf("%s: no function %s", reg.file, reg.function)
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			list, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if _, isSlice := list.Type.(*ast.ArrayType); !isSlice {
				return true
			}
			for _, elt := range list.Elts {
				pos := fset.Position(elt.Pos())
				entry, ok := elt.(*ast.CompositeLit)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: a registration is not a one-line entry (a call or a variable)", reg.file, pos.Line, ruleRegistration))
					continue
				}
				if end := fset.Position(entry.End()); end.Line != pos.Line {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: the entry spans %d lines, not one", reg.file, pos.Line, ruleRegistration, end.Line-pos.Line+1))
				}
				folder := registeredFolder(entry, imports)
				if folder == "" {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: the entry does not name a package's ControllerName", reg.file, pos.Line, ruleRegistration))
					continue
				}
				counts[folder]++
			}
			return false
		})
	}
	return counts, problems, nil
}

// registeredFolder returns the folder whose ControllerName the entry's name field names.
func registeredFolder(entry *ast.CompositeLit, imports map[string]string) string {
	for _, e := range entry.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok || !strings.EqualFold(key.Name, "name") {
			continue
		}
		sel, ok := kv.Value.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "ControllerName" {
			return ""
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return ""
		}
		p, ok := imports[id.Name]
		if !ok || !strings.HasPrefix(p, modulePath+"/") {
			return ""
		}
		return strings.TrimPrefix(p, modulePath+"/")
	}
	return ""
}

type exceptionKey struct{ folder, rule string }

var exceptionRow = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|\\s*`([^`]+)`\\s*\\|\\s*(.*?)\\s*\\|\\s*$")

// readExceptions reads the exceptions table of the architecture document.
func readExceptions(file string) (map[exceptionKey]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	exceptions := map[exceptionKey]string{}
	inTable, found := false, false
	scanner := bufio.NewScanner(f)
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		switch {
		case text == "<!-- anatomy-exceptions -->":
			inTable, found = true, true
			continue
		case text == "<!-- /anatomy-exceptions -->":
			inTable = false
			continue
		}
		if !inTable || !strings.HasPrefix(text, "|") {
			continue
		}
		m := exceptionRow.FindStringSubmatch(text)
		if m == nil {
			continue // the header and separator rows
		}
		if !knownRule(m[2]) {
			return nil, fmt.Errorf("%s:%d: unknown rule %q (rules: %s)", file, line, m[2], strings.Join(allRules, ", "))
		}
		if m[3] == "" {
			return nil, fmt.Errorf("%s:%d: the exception for %s %s does not say why", file, line, m[1], m[2])
		}
		exceptions[exceptionKey{m[1], m[2]}] = m[3]
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s has no <!-- anatomy-exceptions --> table", file)
	}
	return exceptions, nil
}

func knownRule(rule string) bool {
	for _, r := range allRules {
		if r == rule {
			return true
		}
	}
	return false
}
