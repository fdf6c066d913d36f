package kubectlbosun

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/bosun-dev/client-go/clientset/versioned/scheme"
)

// restartedAtAnnotation is the template annotation `kubectl rollout restart` sets: a new
// value is a new template, so every pod is replaced.
const restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// change is what pause, resume, restart and undo share: they read the object, patch it, and
// print the result as kubectl does ("<resource>/<name> <operation>", or -o json|yaml|name).
type change struct {
	env        *environment
	printFlags *genericclioptions.PrintFlags
}

func newChange(env *environment, operation string) *change {
	return &change{env: env, printFlags: genericclioptions.NewPrintFlags(operation).WithTypeSetter(scheme.Scheme)}
}

func (ch *change) addFlags(cmd *cobra.Command) { ch.printFlags.AddFlags(cmd) }

// apply patches t with data and prints the patched object.
func (ch *change) apply(cmd *cobra.Command, c *clients, t target, pt types.PatchType, data []byte) error {
	patched, err := t.kind.patch(cmd.Context(), c, t.namespace, t.name, pt, data)
	if err != nil {
		return fmt.Errorf("patching %s: %w", t, err)
	}
	return ch.print(patched)
}

func (ch *change) print(obj runtime.Object) error {
	printer, err := ch.printFlags.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, ch.env.streams.Out)
}

func newPauseCommand(env *environment, pause bool) *cobra.Command {
	verb, done, already := "pause", "paused", "is already paused"
	short := "Mark the provided resource as paused: its pods are not updated until it is resumed (scaling goes on)"
	if !pause {
		verb, done, already = "resume", "resumed", "is not paused"
		short = "Resume a paused resource: its update goes on"
	}
	ch := newChange(env, done)
	cmd := &cobra.Command{
		Use:     verb + " (TYPE NAME | TYPE/NAME)",
		Short:   short,
		Example: fmt.Sprintf("  kubectl bosun rollout %s cloneset/web", verb),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, w, err := env.load(cmd.Context(), args)
			if err != nil {
				return err
			}
			if w.paused() == pause {
				return fmt.Errorf("%s %q %s", t.kind.resource, t.name, already)
			}
			return ch.apply(cmd, c, t, types.MergePatchType, pausePatch(pause))
		},
	}
	ch.addFlags(cmd)
	return cmd
}

func newRestartCommand(env *environment) *cobra.Command {
	ch := newChange(env, "restarted")
	cmd := &cobra.Command{
		Use:   "restart (TYPE NAME | TYPE/NAME)",
		Short: "Restart a resource: every pod is replaced, as by a new template",
		Long: `Restart a resource: the pod template gets the annotation
kubectl.kubernetes.io/restartedAt with the current time, so the controller rolls every pod
out again under the update strategy (in place where the strategy allows it).`,
		Example: "  kubectl bosun rollout restart daemonset/agent",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, w, err := env.load(cmd.Context(), args)
			if err != nil {
				return err
			}
			if w.paused() {
				return fmt.Errorf("can't restart paused %s %q (run rollout resume first)", t.kind.resource, t.name)
			}
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
				"annotations": map[string]string{restartedAtAnnotation: time.Now().Format(time.RFC3339)},
			}}}})
			if err != nil {
				return err
			}
			return ch.apply(cmd, c, t, types.MergePatchType, patch)
		},
	}
	ch.addFlags(cmd)
	return cmd
}

func newUndoCommand(env *environment) *cobra.Command {
	var toRevision int64
	ch := newChange(env, "rolled back")
	cmd := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Roll back to a previous rollout",
		Long: `Roll back to a previous revision of the pod template: the one before the current by
default, or --to-revision. The template is set back to what the revision records, and the
controller rolls the pods out to it under the update strategy.`,
		Example: `  kubectl bosun rollout undo cloneset/web
  kubectl bosun rollout undo daemonset/agent --to-revision=2`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, t, w, revs, err := env.loadHistory(ctx, args)
			if err != nil {
				return err
			}
			if len(revs) == 0 {
				return fmt.Errorf("no rollout history found for %s %q", t.kind.resource, t.name)
			}
			chosen := -1
			switch {
			case toRevision > 0:
				for i := range revs {
					if revs[i].Revision == toRevision {
						chosen = i
					}
				}
				if chosen < 0 {
					return fmt.Errorf("unable to find specified revision %d in history", toRevision)
				}
			default:
				// The newest revision that is not the current template.
				for i := len(revs) - 1; i >= 0 && chosen < 0; i-- {
					if !recordsTemplate(&revs[i], w) {
						chosen = i
					}
				}
				if chosen < 0 {
					return fmt.Errorf("no revision of %s %q to roll back to: its history holds the current template only", t.kind.resource, t.name)
				}
			}
			if recordsTemplate(&revs[chosen], w) {
				fmt.Fprintf(env.streams.Out, "%s skipped rollback (current template already matches revision %d)\n", t, revs[chosen].Revision)
				return nil
			}
			template, err := revisionTemplate(&revs[chosen])
			if err != nil {
				return err
			}
			// A JSON patch replaces the template as a whole: a merge patch would keep the fields
			// the current template has and the revision's lacks.
			patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template", "value": template}})
			if err != nil {
				return err
			}
			return ch.apply(cmd, c, t, types.JSONPatchType, patch)
		},
	}
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "The revision to rollback to. Default to 0 (last revision).")
	ch.addFlags(cmd)
	return cmd
}
