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

// markdown writes the imagepulljob part's section; "" when it did not run.
func (r *imagePullJobResults) markdown(o *options) string {
	if len(r.runs) == 0 {
		return ""
	}
	ipj := o.imagePullJob
	f := ipjMedian(r.runs)
	waves, floor := pullWaves(ipj.nodes, ipj.parallelism, ipj.pullDuration)
	var b strings.Builder
	b.WriteString("## ImagePullJob fan-out (manager side)\n\n")
	fmt.Fprintf(&b, "bosun alone: OpenKruise's manager cannot run here, so there is no upstream side. A fresh control plane with bosun's "+
		"CRDs and an audit log of every write; %d NodeImages created by the bench before the manager starts (no Nodes: labelled "+
		"`apps.kruise.io/fake-nodeimage`, and node-like labels); bosun-controller-manager `--controllers=%s` with its webhooks on a "+
		"loopback port, `--kube-api-qps=%s --kube-api-burst=%d`. The node agents are simulated by the bench: one watch over the "+
		"NodeImages, reacting to spec changes; for each tag without a current status it writes the whole status (counters "+
		"included) with Pulling at once and, %v later, Succeeded (progress 100, imageID `<name>@sha256:<hex>`), through "+
		"UpdateStatus with conflict retry, all agents together limited to %s requests/s (burst %d). One ImagePullJob `%s`, "+
		"parallelism %d, completionPolicy Always with activeDeadlineSeconds %d, no selector (every NodeImage). Time to completion "+
		"runs from its create to the bench seeing its `completionTime` (polled every %v); manager CPU-s and peak RSS over that "+
		"time; writes are the API server's audit events (by User-Agent) from the create until %s after completion. Median of %d run(s).\n\n",
		ipj.nodes, bosunImagePullJobControllers, strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst,
		ipj.pullDuration, strconv.FormatFloat(ipj.agentQPS, 'g', -1, 64), ipj.agentBurst, ipjImage,
		ipj.parallelism, ipjActiveDeadlineSeconds, completionPollInterval, settleTime, o.repeat)

	b.WriteString("| Figure | value |\n|---|---:|\n")
	fmt.Fprintf(&b, "| **time to completion** (job create → completionTime, %s nodes) | **%s** |\n", thousands(ipj.nodes), latency(f.wall))
	fmt.Fprintf(&b, "| floor: ⌈%d / %d⌉ = %d rounds × %s simulated pull | %s |\n", ipj.nodes, ipj.parallelism, waves, ipj.pullDuration, latency(floor))
	fmt.Fprintf(&b, "| **manager CPU-s** | **%.2f** |\n", f.cpu)
	fmt.Fprintf(&b, "| manager peak RSS MiB (idle after start-up) | %s (%s) |\n", mib(true, f.peakRSS), mib(true, f.idleRSS))
	manager := f.writes[actorManager]
	fmt.Fprintf(&b, "| **manager writes per NodeImage**: `nodeimages` (spec) | **%s** |\n", perNode(manager["nodeimages"].requests, ipj.nodes))
	fmt.Fprintf(&b, "| API server time per manager NodeImage write (webhooks included), p50 / p99 | %s / %s |\n", latency(f.writeP50), latency(f.writeP99))
	fmt.Fprintf(&b, "| manager writes per NodeImage: `nodeimages/status` | %s |\n", perNode(manager["nodeimages/status"].requests, ipj.nodes))
	fmt.Fprintf(&b, "| manager writes to the ImagePullJob: object / status | %s / %s |\n",
		writesCell(manager["imagepulljobs"]), writesCell(manager["imagepulljobs/status"]))
	agentStatus := f.writes[actorAgents]["nodeimages/status"]
	fmt.Fprintf(&b, "| simulated agents' writes per NodeImage: `nodeimages/status` | %s |\n", perNode(agentStatus.requests, ipj.nodes))
	fmt.Fprintf(&b, "| most NodeImages pulling at once (seen by the agents; parallelism %d) | %.0f |\n", ipj.parallelism, f.peakPulling)
	fmt.Fprintf(&b, "| job status at the end: succeeded / failed of desired | %.0f / %.0f of %.0f |\n\n", f.succeeded, f.failed, f.desired)

	b.WriteString("Every write in the window, by client and resource (median requests over the runs; conflicts and failures are among them):\n\n")
	b.WriteString("| Client | Resource | requests | per NodeImage |\n|---|---|---:|---:|\n")
	for _, actor := range []string{actorManager, actorAgents, actorBench, actorOther} {
		for _, resource := range slices.Sorted(maps.Keys(f.writes[actor])) {
			w := f.writes[actor][resource]
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", ipjActorLabel(actor), resource, writesCell(w), perNode(w.requests, ipj.nodes))
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- time to completion of each run: %s\n", wallsSummary(f.walls))
	fmt.Fprintf(&b, "- load average (1 min) before each job: %s\n", loadsSummary(f.loads))
	if f.completedByDeadline {
		b.WriteString("- **a job completed by its deadline, not by its nodes**\n")
	}
	for i, run := range r.runs {
		for _, p := range run.problems(ipj, int(run.Status.Succeeded), nil) {
			fmt.Fprintf(&b, "- **run %d: %s**\n", i+1, p)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func ipjActorLabel(actor string) string {
	switch actor {
	case actorManager:
		return "bosun-controller-manager"
	case actorAgents:
		return "simulated agents"
	case actorBench:
		return "bench (the job's create)"
	}
	return "others (kube-apiserver itself)"
}
