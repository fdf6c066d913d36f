package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// The profiles a cluster run leaves in its log directory, per process label.
func heapProfilePath(logDir, label string) string {
	return filepath.Join(logDir, fmt.Sprintf("heap-%s.pb.gz", label))
}

func rolloutProfilePath(logDir, label string) string {
	return filepath.Join(logDir, fmt.Sprintf("cpu-rollout-%s.pb.gz", label))
}

// podStructBytes is what a cached pod costs before any of its fields: the heap profile
// charges decoding with what the fields point to, not with the struct they live in.
const podStructBytes = float64(unsafe.Sizeof(corev1.Pod{}))

// podCacheFrames are where a process allocates what its cached pods hold: protobuf pod
// decoding (all three managers read pods as protobuf; one that read them as JSON would
// allocate them elsewhere, through reflection, and get no figure) and, in bosun, the pod
// cache's transform, which builds the label and annotation maps pods share and the table
// that finds them. Neither runs under the other, so their bytes add up.
var podCacheFrames = []string{`v1\.\(\*Pod\)\.Unmarshal`, `/pkg/controller/podcache\.`}

// goToolPprof runs `go tool pprof` with args on a profile and returns its output.
func goToolPprof(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof"}, args...)...).Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return "", fmt.Errorf("go tool pprof %s: %w: %s", strings.Join(args, " "), err, exitErr.Stderr)
		}
		return "", fmt.Errorf("go tool pprof %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// cachedPodBytes reads from a heap profile what one cached pod holds: the live bytes
// allocated under podCacheFrames, divided by pods, plus the Pod struct. ok is false when
// the profile shows no such bytes.
func cachedPodBytes(ctx context.Context, heapProfile string, pods int) (float64, bool, error) {
	total := 0.0
	for _, frame := range podCacheFrames {
		focused, err := focusedBytes(ctx, heapProfile, frame)
		if err != nil {
			return 0, false, err
		}
		total += focused
	}
	if total == 0 || pods == 0 {
		return 0, false, nil
	}
	return total/float64(pods) + podStructBytes, true, nil
}

// focusedBytes returns the live bytes a heap profile holds under the frames matching
// focus, 0 when none does.
func focusedBytes(ctx context.Context, heapProfile, focus string) (float64, error) {
	out, err := goToolPprof(ctx, "-unit=B", "-sample_index=inuse_space", "-focus="+focus, "-top", "-cum", "-nodecount=1", heapProfile)
	if err != nil {
		return 0, err
	}
	focused, _ := topCumBytes(out)
	return focused, nil
}

// topCumBytes reads the cumulative bytes of the first node of `go tool pprof -unit=B -top
// -cum` output: with a focus, every sample kept passes through it.
func topCumBytes(out string) (float64, bool) {
	header := false
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) >= 5 && fields[0] == "flat" && fields[3] == "cum" {
			header = true
			continue
		}
		if !header || len(fields) < 6 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(fields[3], "B"), 64)
		return v, err == nil
	}
	return 0, false
}

// profileTops is what the report says of where each process's memory and rollout CPU go
// in run: the top of each profile the run left.
func profileTops(ctx context.Context, run clusterRun) (string, error) {
	var b strings.Builder
	for _, p := range run.Processes {
		for _, prof := range []struct {
			what, path string
			args       []string
		}{
			{"live heap after a collection, steady", heapProfilePath(run.LogDir, p.Label), []string{"-sample_index=inuse_space"}},
			{"CPU, the rollout's first part", rolloutProfilePath(run.LogDir, p.Label), nil},
		} {
			if _, err := os.Stat(prof.path); err != nil {
				continue
			}
			out, err := goToolPprof(ctx, append(prof.args, "-top", "-nodecount=12", prof.path)...)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%s, %s (`go tool pprof -top %s`):\n\n```text\n%s```\n\n", p.Label, prof.what,
				strings.Join(append(prof.args, prof.path), " "), topLines(out))
		}
	}
	return b.String(), nil
}

// topLines keeps the totals line and the table of `go tool pprof -top` output, without the
// file, build and time lines before them.
func topLines(out string) string {
	var b strings.Builder
	keep := false
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "Showing nodes accounting for") {
			keep = true
		}
		if keep {
			b.WriteString(line)
		}
	}
	return b.String()
}
