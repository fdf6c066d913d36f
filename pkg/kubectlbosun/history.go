package kubectlbosun

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// changeCauseAnnotation is where `kubectl --record` and users note why a template changed;
// the controllers copy it onto the revision.
const changeCauseAnnotation = "kubernetes.io/change-cause"

func newHistoryCommand(env *environment) *cobra.Command {
	var revision int64
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME) [flags]",
		Short: "View rollout history",
		Long: `View the revisions of a CloneSet's or an Advanced DaemonSet's pod template: the
ControllerRevisions its controller keeps, numbered, with their change cause.`,
		Example: `  kubectl bosun rollout history cloneset/web
  kubectl bosun rollout history cloneset/web --revision=3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, t, _, revs, err := env.loadHistory(cmd.Context(), args)
			if err != nil {
				return err
			}
			out := env.streams.Out
			if revision > 0 {
				for i := range revs {
					if revs[i].Revision != revision {
						continue
					}
					template, err := revisionTemplate(&revs[i])
					if err != nil {
						return err
					}
					text, err := yaml.Marshal(template)
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "%s with revision #%d\nPod Template:\n%s", t, revision, indent(string(text), "  "))
					return nil
				}
				return fmt.Errorf("unable to find the specified revision %d of %s", revision, t)
			}
			fmt.Fprintln(out, t)
			tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
			for _, rev := range revs {
				cause := rev.Annotations[changeCauseAnnotation]
				if cause == "" {
					cause = "<none>"
				}
				fmt.Fprintf(tw, "%d\t%s\n", rev.Revision, cause)
			}
			fmt.Fprintln(tw)
			return tw.Flush()
		},
	}
	cmd.Flags().Int64Var(&revision, "revision", 0, "See the details, including podTemplate of the revision specified")
	return cmd
}

func indent(text, prefix string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(prefix + line + "\n")
	}
	return b.String()
}
