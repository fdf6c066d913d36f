// Package options holds the settings that every bosun controller's NewController accepts
// as functional options, so that all controllers are configured, and tested, the same way.
// What a controller cannot run without (informers, client, recorder) stays a positional
// argument; everything with a default is an Option.
package options

import (
	"time"

	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/features"
)

// Settings are the values a controller is built with.
type Settings struct {
	// Clock is where the controller reads time; tests pass a fake clock.
	Clock clock.Clock
	// FeatureGate answers the controller's feature gate questions.
	FeatureGate featuregate.FeatureGate
	// BurstReplicas caps the pods a controller that creates pods creates or deletes for one
	// object in one sync; 0 leaves the controller's own default.
	BurstReplicas int
	// ResyncPeriod is how often a controller that re-examines its objects on a timer, and
	// not only on events, does so; 0 turns that off. Controllers that do not resync ignore
	// it.
	ResyncPeriod time.Duration
}

// Option changes one setting.
type Option func(*Settings)

// WithClock makes the controller read time from clk.
func WithClock(clk clock.Clock) Option {
	return func(s *Settings) { s.Clock = clk }
}

// WithFeatureGate makes the controller read its feature gates from gates.
func WithFeatureGate(gates featuregate.FeatureGate) Option {
	return func(s *Settings) { s.FeatureGate = gates }
}

// WithBurstReplicas caps the pods created or deleted for one object per sync at n.
func WithBurstReplicas(n int) Option {
	return func(s *Settings) { s.BurstReplicas = n }
}

// WithResyncPeriod makes the controller re-examine every object it manages every d, even
// when no event names it; 0 turns that off.
func WithResyncPeriod(d time.Duration) Option {
	return func(s *Settings) { s.ResyncPeriod = d }
}

// Apply returns the settings opts make, starting from the real clock and
// features.DefaultFeatureGate.
func Apply(opts []Option) Settings {
	s := Settings{Clock: clock.RealClock{}, FeatureGate: features.DefaultFeatureGate}
	for _, opt := range opts {
		opt(&s)
	}
	return s
}
