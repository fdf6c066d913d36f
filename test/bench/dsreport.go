package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The targets for the Advanced DaemonSet, checked by the report (never by tests).
const (
	// Create and roll over 1,000 nodes, bosun against upstream at equal QPS.
	targetDSWallRatio = 1.0
	targetDSCPURatio  = 0.8
	targetDSRSSRatio  = 0.8
	// The DaemonSet webhooks' p99 admission latency under 50 parallel clients.
	targetWebhookP99 = 10 * time.Millisecond
)

// writeDaemonSets writes the daemonset part: the two DaemonSet controllers side by side.
func (r *results) writeDaemonSets(b *strings.Builder) {
	o := r.options
	bosun, upstream := r.daemonSets[managerBosun], r.daemonSets[managerUpstream]
	webhooks := "with its DaemonSet admission webhooks served (`--webhook-port` on loopback, as by default)"
	if !o.daemonSetWebhooks {
		webhooks = "without admission webhooks (`--webhook-port=0`)"
	}
	fmt.Fprintf(b, "## DaemonSet over %s simulated nodes\n\n", thousands(o.daemonSetNodes))
	fmt.Fprintf(b, "Each manager alone with its DaemonSet controller, `--kube-api-qps=%s --kube-api-burst=%d`, on a fresh control plane "+
		"with bosun's CRDs and %s Ready, untainted nodes (no kubelet, no scheduler: both controllers pin pods to nodes by node affinity; "+
		"a helper marks pods Ready). bosun `--controllers=%s` on an apps.kruise.io/v1alpha1 DaemonSet, %s; upstream `--controllers=%s` on an "+
		"apps/v1 DaemonSet. Both: RollingUpdate, maxUnavailable %s, maxSurge 0; bosun's object is written fully defaulted (Standard, "+
		"burstReplicas %d, revisionHistoryLimit 10). The roll changes the template's image.\n\n",
		strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst, thousands(o.daemonSetNodes),
		bosunDaemonSetController, webhooks, upstreamDaemonSetController, dsMaxUnavailable, dsBurstReplicas)
	b.WriteString("| Workload | bosun wall | upstream wall | ratio | bosun CPU-s | upstream CPU-s | ratio | bosun peak RSS MiB | upstream peak RSS MiB | ratio |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range daemonSetOrder {
		x, y := median(bosun, w), median(upstream, w)
		if !x.ok && !y.ok {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", daemonSetLabel(w, o.daemonSetNodes),
			seconds(x.ok, x.wall), seconds(y.ok, y.wall), ratio(x.ok && y.ok, x.wall.Seconds(), y.wall.Seconds()),
			cpu(x.ok, x.cpu), cpu(y.ok, y.cpu), ratio(x.ok && y.ok, x.cpu, y.cpu),
			mib(x.ok, x.peakRSS), mib(y.ok, y.peakRSS), ratio(x.ok && y.ok, float64(x.peakRSS), float64(y.peakRSS)))
	}
	xi, xok := medianIdleRSS(bosun)
	yi, yok := medianIdleRSS(upstream)
	fmt.Fprintf(b, "| idle after start-up (RSS) | | | | | | | %s | %s | %s |\n\n", mib(xok, xi), mib(yok, yi), ratio(xok && yok, float64(xi), float64(yi)))
	if len(bosun) == 0 || len(upstream) == 0 {
		return
	}
	fmt.Fprintf(b, "Targets (bosun/upstream): wall ≤ %.2g×, CPU-s ≤ %.2g×, peak RSS ≤ %.2g×.\n\n", targetDSWallRatio, targetDSCPURatio, targetDSRSSRatio)
	for _, w := range daemonSetOrder {
		x, y := median(bosun, w), median(upstream, w)
		if !x.ok || !y.ok {
			continue
		}
		fmt.Fprintf(b, "- %s: wall %s, CPU %s, RSS %s\n", strings.Trim(daemonSetLabel(w, o.daemonSetNodes), "*"),
			verdict(x.wall.Seconds()/y.wall.Seconds(), targetDSWallRatio), verdict(x.cpu/y.cpu, targetDSCPURatio),
			verdict(float64(x.peakRSS)/float64(y.peakRSS), targetDSRSSRatio))
	}
	b.WriteString("\n")
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
		path := "/mutate-apps-kruise-io-v1alpha1-daemonset"
		if name == webhookValidating {
			path = "/validate-apps-kruise-io-v1alpha1-daemonset"
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
