package main

import (
	"os"
	"testing"
	"time"
)

func TestParseCPUTicks(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    uint64
		wantErr bool
	}{
		{
			name: "plain command name",
			stat: "4242 (kube-controller) S 1 4242 4242 0 -1 4194560 5000 0 0 0 1234 567 0 0 20 0 12 0 100 1000000 2000 18446744073709551615",
			want: 1234 + 567,
		},
		{
			name: "command name with spaces and parentheses",
			stat: "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 10 20 0 0 20 0 1 0 100 0 0",
			want: 30,
		},
		{name: "no command name", stat: "7 a R 1", wantErr: true},
		{name: "truncated", stat: "7 (a) R 1 7 7 0", wantErr: true},
		{name: "not a number", stat: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 20 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCPUTicks(tt.stat)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseCPUTicks() error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseCPUTicks() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseStatusKiB(t *testing.T) {
	status := "Name:\tbosun\nVmPeak:\t  900000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   80000 kB\n"
	for key, want := range map[string]uint64{"VmHWM": 81234, "VmRSS": 80000} {
		got, err := parseStatusKiB(status, key)
		if err != nil || got != want {
			t.Errorf("parseStatusKiB(%s) = %d, %v; want %d", key, got, err, want)
		}
	}
	if _, err := parseStatusKiB(status, "VmSwap"); err == nil {
		t.Error("parseStatusKiB(VmSwap) found a line that is not there")
	}
}

// TestMeterSelf measures this test process while it burns CPU and allocates, which a meter
// that read the wrong fields or units would misreport.
func TestMeterSelf(t *testing.T) {
	m, err := startMeter(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	used, err := m.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if used.CPUSeconds < 0.1 {
		t.Errorf("CPU seconds = %v after ~0.3 s of spinning", used.CPUSeconds)
	}
	if used.PeakRSS < size {
		t.Errorf("peak RSS = %d bytes after touching %d", used.PeakRSS, size)
	}
	_ = buf[size-1]
}

func TestMiddle(t *testing.T) {
	if got := middle([]float64{3, 1, 2}); got != 2 {
		t.Errorf("middle(3,1,2) = %v, want 2", got)
	}
	if got := middle([]time.Duration{40, 10, 30, 20}); got != 25 {
		t.Errorf("middle(40,10,30,20) = %v, want 25", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{5: "5", 1000: "1,000", 5000: "5,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
