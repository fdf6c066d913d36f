package options

import (
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

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
