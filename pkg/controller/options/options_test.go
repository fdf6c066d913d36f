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

	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	gates := features.NewFeatureGate()
	got := Apply([]Option{WithClock(clk), WithFeatureGate(gates), WithBurstReplicas(7)})
	if got.Clock != clk || got.FeatureGate != gates || got.BurstReplicas != 7 {
		t.Errorf("Apply = %+v, want the fake clock, the given gate and burst 7", got)
	}
}
