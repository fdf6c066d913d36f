package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// profiler fetches pprof profiles from a manager's /debug/pprof (bosun's and upstream's
// managers serve it with --profiling, their default, to callers authorized for the
// non-resource URL; kruise-manager on a plain-HTTP port of its own, see kruiseManager). It is
// for finding where the time and memory go, never for the reported figures: a CPU profile
// costs the profiled process a few percent.
type profiler struct {
	pid int
	// base is the scheme, host and port the /debug/pprof paths are appended to.
	base    string
	token   string
	seconds int
	dir     string
	client  *http.Client
}

// newProfiler profiles process pid through base (for example https://127.0.0.1:<port>),
// sending token as a bearer token unless it is empty.
func newProfiler(pid int, base, token string, seconds int, dir string) *profiler {
	return &profiler{
		pid: pid, base: base, token: token, seconds: seconds, dir: dir,
		// The managers serve a self-signed certificate on loopback.
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}},
	}
}

// start begins a CPU profile of the next p.seconds and returns a function that waits for
// it, writes it, and writes a heap profile, the Go runtime's memory statistics and the
// kernel's split of the resident set (anonymous vs file-backed) as of that moment. The
// files are named after the workload; a failure to fetch is reported but does not stop the
// benchmark.
func (p *profiler) start(ctx context.Context, workload string) func() error {
	base := filepath.Join(p.dir, fileName(workload))
	cpuDone := make(chan error, 1)
	go func() {
		cpuDone <- p.fetch(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", p.seconds), base+".cpu.pprof")
	}()
	return func() error {
		errs := []error{
			p.fetch(ctx, "/debug/pprof/heap", base+".heap.pprof"),
			// debug=1 appends runtime.MemStats: how much of the RSS is live heap.
			p.fetch(ctx, "/debug/pprof/heap?debug=1", base+".heap.txt"),
			p.writeRSSSplit(base + ".rss.txt"),
			<-cpuDone,
		}
		return errors.Join(errs...)
	}
}

// writeRSSSplit copies the Rss* and Vm* lines of /proc/<pid>/status.
func (p *profiler) writeRSSSplit(file string) error {
	data, err := os.ReadFile(procPath(p.pid, "status"))
	if err != nil {
		return fmt.Errorf("reading the status of process %d: %w", p.pid, err)
	}
	var lines strings.Builder
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, "Rss") || strings.HasPrefix(line, "Vm") {
			lines.WriteString(line)
		}
	}
	return os.WriteFile(file, []byte(lines.String()), 0o644)
}

func (p *profiler) fetch(ctx context.Context, path, file string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.seconds)*time.Second+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching %s: status %d: %s", path, resp.StatusCode, body)
	}
	if err := os.WriteFile(file, body, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// securePort is the base URL of a manager's secure port on loopback.
func securePort(port int) string {
	return fmt.Sprintf("https://127.0.0.1:%d", port)
}

// fileName turns a workload name into a file name.
func fileName(workload string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '-'
	}, workload)
}
