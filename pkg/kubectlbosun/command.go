// Package kubectlbosun is the kubectl plugin `kubectl bosun`: `rollout status`, `history`,
// `undo`, `pause`, `resume` and `restart` for CloneSets and Advanced DaemonSets, the rollouts
// `kubectl rollout` does not know. Its flags, messages and output follow kubectl's, through
// k8s.io/cli-runtime: the same kubeconfig and namespace flags, `-o name|json|yaml`, and the
// same words for the same states.
package kubectlbosun

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
)

// NewCommand returns the plugin's root command, `kubectl bosun`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use: "bosun",
		// Help and usage say "kubectl bosun ...", the way users call the plugin.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl bosun"},
		Short:       "Roll out bosun's workloads: CloneSets and Advanced DaemonSets",
		// Errors are printed once, by main, as kubectl prints them.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	configFlags.AddFlags(root.PersistentFlags())
	env := &environment{config: configFlags, streams: streams}

	rollout := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a CloneSet or an Advanced DaemonSet",
		Long: `Manage the rollout of a CloneSet or an Advanced DaemonSet (apps.kruise.io), as
kubectl rollout does for Deployments and DaemonSets. Resources are given as TYPE/NAME or
TYPE NAME; TYPE is cloneset (clone) or daemonset (ads, advanceddaemonset), the
apps.kruise.io kinds.`,
	}
	rollout.AddCommand(
		newStatusCommand(env),
		newHistoryCommand(env),
		newUndoCommand(env),
		newPauseCommand(env, true),
		newPauseCommand(env, false),
		newRestartCommand(env),
	)
	root.AddCommand(rollout)
	return root
}

// environment is what every command needs: the clients from kubectl's flags, and where to
// write.
type environment struct {
	config  *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
}

// setUp resolves the command's arguments to a target and builds the clients.
func (e *environment) setUp(args []string) (*clients, target, error) {
	namespace, _, err := e.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, target{}, err
	}
	t, err := parseTarget(args, namespace)
	if err != nil {
		return nil, target{}, err
	}
	restConfig, err := e.config.ToRESTConfig()
	if err != nil {
		return nil, target{}, err
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, target{}, err
	}
	bosun, err := bosunclientset.NewForConfig(restConfig)
	if err != nil {
		return nil, target{}, err
	}
	return &clients{kube: kube, bosun: bosun}, t, nil
}

// load resolves the arguments and reads the target they name.
func (e *environment) load(ctx context.Context, args []string) (*clients, target, workload, error) {
	c, t, err := e.setUp(args)
	if err != nil {
		return nil, target{}, nil, err
	}
	w, err := e.get(ctx, c, t)
	return c, t, w, err
}

// loadHistory is load, and the revisions the workload's controller keeps, oldest first.
func (e *environment) loadHistory(ctx context.Context, args []string) (*clients, target, workload, []appsv1.ControllerRevision, error) {
	c, t, w, err := e.load(ctx, args)
	if err != nil {
		return nil, target{}, nil, nil, err
	}
	revs, err := revisions(ctx, c, w)
	return c, t, w, revs, err
}

// get reads the target.
func (e *environment) get(ctx context.Context, c *clients, t target) (workload, error) {
	w, err := t.kind.get(ctx, c, t.namespace, t.name)
	if err != nil {
		return nil, fmt.Errorf("getting %s in namespace %s: %w", t, t.namespace, err)
	}
	return w, nil
}
