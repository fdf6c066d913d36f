package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The loopback registries. Their addresses are fixed, unlike every other port of the
// cluster, because they are part of the image names users type. They are not Debian's
// default (5000), where a docker-registry service the package started may already listen.
const (
	// RegistryHost serves every image without authentication.
	RegistryHost = "127.0.0.1:5100"
	// PrivateRegistryHost serves the same images only to PrivateRegistryUser, for tests
	// of image pull secrets.
	PrivateRegistryHost = "127.0.0.1:5101"
	// PrivateRegistryUser and PrivateRegistryPassword are the private registry's one
	// account. The registry listens on loopback only and lives as long as the cluster.
	PrivateRegistryUser     = "bosun"
	PrivateRegistryPassword = "bosun-local-registry"
	// SlowRegistryHost is the private registry (same images, same account) behind a
	// proxy that sends at most SlowRegistryBytesPerSecond: pulling a multi-megabyte image
	// takes seconds, as over a slow network, long enough to watch its progress.
	SlowRegistryHost           = "127.0.0.1:5102"
	SlowRegistryBytesPerSecond = 1 << 20
	// SlowOpenRegistryHost is the open registry behind a proxy of the same speed: images
	// pulled through it take as long as over a real network, which timing assumptions of
	// OpenKruise's suite rely on.
	SlowOpenRegistryHost = "127.0.0.1:5103"
)

// registryHosts are the addresses of every registry the node pulls from.
var registryHosts = []string{RegistryHost, PrivateRegistryHost, SlowRegistryHost, SlowOpenRegistryHost}

// registry is a CNCF distribution registry (Debian's docker-registry) on loopback.
type registry struct {
	*framework.Process
	host string
	auth bool
}

func (r *registry) describe() string {
	if r.auth {
		return fmt.Sprintf("http://%s (user %s, password %s)", r.host, PrivateRegistryUser, PrivateRegistryPassword)
	}
	return "http://" + r.host
}

// startRegistries starts the open and the private registry, and the slow proxy in front of
// the private one.
func (c *Cluster) startRegistries(ctx context.Context) error {
	for _, spec := range []struct {
		name, host string
		auth       bool
	}{
		{"registry", RegistryHost, false},
		{"private-registry", PrivateRegistryHost, true},
	} {
		r, err := c.startRegistry(ctx, spec.name, spec.host, spec.auth)
		if err != nil {
			return err
		}
		c.registries = append(c.registries, r)
	}
	for _, slow := range []struct{ host, target string }{
		{SlowRegistryHost, PrivateRegistryHost},
		{SlowOpenRegistryHost, RegistryHost},
	} {
		proxy, err := startThrottledProxy(slow.host, slow.target, SlowRegistryBytesPerSecond)
		if err != nil {
			return fmt.Errorf("starting the slow registry in front of %s: %w", slow.target, err)
		}
		c.slowRegistries = append(c.slowRegistries, proxy)
	}
	return nil
}

// checkNoOtherCluster fails when the registries' ports are taken: most likely by another
// local cluster (or an end-to-end run) on this machine, with which this one would share
// the ports and the node's bridge.
func checkNoOtherCluster() error {
	for _, host := range registryHosts {
		if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
			conn.Close()
			return fmt.Errorf("%s is already in use: is another bosun local cluster running on this machine? "+
				"Stop it first, or point the end-to-end suite at it with BOSUN_E2E_CLUSTER_DIR", host)
		}
	}
	return nil
}

func (c *Cluster) startRegistry(ctx context.Context, name, host string, auth bool) (*registry, error) {
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "storage"), host)
	if auth {
		htpasswd := filepath.Join(dir, "htpasswd")
		out, err := exec.CommandContext(ctx, "htpasswd", "-Bbn", PrivateRegistryUser, PrivateRegistryPassword).Output()
		if err != nil {
			return nil, fmt.Errorf("making the registry's password file with htpasswd: %w", err)
		}
		if err := os.WriteFile(htpasswd, out, 0o600); err != nil {
			return nil, err
		}
		config += fmt.Sprintf("auth:\n  htpasswd:\n    realm: bosun-local\n    path: %s\n", htpasswd)
	}
	configPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	process, err := framework.StartProcess(framework.ProcessConfig{
		Name:    name,
		Path:    "docker-registry",
		Args:    []string{"serve", configPath},
		LogPath: c.logPath(name),
	})
	if err != nil {
		return nil, err
	}
	r := &registry{Process: process, host: host, auth: auth}
	// /v2/ answers 200 on the open registry and 401 on the private one once it serves.
	err = framework.WaitFor(ctx, 30*time.Second, name+" to serve", func(ctx context.Context) (bool, error) {
		if process.Exited() {
			return false, fmt.Errorf("%s exited: %s", name, process.LogTail(20))
		}
		return answers(ctx, "http://"+host+"/v2/", http.StatusOK, http.StatusUnauthorized), nil
	})
	if err != nil {
		process.Stop(framework.DefaultStopGracePeriod)
		return nil, err
	}
	return r, nil
}
