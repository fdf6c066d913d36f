package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// kruiseGates are the feature gates of both managers, OpenKruise's and bosun's: those the
// kruise-e2e harness turns on in bosun, which share their names with OpenKruise's, among them
// ImagePullJobGate, without which neither manager runs ImagePullJobs.
const kruiseGates = "PodUnavailableBudgetDeleteGate=true,PodUnavailableBudgetUpdateGate=true," +
	"KruiseDaemon=true,ImagePullJobGate=true,PreDownloadImageForDaemonSetUpdate=true"

// kruiseControllers are the controllers of kruise-manager that serve the kinds bosun takes
// over; the start waits until each runs its workers.
var kruiseControllers = []string{
	"cloneset-controller", "daemonset-controller", "podunavailablebudget-controller", "containerrecreaterequest-controller",
	"imagepulljob-controller", "imagelistpulljob-controller", "nodeimage-controller",
}

// hostVarRun is where kruise-daemon looks for the runtime's socket; the path is fixed in
// its code (its DaemonSet mounts the host's /var/run there). kruiseSocketFile, its
// --socket-file, names the node's containerd socket in it.
const (
	hostVarRun       = "/hostvarrun"
	kruiseSocketFile = "containerd.sock"
	// hostVarRunMarker marks a /hostvarrun this program made, so that a later run may
	// remove one a killed run left behind, and never anything else.
	hostVarRunMarker = ".made-by-bosun-takeover"
)

// kruise is OpenKruise running on the cluster: kruise-manager and kruise-daemon as
// processes, its manifests installed.
type kruise struct {
	manager *framework.KruiseManager
	daemon  *framework.Process
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
		WaitForControllers: kruiseControllers,
	}, filepath.Join(c.LogDir(), release.ManagerBinary()+".log"))
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", release.ManagerBinary(), err)
	}
	if k.daemon, err = startKruiseDaemon(ctx, c, release); err != nil {
		return nil, err
	}
	return k, nil
}

// err says which of OpenKruise's processes exited, with the end of its log.
func (k *kruise) err() error {
	for _, p := range []*framework.Process{k.managerProcess(), k.daemon} {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited with status %d; the end of %s:\n%s", p.Name(), p.ExitCode(), p.LogPath(), p.LogTail(40))
		}
	}
	return nil
}

func (k *kruise) managerProcess() *framework.Process {
	if k.manager == nil {
		return nil
	}
	return k.manager.Process
}

// stop stops kruise-daemon, then kruise-manager, and removes /hostvarrun.
func (k *kruise) stop() error {
	if k.daemon != nil {
		k.daemon.Stop(framework.DefaultStopGracePeriod)
	}
	if k.manager != nil {
		k.manager.Stop(framework.DefaultStopGracePeriod)
	}
	return removeHostVarRun()
}

// startKruiseDaemon runs the release's kruise-daemon for the node as the admin, its
// metrics and pprof on free loopback ports, and returns once it found the runtime, started
// its image puller and its ContainerRecreateRequest controller, and its /healthz answers.
// Its flags and the log lines waited for are the same in 1.8 and 1.9.
func startKruiseDaemon(ctx context.Context, c *cluster.Cluster, release framework.KruiseRelease) (*framework.Process, error) {
	name := release.DaemonBinary()
	binary, err := framework.ToolPath(name)
	if err != nil {
		return nil, fmt.Errorf("%w (%s is built by `hack/build-kruise.sh %s`)", err, name, name)
	}
	if err := makeHostVarRun(strings.TrimPrefix(c.RuntimeEndpoint(), "unix://")); err != nil {
		return nil, err
	}
	ports, err := framework.FreeLoopbackPorts(2)
	if err != nil {
		return nil, err
	}
	p, err := framework.StartProcess(framework.ProcessConfig{
		Name: name,
		Path: binary,
		Args: []string{
			"--kubeconfig=" + c.KubeconfigPath(),
			"--socket-file=" + kruiseSocketFile,
			"--addr=127.0.0.1:" + strconv.Itoa(ports[0]),
			"--enable-pprof=true",
			"--pprof-addr=127.0.0.1:" + strconv.Itoa(ports[1]),
			"--feature-gates=" + kruiseGates,
			"--v=2",
		},
		Env:     []string{"NODE_NAME=" + c.NodeName()},
		LogPath: filepath.Join(c.LogDir(), name+".log"),
	})
	if err != nil {
		return nil, err
	}
	// Its log says it found the socket, and when each controller has synced its cache.
	serving := []string{
		"Find configured CRI socket with given flag",
		"Started puller controller successfully",
		"Started crr daemon controller successfully",
	}
	healthz := fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0])
	err = framework.WaitFor(ctx, 2*time.Minute, name+" to serve", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited with status %d:\n%s", name, p.ExitCode(), p.LogTail(40))
		}
		log, err := p.Log()
		if err != nil {
			return false, err
		}
		for _, line := range serving {
			if !strings.Contains(log, line) {
				return false, nil
			}
		}
		return httpOK(ctx, healthz), nil
	})
	if err != nil {
		p.Stop(framework.DefaultStopGracePeriod)
		return nil, fmt.Errorf("%w; the end of %s:\n%s", err, p.LogPath(), p.LogTail(20))
	}
	return p, nil
}

func httpOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// makeHostVarRun makes /hostvarrun a directory holding a link to the node's runtime socket,
// as kruise-daemon's DaemonSet would mount the host's /var/run. One that an earlier run of
// this program left is replaced; anything else there is an error, never touched.
func makeHostVarRun(socket string) error {
	if err := removeHostVarRun(); err != nil {
		return err
	}
	if _, err := os.Lstat(hostVarRun); err == nil {
		return fmt.Errorf("%s exists and was not made by this program: kruise-daemon needs it for the node's runtime socket; move it away first", hostVarRun)
	}
	if err := os.Mkdir(hostVarRun, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(hostVarRun, hostVarRunMarker), nil, 0o644); err != nil {
		return err
	}
	return os.Symlink(socket, filepath.Join(hostVarRun, kruiseSocketFile))
}

// removeHostVarRun removes /hostvarrun if this program made it.
func removeHostVarRun() error {
	if _, err := os.Stat(filepath.Join(hostVarRun, hostVarRunMarker)); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	entries, err := os.ReadDir(hostVarRun)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != hostVarRunMarker && e.Name() != kruiseSocketFile {
			return fmt.Errorf("%s holds %s, which this program did not put there; left alone", hostVarRun, e.Name())
		}
	}
	return os.RemoveAll(hostVarRun)
}
