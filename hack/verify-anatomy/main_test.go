package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree writes files (path → content) under a fresh root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const goodController = `package good

import (
	"github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/options"
)

const ControllerName = "good-controller"

type Controller struct{ syncHandler func(string) error }

func NewController(name string, opts ...options.Option) *Controller {
	_ = informers.AddHandlers(nil, nil, "", informers.Handlers{})
	return &Controller{}
}
`

// badController breaks every rule a file can break: no ControllerName, a constructor
// without options, a direct AddEventHandler call and no syncHandler.
const badController = `package bad

type Controller struct{ queue []string }

func NewController(name string) *Controller {
	var informer interface{ AddEventHandler(any) }
	informer.AddEventHandler(nil)
	return &Controller{}
}
`

func baseTree(manager, daemon, doc string) map[string]string {
	return map[string]string{
		"pkg/controller/good/doc.go":          "// Package good keeps things true.\npackage good\n",
		"pkg/controller/good/controller.go":   goodController,
		"pkg/controller/good/fixture_test.go": "package good\n",
		"pkg/controller/good/sync_test.go":    "package good\n\nfunc TestSync(t *testing.T) {\n\tf := newFixture(t)\n\tf.c.syncHandler = nil // a hook tests may replace\n}\n",
		"pkg/controller/toolkit/toolkit.go":   "package toolkit\n\nfunc Helper() {}\n",
		"pkg/daemon/controller/context.go":    "package controller\n",
		"pkg/controllermanager/app/controllers.go": `package app

import (
	"github.com/bosun-dev/bosun/pkg/controller/good"
	"github.com/bosun-dev/bosun/pkg/controller/bad"
)

func builtinControllers() []registry.Descriptor {
	return []registry.Descriptor{
` + manager + `
	}
}
`,
		"pkg/daemon/app/controllers.go": `package app

import "github.com/bosun-dev/bosun/pkg/controller/good"

func agentControllers() []agentController {
	return []agentController{
` + daemon + `
	}
}
`,
		"docs/architecture.md": "# Architecture\n\n<!-- anatomy-exceptions -->\n| Folder | Rule | Why |\n|---|---|---|\n" + doc + "<!-- /anatomy-exceptions -->\n",
	}
}

func TestAFolderThatFollowsTheAnatomyPasses(t *testing.T) {
	root := tree(t, baseTree(`		{Name: good.ControllerName, Constructor: newGood},`, "", ""))
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("problems for a folder that follows every rule:\n%s", strings.Join(problems, "\n"))
	}
}

func TestEveryBrokenRuleIsReported(t *testing.T) {
	files := baseTree(`		{Name: good.ControllerName, Constructor: newGood},
		badDescriptor(),`, "", "")
	files["pkg/controller/bad/controller.go"] = badController
	files["pkg/controller/bad/sync_test.go"] = `package bad

func TestSync(t *testing.T) {
	f := newFixture(t)
	f.c.syncHandler = nil // a replaceable hook, but bad has no such field: not reported
	f.c.queue = nil
	f.queue = nil // the fixture's own field
	f.c.Exported = nil
}
`
	root := tree(t, files)
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg/controller/bad: AddHandlers: registers informer handlers directly with AddEventHandler instead of informers.AddHandlers",
		"pkg/controller/bad: ControllerName: no ControllerName constant",
		"pkg/controller/bad: NewController: NewController's last parameter is not ...options.Option",
		"pkg/controller/bad: doc.go: no doc.go",
		"pkg/controller/bad: fixture_test.go: no fixture_test.go",
		"pkg/controller/bad: options: tests assign private fields of Controller instead of passing options: sync_test.go:6 queue",
		"pkg/controller/bad: registration: ControllerName is not registered in builtinControllers or agentControllers",
		"pkg/controller/bad: syncHandler: Controller has no syncHandler field",
		"pkg/controllermanager/app/controllers.go:11: registration: a registration is not a one-line entry (a call or a variable)",
	}
	if !slices.Equal(problems, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

func TestRegistrationsSpanningLinesOrRepeatedAreReported(t *testing.T) {
	root := tree(t, baseTree(`		{Name: good.ControllerName,
			Constructor: newGood},`, `		{name: good.ControllerName, new: good.New},`, ""))
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg/controller/good: registration: registered 2 times",
		"pkg/controllermanager/app/controllers.go:10: registration: the entry spans 2 lines, not one",
	}
	if !slices.Equal(problems, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

func TestAnExceptionExcusesARuleAndMustStayTrue(t *testing.T) {
	files := baseTree(`		{Name: good.ControllerName, Constructor: newGood},`, "",
		"| `pkg/controller/good` | `syncHandler` | it has three queues |\n| `pkg/controller/good` | `doc.go` | stale: it has one |\n")
	files["pkg/controller/good/controller.go"] = strings.Replace(goodController, "syncHandler func(string) error", "queues []string", 1)
	root := tree(t, files)
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg/controller/good: doc.go: docs/architecture.md lists an exception, but the folder follows the rule: remove the row",
	}
	if !slices.Equal(problems, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

func TestAnExceptionMustNameAKnownRuleAndSayWhy(t *testing.T) {
	for name, row := range map[string]string{
		"unknown rule": "| `pkg/controller/good` | `tidiness` | because |\n",
		"no reason":    "| `pkg/controller/good` | `syncHandler` |  |\n",
	} {
		t.Run(name, func(t *testing.T) {
			root := tree(t, baseTree(`		{Name: good.ControllerName, Constructor: newGood},`, "", row))
			if _, err := check(root); err == nil {
				t.Fatalf("no error for the row %q", row)
			}
		})
	}
}
