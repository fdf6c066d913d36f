package serving

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/server/healthz"
)

// CheckSet serves one health path (/healthz, /livez or /readyz) whose checks can be added while
// the server runs: the controller manager learns its controllers only after it becomes the
// leader. Responses follow the apiserver healthz format: "ok", or with ?verbose one
// "[+]<name> ok" / "[-]<name> failed: reason withheld" line per check; ?exclude=<name> skips a
// check; any failure answers 500 and is always verbose. With no checks, the set serves "ping".
type CheckSet struct {
	path string

	mu      sync.RWMutex
	checks  []healthz.HealthChecker
	handler http.Handler
}

// NewCheckSet returns a set serving path (for example "/healthz") with the given checks.
func NewCheckSet(path string, checks ...healthz.HealthChecker) *CheckSet {
	s := &CheckSet{path: path}
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
	// The apiserver healthz handler takes a fixed list, so every change installs a fresh one.
	m := http.NewServeMux()
	healthz.InstallPathHandler(m, s.path, s.checks...)
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

// InformerSync is the readiness check "informer-sync": it passes while every informer that
// the watched factories have started has synced. Informers not started yet do not count, so the
// check passes before any factory is watched (a standby has none).
type InformerSync struct {
	mu      sync.Mutex
	sources []func() []string
}

var _ healthz.HealthChecker = &InformerSync{}

// Name is the check's name.
func (*InformerSync) Name() string { return "informer-sync" }

// Check fails naming the started informers that have not synced.
func (s *InformerSync) Check(*http.Request) error {
	s.mu.Lock()
	sources := append([]func() []string(nil), s.sources...)
	s.mu.Unlock()
	var unsynced []string
	for _, source := range sources {
		unsynced = append(unsynced, source()...)
	}
	if len(unsynced) > 0 {
		sort.Strings(unsynced)
		return fmt.Errorf("%d informers not synced yet: %v", len(unsynced), unsynced)
	}
	return nil
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
