package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bosun-dev/bosun/hack/images/ociimage"
)

const (
	// PauseImage is the pod sandbox image containerd runs (test/images/pause).
	PauseImage = RegistryHost + "/" + pauseRepository + ":" + pauseTag

	pauseRepository     = "bosun/pause"
	pauseTag            = "1.0"
	webserverRepository = "bosun/webserver"
	// WebserverPort is the port the test web server listens on.
	WebserverPort = 8080
)

// LargeWebserverTag is a tag of the test web server, in the private registry only, that
// also holds LargeWebserverPadding bytes of incompressible data: through SlowRegistryHost
// its pull takes about ten seconds. LargeFaultsWebserverTag is the same with other data,
// for the cases that break a pull midway: containerd may keep what a broken pull
// downloaded, which would let a later pull of LargeWebserverTag finish at once.
const (
	LargeWebserverTag       = "large"
	LargeFaultsWebserverTag = "large-faults"
	LargeWebserverPadding   = 8 << 20
)

// WebserverVersions are the tags of the test web server (test/images/webserver) in both
// registries; each answers /version with its tag, so a rollout can be told apart.
var WebserverVersions = []string{"v1", "v2", "v3"}

// WebserverImage names a version of the test web server in the open registry.
func WebserverImage(version string) string {
	return RegistryHost + "/" + webserverRepository + ":" + version
}

// PrivateWebserverImage names a version of the test web server in the private registry,
// which needs a pull secret.
func PrivateWebserverImage(version string) string {
	return PrivateRegistryHost + "/" + webserverRepository + ":" + version
}

// SlowWebserverImage names a tag of the test web server in the private registry, through
// the slow proxy in front of it: pulls need a pull secret for SlowRegistryHost.
func SlowWebserverImage(tag string) string {
	return SlowRegistryHost + "/" + webserverRepository + ":" + tag
}

// pushImages builds the test images from test/images and pushes them: the pause image to
// the open registry, every web server version to both, the large web server to the
// private one.
func (c *Cluster) pushImages(ctx context.Context) error {
	pause, err := c.buildImage(ctx, "pause", "", ociimage.Config{Entrypoint: []string{"/pause"}})
	if err != nil {
		return err
	}
	if err := ociimage.Push(ctx, RegistryHost, pauseRepository, pauseTag, pause, nil); err != nil {
		return err
	}
	private := &ociimage.BasicAuth{Username: PrivateRegistryUser, Password: PrivateRegistryPassword}
	for _, version := range WebserverVersions {
		img, err := c.buildImage(ctx, "webserver", version, ociimage.Config{
			Entrypoint:   []string{"/webserver"},
			ExposedPorts: []string{fmt.Sprintf("%d/tcp", WebserverPort)},
		})
		if err != nil {
			return err
		}
		if err := ociimage.Push(ctx, RegistryHost, webserverRepository, version, img, nil); err != nil {
			return err
		}
		if err := ociimage.Push(ctx, PrivateRegistryHost, webserverRepository, version, img, private); err != nil {
			return err
		}
	}
	// The padding comes from a fixed seed per tag, so that the images' digests never change.
	for i, tag := range []string{LargeWebserverTag, LargeFaultsWebserverTag} {
		padding := make([]byte, LargeWebserverPadding)
		_, _ = rand.NewChaCha8([32]byte{byte(i)}).Read(padding)
		large, err := c.buildImage(ctx, "webserver", tag, ociimage.Config{
			Entrypoint:   []string{"/webserver"},
			ExposedPorts: []string{fmt.Sprintf("%d/tcp", WebserverPort)},
		}, ociimage.File{Path: "/padding", Data: padding})
		if err != nil {
			return err
		}
		if err := ociimage.Push(ctx, PrivateRegistryHost, webserverRepository, tag, large, private); err != nil {
			return err
		}
	}
	return nil
}

// buildImage compiles test/images/<name> as a static binary (its main.version set to
// version when given) and packs it as a one-layer image holding /<name> and the extra
// files.
func (c *Cluster) buildImage(ctx context.Context, name, version string, config ociimage.Config, extra ...ociimage.File) (*ociimage.Image, error) {
	binary := filepath.Join(c.dir, "images", name+"-"+version)
	ldflags := "-s -w"
	if version != "" {
		ldflags += " -X main.version=" + version
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", binary, "./test/images/"+name)
	cmd.Dir = repoRoot()
	// Static: the image has no libc.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building test/images/%s: %w\n%s", name, err, out)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	img, err := ociimage.Build(append([]ociimage.File{{Path: "/" + name, Mode: 0o755, Data: data}}, extra...), config)
	if err != nil {
		return nil, fmt.Errorf("packing the %s image: %w", name, err)
	}
	return img, nil
}
