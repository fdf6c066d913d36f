// Package options holds the settings that every bosun controller's NewController accepts
// as functional options, so that all controllers are configured, and tested, the same way.
// What a controller cannot run without (informers, client, recorder) stays a positional
// argument; everything with a default is an Option.
package options

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
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
	// QueueWrapper, when set, is what a controller passes the work queue it builds through
	// (WrapQueue); tests wrap the queue in a queuetest.Recorder to see what handlers and
	// syncs queue.
	QueueWrapper func(workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string]
	// PodControlWrapper, when set, is what a controller that creates and deletes pods
	// passes its pod control through (WrapPodControl); tests put a barrier or a fault in
	// front of it.
	PodControlWrapper func(podcontrol.Interface) podcontrol.Interface

	// local holds the settings that one controller alone reads, by key; see Local.
	local map[any]any
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

// WithQueueWrapper makes the controller use wrap(q) for the work queue q it builds.
// Controllers whose queues hold other items than string keys ignore it.
func WithQueueWrapper(wrap func(workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string]) Option {
	return func(s *Settings) { s.QueueWrapper = wrap }
}

// WithPodControlWrapper makes a controller that creates and deletes pods use wrap(control)
// for the pod control it builds.
func WithPodControlWrapper(wrap func(podcontrol.Interface) podcontrol.Interface) Option {
	return func(s *Settings) { s.PodControlWrapper = wrap }
}

// WrapQueue returns q passed through QueueWrapper; q itself when there is none.
func (s Settings) WrapQueue(q workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string] {
	if s.QueueWrapper == nil {
		return q
	}
	return s.QueueWrapper(q)
}

// WrapPodControl returns control passed through PodControlWrapper; control itself when
// there is none.
func (s Settings) WrapPodControl(control podcontrol.Interface) podcontrol.Interface {
	if s.PodControlWrapper == nil {
		return control
	}
	return s.PodControlWrapper(control)
}

// Local returns an Option that sets a setting only one controller reads, such as the
// NodeImage controller's creation delay. That controller's package declares an unexported
// key type and wraps Local in its own With… function, and reads the value back with
// LocalValue: its settings then travel in the same options list as the common ones,
// without every controller's Settings growing a field for them.
func Local(key, value any) Option {
	return func(s *Settings) {
		if s.local == nil {
			s.local = map[any]any{}
		}
		s.local[key] = value
	}
}

// LocalValue returns the value an Option made by Local set for key, and whether one of
// type T was set.
func LocalValue[T any](s Settings, key any) (T, bool) {
	value, ok := s.local[key].(T)
	return value, ok
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
