// Package cmdutil holds the small pieces both bosun binaries' commands share: the cobra
// command with its flag handling, error printing and the start-up log.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	// Makes --logging-format=json available.
	_ "k8s.io/component-base/logs/json/register"
)

// Command describes one of bosun's binaries for NewCommand.
type Command struct {
	// Name is the binary's name, Long its --help description.
	Name, Long string
	// Flags are all of the binary's flags, grouped for --help.
	Flags cliflag.NamedFlagSets
	// Logs and FeatureGate receive the logging flags and --feature-gates; logging is set up
	// from them once the flags are valid.
	Logs        *logsapi.LoggingConfiguration
	FeatureGate featuregate.MutableVersionedFeatureGate
	// Validate returns every problem with the flags at once.
	Validate func() error
	// Run runs the binary until ctx ends: at the first SIGTERM or SIGINT (a second one
	// exits at once with status 1).
	Run func(ctx context.Context) error
}

// NewCommand returns the cobra command of a binary: --version, then flag validation that
// reports all errors before anything is contacted, then logging, then Run.
func NewCommand(c Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:  c.Name,
		Long: c.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			verflag.PrintAndExitIfRequested()
			if err := c.Validate(); err != nil {
				PrintErrors(cmd.ErrOrStderr(), err)
				return ErrInvalidFlags
			}
			if err := logsapi.ValidateAndApply(c.Logs, c.FeatureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())
			return c.Run(genericapiserver.SetupSignalContext())
		},
	}
	AddFlagSets(cmd.Flags(), c.Flags)
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, c.Flags, cols)
	return cmd
}

// AddFlagSets adds every flag of fss to fs.
func AddFlagSets(fs *pflag.FlagSet, fss cliflag.NamedFlagSets) {
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
}

// ErrInvalidFlags is what a command returns after PrintErrors reported its flag problems.
var ErrInvalidFlags = errors.New("invalid command-line flags")

// PrintErrors writes one line per error, unquoted, so that messages such as
// `"nosuch" is not in the list of known controllers` appear exactly as written (a log line
// would escape the quotes).
func PrintErrors(w io.Writer, err error) {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			fmt.Fprintf(w, "Error: %v\n", e)
		}
		return
	}
	fmt.Fprintf(w, "Error: %v\n", err)
}

// LogStartup logs the component's version and the Go runtime settings.
func LogStartup(ctx context.Context, component string) {
	logger := klog.FromContext(ctx)
	logger.Info("Starting", "component", component, "version", version.Get().String())
	logger.Info("Golang settings", "GOGC", os.Getenv("GOGC"), "GOMAXPROCS", goruntime.GOMAXPROCS(0), "GOTRACEBACK", os.Getenv("GOTRACEBACK"))
}
