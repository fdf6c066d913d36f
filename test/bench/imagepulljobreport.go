package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ipjWriteFigures are the median write counts of one actor to one resource over the runs.
type ipjWriteFigures struct {
	requests, conflicts, failed float64
}

// ipjFigures are the imagepulljob part's median figures over the runs.
type ipjFigures struct {
	runs                int
	wall                time.Duration
	cpu                 float64
	peakRSS, idleRSS    uint64
	peakPulling         float64
	writes              map[string]map[string]ipjWriteFigures
	writeP50, writeP99  time.Duration
	walls               []time.Duration
	loads               []float64
	succeeded, desired  float64
	failed              float64
	completedByDeadline bool
}

// ipjMedian takes the median of every figure over runs; a resource an actor did not write
// in some run counts as 0 writes there.
func ipjMedian(runs []imagePullJobRun) ipjFigures {
	f := ipjFigures{runs: len(runs), writes: map[string]map[string]ipjWriteFigures{}}
	if len(runs) == 0 {
		return f
	}
	var cpus, pulling, succeeded, desired, failed []float64
	var peaks, idles []uint64
	var writeP50s, writeP99s []time.Duration
	for _, r := range runs {
		f.walls = append(f.walls, r.Wall)
		cpus = append(cpus, r.CPUSeconds)
		peaks = append(peaks, r.PeakRSS)
		idles = append(idles, r.IdleRSS)
		pulling = append(pulling, float64(r.PeakPulling))
		succeeded = append(succeeded, float64(r.Status.Succeeded))
		desired = append(desired, float64(r.Status.Desired))
		failed = append(failed, float64(r.Status.Failed))
		f.loads = append(f.loads, r.LoadAverage)
		writeP50s = append(writeP50s, percentile(r.NodeImageWriteLatencies, 50))
		writeP99s = append(writeP99s, percentile(r.NodeImageWriteLatencies, 99))
		if strings.Contains(r.Status.Message, "activeDeadlineSeconds") {
			f.completedByDeadline = true
		}
	}
	f.wall, f.cpu, f.peakRSS, f.idleRSS = middle(f.walls), middle(cpus), middle(peaks), middle(idles)
	f.writeP50, f.writeP99 = middle(writeP50s), middle(writeP99s)
	f.peakPulling, f.succeeded, f.desired, f.failed = middle(pulling), middle(succeeded), middle(desired), middle(failed)

	for _, actor := range []string{actorManager, actorAgents, actorBench, actorOther} {
		resources := map[string]bool{}
		for _, r := range runs {
			for resource := range r.Writes[actor] {
				resources[resource] = true
			}
		}
		for resource := range resources {
			var requests, conflicts, failures []float64
			for _, r := range runs {
				c := r.Writes[actor][resource]
				requests = append(requests, float64(c.Requests))
				conflicts = append(conflicts, float64(c.Conflicts))
				failures = append(failures, float64(c.Failed))
			}
			if f.writes[actor] == nil {
				f.writes[actor] = map[string]ipjWriteFigures{}
			}
			f.writes[actor][resource] = ipjWriteFigures{requests: middle(requests), conflicts: middle(conflicts), failed: middle(failures)}
		}
	}
	return f
}

// pullWaves is the least time the job can take: the nodes in waves of parallelism, each
// wave one simulated pull long (the API round trips and the manager's reactions add to it).
func pullWaves(nodes, parallelism int, pull time.Duration) (int, time.Duration) {
	waves := (nodes + parallelism - 1) / parallelism
	return waves, time.Duration(waves) * pull
}

// perNode formats a count divided by the number of nodes.
func perNode(count float64, nodes int) string {
	return strconv.FormatFloat(count/float64(nodes), 'f', 2, 64)
}

// writesCell is "requests (c conflicts, f failed)" with the zero parts left out.
func writesCell(w ipjWriteFigures) string {
	s := strconv.FormatFloat(w.requests, 'f', -1, 64)
	var extra []string
	if w.conflicts > 0 {
		extra = append(extra, strconv.FormatFloat(w.conflicts, 'f', -1, 64)+" conflicts")
	}
	if w.failed > 0 {
		extra = append(extra, strconv.FormatFloat(w.failed, 'f', -1, 64)+" failed")
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func wallsSummary(walls []time.Duration) string {
	var parts []string
	for _, w := range walls {
		parts = append(parts, latency(w))
	}
	return strings.Join(parts, ", ")
}

// ipjManagerOrder is the order of the managers' columns.
var ipjManagerOrder = []string{managerBosun, managerKruise}

// targetIPJWallRatio is the target for the fan-out: bosun no slower than
// kruise-manager.
const targetIPJWallRatio = 1.0

// markdown writes the imagepulljob part's section; "" when it did not run.
func (r *imagePullJobResults) markdown(o *options) string {
	var columns []string
	figures := map[string]ipjFigures{}
	for _, name := range ipjManagerOrder {
		if len(r.runs[name]) > 0 {
			columns = append(columns, name)
			figures[name] = ipjMedian(r.runs[name])
		}
	}
	if len(columns) == 0 {
		return ""
	}
	ipj := o.imagePullJob
	waves, floor := pullWaves(ipj.nodes, ipj.parallelism, ipj.pullDuration)
	var b strings.Builder
	b.WriteString("## ImagePullJob fan-out (manager side)\n\n")
	fmt.Fprintf(&b, "Upstream has no such API, so bosun is compared with kruise-manager v1.9.0 alone. Each manager on a fresh control plane with "+
		"an audit log of every write: bosun-controller-manager `--controllers=%s` with its webhooks on a loopback port, with bosun's CRDs; "+
		"kruise-manager with %s, %s. Client limits `--kube-api-qps=%s --kube-api-burst=%d` (kruise-manager "+
		"`--rest-config-qps`/`--rest-config-burst`). %d NodeImages created by the bench before the manager starts (no Nodes: labelled "+
		"`apps.kruise.io/fake-nodeimage`, and node-like labels). The node agents are simulated by the bench: one watch over the "+
		"NodeImages, reacting to spec changes; for each tag without a current status it writes the whole status (counters "+
		"included) with Pulling at once and, %v later, Succeeded (progress 100, imageID `<name>@sha256:<hex>`), through "+
		"UpdateStatus (apps.kruise.io/v1alpha1) with conflict retry, all agents together limited to %s requests/s (burst %d). One "+
		"apps.kruise.io/v1alpha1 ImagePullJob `%s`, parallelism %d, completionPolicy Always with activeDeadlineSeconds %d, no selector "+
		"(every NodeImage). Time to completion runs from its create to the bench seeing its `completionTime` (polled every %v); manager "+
		"CPU-s and peak RSS over that time; writes are the API server's audit events (by User-Agent) from the create until %s after "+
		"completion. Median of %d run(s).\n\n",
		bosunImagePullJobControllers, o.kruiseCRDsLabel("OpenKruise's NodeImage and ImagePullJob CRDs installed, besides only a "+
			"placeholder CRD that makes the policy.kruise.io group exist without budgets (its job and NodeImage controllers and webhooks run, its "+
			"other controllers and its pod webhooks idle)"), o.kruiseGatesLabel(partImagePullJob), strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst, ipj.nodes,
		ipj.pullDuration, strconv.FormatFloat(ipj.agentQPS, 'g', -1, 64), ipj.agentBurst, ipjImage,
		ipj.parallelism, ipjActiveDeadlineSeconds, completionPollInterval, settleTime, o.repeat)

	compare := len(columns) == 2
	b.WriteString("| Figure |")
	for _, name := range columns {
		fmt.Fprintf(&b, " %s |", managerLabel(name))
	}
	if compare {
		b.WriteString(" bosun ÷ kruise-manager |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(columns)) + map[bool]string{true: "---:|", false: ""}[compare] + "\n")
	row := func(label string, cell func(ipjFigures) string, value func(ipjFigures) float64) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, name := range columns {
			fmt.Fprintf(&b, " %s |", cell(figures[name]))
		}
		if compare {
			r := "—"
			if value != nil {
				r = ratio(true, value(figures[managerBosun]), value(figures[managerKruise]))
			}
			fmt.Fprintf(&b, " %s |", r)
		}
		b.WriteString("\n")
	}
	row(fmt.Sprintf("**time to completion** (job create → completionTime, %s nodes)", thousands(ipj.nodes)),
		func(f ipjFigures) string { return "**" + latency(f.wall) + "**" }, func(f ipjFigures) float64 { return f.wall.Seconds() })
	row(fmt.Sprintf("floor: ⌈%d / %d⌉ = %d rounds × %s simulated pull", ipj.nodes, ipj.parallelism, waves, ipj.pullDuration),
		func(ipjFigures) string { return latency(floor) }, nil)
	row("**manager CPU-s**", func(f ipjFigures) string { return fmt.Sprintf("**%.2f**", f.cpu) }, func(f ipjFigures) float64 { return f.cpu })
	row("manager peak RSS MiB (idle after start-up)", func(f ipjFigures) string { return fmt.Sprintf("%s (%s)", mib(true, f.peakRSS), mib(true, f.idleRSS)) },
		func(f ipjFigures) float64 { return float64(f.peakRSS) })
	row("**manager writes per NodeImage**: `nodeimages` (spec)", func(f ipjFigures) string {
		return "**" + perNode(f.writes[actorManager]["nodeimages"].requests, ipj.nodes) + "**"
	}, nil)
	row("API server time per manager NodeImage write (webhooks included), p50 / p99", func(f ipjFigures) string {
		return latency(f.writeP50) + " / " + latency(f.writeP99)
	}, nil)
	row("manager writes per NodeImage: `nodeimages/status`", func(f ipjFigures) string {
		return perNode(f.writes[actorManager]["nodeimages/status"].requests, ipj.nodes)
	}, nil)
	row("manager writes to the ImagePullJob: object / status", func(f ipjFigures) string {
		return writesCell(f.writes[actorManager]["imagepulljobs"]) + " / " + writesCell(f.writes[actorManager]["imagepulljobs/status"])
	}, nil)
	row("simulated agents' writes per NodeImage: `nodeimages/status`", func(f ipjFigures) string {
		return perNode(f.writes[actorAgents]["nodeimages/status"].requests, ipj.nodes)
	}, nil)
	row(fmt.Sprintf("most NodeImages pulling at once (seen by the agents; parallelism %d)", ipj.parallelism), func(f ipjFigures) string {
		return fmt.Sprintf("%.0f", f.peakPulling)
	}, nil)
	row("job status at the end: succeeded / failed of desired", func(f ipjFigures) string {
		return fmt.Sprintf("%.0f / %.0f of %.0f", f.succeeded, f.failed, f.desired)
	}, nil)
	b.WriteString("\n")

	b.WriteString("Every write in the window, by client and resource (median requests over the runs; conflicts and failures are among them):\n\n")
	b.WriteString("| Manager measured | Client | Resource | requests | per NodeImage |\n|---|---|---|---:|---:|\n")
	for _, name := range columns {
		f := figures[name]
		for _, actor := range []string{actorManager, actorAgents, actorBench, actorOther} {
			for _, resource := range slices.Sorted(maps.Keys(f.writes[actor])) {
				w := f.writes[actor][resource]
				fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", managerLabel(name), ipjActorLabel(actor, name), resource, writesCell(w), perNode(w.requests, ipj.nodes))
			}
		}
	}
	b.WriteString("\n")
	for _, name := range columns {
		f := figures[name]
		fmt.Fprintf(&b, "- %s, time to completion of each run: %s\n", managerLabel(name), wallsSummary(f.walls))
		fmt.Fprintf(&b, "- %s, load average (1 min) before each job: %s\n", managerLabel(name), loadsSummary(f.loads))
		if f.completedByDeadline {
			fmt.Fprintf(&b, "- **%s: a job completed by its deadline, not by its nodes**\n", managerLabel(name))
		}
		for i, run := range r.runs[name] {
			for _, p := range run.problems(ipj, int(run.Status.Succeeded), nil) {
				fmt.Fprintf(&b, "- **%s, run %d: %s**\n", managerLabel(name), i+1, p)
			}
		}
	}
	b.WriteString("\n")
	if compare {
		x, z := figures[managerBosun], figures[managerKruise]
		fmt.Fprintf(&b, "Target (bosun ÷ kruise-manager, time to completion): ≤ %.2g×: %s.\n\n", targetIPJWallRatio,
			verdict(x.wall.Seconds()/z.wall.Seconds(), targetIPJWallRatio))
	}
	return b.String()
}

// ipjActorLabel names a client in the writes table of the run of manager.
func ipjActorLabel(actor, manager string) string {
	switch actor {
	case actorManager:
		if manager == managerKruise {
			return "kruise-manager"
		}
		return "bosun-controller-manager"
	case actorAgents:
		return "simulated agents"
	case actorBench:
		return "bench (the job's create)"
	}
	return "others (kube-apiserver itself)"
}
