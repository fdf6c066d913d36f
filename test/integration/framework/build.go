package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// builds remembers the binaries built by this test binary, so that each is built once.
var builds struct {
	mu      sync.Mutex
	dir     string // made on first use
	results map[string]*buildResult
}

// testBinDir is where BuildGoBinary puts binaries, under the repository root. It outlives
// the test binaries on purpose: the go command does not link again a binary that is up to
// date at its output path, which saves every test package after the first the ten seconds
// or so a link of bosun-controller-manager takes.
const testBinDir = "_output/test-bin"

type buildResult struct {
	once   sync.Once
	path   string
	err    error
	output string
}

// BuildBosunBinary builds ./cmd/<name> of the bosun repository (bosun-controller-manager,
// bosun-daemon) and returns the path of the binary. Every test of a package gets the
// same binary, built by the first one that asks.
func BuildBosunBinary(t testing.TB, name string) string {
	t.Helper()
	return BuildGoBinary(t, "./cmd/"+name)
}

// BuildGoBinary builds the main package pkg, a path relative to the repository root
// such as "./cmd/bosun-daemon", once per test binary and returns the binary's path. The
// build uses the go command that runs the tests and inherits GOFLAGS, so -mod=vendor
// and friends apply.
func BuildGoBinary(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.results == nil {
		builds.results = map[string]*buildResult{}
	}
	result, ok := builds.results[pkg]
	if !ok {
		result = &buildResult{}
		builds.results[pkg] = result
	}
	builds.mu.Unlock()

	result.once.Do(func() { result.path, result.output, result.err = buildGoBinary(pkg) })
	if result.err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, result.err, result.output)
	}
	return result.path
}

func buildGoBinary(pkg string) (path, output string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	dir, err := buildDir()
	if err != nil {
		return "", "", err
	}
	// Tests may build both ./cmd/x and ./other/x; keep their binaries apart.
	path = filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(strings.Trim(pkg, "./")))
	// Test packages that run at once (go test -p) build the same binaries: one at a time.
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", "", err
	}
	defer unlock()
	// `go test` puts the go command that runs it first in PATH.
	cmd := exec.Command("go", "build", "-o", path, pkg)
	cmd.Dir = root
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", string(out), fmt.Errorf("go build (after %v): %w", time.Since(began).Round(time.Millisecond), err)
	}
	return path, string(out), nil
}

func buildDir() (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir := filepath.Join(root, testBinDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("creating a directory for test binaries: %w", err)
		}
		builds.dir = dir
	}
	return builds.dir, nil
}

// lockFile takes an exclusive lock on path, made if missing, and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
