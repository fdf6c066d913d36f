package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The targets for PodUnavailableBudget evictions, checked by the report (never by
// tests), on the roomy scenario: bosun's p99 eviction latency, as the client sees it, and
// its admitted evictions per second against the API server's own PodDisruptionBudget path.
const (
	targetPUBP99             = 20 * time.Millisecond
	targetPUBThroughputRatio = 0.8
)

// pubFigures are one side's figures for one scenario over the repetitions: the median of
// each latency, rate and CPU time; the answers counted over every run.
type pubFigures struct {
	runs                              int
	evictions, admitted               float64
	p50, p99, max                     time.Duration
	admittedP99, deniedP50, deniedP99 time.Duration
	wall, lastAdmitted                time.Duration
	rate                              float64
	// webhook is set when every run has the webhook's histogram.
	webhook                bool
	webhookP50, webhookP99 time.Duration
	cpu                    map[string]float64
	codes                  map[int]int
	messages               map[int]string
	loads                  []float64
	problems               []string
}

func pubMedian(runs []pubBurst) pubFigures {
	f := pubFigures{runs: len(runs), cpu: map[string]float64{}, codes: map[int]int{}, messages: map[int]string{}, webhook: len(runs) > 0}
	if len(runs) == 0 {
		return f
	}
	var evictions, admitted, rates []float64
	var p50s, p99s, maxes, admittedP99s, deniedP50s, deniedP99s, walls, lasts, hookP50s, hookP99s []time.Duration
	cpus := map[string][]float64{}
	for i, r := range runs {
		evictions = append(evictions, float64(r.Evictions))
		admitted = append(admitted, float64(r.Admitted))
		rates = append(rates, r.admittedPerSecond())
		p50s = append(p50s, percentile(r.Latencies, 50))
		p99s = append(p99s, percentile(r.Latencies, 99))
		maxes = append(maxes, percentile(r.Latencies, 100))
		admittedP99s = append(admittedP99s, percentile(r.AdmittedLatencies, 99))
		deniedP50s = append(deniedP50s, percentile(r.DeniedLatencies, 50))
		deniedP99s = append(deniedP99s, percentile(r.DeniedLatencies, 99))
		walls = append(walls, r.Wall)
		lasts = append(lasts, r.LastAdmitted)
		for label, s := range r.CPU {
			cpus[label] = append(cpus[label], s)
		}
		for code, n := range r.Codes {
			f.codes[code] += n
		}
		for code, message := range r.Messages {
			if _, seen := f.messages[code]; !seen {
				f.messages[code] = message
			}
		}
		f.loads = append(f.loads, r.LoadAverage)
		for _, p := range r.problems() {
			f.problems = append(f.problems, fmt.Sprintf("run %d: %s", i+1, p))
		}
		p50, ok50 := time.Duration(0), false
		p99, ok99 := time.Duration(0), false
		if r.Webhook != nil {
			p50, ok50 = r.Webhook.quantile(0.50)
			p99, ok99 = r.Webhook.quantile(0.99)
		}
		if !ok50 || !ok99 {
			f.webhook = false
		}
		hookP50s, hookP99s = append(hookP50s, p50), append(hookP99s, p99)
	}
	f.evictions, f.admitted, f.rate = middle(evictions), middle(admitted), middle(rates)
	f.p50, f.p99, f.max = middle(p50s), middle(p99s), middle(maxes)
	f.admittedP99, f.deniedP50, f.deniedP99 = middle(admittedP99s), middle(deniedP50s), middle(deniedP99s)
	f.wall, f.lastAdmitted = middle(walls), middle(lasts)
	if f.webhook {
		f.webhookP50, f.webhookP99 = middle(hookP50s), middle(hookP99s)
	}
	for label, values := range cpus {
		f.cpu[label] = middle(values)
	}
	return f
}

// answersSummary lists the answers by HTTP status, "201×200" or "429×120, 504×75", over
// every run; status 0 is a request without a response.
func answersSummary(codes map[int]int) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(codes)) {
		name := strconv.Itoa(code)
		if code == 0 {
			name = "no response"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, codes[code]))
	}
	return strings.Join(parts, ", ")
}

// cpuSummary is the CPU-seconds of the manager, kube-apiserver and etcd over the burst.
func cpuSummary(cpu map[string]float64) string {
	var parts []string
	for _, label := range []string{"bosun-controller-manager", "kube-controller-manager", "kruise-manager", "kube-apiserver", "etcd"} {
		if s, ok := cpu[label]; ok {
			parts = append(parts, fmt.Sprintf("%.2f", s))
		}
	}
	return strings.Join(parts, " / ")
}

// pubSides are the pub part's sides in the order of its tables.
var pubSides = []string{managerBosun, managerUpstream, managerKruise}

// pubSideLabel names a side in the pub tables.
func pubSideLabel(manager string) string {
	switch manager {
	case managerBosun:
		return "bosun: PodUnavailableBudget, webhook `" + pubEvictionWebhook + "`"
	case managerKruise:
		return "kruise-manager: PodUnavailableBudget, webhook `" + pubEvictionWebhook + "` (`" + kruisePodValidatingPath + "`)"
	}
	return "upstream: PodDisruptionBudget, API server's eviction check"
}

// markdown writes the pub part's section; "" when it did not run.
func (r *pubResults) markdown(o *options) string {
	if len(r.bursts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Eviction budgets: PodUnavailableBudget against PodDisruptionBudget\n\n")
	fmt.Fprintf(&b, "Each side on a fresh control plane: bosun-controller-manager `--controllers=%s` serving its webhooks on a loopback "+
		"`--webhook-port`, with bosun's CRDs; upstream kube-controller-manager `--controllers=%s` (no webhook: the API server's eviction "+
		"subresource checks the PodDisruptionBudget itself), with bosun's CRDs; kruise-manager v1.9.0 with %s, %s. "+
		"Client limits `--kube-api-qps=%s --kube-api-burst=%d` (kruise-manager `--rest-config-qps`/`--rest-config-burst`). Per scenario, a "+
		"namespace with %d plain pods (no owner, no node, marked Running and Ready by the bench) and, but for the no-budget floor, one budget "+
		"over them: a PodUnavailableBudget selecting them with maxUnavailable N and an expected count of %d (bosun: v1alpha1 with "+
		"`pub.kruise.io/protect-total-replicas`; kruise-manager: v1beta1 `spec.protectTotalReplicas`, the field its controller reads), or a "+
		"PodDisruptionBudget with minAvailable %d−N. Once the budget's status allows N evictions (and, for the budgets, every pod carries its "+
		"related-pub annotation), %d clients, each with its own TLS connection opened beforehand, POST one `policy/v1` Eviction each at the "+
		"same moment (client-go retries off). Latency runs from sending to having read the answer; nearest-rank percentiles; admitted/s is "+
		"2xx answers over the burst (release to last answer). The webhook's own p50/p99 are estimated from its histogram over the burst "+
		"(bosun `%s`, kruise-manager `%s` of `%s`). CPU-s over the burst: manager / kube-apiserver / etcd. The bench, the API server and the "+
		"manager share the machine's CPUs. Median of %d run(s).\n\n",
		bosunPUBController, upstreamPDBController, o.kruiseCRDsLabel("OpenKruise's PodUnavailableBudget CRD installed, with the CloneSet "+
			"and Advanced StatefulSet CRDs its budget controller watches and the ImagePullJob CRD it cannot start without (so that its budget "+
			"controller and pod validating webhook run and its other controllers idle)"), o.kruiseGatesLabel(partPUB), strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst,
		o.pubEvictions+1, o.pubEvictions+1, o.pubEvictions+1, o.pubEvictions, webhookDurationMetric, kruiseWebhookDurationMetric,
		kruisePodValidatingPath, o.repeat)

	for _, scenario := range o.pubScenarios {
		sides := r.bursts[scenario]
		if len(sides) == 0 {
			continue
		}
		budget := pubScenarioBudget(scenario, o.pubEvictions, o.pubTightAllowed)
		switch scenario {
		case pubNone:
			fmt.Fprintf(&b, "### No budget: %d evictions (the floor; bosun's webhook is still called and allows untagged pods)\n\n", o.pubEvictions)
		case pubRoomy:
			fmt.Fprintf(&b, "### Roomy budget: %d evictions, all allowed (N = %d, desired %d)\n\n", o.pubEvictions, budget.Allowed, budget.Desired)
		case pubTight:
			fmt.Fprintf(&b, "### Tight budget: %d evictions, %d allowed (N = %d, desired %d)\n\n", o.pubEvictions, budget.Allowed, budget.Allowed, budget.Desired)
		}
		b.WriteString("| Side | admitted | answers (all runs) | p50 | p99 | max | p99 admitted | p50 / p99 not admitted | burst wall | last admitted | admitted/s | webhook p50 / p99 | CPU-s |\n")
		b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, manager := range pubSides {
			runs := sides[manager]
			if len(runs) == 0 {
				continue
			}
			f := pubMedian(runs)
			hook := "—"
			if f.webhook {
				hook = latency(f.webhookP50) + " / " + latency(f.webhookP99)
			}
			denied := "—"
			if f.evictions > f.admitted {
				denied = latency(f.deniedP50) + " / " + latency(f.deniedP99)
			}
			admittedP99 := "—"
			if f.admitted > 0 {
				admittedP99 = latency(f.admittedP99)
			}
			fmt.Fprintf(&b, "| %s | %.0f of %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %s | %s |\n", pubSideLabel(manager),
				f.admitted, f.evictions, answersSummary(f.codes), latency(f.p50), latency(f.p99), latency(f.max), admittedP99, denied,
				latency(f.wall), latency(f.lastAdmitted), f.rate, hook, cpuSummary(f.cpu))
		}
		b.WriteString("\n")
		for _, manager := range pubSides {
			f := pubMedian(sides[manager])
			for _, code := range slices.Sorted(maps.Keys(f.messages)) {
				fmt.Fprintf(&b, "- %s, first %d answer: %q\n", managerLabel(manager), code, f.messages[code])
			}
			if f.runs > 0 {
				fmt.Fprintf(&b, "- %s, load average (1 min) before each burst: %s\n", managerLabel(manager), loadsSummary(f.loads))
			}
			for _, p := range f.problems {
				fmt.Fprintf(&b, "- **%s: %s**\n", managerLabel(manager), p)
			}
		}
		b.WriteString("\n")
		if scenario == pubRoomy {
			r.writePUBTargets(&b, sides)
		}
	}
	return b.String()
}

// writePUBTargets checks the roomy scenario against the targets.
func (r *pubResults) writePUBTargets(b *strings.Builder, sides map[string][]pubBurst) {
	bosun, upstream, kruise := sides[managerBosun], sides[managerUpstream], sides[managerKruise]
	if len(bosun) == 0 {
		return
	}
	x := pubMedian(bosun)
	fmt.Fprintf(b, "Targets: p99 admission ≤ %s at %.0f concurrent evictions; admitted evictions/s ≥ %.1f× the PodDisruptionBudget path.\n\n",
		latency(targetPUBP99), x.evictions, targetPUBThroughputRatio)
	met := "met"
	if x.p99 > targetPUBP99 {
		met = "**missed**"
	}
	fmt.Fprintf(b, "- bosun p99 eviction latency: %s (%s)\n", latency(x.p99), met)
	if len(upstream) > 0 {
		y := pubMedian(upstream)
		if y.rate > 0 {
			ratio := x.rate / y.rate
			met := "met"
			if ratio < targetPUBThroughputRatio {
				met = "**missed**"
			}
			fmt.Fprintf(b, "- admitted evictions/s, bosun / upstream: %.0f / %.0f = %.2f× (%s)\n", x.rate, y.rate, ratio, met)
		} else {
			fmt.Fprintf(b, "- admitted evictions/s, bosun / upstream: %.0f / 0: upstream admitted none\n", x.rate)
		}
	}
	if len(kruise) > 0 {
		z := pubMedian(kruise)
		fmt.Fprintf(b, "- no slower than kruise-manager: %s\n", noSlowerVerdict(x, z))
	}
	b.WriteString("\n")
}

// noSlowerVerdict compares bosun's roomy burst with kruise-manager's: met when bosun
// admits at least as many evictions per second and its p99 is no higher.
func noSlowerVerdict(x, z pubFigures) string {
	if z.rate <= 0 {
		return fmt.Sprintf("admitted/s %.0f / 0 (kruise-manager admitted none)", x.rate)
	}
	met := "met"
	if x.rate < z.rate || x.p99 > z.p99 {
		met = "**missed**"
	}
	return fmt.Sprintf("admitted/s %.0f / %.0f = %.2f×, p99 %s / %s (%s)", x.rate, z.rate, x.rate/z.rate, latency(x.p99), latency(z.p99), met)
}

func loadsSummary(loads []float64) string {
	var parts []string
	for _, l := range loads {
		parts = append(parts, strconv.FormatFloat(l, 'f', 2, 64))
	}
	return strings.Join(parts, ", ")
}

// latency is a duration in milliseconds, or in seconds from one second on, where
// milliseconds with two decimals would only add digits.
func latency(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return millis(d)
}
