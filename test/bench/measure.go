package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// clockTicksPerSecond is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. The
	// kernel fixes it at 100 on every architecture Go runs on, whatever CONFIG_HZ is.
	clockTicksPerSecond = 100

	// rssSampleInterval is how often a meter samples VmRSS, the fallback for a peak that
	// clear_refs could not reset.
	rssSampleInterval = 100 * time.Millisecond

	mebibyte = 1 << 20
)

// usage is what one process consumed over a measured interval.
type usage struct {
	// CPUSeconds is user plus system CPU time, summed over all its threads.
	CPUSeconds float64
	// PeakRSS is the largest resident set seen, in bytes.
	PeakRSS uint64
}

// meter measures the CPU time and peak RSS of one process from its start until Stop. It
// reads /proc only, so it measures the process from outside without touching it.
type meter struct {
	pid       int
	startCPU  float64
	hwmWasSet bool

	stop chan struct{}
	done chan struct{}

	mu         sync.Mutex
	maxSampled uint64
	sampleErr  error
}

// startMeter starts measuring pid. It resets the kernel's high-water mark of the resident
// set (VmHWM) to the current RSS, so that the peak read at Stop belongs to this interval and
// not to whatever the process did before; that needs root. Sampling VmRSS covers the case
// where the reset is refused, at the price of missing spikes shorter than the interval.
func startMeter(pid int) (*meter, error) {
	m := &meter{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	// "5" resets the peak RSS (Documentation/filesystems/proc.rst, clear_refs).
	m.hwmWasSet = os.WriteFile(procPath(pid, "clear_refs"), []byte("5"), 0) == nil
	cpu, err := cpuSeconds(pid)
	if err != nil {
		return nil, err
	}
	m.startCPU = cpu
	rss, err := statusKiB(pid, "VmRSS")
	if err != nil {
		return nil, err
	}
	m.maxSampled = rss * 1024
	go m.sample()
	return m, nil
}

func (m *meter) sample() {
	defer close(m.done)
	ticker := time.NewTicker(rssSampleInterval)
	defer ticker.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-ticker.C:
		}
		rss, err := statusKiB(m.pid, "VmRSS")
		m.mu.Lock()
		if err != nil {
			if m.sampleErr == nil {
				m.sampleErr = err
			}
		} else {
			m.maxSampled = max(m.maxSampled, rss*1024)
		}
		m.mu.Unlock()
	}
}

// Stop ends the interval and returns what the process used in it: the CPU time delta and
// the larger of the kernel's peak (when it could be reset) and the sampled peak.
func (m *meter) Stop() (usage, error) {
	close(m.stop)
	<-m.done
	cpu, err := cpuSeconds(m.pid)
	if err != nil {
		return usage{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sampleErr != nil {
		return usage{}, m.sampleErr
	}
	peak := m.maxSampled
	if m.hwmWasSet {
		hwm, err := statusKiB(m.pid, "VmHWM")
		if err != nil {
			return usage{}, err
		}
		peak = max(peak, hwm*1024)
	}
	return usage{CPUSeconds: cpu - m.startCPU, PeakRSS: peak}, nil
}

// currentRSS returns the resident set of pid now, in bytes.
func currentRSS(pid int) (uint64, error) {
	kib, err := statusKiB(pid, "VmRSS")
	return kib * 1024, err
}

func procPath(pid int, file string) string {
	return "/proc/" + strconv.Itoa(pid) + "/" + file
}

// cpuSeconds returns utime+stime of pid from /proc/<pid>/stat, in seconds.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	ticks, err := parseCPUTicks(string(data))
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
	}
	return float64(ticks) / clockTicksPerSecond, nil
}

// parseCPUTicks returns utime+stime (fields 14 and 15) of a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces and parentheses itself, so
// the fields are counted from the last ')'.
func parseCPUTicks(stat string) (uint64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state), so field n is fields[n-3].
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	user, err := strconv.ParseUint(fields[utime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	system, err := strconv.ParseUint(fields[stime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return user + system, nil
}

// statusKiB returns a "<key>: <n> kB" line of /proc/<pid>/status, in KiB.
func statusKiB(pid int, key string) (uint64, error) {
	data, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return 0, fmt.Errorf("reading the status of process %d: %w", pid, err)
	}
	value, err := parseStatusKiB(string(data), key)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/%d/status: %w", pid, err)
	}
	return value, nil
}

func parseStatusKiB(status, key string) (uint64, error) {
	for line := range strings.Lines(status) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != key {
			continue
		}
		number, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
		return strconv.ParseUint(number, 10, 64)
	}
	return 0, fmt.Errorf("no %s line", key)
}
