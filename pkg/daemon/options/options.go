// Package options defines bosun-daemon's command-line flags, defaults and validation. The
// client, serving, logging and feature-gate flags are the controller manager's, so both
// binaries are configured alike.
package options

import (
	"errors"
	"fmt"
	"os"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"k8s.io/apimachinery/pkg/api/validation"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/version/verflag"

	"github.com/bosun-dev/bosun/pkg/clientconfig"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
	"github.com/bosun-dev/bosun/pkg/serving"
)

const (
	// DefaultSecurePort is the daemon's HTTPS port (the manager uses 10267).
	DefaultSecurePort = 10268
	// ServingCertPairName names the generated self-signed certificate.
	ServingCertPairName = "bosun-daemon"
	// NodeNameEnv is the environment variable --node-name defaults to; a DaemonSet sets it
	// from spec.nodeName.
	NodeNameEnv = "NODE_NAME"
)

// errNodeNameRequired is the exact message operators see without a node name.
var errNodeNameRequired = errors.New("--node-name (or NODE_NAME) is required")

// Options are all flags of bosun-daemon.
type Options struct {
	NodeName          string
	RuntimeEndpoint   string
	RuntimeSocketDirs []string
	// ImagePullSecretsNamespace is the only namespace pull secrets are read from.
	ImagePullSecretsNamespace string
	// MaxParallelImagePulls bounds the pulls running at once; 0 is unlimited.
	MaxParallelImagePulls int

	Client      *clientconfig.Options
	Serving     *serving.Options
	Profiling   serving.ProfilingOptions
	Logs        *logsapi.LoggingConfiguration
	FeatureGate featuregate.MutableVersionedFeatureGate
}

// NewOptions returns the defaults; --node-name defaults to $NODE_NAME.
func NewOptions(gate featuregate.MutableVersionedFeatureGate) *Options {
	return &Options{
		NodeName:                  os.Getenv(NodeNameEnv),
		RuntimeSocketDirs:         append([]string(nil), cri.DefaultSocketDirs...),
		ImagePullSecretsNamespace: appsv1beta1.DefaultImagePullSecretNamespace,
		Client:                    clientconfig.NewOptions(),
		Serving:                   serving.NewOptions(DefaultSecurePort, ServingCertPairName),
		Profiling:                 serving.ProfilingOptions{EnableProfiling: true},
		Logs:                      logsapi.NewLoggingConfiguration(),
		FeatureGate:               gate,
	}
}

// Flags returns the flags grouped for --help.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets

	generic := fss.FlagSet("generic")
	generic.StringVar(&o.NodeName, "node-name", o.NodeName, "The node this agent runs on. Defaults to $"+NodeNameEnv+"; required.")
	generic.StringVar(&o.RuntimeEndpoint, "runtime-endpoint", o.RuntimeEndpoint,
		"CRI v1 endpoint of the container runtime, e.g. unix:///run/containerd/containerd.sock. When empty, the sockets of containerd, "+
			"CRI-O and cri-dockerd are looked for in --runtime-socket-dirs.")
	generic.StringSliceVar(&o.RuntimeSocketDirs, "runtime-socket-dirs", o.RuntimeSocketDirs,
		"Directories searched for a runtime socket when --runtime-endpoint is empty (the host's /run, or where it is mounted).")
	generic.StringVar(&o.ImagePullSecretsNamespace, "image-pull-secrets-namespace", o.ImagePullSecretsNamespace,
		"The only namespace pull secrets of NodeImages are read from; must match bosun-controller-manager's flag of the same name.")
	generic.IntVar(&o.MaxParallelImagePulls, "max-parallel-image-pulls", o.MaxParallelImagePulls,
		"The most NodeImage pulls this agent runs at once; further tags wait in Waiting. 0 means no limit.")
	o.Profiling.AddFlags(generic)

	o.Client.AddFlags(fss.FlagSet("client"))
	o.Serving.AddFlags(&fss)
	o.FeatureGate.AddFlag(fss.FlagSet("feature gates"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))

	misc := fss.FlagSet("misc")
	verflag.AddFlags(misc)
	misc.BoolP("help", "h", false, "Help for bosun-daemon.")
	return fss
}

// Validate returns all problems with the flags in one aggregate error, or nil.
func (o *Options) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errNodeNameRequired)
	}
	if _, err := cri.Candidates(o.RuntimeEndpoint, o.RuntimeSocketDirs); err != nil {
		errs = append(errs, err)
	}
	if o.RuntimeEndpoint == "" && len(o.RuntimeSocketDirs) == 0 {
		errs = append(errs, errors.New("--runtime-socket-dirs must not be empty when --runtime-endpoint is not set"))
	}
	for _, msg := range validation.ValidateNamespaceName(o.ImagePullSecretsNamespace, false) {
		errs = append(errs, fmt.Errorf("--image-pull-secrets-namespace %q is not a namespace name: %s", o.ImagePullSecretsNamespace, msg))
	}
	if o.MaxParallelImagePulls < 0 {
		errs = append(errs, fmt.Errorf("--max-parallel-image-pulls must not be negative, got %d", o.MaxParallelImagePulls))
	}
	errs = append(errs, o.Client.Validate()...)
	errs = append(errs, o.Serving.Validate()...)
	for _, err := range logsapi.Validate(o.Logs, o.FeatureGate, nil) {
		errs = append(errs, err)
	}
	return utilerrors.NewAggregate(errs)
}
