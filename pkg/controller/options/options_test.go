package options

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/features"
)

func TestApply(t *testing.T) {
	defaults := Apply(nil)
	if _, ok := defaults.Clock.(clock.RealClock); !ok {
		t.Errorf("default clock is %T, want clock.RealClock", defaults.Clock)
	}
	if defaults.FeatureGate != features.DefaultFeatureGate {
		t.Error("default feature gate is not features.DefaultFeatureGate")
	}
	if defaults.BurstReplicas != 0 {
		t.Errorf("default BurstReplicas = %d, want 0 (the controller's own default)", defaults.BurstReplicas)
	}
	if defaults.ResyncPeriod != 0 {
		t.Errorf("default ResyncPeriod = %v, want 0 (no periodic resync)", defaults.ResyncPeriod)
	}

	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	gates := features.NewFeatureGate()
	got := Apply([]Option{WithClock(clk), WithFeatureGate(gates), WithBurstReplicas(7), WithResyncPeriod(time.Minute)})
	if got.Clock != clk || got.FeatureGate != gates || got.BurstReplicas != 7 || got.ResyncPeriod != time.Minute {
		t.Errorf("Apply = %+v, want the fake clock, the given gate, burst 7 and resync 1m", got)
	}
}

func TestLocal(t *testing.T) {
	type delayKey struct{}
	type otherKey struct{}
	if _, ok := LocalValue[time.Duration](Apply(nil), delayKey{}); ok {
		t.Error("a local setting nobody set is reported as set")
	}
	s := Apply([]Option{Local(delayKey{}, time.Second), Local(delayKey{}, 0*time.Second), WithBurstReplicas(3)})
	if d, ok := LocalValue[time.Duration](s, delayKey{}); !ok || d != 0 {
		t.Errorf("LocalValue = %v, %t; want the last value set, 0s, set", d, ok)
	}
	if _, ok := LocalValue[time.Duration](s, otherKey{}); ok {
		t.Error("a setting under another key is reported as set")
	}
	if _, ok := LocalValue[string](s, delayKey{}); ok {
		t.Error("a setting of another type is reported as set")
	}
	if s.BurstReplicas != 3 {
		t.Errorf("BurstReplicas = %d beside a local setting, want 3", s.BurstReplicas)
	}
}

func TestWrappers(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	control := &podcontrol.Real{}

	plain := Apply(nil)
	if plain.WrapQueue(q) != q {
		t.Error("without a wrapper WrapQueue does not return the queue itself")
	}
	if plain.WrapPodControl(control) != control {
		t.Error("without a wrapper WrapPodControl does not return the pod control itself")
	}

	type wrappedQueue struct {
		workqueue.TypedRateLimitingInterface[string]
	}
	type wrappedControl struct{ podcontrol.Interface }
	s := Apply([]Option{
		WithQueueWrapper(func(inner workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string] {
			return wrappedQueue{inner}
		}),
		WithPodControlWrapper(func(inner podcontrol.Interface) podcontrol.Interface { return wrappedControl{inner} }),
	})
	if got, ok := s.WrapQueue(q).(wrappedQueue); !ok || got.TypedRateLimitingInterface != q {
		t.Errorf("WrapQueue = %#v, want the queue wrapped once", s.WrapQueue(q))
	}
	if got, ok := s.WrapPodControl(control).(wrappedControl); !ok || got.Interface != control {
		t.Errorf("WrapPodControl = %#v, want the pod control wrapped once", s.WrapPodControl(control))
	}
}
