package options

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// Client limits of the OpenKruise-compatible controllers and the admission webhooks when no
// client limit flag is given. The controllers that replace kube-controller-manager's keep
// its 20/30 (clientconfig's defaults), so that swapping one manager for the other changes
// nothing; these replace kruise-manager, whose clients run at 30/50, and go somewhat higher
// because the API server's priority and fairness, not the client's token bucket, is what
// keeps one busy client from starving the others.
const (
	DefaultKruiseControllersQPS   float32 = 50
	DefaultKruiseControllersBurst int32   = 100
)

// Names of the client limit flags.
const (
	flagKubeAPIQPS             = "kube-api-qps"
	flagKubeAPIBurst           = "kube-api-burst"
	flagKruiseControllersQPS   = "kruise-controllers-kube-api-qps"
	flagKruiseControllersBurst = "kruise-controllers-kube-api-burst"
)

// addClientLimitFlags adds the OpenKruise-compatible controllers' client limit flags to fs,
// which already holds --kube-api-qps and --kube-api-burst, and has those two record in
// o.ClientLimitsGiven that the command line gave them.
func (o *Options) addClientLimitFlags(fs *pflag.FlagSet, reg *registry.Registry) {
	for _, name := range []string{flagKubeAPIQPS, flagKubeAPIBurst} {
		flag := fs.Lookup(name)
		flag.Value = givenRecorder{Value: flag.Value, given: &o.ClientLimitsGiven}
	}
	fs.Lookup(flagKubeAPIQPS).Usage = "QPS to use while talking with the Kubernetes API server; each controller's client has its own limit. " +
		"The OpenKruise-compatible controllers follow it only when it or --" + flagKubeAPIBurst + " is given (see --" + flagKruiseControllersQPS + ")."
	fs.Lookup(flagKubeAPIBurst).Usage = "Burst to use while talking with the Kubernetes API server; each controller's client has its own limit. " +
		"The OpenKruise-compatible controllers follow it only when it or --" + flagKubeAPIQPS + " is given (see --" + flagKruiseControllersBurst + ")."

	// Every webhook bosun serves belongs to an OpenKruise-compatible resource, so the
	// webhooks' clients share those controllers' limits.
	controllers := "none"
	if names := reg.WithKruiseClientLimits(); len(names) > 0 {
		controllers = strings.Join(names, ", ")
	}
	fs.Float32Var(&o.KruiseControllersQPS, flagKruiseControllersQPS, o.KruiseControllersQPS, fmt.Sprintf(
		"QPS of each client of the OpenKruise-compatible controllers (%s) and of the admission webhooks, for each resource "+
			"(a client has a token bucket per resource it requests, as kruise-manager's clients have one per kind). "+
			"0 means: --%s when --%s or --%s is given, otherwise %v.",
		controllers, flagKubeAPIQPS, flagKubeAPIQPS, flagKubeAPIBurst, DefaultKruiseControllersQPS))
	fs.Int32Var(&o.KruiseControllersBurst, flagKruiseControllersBurst, o.KruiseControllersBurst, fmt.Sprintf(
		"Burst of each client of the OpenKruise-compatible controllers (%s) and of the admission webhooks, for each resource. "+
			"0 means: --%s when --%s or --%s is given, otherwise %d.",
		controllers, flagKubeAPIBurst, flagKubeAPIQPS, flagKubeAPIBurst, DefaultKruiseControllersBurst))
}

// validateClientLimits checks the OpenKruise-compatible controllers' flags; clientconfig
// checks --kube-api-qps and --kube-api-burst.
func (o *Options) validateClientLimits() []error {
	var errs []error
	if o.KruiseControllersQPS < 0 {
		errs = append(errs, fmt.Errorf("--%s must not be negative (0 means unset), got %v", flagKruiseControllersQPS, o.KruiseControllersQPS))
	}
	if o.KruiseControllersBurst < 0 {
		errs = append(errs, fmt.Errorf("--%s must not be negative (0 means unset), got %d", flagKruiseControllersBurst, o.KruiseControllersBurst))
	}
	return errs
}

// KruiseClientLimits returns the limits of each client of the OpenKruise-compatible
// controllers and the admission webhooks. Each of QPS and burst is its own flag if given;
// otherwise --kube-api-qps/--kube-api-burst if either of those was given, which keeps
// their meaning for operators who set them before the OpenKruise-compatible controllers
// had limits of their own; otherwise the default.
func (o *Options) KruiseClientLimits() clientbuilder.Limits {
	limits := clientbuilder.Limits{QPS: DefaultKruiseControllersQPS, Burst: int(DefaultKruiseControllersBurst)}
	if o.ClientLimitsGiven {
		limits = clientbuilder.Limits{QPS: o.Client.QPS, Burst: int(o.Client.Burst)}
	}
	if o.KruiseControllersQPS > 0 {
		limits.QPS = o.KruiseControllersQPS
	}
	if o.KruiseControllersBurst > 0 {
		limits.Burst = int(o.KruiseControllersBurst)
	}
	return limits
}

// givenRecorder wraps a flag's value and notes when the command line sets it.
type givenRecorder struct {
	pflag.Value
	given *bool
}

func (r givenRecorder) Set(value string) error {
	if err := r.Value.Set(value); err != nil {
		return err
	}
	*r.given = true
	return nil
}
