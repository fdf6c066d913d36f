package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// openKruise is OpenKruise v1.9.0 running on a cluster without bosun, the reference the
// suite is run against to tell what this machine lets pass: kruise-manager and
// kruise-daemon as processes, its config/default installed.
type openKruise struct {
	manager *framework.KruiseManager
	daemon  *cluster.KruiseDaemon
}

// startOpenKruise installs OpenKruise's CRDs, webhook configurations and namespaces, then
// runs kruise-manager, as the admin and with the feature gates bosun gets in the suite,
// and kruise-daemon for the node, and returns once both serve.
func startOpenKruise(ctx context.Context, c *cluster.Cluster) (_ *openKruise, err error) {
	release := framework.Kruise19
	if err := framework.InstallKruiseReleaseManifests(ctx, c.Config(), release); err != nil {
		return nil, fmt.Errorf("installing the manifests of %s: %w", release, err)
	}
	k := &openKruise{}
	defer func() {
		if err != nil {
			err = errors.Join(err, k.stop())
		}
	}()
	k.manager, err = framework.StartKruiseManager(ctx, c.ControlPlane(), framework.KruiseManagerOptions{
		Release:            release,
		FeatureGates:       kruiseCIGates,
		WaitForControllers: framework.KruiseControllersOfBosunKinds,
	}, filepath.Join(c.LogDir(), release.ManagerBinary()+".log"))
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", release.ManagerBinary(), err)
	}
	if k.daemon, err = c.StartKruiseDaemon(ctx, release, kruiseCIGates); err != nil {
		return nil, err
	}
	fmt.Printf("kruise-e2e: reference run: %s and %s serve the cluster\n", release.ManagerBinary(), release.DaemonBinary())
	return k, nil
}

// err says which of OpenKruise's processes exited, with the end of its log; nil for no
// reference run.
func (k *openKruise) err() error {
	if k == nil {
		return nil
	}
	var processes []*framework.Process
	if k.manager != nil {
		processes = append(processes, k.manager.Process)
	}
	if k.daemon != nil {
		processes = append(processes, k.daemon.Process)
	}
	for _, p := range processes {
		if p.Exited() {
			return fmt.Errorf("%s exited with status %d; the end of %s:\n%s", p.Name(), p.ExitCode(), p.LogPath(), p.LogTail(40))
		}
	}
	return nil
}

// stop stops kruise-daemon, then kruise-manager; nothing for no reference run.
func (k *openKruise) stop() error {
	if k == nil {
		return nil
	}
	var err error
	if k.daemon != nil {
		err = k.daemon.Stop()
		k.daemon = nil
	}
	if k.manager != nil {
		k.manager.Stop(framework.DefaultStopGracePeriod)
		k.manager = nil
	}
	return err
}

// writeOutcomes prints how each spec of a reference run ended, failures first with their
// messages, then the tally: a reference run is read, not judged.
func writeOutcomes(w io.Writer, manager string, outcomes []outcome) {
	sorted := append([]outcome(nil), outcomes...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].passed != sorted[j].passed {
			return !sorted[i].passed
		}
		return sorted[i].key.String() < sorted[j].key.String()
	})
	passed := 0
	for _, o := range sorted {
		if o.passed {
			passed++
			fmt.Fprintf(w, "passed: %s\n", o.key)
			continue
		}
		fmt.Fprintf(w, "%s: %s\n", o.state, o.key)
		if o.failure != "" {
			fmt.Fprintf(w, "    %s\n", o.failure)
		}
	}
	fmt.Fprintf(w, "against %s: %d of %d specs passed\n", manager, passed, len(outcomes))
}
