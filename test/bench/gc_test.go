package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestClassifySyncLine(t *testing.T) {
	for line, want := range map[string]syncState{
		`I1123 20:05:38.511776     643 garbagecollector.go:166] "Garbage collector: all resource monitors have synced"`:                             syncDone,
		`I1123 20:05:38.511776     643 garbagecollector.go:164] "Garbage collector: not all resource monitors could be synced, proceeding anyways"`: syncGaveUp,
		`{"ts":1700000000.5,"msg":"All resource monitors have synced"}`:                                                                             syncDone,
		`I1123 20:05:38.110994     643 garbagecollector.go:141] "Starting controller" controller="garbagecollector"`:                                syncUnknown,
		``: syncUnknown,
	} {
		if got := classifySyncLine(line); got != want {
			t.Errorf("classifySyncLine(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestLogScanner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manager.log")
	appendLog := func(s string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	s := &logScanner{path: path}
	if _, err := s.next(); err == nil {
		t.Fatal("next() on a missing file returned no error")
	}
	appendLog("one\ntwo\nthr")
	if got, err := s.next(); err != nil || !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("next() = %q, %v; want one, two", got, err)
	}
	if got, err := s.next(); err != nil || len(got) != 0 {
		t.Fatalf("next() with only a partial line = %q, %v; want nothing", got, err)
	}
	appendLog("ee\nfour\n")
	if got, err := s.next(); err != nil || !slices.Equal(got, []string{"three", "four"}) {
		t.Fatalf("next() = %q, %v; want three, four", got, err)
	}
}

func TestLogLineTime(t *testing.T) {
	ref := time.Date(2026, time.November, 23, 20, 5, 40, 0, time.UTC)
	tests := []struct {
		name string
		line string
		ref  time.Time
		want time.Time
		ok   bool
	}{
		{
			name: "klog text header",
			line: `I1123 20:05:38.511776     643 garbagecollector.go:166] "Garbage collector: all resource monitors have synced"`,
			ref:  ref,
			want: time.Date(2026, time.November, 23, 20, 5, 38, 511776000, time.UTC),
			ok:   true,
		},
		{
			name: "a line written just before the new year, read just after",
			line: `W1231 23:59:59.000001 1 x.go:1] "late"`,
			ref:  time.Date(2027, time.January, 1, 0, 0, 1, 0, time.UTC),
			want: time.Date(2026, time.December, 31, 23, 59, 59, 1000, time.UTC),
			ok:   true,
		},
		{
			name: "JSON format",
			line: `{"ts":1700000000.25,"caller":"x.go:1","msg":"Garbage collector: all resource monitors have synced","v":0}`,
			ref:  ref,
			want: time.Unix(1700000000, 250000000),
			ok:   true,
		},
		{name: "JSON without ts", line: `{"msg":"x"}`, ref: ref},
		{name: "no header", line: "panic: something", ref: ref},
		{name: "malformed header", line: "I1123 2x:05:38.511776 1 x.go:1] y", ref: ref},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := logLineTime(tt.line, tt.ref)
			if ok != tt.ok || (ok && !got.Equal(tt.want)) {
				t.Errorf("logLineTime() = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestMetricValue(t *testing.T) {
	exposition := `# HELP workqueue_depth [ALPHA] Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="garbage_collector_attempt_to_delete"} 7
workqueue_depth{name="garbage_collector_graph_changes"} 0
workqueue_depth_total{name="garbage_collector_graph_changes"} 99
workqueue_adds_total{controller="gc",name="garbage_collector_graph_changes"} 2689
go_memstats_heap_inuse_bytes 3.0031872e+07
odd{a="x\"y,z",b="2"} 5
`
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
		found  bool
	}{
		{"labelled series", "workqueue_depth", map[string]string{"name": graphChangesQueue}, 0, true},
		{"other label value", "workqueue_depth", map[string]string{"name": "garbage_collector_attempt_to_delete"}, 7, true},
		{"extra labels on the series", "workqueue_adds_total", map[string]string{"name": graphChangesQueue}, 2689, true},
		{"no labels, float notation", "go_memstats_heap_inuse_bytes", nil, 30031872, true},
		{"escaped quote and comma in a value", "odd", map[string]string{"a": `x"y,z`, "b": "2"}, 5, true},
		{"absent label value", "workqueue_depth", map[string]string{"name": "replicaset"}, 0, false},
		{"absent metric, not confused with a longer name", "workqueue", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := metricValue(exposition, tt.metric, tt.labels)
			if found != tt.found || got != tt.want {
				t.Errorf("metricValue(%s, %v) = %v, %v; want %v, %v", tt.metric, tt.labels, got, found, tt.want, tt.found)
			}
		})
	}
}

func TestHeapMemStat(t *testing.T) {
	profile := "heap profile: 1: 2 [3: 4] @ heap/1048576\n...\n\n# runtime.MemStats\n# Alloc = 23068672\n# HeapAlloc = 23068672\n# HeapInuse = 30031872\n"
	if got, err := heapMemStat(profile, "HeapInuse"); err != nil || got != 30031872 {
		t.Errorf("heapMemStat(HeapInuse) = %d, %v", got, err)
	}
	if got, err := heapMemStat(profile, "HeapAlloc"); err != nil || got != 23068672 {
		t.Errorf("heapMemStat(HeapAlloc) = %d, %v", got, err)
	}
	if _, err := heapMemStat(profile, "HeapSys"); err == nil {
		t.Error("heapMemStat(HeapSys) found a line that is not there")
	}
}

func TestGraphResources(t *testing.T) {
	all := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: all},
			{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: all},
			{Name: "events", Namespaced: true, Kind: "Event", Verbs: all},
			{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "events", Namespaced: true, Kind: "Event", Verbs: all}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "replicasets", Namespaced: true, Kind: "ReplicaSet", Verbs: all}}},
		{GroupVersion: "authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview", Verbs: metav1.Verbs{"create"}},
		}},
	}
	got := graphResources(lists)
	slices.SortFunc(got, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	want := []schema.GroupVersionResource{
		{Group: "", Version: "v1", Resource: "configmaps"},
		{Group: "", Version: "v1", Resource: "pods"},
		{Group: "apps", Version: "v1", Resource: "replicasets"},
	}
	slices.SortFunc(want, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(got, want) {
		t.Errorf("graphResources() = %v, want %v", got, want)
	}
}

func TestDependentData(t *testing.T) {
	sizes := map[int]bool{}
	for i := range 200 {
		for _, text := range []bool{true, false} {
			data := dependentData(i, text)
			if len(data) < minDataSize || len(data) > maxDataSize {
				t.Fatalf("dependentData(%d, %v) has %d bytes, outside [%d, %d]", i, text, len(data), minDataSize, maxDataSize)
			}
			if again := dependentData(i, text); string(again) != string(data) {
				t.Fatalf("dependentData(%d, %v) differs between calls", i, text)
			}
			if text {
				for _, c := range data {
					if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", rune(c)) {
						t.Fatalf("dependentData(%d, true) holds %q, not printable base64 alphabet", i, c)
					}
				}
			}
			sizes[len(data)] = true
		}
	}
	if len(sizes) < 100 {
		t.Errorf("only %d distinct sizes over 400 objects; sizes should spread over the range", len(sizes))
	}
	if string(dependentData(1, false)) == string(dependentData(2, false)) {
		t.Error("two objects got the same data")
	}
}

func TestCeilDiv(t *testing.T) {
	for _, tt := range []struct{ a, b, want int }{{0, 10, 0}, {1, 10, 1}, {10, 10, 1}, {11, 10, 2}, {50000, 10, 5000}} {
		if got := ceilDiv(tt.a, tt.b); got != tt.want {
			t.Errorf("ceilDiv(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestInParallel(t *testing.T) {
	config := &rest.Config{Host: "https://127.0.0.1:1"} // never dialled
	var mu sync.Mutex
	seen := map[int]int{}
	_, err := inParallel(context.Background(), config, 1000, 7, func(_ context.Context, client kubernetes.Interface, i int) error {
		if client == nil {
			return errors.New("no client")
		}
		mu.Lock()
		defer mu.Unlock()
		seen[i]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1000 {
		t.Fatalf("%d distinct indices called, want 1000", len(seen))
	}
	for i, n := range seen {
		if i < 0 || i >= 1000 || n != 1 {
			t.Fatalf("index %d called %d times", i, n)
		}
	}

	boom := errors.New("boom")
	calls := 0
	_, err = inParallel(context.Background(), config, 1000, 1, func(context.Context, kubernetes.Interface, int) error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls != 3 {
		t.Errorf("inParallel() = %v after %d calls; want the first error, and no call after it", err, calls)
	}
}

func TestClusterMedian(t *testing.T) {
	if clusterMedian(nil).ok {
		t.Fatal("clusterMedian(nil) is ok")
	}
	runs := []clusterResult{
		{Objects: 100, Synced: 3 * time.Second, Drained: 4 * time.Second, SyncCPU: 1, PeakRSS: 300, HeapInuse: 1000},
		{Objects: 100, Synced: 1 * time.Second, SyncCPU: 3, PeakRSS: 100, HeapInuse: 3000, GaveUp: true},
		{Objects: 102, Synced: 2 * time.Second, Drained: 2 * time.Second, SyncCPU: 2, PeakRSS: 200, HeapInuse: 2040},
	}
	f := clusterMedian(runs)
	if !f.ok || f.runs != 3 || f.gaveUp != 1 || f.objects != 100 || f.synced != 2*time.Second || f.syncCPU != 2 || f.peakRSS != 200 || f.heapInuse != 2000+40 {
		t.Errorf("clusterMedian() = %+v", f)
	}
	// Drained only over the runs that measured it: the mean of 2 s and 4 s.
	if !f.drainedOK || f.drained != 3*time.Second {
		t.Errorf("drained = %v, %v; want 3s", f.drained, f.drainedOK)
	}
	// Bytes per node is the median of each run's own ratio: 10, 30 and 20.
	if f.bytesPerNode != 20 {
		t.Errorf("bytesPerNode = %v, want 20", f.bytesPerNode)
	}
}

func TestBestBaseline(t *testing.T) {
	baselines := map[int][]time.Duration{8: {4 * time.Second, 3 * time.Second}, 32: {2 * time.Second, 5 * time.Second}, 128: {3 * time.Second}}
	for rep, want := range map[int]struct {
		wall    time.Duration
		clients int
	}{0: {2 * time.Second, 32}, 1: {3 * time.Second, 8}, 2: {0, 0}} {
		wall, clients := bestBaseline(baselines, []int{8, 32, 128}, rep)
		if wall != want.wall || clients != want.clients {
			t.Errorf("bestBaseline(rep %d) = %v, %d; want %v, %d", rep, wall, clients, want.wall, want.clients)
		}
	}
}

// TestGCReport checks the report's gc section against the targets on invented
// figures: which are met and which missed, and that the ratios are bosun over upstream.
func TestGCReport(t *testing.T) {
	o := &options{
		limits: clientLimits{QPS: 500, Burst: 500}, unlimited: clientLimits{QPS: 1e6, Burst: 1e6},
		gcPods: 5000, gcObjects: 50000, gcManagers: []string{managerUpstream, managerBosun}, gcCreateClients: 64,
		baselineClients: []int{8, 32}, repeat: 1, verbosity: 2,
	}
	r := newResults(o, time.Now())
	cascade := func(workload string, wall time.Duration, cpu float64, rss uint64) []runResult {
		return []runResult{{IdleRSS: rss / 2, Measurements: []measurement{{Workload: workload, Wall: wall, usage: usage{CPUSeconds: cpu, PeakRSS: rss}}}}}
	}
	r.gc.cascade[managerBosun] = cascade(workloadGCCascade, 9*time.Second, 0.9, 80*mebibyte)
	r.gc.cascade[managerUpstream] = cascade(workloadGCCascade, 10*time.Second, 1.0, 100*mebibyte)
	r.gc.unlimited[managerBosun] = cascade(workloadGCCascadeUnlimited, 4*time.Second, 0.9, 80*mebibyte)
	r.gc.unlimited[managerUpstream] = cascade(workloadGCCascadeUnlimited, 5*time.Second, 1.0, 100*mebibyte)
	r.gc.baselines = map[int][]time.Duration{8: {5 * time.Second}, 32: {3200 * time.Millisecond}}
	r.gc.clusters[managerBosun] = []clusterResult{{Objects: 60200, Synced: 5 * time.Second, PeakRSS: 200 * mebibyte, HeapInuse: 120 * mebibyte}}
	r.gc.clusters[managerUpstream] = []clusterResult{{Objects: 60200, Synced: 6 * time.Second, PeakRSS: 500 * mebibyte, HeapInuse: 400 * mebibyte}}

	targets := r.gcTargets()
	wants := []string{
		"50,000-object cluster, peak RSS ≤ 0.5× upstream's collector: 0.40× (met)",
		"50,000-object cluster, monitors synced no later than upstream's (≤ 1×): 0.83× (met)",
		"cascade delete of 5,000 pods, wall ≤ 1× upstream at equal QPS: 0.90× (met)",
		"cascade delete of 5,000 pods, CPU-seconds ≤ 0.8× upstream: 0.90× (**missed**)",
		"cascade delete of 5,000 pods without client limits, wall ≤ 1.15× the best raw delete baseline (median of the repetitions' ratios): 1.25× (**missed**)",
	}
	if !slices.Equal(targets, wants) {
		t.Errorf("gcTargets() =\n%s\nwant\n%s", strings.Join(targets, "\n"), strings.Join(wants, "\n"))
	}

	report := r.markdown()
	for _, want := range []string{
		"## Garbage collectors alone",
		"| cascade-delete a ReplicaSet of 5,000 pods, `--kube-api-qps=500 --kube-api-burst=500` | 9.0 s | 10.0 s | 0.90× | 0.90 | 1.00 | 0.90× | 80 | 100 | 0.80× |",
		"| 1 | 3.2 s (32 clients) | 4.0 s | 1.25× | 5.0 s | 1.56× |",
		"| objects in the graph (counted) | 60,200 | 60,200 | |",
		"| **peak RSS MiB** (VmHWM, start to settled) | 200 | 500 | 0.40× |",
		"| heap bytes per graph node | 2,090 | 6,967 | 0.30× |",
		"### Targets (garbage collector)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}

	// bosun giving up on its monitors misses the sync target whatever the times say.
	r.gc.clusters[managerBosun][0].GaveUp = true
	if got := r.gcTargets()[1]; !strings.Contains(got, "bosun gave up waiting for its monitors in 1 of 1 run(s) (**missed**)") {
		t.Errorf("sync target with bosun giving up = %q", got)
	}

	// An upstream-only run has no ratios, hence no targets.
	r.gc = newGCResults()
	r.gc.clusters[managerUpstream] = []clusterResult{{Objects: 10, Synced: time.Second, PeakRSS: mebibyte, HeapInuse: mebibyte}}
	if targets := r.gcTargets(); len(targets) != 0 {
		t.Errorf("gcTargets() without bosun = %q, want none", targets)
	}
}
