package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// kruiseGates are the feature gates of both managers, OpenKruise's and bosun's: those the
// kruise-e2e harness turns on in bosun, which share their names with OpenKruise's, among them
// ImagePullJobGate, without which neither manager runs ImagePullJobs.
const kruiseGates = "PodUnavailableBudgetDeleteGate=true,PodUnavailableBudgetUpdateGate=true," +
	"KruiseDaemon=true,ImagePullJobGate=true,PreDownloadImageForDaemonSetUpdate=true"

// kruise is OpenKruise running on the cluster: kruise-manager and kruise-daemon as
// processes, its manifests installed.
type kruise struct {
	manager *framework.KruiseManager
	daemon  *cluster.KruiseDaemon
}

// startKruise installs the release's config/default (all of its CRDs, both webhook
// configurations, its namespaces), gives the seven CRDs the storage version of the first era
// where the release's differs (from 1.9: v1alpha1, as it was up to OpenKruise 1.8;
// createWorkloads makes it v1beta1 again), then runs the release's kruise-manager as the
// admin and its kruise-daemon for the node, and returns once both serve.
func startKruise(ctx context.Context, e *env) (_ *kruise, err error) {
	c, release := e.c, e.from.release
	if err := framework.InstallKruiseReleaseManifests(ctx, c.Config(), release); err != nil {
		return nil, fmt.Errorf("installing the manifests of %s: %w", release, err)
	}
	if first := e.from.eras[0].storage; first != e.from.storage {
		if err := e.setStorageVersion(ctx, first); err != nil {
			return nil, err
		}
	}
	k := &kruise{}
	defer func() {
		if err != nil {
			k.stop()
		}
	}()
	k.manager, err = framework.StartKruiseManager(ctx, c.ControlPlane(), framework.KruiseManagerOptions{
		Release:            release,
		FeatureGates:       kruiseGates,
		WaitForControllers: framework.KruiseControllersOfBosunKinds,
	}, filepath.Join(c.LogDir(), release.ManagerBinary()+".log"))
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", release.ManagerBinary(), err)
	}
	if k.daemon, err = c.StartKruiseDaemon(ctx, release, kruiseGates); err != nil {
		return nil, err
	}
	return k, nil
}

// err says which of OpenKruise's processes exited, with the end of its log.
func (k *kruise) err() error {
	for _, p := range []*framework.Process{k.managerProcess(), k.daemonProcess()} {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited with status %d; the end of %s:\n%s", p.Name(), p.ExitCode(), p.LogPath(), p.LogTail(40))
		}
	}
	return nil
}

func (k *kruise) daemonProcess() *framework.Process {
	if k.daemon == nil {
		return nil
	}
	return k.daemon.Process
}

func (k *kruise) managerProcess() *framework.Process {
	if k.manager == nil {
		return nil
	}
	return k.manager.Process
}

// stop stops kruise-daemon, then kruise-manager.
func (k *kruise) stop() error {
	var err error
	if k.daemon != nil {
		err = k.daemon.Stop()
	}
	if k.manager != nil {
		k.manager.Stop(framework.DefaultStopGracePeriod)
	}
	return err
}
