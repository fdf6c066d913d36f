package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bosun-dev/bosun/pkg/cmdutil"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
)

func TestCommandRejectsInvalidFlagsBeforeContactingAnything(t *testing.T) {
	reg := registry.New()
	noop := func(context.Context, *registry.ControllerContext) (registry.Controller, error) {
		return &fakeController{}, nil
	}
	reg.MustRegister(registry.Descriptor{Name: "replicaset-controller", Aliases: []string{"replicaset"}, Constructor: noop})
	reg.MustRegister(registry.Descriptor{Name: "garbage-collector-controller", Aliases: []string{"garbagecollector"}, Constructor: noop})

	cmd := newCommand(reg, features.NewFeatureGate())
	var stderr bytes.Buffer
	cmd.SetErr(&stderr)
	// As cli.Run does: the command's own output is all that is printed.
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetOut(&stderr)
	// An unreachable --master proves nothing is contacted: validation fails first.
	cmd.SetArgs([]string{"--controllers=nosuch", "--leader-elect-retry-period=0s", "--master=https://192.0.2.1:1"})
	err := cmd.Execute()
	if !errors.Is(err, cmdutil.ErrInvalidFlags) {
		t.Fatalf("Execute = %v, want ErrInvalidFlags", err)
	}
	out := stderr.String()
	for _, want := range []string{
		`Error: "nosuch" is not in the list of known controllers; valid names are: garbage-collector-controller (alias garbagecollector), replicaset-controller (alias replicaset)`,
		"Error: --leader-elect-retry-period must be greater than 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr %q lacks %q", out, want)
		}
	}
}
