package cluster

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

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// kruise-daemon looks for the runtime's socket under kruiseHostVarRun, a path fixed in its
// code (its DaemonSet mounts the host's /var/run there); kruiseSocketFile, its
// --socket-file, names the node's containerd socket in it.
const (
	kruiseHostVarRun = "/hostvarrun"
	kruiseSocketFile = "containerd.sock"
	// kruiseHostVarRunMarker marks a /hostvarrun made here, so that a later run may remove
	// one a killed run left behind, and never anything else.
	kruiseHostVarRunMarker = ".made-by-bosun-tests"
	// kruiseHostVarRunOldMarker is the marker the takeover test wrote before this code
	// moved here; a /hostvarrun carrying it was made by bosun's tests too.
	kruiseHostVarRunOldMarker = ".made-by-bosun-takeover"
)

// KruiseDaemon is OpenKruise's node agent running for the cluster's node, for the tests
// that run OpenKruise itself on the cluster: the takeover test, and OpenKruise's suite
// against its own manager.
type KruiseDaemon struct {
	*framework.Process
}

// StartKruiseDaemon runs the release's kruise-daemon for the node as the admin, with
// featureGates, its metrics and pprof on free loopback ports, and returns once it found the
// runtime, started its image puller and its ContainerRecreateRequest controller, and its
// /healthz answers. Its flags and the log lines waited for are the same in 1.8 and 1.9.
// The cluster must run without bosun (Options.WithoutBosun): two node agents would race
// for the same NodeImage and ContainerRecreateRequests.
func (c *Cluster) StartKruiseDaemon(ctx context.Context, release framework.KruiseRelease, featureGates string) (*KruiseDaemon, error) {
	if c.Component("bosun-daemon") != nil {
		return nil, errors.New("starting kruise-daemon: bosun-daemon runs for the node already")
	}
	name := release.DaemonBinary()
	binary, err := framework.ToolPath(name)
	if err != nil {
		return nil, fmt.Errorf("%w (%s is built by `hack/build-kruise.sh %s`)", err, name, name)
	}
	if err := makeKruiseHostVarRun(strings.TrimPrefix(c.RuntimeEndpoint(), "unix://")); err != nil {
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
			"--feature-gates=" + featureGates,
			"--v=2",
		},
		Env:     []string{"NODE_NAME=" + c.NodeName()},
		LogPath: c.logPath(name),
	})
	if err != nil {
		return nil, err
	}
	d := &KruiseDaemon{Process: p}
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
		return answers(ctx, healthz, http.StatusOK), nil
	})
	if err != nil {
		err = fmt.Errorf("%w; the end of %s:\n%s", err, p.LogPath(), p.LogTail(20))
		if stopErr := d.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	return d, nil
}

// Stop stops kruise-daemon and removes the /hostvarrun made for it.
func (d *KruiseDaemon) Stop() error {
	d.Process.Stop(framework.DefaultStopGracePeriod)
	return removeKruiseHostVarRun()
}

// makeKruiseHostVarRun makes /hostvarrun a directory holding a link to the node's runtime
// socket, as kruise-daemon's DaemonSet would mount the host's /var/run. One that an
// earlier run left is replaced; anything else there is an error, never touched.
func makeKruiseHostVarRun(socket string) error {
	if err := removeKruiseHostVarRun(); err != nil {
		return err
	}
	if _, err := os.Lstat(kruiseHostVarRun); err == nil {
		return fmt.Errorf("%s exists and was not made by bosun's tests: kruise-daemon needs it for the node's runtime socket; move it away first", kruiseHostVarRun)
	}
	if err := os.Mkdir(kruiseHostVarRun, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(kruiseHostVarRun, kruiseHostVarRunMarker), nil, 0o644); err != nil {
		return err
	}
	return os.Symlink(socket, filepath.Join(kruiseHostVarRun, kruiseSocketFile))
}

// removeKruiseHostVarRun removes /hostvarrun if bosun's tests made it.
func removeKruiseHostVarRun() error {
	ours := map[string]bool{kruiseHostVarRunMarker: true, kruiseHostVarRunOldMarker: true, kruiseSocketFile: true}
	entries, err := os.ReadDir(kruiseHostVarRun)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	marked := false
	for _, e := range entries {
		if !ours[e.Name()] {
			return fmt.Errorf("%s holds %s, which bosun's tests did not put there; left alone", kruiseHostVarRun, e.Name())
		}
		marked = marked || e.Name() != kruiseSocketFile
	}
	if !marked {
		return nil
	}
	return os.RemoveAll(kruiseHostVarRun)
}
