// Package registry is bosun-controller-manager's list of controllers: canonical name,
// aliases, client name, constructor and whether the controller runs by default. It also
// decides which controllers a --controllers value selects.
//
// Adding a controller is one Register call with its Descriptor; the manager builds, checks,
// starts and stops every registered controller the same way.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Controller is a built controller.
type Controller interface {
	// Run starts the controller's workers and blocks until ctx is cancelled and every worker
	// has returned. The manager waits for Run to return during graceful shutdown.
	Run(ctx context.Context)
}

// HealthCheckable is implemented by controllers that can tell whether they work. Without
// it the controller's /healthz check always passes once it is built.
type HealthCheckable interface {
	HealthCheck(req *http.Request) error
}

// Debuggable is implemented by controllers that serve debugging information; the handler is
// mounted under /debug/controllers/<canonical name>/ with that prefix stripped.
type Debuggable interface {
	DebuggingHandler() http.Handler
}

// Constructor builds a controller. It returns NotBuilt when the controller should not run in
// this configuration (switched off by a flag, a required API missing); any other error stops
// the manager.
type Constructor func(ctx context.Context, controllerContext *ControllerContext) (Controller, error)

// Descriptor describes one controller.
type Descriptor struct {
	// Name is the canonical name, "<name>-controller" by convention; health checks, metrics
	// and debug paths use it.
	Name string
	// Aliases are further names --controllers accepts, such as "replicaset".
	Aliases []string
	// ClientName is appended to the controller's User-Agent and names its ServiceAccount
	// with --use-service-account-credentials. Empty means Name.
	ClientName string
	// Constructor builds the controller.
	Constructor Constructor
	// DisabledByDefault keeps the controller out of "*"; it runs only when named explicitly.
	DisabledByDefault bool
	// KruiseClientLimits gives the controller's clients the limits of the OpenKruise-compatible
	// controllers (--kruise-controllers-kube-api-qps and --kruise-controllers-kube-api-burst)
	// instead of kube-controller-manager's --kube-api-qps and --kube-api-burst.
	KruiseClientLimits bool
	// Webhooks returns the admission webhooks of the controller's resources, served by every
	// replica (leader or not) whenever the controller is enabled. Nil means none.
	Webhooks WebhooksFunc
}

// notBuilt is the error a constructor returns to skip its controller.
type notBuilt struct{ reason string }

func (e *notBuilt) Error() string { return "controller not built: " + e.reason }

// NotBuilt returns the error a constructor returns when its controller should be skipped,
// with the reason to log.
func NotBuilt(reason string) error { return &notBuilt{reason: reason} }

// IsNotBuilt reports whether err came from NotBuilt and returns the reason.
func IsNotBuilt(err error) (reason string, ok bool) {
	var nb *notBuilt
	if errors.As(err, &nb) {
		return nb.reason, true
	}
	return "", false
}

// notYetServed is the error a constructor returns while the API server serves its
// resources only in an older version.
type notYetServed struct{ reason string }

func (e *notYetServed) Error() string { return "controller waits: " + e.reason }

// NotYetServed returns the error a constructor returns when the API server serves the
// controller's resources, but not yet in the version the controller works on (the CRDs of
// an earlier release are still installed): the manager keeps the controller idle, calls
// the constructor again periodically, and reports it not ready meanwhile, so that applying
// the new CRDs is enough, without a restart.
func NotYetServed(reason string) error { return &notYetServed{reason: reason} }

// IsNotYetServed reports whether err came from NotYetServed and returns the reason.
func IsNotYetServed(err error) (reason string, ok bool) {
	var nys *notYetServed
	if errors.As(err, &nys) {
		return nys.reason, true
	}
	return "", false
}

// Registry holds the descriptors by canonical name.
type Registry struct {
	descriptors map[string]Descriptor
	// canonical maps every accepted name (canonical names and aliases) to the canonical name.
	canonical map[string]string
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{descriptors: map[string]Descriptor{}, canonical: map[string]string{}}
}

// Register adds a controller. Names and aliases must be unique across the registry and must
// not start with "-" or be "*", since --controllers gives those a meaning.
func (r *Registry) Register(d Descriptor) error {
	if d.Name == "" {
		return errors.New("registering a controller without a name")
	}
	if d.Constructor == nil {
		return fmt.Errorf("registering %q without a constructor", d.Name)
	}
	for _, name := range append([]string{d.Name}, d.Aliases...) {
		if name == "" || name == "*" || strings.HasPrefix(name, "-") || strings.Contains(name, ",") {
			return fmt.Errorf("registering %q: %q cannot be used as a controller name", d.Name, name)
		}
		if owner, taken := r.canonical[name]; taken {
			return fmt.Errorf("registering %q: name %q already belongs to %q", d.Name, name, owner)
		}
	}
	if d.ClientName == "" {
		d.ClientName = d.Name
	}
	d.Aliases = append([]string(nil), d.Aliases...)
	r.descriptors[d.Name] = d
	for _, name := range append([]string{d.Name}, d.Aliases...) {
		r.canonical[name] = d.Name
	}
	return nil
}

// MustRegister is Register for the static list of built-in controllers, where an error is a
// programming mistake.
func (r *Registry) MustRegister(d Descriptor) {
	if err := r.Register(d); err != nil {
		panic(err)
	}
}

// Get returns the descriptor for a canonical name or alias.
func (r *Registry) Get(name string) (Descriptor, bool) {
	d, ok := r.descriptors[r.canonical[name]]
	return d, ok
}

// Names returns every canonical name, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.descriptors))
	for name := range r.descriptors {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// DisabledByDefault returns the canonical names of controllers that "*" leaves out, sorted.
func (r *Registry) DisabledByDefault() []string {
	var names []string
	for _, name := range r.Names() {
		if r.descriptors[name].DisabledByDefault {
			names = append(names, name)
		}
	}
	return names
}

// WithKruiseClientLimits returns the canonical names of controllers whose clients have the
// OpenKruise-compatible controllers' limits, sorted.
func (r *Registry) WithKruiseClientLimits() []string {
	var names []string
	for _, name := range r.Names() {
		if r.descriptors[name].KruiseClientLimits {
			names = append(names, name)
		}
	}
	return names
}

// Validate checks a --controllers value and returns one error per unknown name.
func (r *Registry) Validate(controllers []string) error {
	var errs []error
	for _, entry := range controllers {
		if entry == "" || entry == "*" {
			continue
		}
		name := strings.TrimPrefix(entry, "-")
		if _, known := r.canonical[name]; !known {
			errs = append(errs, fmt.Errorf("%q is not in the list of known controllers; valid names are: %s", name, r.validNames()))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// validNames describes every accepted name for error messages.
func (r *Registry) validNames() string {
	if len(r.descriptors) == 0 {
		return "none (no controllers are registered)"
	}
	var parts []string
	for _, name := range r.Names() {
		d := r.descriptors[name]
		if len(d.Aliases) == 0 {
			parts = append(parts, name)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (alias %s)", name, strings.Join(d.Aliases, ", ")))
	}
	return strings.Join(parts, ", ")
}

// Enabled returns the canonical names a --controllers value selects, sorted. For each
// controller the first entry naming it (by canonical name or alias) decides: "name" enables
// it, "-name" disables it. A controller no entry names runs only if "*" is present and it is
// not disabled by default. Unknown names are ignored here; Validate reports them.
func (r *Registry) Enabled(controllers []string) []string {
	decided := map[string]bool{}
	star := false
	for _, entry := range controllers {
		switch {
		case entry == "*":
			star = true
			continue
		case entry == "":
			continue
		}
		enable := !strings.HasPrefix(entry, "-")
		name, known := r.canonical[strings.TrimPrefix(entry, "-")]
		if !known {
			continue
		}
		if _, already := decided[name]; !already {
			decided[name] = enable
		}
	}
	var enabled []string
	for _, name := range r.Names() {
		on, named := decided[name]
		if !named {
			on = star && !r.descriptors[name].DisabledByDefault
		}
		if on {
			enabled = append(enabled, name)
		}
	}
	return enabled
}

// HelpText is the --controllers flag's description, listing every controller.
func (r *Registry) HelpText() string {
	all := r.Names()
	for i, name := range all {
		if aliases := r.descriptors[name].Aliases; len(aliases) > 0 {
			all[i] = fmt.Sprintf("%s (alias %s)", name, strings.Join(aliases, ", "))
		}
	}
	disabled := r.DisabledByDefault()
	return fmt.Sprintf("A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables "+
		"the controller named 'foo', '-foo' disables the controller named 'foo'; for each controller the first entry "+
		"naming it (by name or alias) decides.\nAll controllers: %s\nDisabled-by-default controllers: %s",
		listOrNone(all), listOrNone(disabled))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
