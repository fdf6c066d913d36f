package app

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/bosun-dev/bosun/pkg/controller/storageversionmigrator"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// The migrator is on by default under its alias, off with -storageversionmigrator, and
// keeps the base client limits.
func TestStorageVersionMigratorRegistration(t *testing.T) {
	reg := NewControllerRegistry()
	d, ok := reg.Get("storageversionmigrator")
	if !ok || d.Name != storageversionmigrator.ControllerName {
		t.Fatalf("alias storageversionmigrator names %q (%t), want %s", d.Name, ok, storageversionmigrator.ControllerName)
	}
	if d.DisabledByDefault || d.KruiseClientLimits || d.ClientName != storageversionmigrator.ControllerName {
		t.Errorf("descriptor %+v: want on by default, base client limits, client name %s", d, storageversionmigrator.ControllerName)
	}
	if !slices.Contains(reg.Enabled([]string{"*"}), storageversionmigrator.ControllerName) {
		t.Errorf("%s is not enabled by *", storageversionmigrator.ControllerName)
	}
	if slices.Contains(reg.Enabled([]string{"*", "-storageversionmigrator"}), storageversionmigrator.ControllerName) {
		t.Errorf("%s is enabled by *,-storageversionmigrator", storageversionmigrator.ControllerName)
	}
}

// The constructor builds the migrator with its own CRD informer, which its Run starts and
// stops with it.
func TestNewStorageVersionMigrator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc := &registry.ControllerContext{
		ClientName:    storageversionmigrator.ControllerName,
		ClientBuilder: fakeDiscoveryBuilder{fake.NewClientset()},
		EventRecorder: func(string) record.EventRecorderLogger { return record.NewFakeRecorder(10) },
		ResyncPeriod:  func() time.Duration { return time.Hour },
	}
	c, err := newStorageVersionMigrator(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := c.(withOwnInformer)
	if !ok || w.informer == nil || w.workers != 1 {
		t.Fatalf("built %#v, want the controller with its informer and one worker", c)
	}
	done := make(chan struct{})
	go func() {
		w.Run(ctx)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if !w.informer.IsStopped() {
		t.Error("the CRD informer still runs after Run returned")
	}
}

// The settle delay is --storage-version-migration-delay, as the options put it in the
// configuration; a context without one keeps the controller's default.
func TestStorageVersionMigratorSettleDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config *config.Configuration
		want   time.Duration
	}{
		{"no configuration", nil, storageversionmigrator.DefaultSettleDelay},
		{"no delay", &config.Configuration{}, 0},
		{"configured", &config.Configuration{StorageVersionMigrator: config.StorageVersionMigratorConfiguration{SettleDelay: 15 * time.Second}}, 15 * time.Second},
	} {
		if got := settleDelay(&registry.ControllerContext{Config: tc.config}); got != tc.want {
			t.Errorf("%s: settle delay %v, want %v", tc.name, got, tc.want)
		}
	}
}
