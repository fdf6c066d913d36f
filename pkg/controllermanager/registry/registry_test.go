package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type noopController struct{}

func (noopController) Run(ctx context.Context) { <-ctx.Done() }

func construct(context.Context, *ControllerContext) (Controller, error) { return noopController{}, nil }

// testRegistry registers the three built-in names of the spec plus one controller that is off
// by default.
func testRegistry(t *testing.T) *Registry {
	t.Helper()
	r := New()
	for _, d := range []Descriptor{
		{Name: "replicaset-controller", Aliases: []string{"replicaset"}, Constructor: construct},
		{Name: "deployment-controller", Aliases: []string{"deployment"}, Constructor: construct},
		{Name: "garbage-collector-controller", Aliases: []string{"garbagecollector"}, ClientName: "generic-garbage-collector", Constructor: construct},
		{Name: "optional-controller", Aliases: []string{"optional"}, Constructor: construct, DisabledByDefault: true},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestEnabled(t *testing.T) {
	const (
		rs  = "replicaset-controller"
		dep = "deployment-controller"
		gc  = "garbage-collector-controller"
		opt = "optional-controller"
	)
	tests := []struct {
		controllers []string
		want        []string
	}{
		// The selection table of the acceptance scenarios.
		{controllers: []string{"*"}, want: []string{dep, gc, rs}},
		{controllers: []string{"*", "-garbagecollector"}, want: []string{dep, rs}},
		{controllers: []string{"replicaset"}, want: []string{rs}},
		{controllers: []string{"-replicaset", "*"}, want: []string{dep, gc}},
		{controllers: []string{"replicaset", "-replicaset"}, want: []string{rs}},
		{controllers: []string{}, want: nil},
		{controllers: []string{""}, want: nil},
		// Canonical names and aliases are the same controller; the first entry decides.
		{controllers: []string{"-replicaset-controller", "replicaset", "*"}, want: []string{dep, gc}},
		{controllers: []string{"replicaset-controller", "-replicaset"}, want: []string{rs}},
		// Disabled-by-default controllers run only when named.
		{controllers: []string{"*", "optional"}, want: []string{dep, gc, opt, rs}},
		{controllers: []string{"optional-controller"}, want: []string{opt}},
		{controllers: []string{"*", "-optional"}, want: []string{dep, gc, rs}},
		// Disabling without "*" enables nothing.
		{controllers: []string{"-deployment"}, want: nil},
	}
	r := testRegistry(t)
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", strings.Join(tc.controllers, ",")), func(t *testing.T) {
			if err := r.Validate(tc.controllers); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := r.Enabled(tc.controllers); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Enabled(%q) = %v, want %v", tc.controllers, got, tc.want)
			}
		})
	}
}

func TestValidateUnknownNames(t *testing.T) {
	r := testRegistry(t)
	err := r.Validate([]string{"*", "nosuch", "-alsonot", "replicaset", "-*"})
	if err == nil {
		t.Fatal("unknown names accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`"nosuch" is not in the list of known controllers`,
		`"alsonot" is not in the list of known controllers`,
		`"*" is not in the list of known controllers`,
		"replicaset-controller (alias replicaset)",
		"deployment-controller (alias deployment)",
		"garbage-collector-controller (alias garbagecollector)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, `"replicaset" is not`) {
		t.Errorf("known alias reported unknown: %q", msg)
	}
}

func TestValidateWithNoControllers(t *testing.T) {
	r := New()
	if err := r.Validate([]string{"*"}); err != nil {
		t.Errorf("'*' with no controllers: %v", err)
	}
	if got := r.Enabled([]string{"*"}); len(got) != 0 {
		t.Errorf("Enabled = %v, want none", got)
	}
	err := r.Validate([]string{"nosuch"})
	if err == nil || !strings.Contains(err.Error(), `"nosuch" is not in the list of known controllers`) {
		t.Errorf("unknown name with empty registry: %v", err)
	}
}

func TestRegister(t *testing.T) {
	r := testRegistry(t)
	tests := []struct {
		name string
		d    Descriptor
	}{
		{name: "duplicate canonical name", d: Descriptor{Name: "replicaset-controller", Constructor: construct}},
		{name: "alias taken by another controller", d: Descriptor{Name: "x-controller", Aliases: []string{"deployment"}, Constructor: construct}},
		{name: "name taken as alias", d: Descriptor{Name: "replicaset", Constructor: construct}},
		{name: "no constructor", d: Descriptor{Name: "y-controller"}},
		{name: "no name", d: Descriptor{Constructor: construct}},
		{name: "star", d: Descriptor{Name: "*", Constructor: construct}},
		{name: "leading dash", d: Descriptor{Name: "z-controller", Aliases: []string{"-z"}, Constructor: construct}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.Register(tc.d); err == nil {
				t.Errorf("Register(%+v) succeeded", tc.d)
			}
		})
	}
	d, ok := r.Get("garbagecollector")
	if !ok || d.Name != "garbage-collector-controller" || d.ClientName != "generic-garbage-collector" {
		t.Errorf("Get(alias) = %+v, %v", d, ok)
	}
	d, _ = r.Get("replicaset-controller")
	if d.ClientName != "replicaset-controller" {
		t.Errorf("empty ClientName defaulted to %q, want the canonical name", d.ClientName)
	}
}

func TestHelpText(t *testing.T) {
	help := testRegistry(t).HelpText()
	for _, want := range []string{
		"All controllers: deployment-controller (alias deployment), garbage-collector-controller (alias garbagecollector), optional-controller (alias optional), replicaset-controller (alias replicaset)",
		"Disabled-by-default controllers: optional-controller",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help text %q lacks %q", help, want)
		}
	}
}

func TestNotBuilt(t *testing.T) {
	err := fmt.Errorf("building: %w", NotBuilt("--enable-garbage-collector=false"))
	if reason, ok := IsNotBuilt(err); !ok || reason != "--enable-garbage-collector=false" {
		t.Errorf("IsNotBuilt(wrapped) = %q, %v", reason, ok)
	}
	if _, ok := IsNotBuilt(errors.New("boom")); ok {
		t.Error("ordinary error reported as not built")
	}
}

func TestWithKruiseClientLimits(t *testing.T) {
	r := testRegistry(t)
	if got := r.WithKruiseClientLimits(); len(got) != 0 {
		t.Errorf("no descriptor asks for them, got %v", got)
	}
	for _, name := range []string{"pod-controller", "advanced-daemonset-controller"} {
		r.MustRegister(Descriptor{Name: name, Constructor: construct, KruiseClientLimits: true})
	}
	if got, want := r.WithKruiseClientLimits(), []string{"advanced-daemonset-controller", "pod-controller"}; !reflect.DeepEqual(got, want) {
		t.Errorf("WithKruiseClientLimits() = %v, want %v", got, want)
	}
	if d, _ := r.Get("replicaset"); d.KruiseClientLimits {
		t.Error("Register turned on KruiseClientLimits for a descriptor without it")
	}
}
