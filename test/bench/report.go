package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The targets, checked by the report (never by tests).
const (
	targetCPURatio       = 0.5
	targetRSSRatio       = 0.5
	targetWallRatio      = 1.0
	targetUnlimitedRatio = 1.15
)

// workloadOrder is the order of the report's rows.
var workloadOrder = []string{
	workloadScaleRS, workloadDeleteRS, workloadCreateDeploy, workloadRollDeploy, workloadCreateRoll, workloadDeleteDeploy,
}

// headlineWorkloads are the ones the targets are stated for; the others are their parts or
// the clean-up between them.
var headlineWorkloads = []string{workloadScaleRS, workloadCreateRoll, workloadDeleteDeploy}

// results collects every run's figures for the report.
type results struct {
	options  *options
	started  time.Time
	duration time.Duration

	managers  map[string][]runResult
	baselines map[int][]time.Duration
	unlimited []runResult
	gc        *gcResults
	// daemonSets are the daemonset part's runs by manager at the given client limits,
	// daemonSetDefaults those with each manager's default limits; webhooks the webhook
	// part's by webhook (mutating, validating).
	daemonSets        map[string][]runResult
	daemonSetDefaults map[string][]runResult
	webhooks          map[string][]webhookResult
}

func newResults(o *options, started time.Time) *results {
	return &results{options: o, started: started, managers: map[string][]runResult{}, baselines: map[int][]time.Duration{}, gc: newGCResults(),
		daemonSets: map[string][]runResult{}, daemonSetDefaults: map[string][]runResult{}, webhooks: map[string][]webhookResult{}}
}

// figures is one manager's median figures for one workload.
type figures struct {
	ok      bool
	wall    time.Duration
	cpu     float64
	peakRSS uint64
}

// median returns the median figures of workload over runs; ok is false when no run has it.
func median(runs []runResult, workload string) figures {
	var walls []time.Duration
	var cpus []float64
	var rsses []uint64
	for _, r := range runs {
		for _, m := range r.Measurements {
			if m.Workload == workload {
				walls = append(walls, m.Wall)
				cpus = append(cpus, m.CPUSeconds)
				rsses = append(rsses, m.PeakRSS)
			}
		}
	}
	if len(walls) == 0 {
		return figures{}
	}
	return figures{ok: true, wall: middle(walls), cpu: middle(cpus), peakRSS: middle(rsses)}
}

// middle returns the median of values: the mean of the two middle ones for an even count.
func middle[T time.Duration | float64 | uint64](values []T) T {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func medianIdleRSS(runs []runResult) (uint64, bool) {
	if len(runs) == 0 {
		return 0, false
	}
	var values []uint64
	for _, r := range runs {
		values = append(values, r.IdleRSS)
	}
	return middle(values), true
}

// label is the report's name of a workload, with the sizes filled in.
func (r *results) label(workload string) string {
	rs, deploy := thousands(r.options.rsReplicas), thousands(r.options.deployReplicas)
	switch workload {
	case workloadScaleRS:
		return "scale ReplicaSet 0→" + rs
	case workloadDeleteRS:
		return "delete that ReplicaSet, " + rs + " pods (GC)"
	case workloadCreateDeploy:
		return "create " + deploy + "-replica Deployment (to complete rollout)"
	case workloadRollDeploy:
		return "roll it once (to complete rollout)"
	case workloadCreateRoll:
		return "**create + roll " + deploy + "-replica Deployment**"
	case workloadDeleteDeploy:
		return "delete the Deployment, " + deploy + " pods (GC)"
	}
	return workload
}

func (r *results) markdown() string {
	o := r.options
	var b strings.Builder
	fmt.Fprintf(&b, "# bosun-controller-manager vs upstream kube-controller-manager and OpenKruise's kruise-manager\n\n")
	fmt.Fprintf(&b, "Command: `go run ./test/bench%s` (what `make bench` runs), %s, took %s.\n\n",
		argsSuffix(), r.started.UTC().Format("2006-01-02 15:04 UTC"), r.duration.Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s.\n\n", machine())
	fmt.Fprintf(&b, "Every manager: admin credentials, leader election off (`--leader-elect=false`; kruise-manager `--enable-leader-election=false`), "+
		"`--v=%d`, alone on a fresh etcd + kube-apiserver per run; bosun and upstream speak protobuf for built-in kinds, kruise-manager as it "+
		"is built (JSON through controller-runtime's clients and informers, protobuf in its own Kubernetes clientset). kruise-manager v1.9.0 is built by `hack/build-kruise.sh`; it starts only once it has "+
		"looked up every kind it knows, 16 s for each whose CRD is not installed, about six minutes per run, not measured. Median of %d run(s) per figure.\n\n",
		o.verbosity, o.repeat)

	if o.profileSeconds > 0 {
		b.WriteString("**Profiling was on (`--profile-seconds`): these figures include its overhead and are not comparable with others.**\n\n")
	}
	bosun, upstream := r.managers[managerBosun], r.managers[managerUpstream]
	if len(bosun)+len(upstream) > 0 {
		fmt.Fprintf(&b, "Side by side: both managers `--kube-api-qps=%s --kube-api-burst=%d`; bosun `--controllers=%s` vs upstream "+
			"`--controllers=%s`, each with its own garbage collector (when listed), which removes the pods of the deleted objects.\n\n",
			strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst, o.bosunControllers, o.upstreamControllers)
		b.WriteString("| Workload | bosun wall | upstream wall | ratio | bosun CPU-s | upstream CPU-s | ratio | bosun peak RSS MiB | upstream peak RSS MiB | ratio |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, w := range workloadOrder {
			x, y := median(bosun, w), median(upstream, w)
			if !x.ok && !y.ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.label(w),
				seconds(x.ok, x.wall), seconds(y.ok, y.wall), ratio(x.ok && y.ok, x.wall.Seconds(), y.wall.Seconds()),
				cpu(x.ok, x.cpu), cpu(y.ok, y.cpu), ratio(x.ok && y.ok, x.cpu, y.cpu),
				mib(x.ok, x.peakRSS), mib(y.ok, y.peakRSS), ratio(x.ok && y.ok, float64(x.peakRSS), float64(y.peakRSS)))
		}
		xi, xok := medianIdleRSS(bosun)
		yi, yok := medianIdleRSS(upstream)
		fmt.Fprintf(&b, "| idle after start-up (RSS) | | | | | | | %s | %s | %s |\n\n", mib(xok, xi), mib(yok, yi), ratio(xok && yok, float64(xi), float64(yi)))
		if len(bosun) > 0 && len(upstream) > 0 {
			r.writeTargets(&b, bosun, upstream)
		}
	}
	if len(r.unlimited) > 0 {
		r.writeUnlimited(&b)
	}
	if !r.gc.empty() {
		r.writeGC(&b)
	}
	if len(r.daemonSets)+len(r.daemonSetDefaults) > 0 {
		r.writeDaemonSets(&b)
	}
	if len(r.webhooks) > 0 {
		r.writeWebhooks(&b)
	}
	return b.String()
}

// writeTargets lists each headline workload against the targets.
func (r *results) writeTargets(b *strings.Builder, bosun, upstream []runResult) {
	fmt.Fprintf(b, "Targets (bosun/upstream): CPU-s ≤ %.2g×, peak RSS ≤ %.2g×, wall ≤ %.2g× at equal QPS.\n\n", targetCPURatio, targetRSSRatio, targetWallRatio)
	for _, w := range headlineWorkloads {
		x, y := median(bosun, w), median(upstream, w)
		if !x.ok || !y.ok {
			continue
		}
		fmt.Fprintf(b, "- %s: CPU %s, RSS %s, wall %s\n", strings.Trim(r.label(w), "*"),
			verdict(x.cpu/y.cpu, targetCPURatio), verdict(float64(x.peakRSS)/float64(y.peakRSS), targetRSSRatio),
			verdict(x.wall.Seconds()/y.wall.Seconds(), targetWallRatio))
	}
	b.WriteString("\n")
}

// writeUnlimited compares bosun without client limits with the raw API-server baseline.
func (r *results) writeUnlimited(b *strings.Builder) {
	o := r.options
	fmt.Fprintf(b, "## Without client rate limits\n\n")
	fmt.Fprintf(b, "bosun `--controllers=%s --kube-api-qps=%s --kube-api-burst=%d` alone on a fresh control plane, against creating the same %s pods "+
		"(same template, same owner reference) with N parallel unthrottled admin clients on a fresh control plane.\n\n",
		o.bosunControllers, strconv.FormatFloat(o.unlimited.QPS, 'g', -1, 64), o.unlimited.Burst, thousands(o.rsReplicas))
	b.WriteString("| Run | wall | pods/s |\n|---|---:|---:|\n")
	for _, clients := range o.baselineClients {
		walls := r.baselines[clients]
		if len(walls) == 0 {
			continue
		}
		wall := middle(walls)
		fmt.Fprintf(b, "| raw baseline, %d clients | %s | %.0f |\n", clients, seconds(true, wall), float64(o.rsReplicas)/wall.Seconds())
	}
	x := median(r.unlimited, workloadScaleRS)
	fmt.Fprintf(b, "| bosun: %s | %s | %.0f |\n\n", r.label(workloadScaleRS), seconds(true, x.wall), float64(o.rsReplicas)/x.wall.Seconds())
	idle, _ := medianIdleRSS(r.unlimited)
	fmt.Fprintf(b, "bosun used %s CPU-s and peaked at %s MiB RSS (idle %s MiB).\n\n", cpu(true, x.cpu), mib(true, x.peakRSS), mib(true, idle))

	// The API server's speed drifts with whatever else the machine does, so bosun is compared
	// with the baselines of its own repetition, which ran just before it.
	b.WriteString("| Repetition | best raw baseline | bosun | bosun / baseline |\n|---|---:|---:|---:|\n")
	var ratios []float64
	for rep, run := range r.unlimited {
		best, bestClients := bestBaseline(r.baselines, o.baselineClients, rep)
		if best == 0 || len(run.Measurements) == 0 {
			continue
		}
		wall := run.Measurements[0].Wall
		ratios = append(ratios, wall.Seconds()/best.Seconds())
		fmt.Fprintf(b, "| %d | %s (%d clients) | %s | %.2f× |\n", rep+1, seconds(true, best), bestClients, seconds(true, wall), ratios[len(ratios)-1])
	}
	if len(ratios) > 0 {
		fmt.Fprintf(b, "\nbosun / best baseline, median of the repetitions: %s (target ≤ %.2f×)\n", verdict(middle(ratios), targetUnlimitedRatio), targetUnlimitedRatio)
	}
}

// bestBaseline returns the fastest baseline of repetition rep (0-based) over the client
// counts, and its count; zero when that repetition has none.
func bestBaseline(baselines map[int][]time.Duration, clientCounts []int, rep int) (time.Duration, int) {
	var best time.Duration
	bestClients := 0
	for _, clients := range clientCounts {
		if walls := baselines[clients]; rep < len(walls) && (best == 0 || walls[rep] < best) {
			best, bestClients = walls[rep], clients
		}
	}
	return best, bestClients
}

func verdict(value, target float64) string {
	if value <= target {
		return fmt.Sprintf("%.2f× (met)", value)
	}
	return fmt.Sprintf("%.2f× (**missed**)", value)
}

func seconds(ok bool, d time.Duration) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func cpu(ok bool, s float64) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.2f", s)
}

func mib(ok bool, bytes uint64) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.0f", float64(bytes)/mebibyte)
}

func ratio(ok bool, x, y float64) string {
	if !ok || y == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", x/y)
}

// thousands formats n with comma separators, as the issue writes its sizes.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func argsSuffix() string {
	if len(os.Args) < 2 {
		return ""
	}
	return " " + strings.Join(os.Args[1:], " ")
}

// machine describes where the figures come from: CPUs, CPU model, memory and Go version.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				model = strings.TrimSpace(value)
				break
			}
		}
	}
	memory := "unknown memory"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kib, err := parseStatusKiB(string(data), "MemTotal"); err == nil {
			memory = fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
		}
	}
	return fmt.Sprintf("%d CPUs (`nproc`), %s, %s, %s %s/%s", runtime.NumCPU(), model, memory, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
