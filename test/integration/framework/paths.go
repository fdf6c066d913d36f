package framework

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const (
	// ToolsBinEnv names the environment variable that points at the directory holding
	// the etcd, kube-apiserver and kubectl binaries.
	ToolsBinEnv = "BOSUN_TOOLS_BIN"

	// modulePath identifies bosun's root go.mod while walking up from the working
	// directory; the staging modules have go.mod files of their own.
	modulePath = "github.com/bosun-dev/bosun"
)

// ServerBinaries are the binaries StartControlPlane needs.
var ServerBinaries = []string{"etcd", "kube-apiserver"}

// MissingBinariesError reports test server binaries that have not been built.
type MissingBinariesError struct {
	// Dir is the directory that was searched.
	Dir string
	// Missing lists the binaries that were not found there.
	Missing []string
}

func (e *MissingBinariesError) Error() string {
	return fmt.Sprintf("integration test servers missing from %s: %s; build them with `make test-servers` "+
		"(hack/build-test-servers.sh, a few minutes the first time) or point %s at a directory that holds them",
		e.Dir, strings.Join(e.Missing, ", "), ToolsBinEnv)
}

var repoRoot = sync.OnceValues(findRepoRoot)

// RepoRoot returns the root of the bosun repository: the nearest directory above the
// working directory whose go.mod declares module github.com/bosun-dev/bosun. Tests run
// in their package directory, so this finds the checkout the test belongs to.
func RepoRoot() (string, error) {
	return repoRoot()
}

func findRepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the bosun repository root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if declaresModule(filepath.Join(dir, "go.mod"), modulePath) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or any parent directory", modulePath, wd)
		}
	}
}

// declaresModule reports whether the go.mod file at path declares module mod.
func declaresModule(path, mod string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == mod
		}
	}
	return false
}

// ToolsBinDir returns the directory holding the test server binaries: $BOSUN_TOOLS_BIN
// if set, else <repo root>/_output/tools/bin where hack/build-test-servers.sh puts them.
func ToolsBinDir() (string, error) {
	if dir := os.Getenv(ToolsBinEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "_output", "tools", "bin"), nil
}

// ToolPath returns the path of the named test server binary (etcd, kube-apiserver,
// kubectl, ...). The error is a *MissingBinariesError when it has not been built.
func ToolPath(name string) (string, error) {
	paths, err := toolPaths(name)
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// toolPaths resolves several binaries at once so that one error names all missing ones.
func toolPaths(names ...string) ([]string, error) {
	dir, err := ToolsBinDir()
	if err != nil {
		return nil, err
	}
	var paths, missing []string
	for _, name := range names {
		path := filepath.Join(dir, name)
		// The build script writes <name>.tmp and renames it when done, so a file that
		// exists under its final name is complete.
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
			continue
		}
		paths = append(paths, path)
	}
	if len(missing) > 0 {
		return nil, &MissingBinariesError{Dir: dir, Missing: missing}
	}
	return paths, nil
}
