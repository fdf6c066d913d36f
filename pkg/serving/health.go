package serving

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/httplog"
	"k8s.io/klog/v2"
)

// CheckSet serves one health path (/healthz, /livez or /readyz) whose checks can be added while
// the server runs: the controller manager learns its controllers only after it becomes the
// leader. Responses follow the apiserver healthz format: "ok", or with ?verbose one
// "[+]<name> ok" / "[-]<name> failed: reason withheld" line per check; ?exclude=<name> skips a
// check; any failure answers 500 and is always verbose. With no checks, the set serves "ping".
// The one addition: a passing check that implements Describer and has something to say gets
// the verbose line "[+]<name> ok: <description>". Per-check subpaths such as /readyz/cri answer
// exactly like the apiserver's: "ok", or 500 with the reason.
type CheckSet struct {
	path string
	// name is the path's first segment, as in "readyz check passed".
	name string

	mu      sync.RWMutex
	checks  []healthz.HealthChecker
	handler http.Handler
}

// Describer is implemented by health checks that can say what they found when they pass, for
// example which container runtime the node agent talks to. Describe is called right after
// Check passed and only then; what it returns is served to unauthenticated callers, so it must
// hold nothing secret (a failing check's reason is withheld for that reason).
type Describer interface {
	Describe() string
}

// NewCheckSet returns a set serving path (for example "/healthz") with the given checks.
func NewCheckSet(path string, checks ...healthz.HealthChecker) *CheckSet {
	s := &CheckSet{path: path, name: strings.Split(strings.TrimPrefix(path, "/"), "/")[0]}
	// Duplicate names here are a programming error in the binary's wiring.
	utilruntime.Must(s.Add(checks...))
	return s
}

// Path is the path the set serves.
func (s *CheckSet) Path() string { return s.path }

// Add appends checks. A check whose name is already present is rejected with an error, since
// two checks of one name could not be told apart in the output or excluded separately.
func (s *CheckSet) Add(checks ...healthz.HealthChecker) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range checks {
		for _, existing := range s.checks {
			if existing.Name() == c.Name() {
				return fmt.Errorf("%s: duplicate health check %q", s.path, c.Name())
			}
		}
		s.checks = append(s.checks, c)
	}
	// Handlers take a fixed list, so every change installs a fresh mux; requests in flight keep
	// the list they started with.
	serving := slices.Clone(s.checks)
	if len(serving) == 0 {
		serving = []healthz.HealthChecker{healthz.PingHealthz}
	}
	// A ServeMux routes the path and its subpaths exactly as the apiserver's healthz
	// installation did (exact matches only, 404 for unknown check names).
	m := http.NewServeMux()
	m.Handle(s.path, s.serveChecks(serving))
	for _, c := range serving {
		m.Handle(s.path+"/"+c.Name(), serveCheck(c))
	}
	s.handler = m
	return nil
}

// Names returns the names of the checks in order.
func (s *CheckSet) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.checks))
	for _, c := range s.checks {
		names = append(names, c.Name())
	}
	return names
}

// ServeHTTP answers requests for the path and its per-check subpaths.
func (s *CheckSet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	handler := s.handler
	s.mu.RUnlock()
	handler.ServeHTTP(w, r)
}

// serveChecks answers the set's path. It renders the apiserver healthz format itself (rather
// than installing healthz.InstallPathHandler) only so that passing checks can describe
// themselves; everything else is the same byte for byte, because probes, scripts and tests
// written against other Kubernetes components read it. The apiserver handler's request and
// SLI metrics are left out: bosun's /metrics serves neither registry.
func (s *CheckSet) serveChecks(checks []healthz.HealthChecker) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		excluded := sets.New(query["exclude"]...)
		unmatched := excluded.Clone()
		var out strings.Builder
		var failed, reasons []string
		for _, c := range checks {
			if excluded.Has(c.Name()) {
				unmatched.Delete(c.Name())
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name())
				continue
			}
			if g, ok := c.(healthz.GroupedHealthChecker); ok && excluded.Has(g.GroupName()) {
				unmatched.Delete(g.GroupName())
				fmt.Fprintf(&out, "[+]%s excluded with %s: ok\n", c.Name(), g.GroupName())
				continue
			}
			if err := c.Check(r); err != nil {
				// The health paths need no credentials, so the reason goes to the log only.
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name())
				failed = append(failed, c.Name())
				reasons = append(reasons, fmt.Sprintf("%s: %v", c.Name(), err))
				continue
			}
			if d, ok := c.(Describer); ok {
				if description := oneLine(d.Describe()); description != "" {
					fmt.Fprintf(&out, "[+]%s ok: %s\n", c.Name(), description)
					continue
				}
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name())
		}
		if unmatched.Len() > 0 {
			quoted := make([]string, 0, unmatched.Len())
			for _, name := range sets.List(unmatched) {
				quoted = append(quoted, strconv.Quote(name))
			}
			fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
		}

		if len(failed) > 0 {
			klog.FromContext(r.Context()).V(2).Info("Health check failed", "path", s.path, "checks", failed, "reasons", reasons)
			// A failing probe is routine (a not-ready node agent, a standby): keep the request
			// log free of a stack trace for every 500 it answers.
			httplog.SetStacktracePredicate(r.Context(), func(int) bool { return false })
			// Always verbose on failure, so that the caller sees which check failed.
			http.Error(w, out.String()+s.name+" check failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if _, verbose := query["verbose"]; !verbose {
			fmt.Fprint(w, "ok")
			return
		}
		fmt.Fprintf(w, "%s%s check passed\n", out.String(), s.name)
	}
}

// serveCheck answers a per-check subpath. Like the apiserver's, it shows the failure reason;
// a description is not added, so that the answer stays the "ok" probes compare against.
func serveCheck(c healthz.HealthChecker) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := c.Check(r); err != nil {
			http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}
}

// oneLine keeps a description from breaking the line-per-check format: it comes from outside
// the process (a container runtime's Version answer), so control characters are replaced and
// runs of white space collapsed.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// InformerSync is the readiness check "informer-sync": it passes while every informer that
// the watched factories have started has synced. Informers not started yet do not count, so the
// check passes before any factory is watched (a standby has none).
type InformerSync struct {
	mu      sync.Mutex
	sources []func() []string
	// waiting names what keeps a controller from starting its informers at all, by
	// controller: the check fails while any is listed.
	waiting map[string]string
}

var _ healthz.HealthChecker = &InformerSync{}

// Name is the check's name.
func (*InformerSync) Name() string { return "informer-sync" }

// Check fails naming the started informers that have not synced.
func (s *InformerSync) Check(*http.Request) error {
	s.mu.Lock()
	sources := append([]func() []string(nil), s.sources...)
	var waiting []string
	for name, reason := range s.waiting {
		waiting = append(waiting, name+": "+reason)
	}
	s.mu.Unlock()
	var unsynced []string
	for _, source := range sources {
		unsynced = append(unsynced, source()...)
	}
	var problems []string
	if len(unsynced) > 0 {
		sort.Strings(unsynced)
		problems = append(problems, fmt.Sprintf("%d informers not synced yet: %v", len(unsynced), unsynced))
	}
	if len(waiting) > 0 {
		sort.Strings(waiting)
		problems = append(problems, fmt.Sprintf("%d controllers wait for their resources: %s", len(waiting), strings.Join(waiting, "; ")))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// SetWaiting makes the check fail, naming controller and reason, until ClearWaiting: the
// controller cannot start its informers yet.
func (s *InformerSync) SetWaiting(controller, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting == nil {
		s.waiting = map[string]string{}
	}
	s.waiting[controller] = reason
}

// ClearWaiting undoes SetWaiting.
func (s *InformerSync) ClearWaiting(controller string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, controller)
}

func (s *InformerSync) add(source func() []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sources = append(s.sources, source)
}

// TypedFactory is what typed informer factories (client-go's and generated ones) provide.
type TypedFactory interface {
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
}

// MetadataFactory is what metadata-only informer factories provide.
type MetadataFactory interface {
	WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool
}

// WatchTypedFactory makes the check cover the informers f starts.
func (s *InformerSync) WatchTypedFactory(f TypedFactory) {
	s.add(func() []string { return unsyncedNames(f.WaitForCacheSync) })
}

// WatchMetadataFactory makes the check cover the informers f starts.
func (s *InformerSync) WatchMetadataFactory(f MetadataFactory) {
	s.add(func() []string { return unsyncedNames(f.WaitForCacheSync) })
}

// unsyncedNames asks a factory for the sync state of its started informers without waiting:
// with an already closed stop channel, WaitForCacheSync reports the current state at once.
func unsyncedNames[K comparable](waitForCacheSync func(<-chan struct{}) map[K]bool) []string {
	closed := make(chan struct{})
	close(closed)
	var names []string
	for key, synced := range waitForCacheSync(closed) {
		if !synced {
			names = append(names, fmt.Sprint(key))
		}
	}
	return names
}
