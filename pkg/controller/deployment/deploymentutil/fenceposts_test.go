package deploymentutil

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveFenceposts(t *testing.T) {
	str := intstr.FromString
	tests := []struct {
		name                       string
		maxSurge, maxUnavailable   *intstr.IntOrString
		desired                    int32
		wantSurge, wantUnavailable int32
		wantErr                    bool
	}{
		{name: "defaults on 10: surge rounds 2.5 up, unavailable rounds 2.5 down", maxSurge: &pct25, maxUnavailable: &pct25, desired: 10, wantSurge: 3, wantUnavailable: 2},
		{name: "defaults on 1", maxSurge: &pct25, maxUnavailable: &pct25, desired: 1, wantSurge: 1, wantUnavailable: 0},
		{name: "defaults on 0: both zero so unavailable is 1", maxSurge: &pct25, maxUnavailable: &pct25, desired: 0, wantSurge: 0, wantUnavailable: 1},
		{name: "50% of 3", maxSurge: ptrTo(str("50%")), maxUnavailable: ptrTo(str("50%")), desired: 3, wantSurge: 2, wantUnavailable: 1},
		{name: "integers are taken as they are", maxSurge: ptrTo(num(4)), maxUnavailable: ptrTo(num(20)), desired: 10, wantSurge: 4, wantUnavailable: 20},
		{name: "both zero integers", maxSurge: &zero, maxUnavailable: &zero, desired: 10, wantSurge: 0, wantUnavailable: 1},
		{name: "both nil", desired: 10, wantSurge: 0, wantUnavailable: 1},
		{name: "surge zero keeps unavailable", maxSurge: &zero, maxUnavailable: ptrTo(num(3)), desired: 10, wantSurge: 0, wantUnavailable: 3},
		{name: "1% of 10 rounds surge up to 1 and unavailable down to 0", maxSurge: ptrTo(str("1%")), maxUnavailable: ptrTo(str("1%")), desired: 10, wantSurge: 1, wantUnavailable: 0},
		{name: "string without percent sign", maxSurge: ptrTo(str("5")), maxUnavailable: &pct25, desired: 10, wantErr: true},
		{name: "garbage unavailable", maxSurge: &pct25, maxUnavailable: ptrTo(str("x%")), desired: 10, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			surge, unavailable, err := ResolveFenceposts(tc.maxSurge, tc.maxUnavailable, tc.desired)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if surge != tc.wantSurge || unavailable != tc.wantUnavailable {
				t.Errorf("got surge %d unavailable %d, want %d %d", surge, unavailable, tc.wantSurge, tc.wantUnavailable)
			}
		})
	}
}

func ptrTo(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestDeploymentFenceposts(t *testing.T) {
	noRollingBlock := rolling(10, pct25, pct25)
	noRollingBlock.Spec.Strategy.RollingUpdate = nil
	tests := []struct {
		name                                   string
		d                                      *appsv1.Deployment
		wantSurge, wantUnavailable, wantMinAvl int32
		wantRolling                            bool
	}{
		{name: "10 replicas 25%/25%", d: rolling(10, pct25, pct25), wantSurge: 3, wantUnavailable: 2, wantMinAvl: 8, wantRolling: true},
		{name: "1 replica 25%/25%", d: rolling(1, pct25, pct25), wantSurge: 1, wantUnavailable: 0, wantMinAvl: 1, wantRolling: true},
		{name: "0 replicas: nothing may be unavailable", d: rolling(0, pct25, pct25), wantSurge: 0, wantUnavailable: 0, wantMinAvl: 0, wantRolling: true},
		{name: "both zero on 1 replica: the forced 1 is capped by replicas", d: rolling(1, zero, zero), wantSurge: 0, wantUnavailable: 1, wantMinAvl: 0, wantRolling: true},
		{name: "unavailable above replicas is capped", d: rolling(10, num(1), num(20)), wantSurge: 1, wantUnavailable: 10, wantMinAvl: 0, wantRolling: true},
		{name: "surge above replicas is not capped", d: rolling(2, num(5), zero), wantSurge: 5, wantUnavailable: 0, wantMinAvl: 2, wantRolling: true},
		{name: "missing rollingUpdate block counts as zero/zero", d: noRollingBlock, wantSurge: 0, wantUnavailable: 1, wantMinAvl: 9, wantRolling: true},
		{name: "Recreate has neither surge nor unavailability, so every replica must be available", d: recreate(5), wantSurge: 0, wantUnavailable: 0, wantMinAvl: 5, wantRolling: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsRollingUpdate(tc.d); got != tc.wantRolling {
				t.Errorf("IsRollingUpdate = %v, want %v", got, tc.wantRolling)
			}
			if got := MaxSurge(tc.d); got != tc.wantSurge {
				t.Errorf("MaxSurge = %d, want %d", got, tc.wantSurge)
			}
			if got := MaxUnavailable(tc.d); got != tc.wantUnavailable {
				t.Errorf("MaxUnavailable = %d, want %d", got, tc.wantUnavailable)
			}
			if got := MinAvailable(tc.d); got != tc.wantMinAvl {
				t.Errorf("MinAvailable = %d, want %d", got, tc.wantMinAvl)
			}
		})
	}
}
