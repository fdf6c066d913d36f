package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	webhookdaemonset "github.com/bosun-dev/bosun/pkg/webhook/daemonset"
)

// The targets for the Advanced DaemonSet, checked by the report (never by tests).
const (
	// Create and roll over 1,000 nodes, bosun against upstream at equal QPS.
	targetDSWallRatio = 1.0
	targetDSCPURatio  = 0.8
	targetDSRSSRatio  = 0.8
	// The same, create + roll, bosun against kruise-manager at equal client limits (the
	// issue states them at QPS and burst 1000).
	targetDSKruiseWallRatio = 0.5
	targetDSKruiseCPURatio  = 0.4
	targetDSKruiseRSSRatio  = 0.5
	// Out of the box: create + roll with each manager's default client limits, bosun no
	// slower than kruise-manager.
	targetDSDefaultsWallRatio = 1.0
	// The DaemonSet webhooks' p99 admission latency under 50 parallel clients.
	targetWebhookP99 = 10 * time.Millisecond
)

// dsManagerOrder is the order of the managers' columns in the daemonset tables.
var dsManagerOrder = []string{managerBosun, managerUpstream, managerKruise}

// managerLabel names a manager in the report's columns.
func managerLabel(name string) string {
	if name == managerKruise {
		return "kruise-manager"
	}
	return name
}

// writeDaemonSets writes the daemonset part: the DaemonSet controllers side by side, at the
// given client limits and with each manager's defaults.
func (r *results) writeDaemonSets(b *strings.Builder) {
	o := r.options
	webhooks := "with its DaemonSet admission webhooks served (`--webhook-port` on loopback, as by default)"
	if !o.daemonSetWebhooks {
		webhooks = "without admission webhooks (`--webhook-port=0`)"
	}
	fmt.Fprintf(b, "## DaemonSet over %s simulated nodes\n\n", thousands(o.daemonSetNodes))
	fmt.Fprintf(b, "Each manager alone with its DaemonSet controller on a fresh control plane with %s Ready, untainted nodes (no kubelet, no "+
		"scheduler: the controllers pin pods to nodes by node affinity; a helper marks pods Ready). bosun `--controllers=%s` on an "+
		"apps.kruise.io/v1alpha1 DaemonSet, %s, with bosun's CRDs; upstream `--controllers=%s` on an apps/v1 DaemonSet, with bosun's CRDs; "+
		"kruise-manager v1.9.0 on the same apps.kruise.io/v1alpha1 DaemonSet with %s (its DaemonSet webhooks and conversion webhook "+
		"served, %s; the bench reads the status in the stored v1beta1, so that its polls cost no conversion). All: RollingUpdate, maxUnavailable %s, maxSurge 0; the apps.kruise.io object is "+
		"written fully defaulted (Standard, burstReplicas %d, revisionHistoryLimit 10). The roll changes the template's image.\n\n",
		thousands(o.daemonSetNodes), bosunDaemonSetController, webhooks, upstreamDaemonSetController, o.kruiseCRDsLabel("OpenKruise's DaemonSet CRD installed, besides only the ImagePullJob CRD it "+
			"cannot start without and a placeholder CRD that makes the policy.kruise.io group exist without budgets (so that its other controllers "+
			"and its pod webhooks idle)"), o.kruiseGatesLabel(partDaemonSet), dsMaxUnavailable, dsBurstReplicas)
	if len(r.daemonSets) > 0 {
		fmt.Fprintf(b, "### Client limits `--kube-api-qps=%s --kube-api-burst=%d` (kruise-manager: `--rest-config-qps`, `--rest-config-burst`)\n\n",
			strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst)
		writeDSTable(b, r.daemonSets, o.daemonSetNodes)
		writeDSTargets(b, r.daemonSets, o.daemonSetNodes)
	}
	if len(r.daemonSetDefaults) > 0 {
		b.WriteString("### Each manager with its default client limits (no rate-limit flag)\n\n")
		b.WriteString("No `--kube-api-qps`/`--kube-api-burst` (bosun, upstream) and no `--rest-config-qps`/`--rest-config-burst` (kruise-manager): " +
			"what an operator who sets none runs. Upstream kube-controller-manager's defaults are 20/30; kruise-manager's 30/50 for each of its " +
			"clients; bosun's are in docs/flags.md.\n\n")
		writeDSTable(b, r.daemonSetDefaults, o.daemonSetNodes)
		bosun, kruise := r.daemonSetDefaults[managerBosun], r.daemonSetDefaults[managerKruise]
		if x, z := median(bosun, workloadDSBoth), median(kruise, workloadDSBoth); x.ok && z.ok {
			fmt.Fprintf(b, "Target (bosun ÷ kruise-manager, create + roll, defaults): wall ≤ %.2g×: %s.\n\n",
				targetDSDefaultsWallRatio, verdict(x.wall.Seconds()/z.wall.Seconds(), targetDSDefaultsWallRatio))
		}
	}
}

// dsColumns are the managers of runs that ran, in column order.
func dsColumns(runs map[string][]runResult) []string {
	var names []string
	for _, name := range dsManagerOrder {
		if len(runs[name]) > 0 {
			names = append(names, name)
		}
	}
	return names
}

// writeDSTable writes one table of the daemonset part: per workload a row for the wall
// time, the CPU-seconds and the peak RSS, a column per manager that ran, and bosun's ratio
// to each other manager; then the idle RSS and the load before each run.
func writeDSTable(b *strings.Builder, runs map[string][]runResult, nodes int) {
	columns := dsColumns(runs)
	var others []string
	if slices.Contains(columns, managerBosun) {
		others = slices.DeleteFunc(slices.Clone(columns), func(name string) bool { return name == managerBosun })
	}
	b.WriteString("| Workload | figure |")
	for _, name := range columns {
		fmt.Fprintf(b, " %s |", managerLabel(name))
	}
	for _, name := range others {
		fmt.Fprintf(b, " bosun ÷ %s |", managerLabel(name))
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(columns)+len(others)) + "\n")
	type figure struct {
		name   string
		format func(figures) string
		value  func(figures) float64
	}
	rows := []figure{
		{"wall", func(f figures) string { return seconds(f.ok, f.wall) }, func(f figures) float64 { return f.wall.Seconds() }},
		{"CPU-s", func(f figures) string { return cpu(f.ok, f.cpu) }, func(f figures) float64 { return f.cpu }},
		{"peak RSS MiB", func(f figures) string { return mib(f.ok, f.peakRSS) }, func(f figures) float64 { return float64(f.peakRSS) }},
	}
	for _, w := range daemonSetOrder {
		byManager := map[string]figures{}
		seen := false
		for _, name := range columns {
			byManager[name] = median(runs[name], w)
			seen = seen || byManager[name].ok
		}
		if !seen {
			continue
		}
		for i, row := range rows {
			label := ""
			if i == 0 {
				label = daemonSetLabel(w, nodes)
			}
			fmt.Fprintf(b, "| %s | %s |", label, row.name)
			for _, name := range columns {
				fmt.Fprintf(b, " %s |", row.format(byManager[name]))
			}
			x := byManager[managerBosun]
			for _, name := range others {
				y := byManager[name]
				fmt.Fprintf(b, " %s |", ratio(x.ok && y.ok, row.value(x), row.value(y)))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(b, "| idle after start-up | RSS MiB |")
	idle := map[string]uint64{}
	for _, name := range columns {
		v, ok := medianIdleRSS(runs[name])
		idle[name] = v
		fmt.Fprintf(b, " %s |", mib(ok, v))
	}
	for _, name := range others {
		fmt.Fprintf(b, " %s |", ratio(true, float64(idle[managerBosun]), float64(idle[name])))
	}
	b.WriteString("\n\n")
	for _, name := range columns {
		var loads []float64
		for _, run := range runs[name] {
			loads = append(loads, run.LoadAverage)
		}
		fmt.Fprintf(b, "- %s, load average (1 min) before each run: %s\n", managerLabel(name), loadsSummary(loads))
	}
	b.WriteString("\n")
}

// writeDSTargets checks the runs at the given limits against the targets: bosun against
// upstream on every workload, and against kruise-manager on create + roll.
func writeDSTargets(b *strings.Builder, runs map[string][]runResult, nodes int) {
	bosun, upstream, kruise := runs[managerBosun], runs[managerUpstream], runs[managerKruise]
	if len(bosun) > 0 && len(upstream) > 0 {
		fmt.Fprintf(b, "Targets (bosun ÷ upstream): wall ≤ %.2g×, CPU-s ≤ %.2g×, peak RSS ≤ %.2g×.\n\n", targetDSWallRatio, targetDSCPURatio, targetDSRSSRatio)
		for _, w := range daemonSetOrder {
			x, y := median(bosun, w), median(upstream, w)
			if !x.ok || !y.ok {
				continue
			}
			fmt.Fprintf(b, "- %s: wall %s, CPU %s, RSS %s\n", strings.Trim(daemonSetLabel(w, nodes), "*"),
				verdict(x.wall.Seconds()/y.wall.Seconds(), targetDSWallRatio), verdict(x.cpu/y.cpu, targetDSCPURatio),
				verdict(float64(x.peakRSS)/float64(y.peakRSS), targetDSRSSRatio))
		}
		b.WriteString("\n")
	}
	if x, z := median(bosun, workloadDSBoth), median(kruise, workloadDSBoth); x.ok && z.ok {
		fmt.Fprintf(b, "Targets (bosun ÷ kruise-manager, create + roll; the issue states them at QPS and burst 1000): wall ≤ %.2g×, CPU-s ≤ %.2g×, "+
			"peak RSS ≤ %.2g×.\n\n", targetDSKruiseWallRatio, targetDSKruiseCPURatio, targetDSKruiseRSSRatio)
		fmt.Fprintf(b, "- %s: wall %s, CPU %s, RSS %s\n\n", strings.Trim(daemonSetLabel(workloadDSBoth, nodes), "*"),
			verdict(x.wall.Seconds()/z.wall.Seconds(), targetDSKruiseWallRatio), verdict(x.cpu/z.cpu, targetDSKruiseCPURatio),
			verdict(float64(x.peakRSS)/float64(z.peakRSS), targetDSKruiseRSSRatio))
	}
}

// webhookFigures are one webhook's figures over the repetitions: the median of each
// latency and rate, the counts summed.
type webhookFigures struct {
	runs                       int
	requests                   int
	p50, p99, max              time.Duration
	rps, managerCPU            float64
	rejected, errored, patched int
}

func webhookMedian(runs []webhookResult) webhookFigures {
	f := webhookFigures{runs: len(runs)}
	var p50s, p99s, maxes []time.Duration
	var rates, cpus []float64
	for _, r := range runs {
		p50s = append(p50s, percentile(r.Latencies, 50))
		p99s = append(p99s, percentile(r.Latencies, 99))
		maxes = append(maxes, percentile(r.Latencies, 100))
		rates = append(rates, r.requestsPerSecond())
		cpus = append(cpus, r.CPUSeconds)
		f.requests += r.Requests
		f.rejected += r.Rejected
		f.errored += r.Errored
		f.patched += r.Patched
	}
	if len(runs) > 0 {
		f.p50, f.p99, f.max = middle(p50s), middle(p99s), middle(maxes)
		f.rps, f.managerCPU = middle(rates), middle(cpus)
	}
	return f
}

// writeWebhooks writes the webhook part: latency of the DaemonSet webhooks under load.
func (r *results) writeWebhooks(b *strings.Builder) {
	o := r.options
	fmt.Fprintf(b, "## DaemonSet admission webhooks\n\n")
	fmt.Fprintf(b, "bosun-controller-manager `--controllers=%s` with its webhooks on a loopback `--webhook-port`; %d parallel clients "+
		"(one TLS connection each, the server verified against the caBundle of `bosun-validating-webhook-configuration`) POST %s "+
		"`admission.k8s.io/v1` AdmissionReviews of a DaemonSet CREATE (a node agent as a user writes it to the mutating webhook, the "+
		"defaulted object to the validating one) to the URLs the manager wrote into its configurations, after %d unmeasured requests per "+
		"client. Latency is from sending a request to having read its answer; percentiles by nearest rank over every sample. The load "+
		"generator shares the machine's CPUs with the manager.\n\n",
		bosunDaemonSetController, o.webhookClients, thousands(o.webhookRequests), webhookWarmupPerClient)
	b.WriteString("| Webhook | requests | p50 | p99 | max | requests/s | rejected | errored | manager CPU-s |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, name := range []string{webhookMutating, webhookValidating} {
		runs := r.webhooks[name]
		if len(runs) == 0 {
			continue
		}
		f := webhookMedian(runs)
		path := webhookdaemonset.MutatingPath
		if name == webhookValidating {
			path = webhookdaemonset.ValidatingPath
		}
		fmt.Fprintf(b, "| %s `%s` | %s | %s | %s | %s | %.0f | %d | %d | %.2f |\n", name, path, thousands(f.requests/f.runs),
			millis(f.p50), millis(f.p99), millis(f.max), f.rps, f.rejected, f.errored, f.managerCPU)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "Target: p99 ≤ %s, no rejected or errored request.\n\n", millis(targetWebhookP99))
	for _, name := range []string{webhookMutating, webhookValidating} {
		runs := r.webhooks[name]
		if len(runs) == 0 {
			continue
		}
		f := webhookMedian(runs)
		met := "met"
		if f.p99 > targetWebhookP99 {
			met = "**missed**"
		}
		failures := "none"
		if f.rejected+f.errored > 0 {
			failures = fmt.Sprintf("**%d rejected, %d errored**", f.rejected, f.errored)
		}
		fmt.Fprintf(b, "- %s: p99 %s (%s); failures %s\n", name, millis(f.p99), met, failures)
	}
	b.WriteString("\n")
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
