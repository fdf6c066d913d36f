package serving

import (
	"net/http"
	goruntime "runtime"

	"github.com/spf13/pflag"

	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/metrics/legacyregistry"
)

// ProfilingOptions are the --profiling and --contention-profiling flags.
type ProfilingOptions struct {
	EnableProfiling           bool
	EnableContentionProfiling bool
}

// AddFlags adds --profiling and --contention-profiling to fs.
func (o *ProfilingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.EnableProfiling, "profiling", o.EnableProfiling,
		"Enable profiling via web interface host:port/debug/pprof/ and PUT /debug/flags/v.")
	fs.BoolVar(&o.EnableContentionProfiling, "contention-profiling", o.EnableContentionProfiling,
		"Enable block profiling, if profiling is enabled.")
}

// HealthEndpoints are the three health paths a binary serves.
type HealthEndpoints struct {
	Healthz *CheckSet
	Livez   *CheckSet
	Readyz  *CheckSet
}

// NewBaseMux returns a mux serving the health endpoints, /metrics from the component-base
// legacy registry and, with profiling, /debug/pprof/ and PUT /debug/flags/v. Binaries add their
// own paths (for example /debug/controllers/<name>/) to it; it accepts additions while serving.
func NewBaseMux(name string, health HealthEndpoints, profiling ProfilingOptions) *mux.PathRecorderMux {
	m := mux.NewPathRecorderMux(name)
	for _, set := range []*CheckSet{health.Healthz, health.Livez, health.Readyz} {
		if set == nil {
			continue
		}
		m.Handle(set.Path(), set)
		// Per-check subpaths such as /healthz/leaderElection.
		m.HandlePrefix(set.Path()+"/", set)
	}
	m.Handle("/metrics", legacyregistry.Handler())
	if profiling.EnableProfiling {
		routes.Profiling{}.Install(m)
		if profiling.EnableContentionProfiling {
			goruntime.SetBlockProfileRate(1)
		}
		routes.DebugFlags{}.Install(m, "v", routes.StringFlagPutHandler(logs.GlogSetter))
	}
	return m
}

// Handle is the subset of a mux that debug handlers are registered on.
type Handle interface {
	Handle(path string, handler http.Handler)
	HandlePrefix(path string, handler http.Handler)
}
