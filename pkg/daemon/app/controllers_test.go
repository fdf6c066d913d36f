package app

import (
	"context"
	"slices"
	"testing"

	"github.com/bosun-dev/bosun/pkg/daemon/controller"
	"github.com/bosun-dev/bosun/pkg/daemon/controller/runtimecondition"
)

// Only the runtime reporter starts before the runtime answered, since it reports that wait;
// its events name the whole agent.
func TestAgentControllers(t *testing.T) {
	seen := map[string]bool{}
	var atOnce []string
	for _, entry := range agentControllers() {
		if seen[entry.name] {
			t.Errorf("%s is listed twice", entry.name)
		}
		seen[entry.name] = true
		if entry.startsBeforeRuntime {
			atOnce = append(atOnce, entry.name)
		}
		wantSource := ""
		if entry.name == runtimecondition.ControllerName {
			wantSource = componentName
		}
		if entry.eventSource != wantSource {
			t.Errorf("%s records events as %q, want %q (empty: its name)", entry.name, entry.eventSource, wantSource)
		}
	}
	if want := []string{runtimecondition.ControllerName}; !slices.Equal(atOnce, want) {
		t.Errorf("controllers starting at once %v, want %v", atOnce, want)
	}
}

type idleController struct{}

func (idleController) Run(context.Context) {}

func TestBuildControllers(t *testing.T) {
	newController := func(_ context.Context, cc *controller.Context) (controller.Controller, error) {
		return idleController{}, nil
	}
	entries := []agentController{
		{name: "early", new: newController, startsBeforeRuntime: true, eventSource: "agent"},
		{name: "late-a", new: newController},
		{name: "late-b", new: newController},
	}
	var asked []string
	built, err := buildControllers(context.Background(), entries, func(name, eventSource string) (controller.Context, error) {
		asked = append(asked, name+"/"+eventSource)
		return controller.Context{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"early/agent", "late-a/late-a", "late-b/late-b"}; !slices.Equal(asked, want) {
		t.Errorf("contexts asked for %v, want %v", asked, want)
	}
	atOnce, afterRuntime := byStart(built)
	if got := names(atOnce); !slices.Equal(got, []string{"early"}) {
		t.Errorf("at once: %v", got)
	}
	if got := names(afterRuntime); !slices.Equal(got, []string{"late-a", "late-b"}) {
		t.Errorf("after the runtime: %v", got)
	}
}
