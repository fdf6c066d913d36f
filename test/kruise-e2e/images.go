package main

import (
	"context"
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"

	"github.com/bosun-dev/bosun/hack/images/ociimage"
	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// imagePath is the repository prefix under which OpenKruise's suite looks for its images
// (Kubernetes' e2e image list calls it the promoter registry).
const imagePath = "e2e-test-images"

// promoterRegistry is what the suite is told to pull from: the open registry behind the slow
// proxy, so that a pull takes seconds, as it does from a real registry. Two ImagePullJob specs
// rely on that: they read a job's copied pull secret after the job started, which a pull
// finished in a tenth of a second would already have removed.
const promoterRegistry = cluster.SlowOpenRegistryHost + "/" + imagePath

// imageListFile is the KUBE_TEST_REPO_LIST the suite reads: only the promoter registry
// moves; the invalid registry stays invalid, since a spec relies on that pull failing.
func imageListFile() string {
	return "promoterE2eRegistry: " + promoterRegistry + "\n"
}

// webStandIns are the suite's web server images: each serves HTTP on :80 and stops at once
// on SIGTERM, and each tag has a digest of its own (in-place update specs compare image IDs).
var webStandIns = []struct{ name, tag string }{
	{"httpd", "2.4.38-4"}, {"httpd", "2.4.39-4"},
	{"nginx", "1.14-4"}, {"nginx", "1.15-4"},
}

// dockerHubWeb is the one web server image some CloneSet specs name on Docker Hub itself
// (docker.io/library/nginx, beyond the reach of KUBE_TEST_REPO_LIST), under two tags with
// one digest: an in-place update from one tag to the other must complete although the
// image ID does not change. The cluster mirrors docker.io to the open registry, where it
// is pushed under the same repository path.
var dockerHubWeb = struct {
	repository string
	tags       []string
}{"library/nginx", []string{"alpine", "mainline-alpine"}}

// mirroredRegistries are the public registries the node pulls from the open registry.
var mirroredRegistries = []string{"docker.io"}

// busyboxTag and agnhostTag are the tags of the suite's image list at OpenKruise's
// Kubernetes version.
const (
	busyboxTag = "1.36.1-1"
	agnhostTag = "2.53"
	// redisTag is the suite's redis image, which its CloneSet specs run `sleep` in: a
	// busybox root of its own digest stands in for it.
	redisTag = "5.0.5-3"
)

// redisStandInCommand keeps the redis stand-in running like redis-server until it is told to
// stop: a bare shell exits at once, and as PID 1 `sleep` would ignore SIGTERM and make every
// stop wait out the grace period.
var redisStandInCommand = []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"}

// imagePadding is incompressible data in every image, so that each weighs a few MiB like
// the real ones, and a pull through the slow proxy takes a few seconds.
const imagePadding = 2 << 20

// webEntrypoint runs busybox's httpd under a shell that exits on SIGTERM: as PID 1, httpd
// would ignore the signal and every stop would wait out the grace period.
var webEntrypoint = []string{"/bin/sh", "-c", "trap 'exit 0' TERM; httpd -f -p 80 -h /www & wait"}

// busyboxPath is Debian's busybox-static (hack/install-deps.sh installs it).
const busyboxPath = "/bin/busybox"

// pushImages builds every image the suite needs and pushes it to the open registry.
func pushImages(ctx context.Context, agnhostBinary string) error {
	base, err := busyboxFiles(ctx)
	if err != nil {
		return err
	}
	// pushAs builds one image, named name:tag inside, and pushes it to repository under
	// each of tags.
	pushAs := func(repository, name, tag string, tags []string, config ociimage.Config, extra ...ociimage.File) error {
		files := append(append([]ociimage.File{}, base...), extra...)
		files = append(files,
			ociimage.File{Path: "/etc/stand-in", Data: []byte(fmt.Sprintf("%s:%s built by bosun's kruise-e2e\n", name, tag))},
			ociimage.File{Path: "/padding", Data: padding(name + ":" + tag)})
		config.Env = append(config.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
		img, err := ociimage.Build(files, config)
		if err != nil {
			return fmt.Errorf("packing %s:%s: %w", name, tag, err)
		}
		for _, t := range tags {
			if err := ociimage.Push(ctx, cluster.RegistryHost, repository, t, img, nil); err != nil {
				return fmt.Errorf("pushing %s:%s: %w", repository, t, err)
			}
		}
		return nil
	}
	push := func(name, tag string, config ociimage.Config, extra ...ociimage.File) error {
		return pushAs(imagePath+"/"+name, name, tag, []string{tag}, config, extra...)
	}
	web := func(repository, name, tag string, tags []string) error {
		page := fmt.Sprintf("<html><body>%s:%s</body></html>\n", name, tag)
		return pushAs(repository, name, tag, tags, ociimage.Config{Entrypoint: webEntrypoint, ExposedPorts: []string{"80/tcp"}},
			ociimage.File{Path: "/www/index.html", Data: []byte(page)})
	}
	for _, w := range webStandIns {
		if err := web(imagePath+"/"+w.name, w.name, w.tag, []string{w.tag}); err != nil {
			return err
		}
	}
	if err := web(dockerHubWeb.repository, dockerHubWeb.repository, dockerHubWeb.tags[0], dockerHubWeb.tags); err != nil {
		return err
	}
	if err := push("busybox", busyboxTag, ociimage.Config{Cmd: []string{"sh"}}); err != nil {
		return err
	}
	if err := push("redis", redisTag, ociimage.Config{Cmd: redisStandInCommand}); err != nil {
		return err
	}
	agnhost, err := os.ReadFile(agnhostBinary)
	if err != nil {
		return err
	}
	return push("agnhost", agnhostTag, ociimage.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}},
		ociimage.File{Path: "/agnhost", Mode: 0o755, Data: agnhost})
}

// busyboxFiles is a busybox root: the static binary and a link for each of its commands.
func busyboxFiles(ctx context.Context) ([]ociimage.File, error) {
	if err := checkStatic(busyboxPath); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("listing busybox's commands: %w", err)
	}
	files := []ociimage.File{
		{Path: "/bin/busybox", Mode: 0o755, Data: data},
		{Path: "/tmp/.keep"},
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
	}
	for _, command := range strings.Fields(string(out)) {
		if command == "busybox" {
			continue
		}
		files = append(files, ociimage.File{Path: "/bin/" + command, Link: "busybox"})
	}
	return files, nil
}

// checkStatic fails unless path is a statically linked executable: the images have no libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w (install Debian's busybox-static: hack/install-deps.sh)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: the images need Debian's busybox-static, not busybox", path)
		}
	}
	return nil
}

// padding is imagePadding bytes from a seed derived from the image's name, so that builds
// are reproducible and every image differs.
func padding(seed string) []byte {
	var key [32]byte
	copy(key[:], seed)
	data := make([]byte, imagePadding)
	_, _ = rand.NewChaCha8(key).Read(data)
	return data
}
