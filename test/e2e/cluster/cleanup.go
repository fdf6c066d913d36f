package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kubeletContainerLogLinks is where the kubelet links every container's log, whatever its
// configuration says; the links point into the cluster directory.
const kubeletContainerLogLinks = "/var/log/containers"

// CheckHost returns an error naming what this machine lacks to run the cluster: root, or a
// program that hack/install-deps.sh installs.
func CheckHost() error {
	if os.Geteuid() != 0 {
		return errors.New("the local cluster runs a kubelet and containerd, which need root: run as root")
	}
	var missing []string
	for _, program := range []string{"containerd", "runc", "docker-registry", "htpasswd", "ip", "go"} {
		if _, err := exec.LookPath(program); err != nil {
			missing = append(missing, program)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, plugin))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("this machine lacks %s: run hack/install-deps.sh as root", strings.Join(missing, ", "))
	}
	return nil
}

// cleanUp removes what a run of the cluster in dir leaves outside dir or pinned inside it,
// whether it stopped cleanly or was killed: processes started from dir, containers in its
// runc root, mounts under it, the bridge and the kubelet's log links into it. Each step
// goes on after an error, so one stuck mount does not leave the bridge behind.
func cleanUp(ctx context.Context, dir string) error {
	var errs []error
	errs = append(errs, killProcessesOf(dir))
	errs = append(errs, deleteContainers(ctx, dir))
	errs = append(errs, unmountUnder(dir))
	errs = append(errs, deleteBridge(ctx))
	errs = append(errs, removeLogLinksInto(dir))
	errs = append(errs, removeNetworkResults())
	errs = append(errs, removeStaleShimSockets())
	errs = append(errs, removeSystemLeftovers())
	// Its directory says kube-proxy ran for this cluster (the in-cluster install does).
	if _, err := os.Stat(filepath.Join(dir, "kube-proxy")); err == nil {
		errs = append(errs, cleanUpKubeProxy(ctx))
	}
	return errors.Join(errs...)
}

// systemLeftovers are what the node's programs create outside the cluster directory
// whatever they are configured to do: the kubelet's device-plugin socket and container log
// links, the CNI library's result cache, the shims' socket directory, containerd's
// cgroups. Files are removed; directories only when empty, so nothing another kubelet or
// containerd on this machine keeps there is touched.
var systemLeftovers = []string{
	"/var/lib/kubelet/device-plugins/kubelet.sock",
	"/var/lib/kubelet/device-plugins",
	"/var/lib/kubelet",
	kubeletContainerLogLinks,
	"/var/lib/cni/results",
	"/var/lib/cni",
	"/run/containerd/s",
	"/run/containerd",
}

func removeSystemLeftovers() error {
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/k8s.io")
	var errs []error
	for _, path := range append(systemLeftovers, cgroups...) {
		err := os.Remove(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) &&
			!errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.EBUSY) {
			errs = append(errs, fmt.Errorf("removing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// shimSocketDir is where containerd 1.6's shims listen, whatever containerd's own paths.
const shimSocketDir = "/run/containerd/s"

// removeStaleShimSockets removes the sockets in shimSocketDir that no process listens on
// any more (a live socket is listed in /proc/net/unix); a shim that did not exit cleanly
// leaves its socket behind.
func removeStaleShimSockets() error {
	sockets, _ := filepath.Glob(filepath.Join(shimSocketDir, "*"))
	if len(sockets) == 0 {
		return nil
	}
	listening, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return err
	}
	var errs []error
	for _, socket := range sockets {
		if strings.Contains(string(listening), " "+socket+"\n") {
			continue
		}
		if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeNetworkResults removes the CNI result cache entries of the pod network, and the
// loopback entries of the same sandboxes.
func removeNetworkResults() error {
	const cache = "/var/lib/cni/results"
	results, _ := filepath.Glob(filepath.Join(cache, networkName+"-*-eth0"))
	var errs []error
	for _, result := range results {
		sandbox := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(result), networkName+"-"), "-eth0")
		for _, path := range []string{result, filepath.Join(cache, "cni-loopback-"+sandbox+"-lo")} {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// killProcessesOf kills every process whose command line names dir: the components, and
// containerd's shims, which outlive containerd by design. This process and its ancestors
// are spared.
func killProcessesOf(dir string) error {
	spared := map[int]bool{}
	for pid := os.Getpid(); pid > 1; pid = parentOf(pid) {
		spared[pid] = true
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var victims []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || spared[pid] {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone already
		}
		if strings.Contains(string(cmdline), dir+"/") {
			victims = append(victims, pid)
		}
	}
	for _, pid := range victims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Wait (briefly) for them to go, so that their mounts and sockets are released.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range victims {
		for processExists(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if processExists(pid) {
			return fmt.Errorf("process %d, started from %s, survived SIGKILL", pid, dir)
		}
	}
	return nil
}

func parentOf(pid int) int {
	fields := statFields(pid)
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}
func processExists(pid int) bool {
	// A zombie has exited; only its parent's wait is missing.
	fields := statFields(pid)
	return len(fields) > 0 && fields[0] != "Z"
}

// statFields returns the fields of /proc/<pid>/stat after the command name (state first,
// then the parent's pid), or nil when the process is gone. The name, in parentheses, may
// hold spaces; the fields after it do not.
func statFields(pid int) []string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
}

// deleteContainers force-deletes every container left in containerd's runc root: their
// processes die, their cgroups go. After a clean stop the root is empty.
func deleteContainers(ctx context.Context, dir string) error {
	namespaces, err := os.ReadDir(runcRoot(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range namespaces {
		root := filepath.Join(runcRoot(dir), ns.Name())
		containers, err := os.ReadDir(root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, container := range containers {
			out, err := exec.CommandContext(ctx, "runc", "--root", root, "delete", "--force", container.Name()).CombinedOutput()
			if err != nil {
				errs = append(errs, fmt.Errorf("runc delete --force %s: %w: %s", container.Name(), err, strings.TrimSpace(string(out))))
			}
		}
	}
	return errors.Join(errs...)
}

// runcRoot is where containerd's runc shims keep container state (containerd's default is
// under /run).
func runcRoot(dir string) string { return filepath.Join(dir, "containerd", "runc") }

// unmountUnder unmounts every mount point under dir, deepest first: container root
// filesystems, shm and network namespace mounts, the kubelet's volumes.
func unmountUnder(dir string) error {
	mounts, err := mountPointsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mount := range mounts {
		if err := syscall.Unmount(mount, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			// Busy: detach it now; the kernel finishes once the last user is gone.
			if err := syscall.Unmount(mount, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", mount, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mountPointsUnder lists the mount points under dir from /proc/self/mountinfo, deepest
// first, each once.
func mountPointsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var mounts []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 5 {
			continue
		}
		mount := unescapeMountPath(fields[4])
		if strings.HasPrefix(mount, dir+"/") && !seen[mount] {
			seen[mount] = true
			mounts = append(mounts, mount)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts, nil
}

// unescapeMountPath undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// deleteBridge removes the pod bridge and any veth still attached to it. Pods' veths
// normally go with their network namespaces.
func deleteBridge(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridgeName)); err != nil {
		return nil
	}
	ports, _ := filepath.Glob(filepath.Join("/sys/class/net", bridgeName, "brif", "*"))
	for _, port := range ports {
		_ = exec.CommandContext(ctx, "ip", "link", "delete", filepath.Base(port)).Run()
	}
	if out, err := exec.CommandContext(ctx, "ip", "link", "delete", bridgeName).CombinedOutput(); err != nil {
		return fmt.Errorf("deleting the bridge %s: %w: %s", bridgeName, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeLogLinksInto removes the kubelet's container log links that point into dir.
func removeLogLinksInto(dir string) error {
	links, err := os.ReadDir(kubeletContainerLogLinks)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, link := range links {
		path := filepath.Join(kubeletContainerLogLinks, link.Name())
		target, err := os.Readlink(path)
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
