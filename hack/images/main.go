// Command images builds the OCI images of bosun-controller-manager and bosun-daemon and
// pushes them to a registry: `make images REGISTRY=...` runs it.
//
// No container engine is involved. Each image is one layer holding one statically linked
// binary, packed by hack/images/ociimage, the packer of the test images. The build is
// reproducible: the binaries are built with -trimpath and stamped with the commit's own
// date instead of the time of the build, and the packer fixes every time stamp and the
// order of the layer, so the same commit always gives the same digests.
//
// The manager runs as an unprivileged user (65532, the "nonroot" of distroless images): it
// only talks to the API server and serves HTTPS on unprivileged ports. bosun-daemon stays
// root, because the container runtime's socket is root's.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bosun-dev/bosun/hack/images/ociimage"
)

// versionPackage is where the binaries keep what `--version` prints.
const versionPackage = "k8s.io/component-base/version"

// sourceURL is the org.opencontainers.image.source label.
const sourceURL = "https://github.com/bosun-dev/bosun"

// image describes one of bosun's images.
type image struct {
	binary string
	// user is the image's default user: numeric, since the image has no /etc/passwd.
	user string
	// ports the binary serves by default, documented in the image's config.
	ports []string
}

var images = []image{
	// The webhook server (9876), and /healthz, /readyz and /metrics (10267).
	{binary: "bosun-controller-manager", user: "65532:65532", ports: []string{"9876/tcp", "10267/tcp"}},
	// /readyz, /livez and /metrics.
	{binary: "bosun-daemon", user: "0:0", ports: []string{"10268/tcp"}},
}

func main() {
	var opts options
	flag.StringVar(&opts.registry, "registry", "", `Where to push, with an optional path prefix: "host[:port]/path". A registry on loopback is spoken to over plain HTTP, any other over HTTPS; an explicit http:// or https:// decides otherwise. Images are pushed as <registry>/<binary>:<tag>. Credentials come from BOSUN_REGISTRY_USERNAME and BOSUN_REGISTRY_PASSWORD, else from the "auths" of $DOCKER_CONFIG/config.json (~/.docker/config.json).`)
	flag.StringVar(&opts.tag, "tag", "", "The images' tag; -version when empty.")
	flag.StringVar(&opts.version, "version", "", "The version stamped into the binaries and the images' labels, for example v0.2.0.")
	flag.StringVar(&opts.commit, "commit", "", "The commit the binaries are built from; HEAD's when empty.")
	flag.StringVar(&opts.workDir, "work-dir", "_output/images", "Where the static binaries are built.")
	flag.Parse()
	opts.root = "."
	if err := opts.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		flag.Usage()
		os.Exit(2)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	refs, err := buildAndPush(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	for _, ref := range refs {
		fmt.Println(ref)
	}
}

type options struct {
	registry, tag, version, commit, workDir string
	// root is the checkout the binaries are built from: the working directory, as make
	// runs the command from the top of the tree.
	root string
}

func (o *options) validate() error {
	if o.registry == "" {
		return errors.New("-registry is required (for example REGISTRY=127.0.0.1:5000/bosun)")
	}
	if o.version == "" {
		return errors.New("-version is required")
	}
	if o.tag == "" {
		o.tag = o.version
	}
	return nil
}

// buildAndPush builds and pushes every image and returns their references by digest,
// "<registry>/<binary>:<tag>@sha256:...", which is what manifests should pin.
func buildAndPush(ctx context.Context, o options) ([]string, error) {
	host, prefix := splitRegistry(o.registry)
	commit, created, err := commitOf(ctx, o.root, o.commit)
	if err != nil {
		return nil, err
	}
	auth, err := registryCredentials(host)
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, img := range images {
		built, err := img.build(ctx, o.root, o.workDir, o.version, commit, created)
		if err != nil {
			return nil, err
		}
		repository := strings.TrimPrefix(prefix+"/"+img.binary, "/")
		if err := ociimage.Push(ctx, host, repository, o.tag, built, auth); err != nil {
			return nil, err
		}
		_, display := ociimage.CutScheme(host)
		refs = append(refs, fmt.Sprintf("%s/%s:%s@%s", display, repository, o.tag, built.Digest))
	}
	return refs, nil
}

// build builds the image's binary from the module at root (into workDir) and packs it.
func (img image) build(ctx context.Context, root, workDir, version, commit string, created time.Time) (*ociimage.Image, error) {
	data, err := buildBinary(ctx, root, "./cmd/"+img.binary, filepath.Join(workDir, img.binary), version, commit, created)
	if err != nil {
		return nil, err
	}
	return img.pack(data, version, commit, created)
}

// pack makes the image of a built binary.
func (img image) pack(data []byte, version, commit string, created time.Time) (*ociimage.Image, error) {
	built, err := ociimage.Build(
		[]ociimage.File{{Path: "/usr/local/bin/" + img.binary, Mode: 0o755, Data: data}},
		ociimage.Config{
			Entrypoint:   []string{"/usr/local/bin/" + img.binary},
			User:         img.user,
			ExposedPorts: img.ports,
			Labels: map[string]string{
				"org.opencontainers.image.title":    img.binary,
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": commit,
				"org.opencontainers.image.created":  created.Format(time.RFC3339),
				"org.opencontainers.image.source":   sourceURL,
			},
		})
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", img.binary, err)
	}
	return built, nil
}

// splitRegistry splits "[scheme://]host[:port][/path]" into the registry, with its scheme,
// and the repository prefix. Without a scheme, a registry on loopback is spoken to over plain
// HTTP (ociimage's bare "host:port") and any other over HTTPS.
func splitRegistry(registry string) (host, prefix string) {
	scheme, rest := ociimage.CutScheme(registry)
	host, prefix, _ = strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if scheme == "https" || (scheme == "" && !onLoopback(host)) {
		return "https://" + host, prefix
	}
	return host, prefix // ociimage's spelling of plain HTTP
}

// onLoopback reports whether host[:port] names this machine.
func onLoopback(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// commitOf resolves the commit (HEAD when empty) and its committer date, which stands in
// for the build time so that rebuilding a commit changes nothing.
func commitOf(ctx context.Context, root, commit string) (string, time.Time, error) {
	if commit == "" {
		commit = "HEAD"
	}
	git := exec.CommandContext(ctx, "git", "show", "-s", "--format=%H %ct", commit)
	git.Dir = root
	out, err := git.Output()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	var hash string
	var seconds int64
	if _, err := fmt.Sscanf(string(out), "%s %d", &hash, &seconds); err != nil {
		return "", time.Time{}, fmt.Errorf("reading commit %s: unexpected git output %q: %w", commit, out, err)
	}
	return hash, time.Unix(seconds, 0).UTC(), nil
}

// buildBinary builds the main package pkg of the module at root as a static binary at out
// and returns it.
func buildBinary(ctx context.Context, root, pkg, out, version, commit string, created time.Time) ([]byte, error) {
	out, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	ldflags := strings.Join([]string{
		"-s", "-w",
		"-X", versionPackage + ".gitVersion=" + version,
		"-X", versionPackage + ".gitCommit=" + commit,
		"-X", versionPackage + ".gitTreeState=clean",
		"-X", versionPackage + ".buildDate=" + created.Format("2006-01-02T15:04:05Z"),
		"-X", versionPackage + "/verflag.programName=bosun",
	}, " ")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = root
	// Static: the image holds nothing but the binary.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if output, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w\n%s", pkg, err, output)
	}
	return os.ReadFile(out)
}

// registryCredentials returns the credentials for registry from the environment or from
// the Docker client's configuration, nil when there are none (an open registry).
func registryCredentials(registry string) (*ociimage.BasicAuth, error) {
	if user := os.Getenv("BOSUN_REGISTRY_USERNAME"); user != "" {
		return &ociimage.BasicAuth{Username: user, Password: os.Getenv("BOSUN_REGISTRY_PASSWORD")}, nil
	}
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil
		}
		dir = filepath.Join(home, ".docker")
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading registry credentials: %w", err)
	}
	return credentialsFromDockerConfig(data, registry)
}

// credentialsFromDockerConfig finds the registry's entry in a Docker client configuration:
// "auths" keyed by host, or by a URL of it as older clients wrote them.
func credentialsFromDockerConfig(data []byte, registry string) (*ociimage.BasicAuth, error) {
	var config struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &config); err != nil {
		return nil, fmt.Errorf("decoding the Docker client configuration: %w", err)
	}
	_, host := ociimage.CutScheme(registry)
	for key, entry := range config.Auths {
		_, keyHost := ociimage.CutScheme(key)
		keyHost, _, _ = strings.Cut(keyHost, "/")
		if keyHost != host || entry.Auth == "" {
			continue
		}
		decoded, err := base64.StdEncoding.DecodeString(entry.Auth)
		if err != nil {
			return nil, fmt.Errorf("decoding the credentials for %s in the Docker client configuration: %w", key, err)
		}
		user, password, ok := strings.Cut(string(decoded), ":")
		if !ok {
			return nil, fmt.Errorf("the credentials for %s in the Docker client configuration are not user:password", key)
		}
		return &ociimage.BasicAuth{Username: user, Password: password}, nil
	}
	return nil, nil
}
