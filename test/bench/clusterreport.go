package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// clusterTarget is one of the part's targets: bosun's figure at most ratio times the
// other side's.
type clusterTarget struct {
	figure string
	ratio  float64
}

// clusterFigure is one row of the report: how to read it from a run, per process and
// for the side as a whole.
type clusterFigure struct {
	name string
	// side is the side's figure; process a process's, nil when the row has none per
	// process.
	side    func(clusterRun) float64
	process func(processFigures, clusterRun) float64
	format  func(float64) string
	// target, when above 0, is the largest bosun/upstream+kruise ratio the part aims for.
	target float64
	// upstream, when set, is the other side's figure instead of side.
	upstream func(clusterRun) float64
	// zeroUnknown says a figure of 0 is one the run could not read.
	zeroUnknown bool
}

// median is f's median over runs; ok is false without runs, or when the figure is
// unknown.
func (f clusterFigure) median(runs []clusterRun, read func(clusterRun) float64) (float64, bool) {
	v, ok := medianOf(runs, read)
	return v, ok && !(f.zeroUnknown && v == 0)
}

var clusterRows = []clusterFigure{
	{name: "start-up to synced caches", target: 1.0, format: formatSeconds,
		side:    func(r clusterRun) float64 { return r.Synced.Seconds() },
		process: func(p processFigures, _ clusterRun) float64 { return p.Synced.Seconds() }},
	{name: "steady RSS (MiB)", target: 0.5, format: formatMiB,
		side: func(r clusterRun) float64 {
			return r.sum(func(p processFigures) float64 { return float64(p.SteadyRSS) })
		},
		process: func(p processFigures, _ clusterRun) float64 { return float64(p.SteadyRSS) }},
	{name: "Go heap in use after a GC, steady (MiB)", format: formatMiB,
		side: func(r clusterRun) float64 {
			return r.sum(func(p processFigures) float64 { return float64(p.HeapInUse) })
		},
		process: func(p processFigures, _ clusterRun) float64 { return float64(p.HeapInUse) }},
	{name: "heap per pod (KiB)", format: formatKiB,
		side:    heapPerPod,
		process: func(p processFigures, r clusterRun) float64 { return float64(p.HeapInUse) / float64(r.Pods) }},
	// Every process of either side caches every pod: bosun's heap per pod is held against
	// kube-controller-manager's alone.
	{name: "heap per pod against kube-controller-manager's (KiB)", format: formatKiB, target: 0.5,
		side: heapPerPod,
		upstream: func(r clusterRun) float64 {
			return float64(processLabelled(r, kubeControllerManagerLabel).HeapInUse) / float64(r.Pods)
		}},
	// The same target by the heap profile: what a cached pod holds, without the process's
	// fixed heap.
	{name: "a cached pod in the steady heap profile, with its Pod struct, against kube-controller-manager's (KiB)", format: formatKiB, target: 0.5, zeroUnknown: true,
		side:     func(r clusterRun) float64 { return r.sum(func(p processFigures) float64 { return p.CachedPod }) },
		upstream: func(r clusterRun) float64 { return processLabelled(r, kubeControllerManagerLabel).CachedPod },
		process:  func(p processFigures, _ clusterRun) float64 { return p.CachedPod }},
	{name: "idle CPU-s", format: formatCPU,
		side:    func(r clusterRun) float64 { return r.sum(func(p processFigures) float64 { return p.IdleCPU }) },
		process: func(p processFigures, _ clusterRun) float64 { return p.IdleCPU }},
	{name: "fill: wall", format: formatSeconds, side: func(r clusterRun) float64 { return r.Fill.Seconds() }},
	{name: "fill: CPU-s", format: formatCPU,
		side:    func(r clusterRun) float64 { return r.sum(func(p processFigures) float64 { return p.FillCPU }) },
		process: func(p processFigures, _ clusterRun) float64 { return p.FillCPU }},
	{name: "rolling update of everything: wall", target: 1.0, format: formatSeconds,
		side: func(r clusterRun) float64 { return r.Rollout.Seconds() }},
	{name: "rolling update of everything: CPU-s", target: 0.6, format: formatCPU,
		side:    func(r clusterRun) float64 { return r.sum(func(p processFigures) float64 { return p.RolloutCPU }) },
		process: func(p processFigures, _ clusterRun) float64 { return p.RolloutCPU }},
	{name: "rolling update: peak RSS (MiB)", format: formatMiB,
		side: func(r clusterRun) float64 {
			return r.sum(func(p processFigures) float64 { return float64(p.RolloutPeakRSS) })
		},
		process: func(p processFigures, _ clusterRun) float64 { return float64(p.RolloutPeakRSS) }},
}

// medianOf is the median of f over runs (the lower middle of an even count); ok is false
// without runs.
func medianOf(runs []clusterRun, f func(clusterRun) float64) (float64, bool) {
	if len(runs) == 0 {
		return 0, false
	}
	values := make([]float64, len(runs))
	for i, r := range runs {
		values[i] = f(r)
	}
	slices.Sort(values)
	return values[(len(values)-1)/2], true
}

func (r *clusterResults) markdown(o *options) string {
	if len(r.runs) == 0 {
		return ""
	}
	upstream, bosun := r.runs[clusterSideUpstream], r.runs[clusterSideBosun]
	var b strings.Builder
	b.WriteString("## One manager for a large cluster\n\n")
	first := append(slices.Clone(upstream), bosun...)[0]
	plan := planMust(o)
	fmt.Fprintf(&b, "%d pods on %d simulated nodes in %d workloads over %d namespaces: %d Advanced DaemonSets over every node, "+
		"%d CloneSets (in-place updates), %d Deployments of sizes cycling %v, a PodUnavailableBudget (maxUnavailable %s) on every other "+
		"CloneSet and Deployment, and one ImagePullJob over every node (its NodeImages' agents played by the bench). A node stub plays the "+
		"scheduler and the kubelets. Every manager at `QPS %g / burst %d`. Each side on a fresh control plane: bosun-controller-manager "+
		"`--controllers=*` with its webhooks; upstream kube-controller-manager `--controllers=%s` plus kruise-manager v1.9.0 with every "+
		"OpenKruise CRD and %s, summed. The cluster is filled with the managers running, then they are restarted: start-up is until "+
		"each has synced its caches (the slowest process), steady figures 30 s later, idle CPU over %v, then every workload's image "+
		"changes at once and the rollout lasts until every workload reports all pods updated and available. Median of %d run(s). "+
		"Targets: bosun at most the given ratio of upstream+kruise (the heap per pod: of kube-controller-manager's).\n\n",
		first.Pods, first.Nodes, first.Workloads, clusterNamespaces, clusterDaemonSets, len(plan.cloneSets), len(plan.deployments),
		deploymentSizes, budgetMaxUnavailable, o.limits.QPS, o.limits.Burst, upstreamClusterControllers, o.kruiseGatesLabel(partCluster),
		o.cluster.idle, max(len(upstream), len(bosun)))

	var labels []string
	if len(upstream) > 0 {
		for _, p := range upstream[0].Processes {
			labels = append(labels, p.Label)
		}
	}
	b.WriteString("| figure |")
	for _, l := range labels {
		fmt.Fprintf(&b, " %s |", l)
	}
	b.WriteString(" upstream+kruise | bosun | bosun ÷ upstream+kruise | target |\n|---|")
	b.WriteString(strings.Repeat("---:|", len(labels)+4) + "\n")
	for _, f := range clusterRows {
		fmt.Fprintf(&b, "| %s |", f.name)
		for i := range labels {
			cell := "–"
			if f.process != nil {
				if v, ok := f.median(upstream, func(r clusterRun) float64 { return f.process(r.Processes[i], r) }); ok {
					cell = f.format(v)
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		upstreamSide := f.side
		if f.upstream != nil {
			upstreamSide = f.upstream
		}
		u, uok := f.median(upstream, upstreamSide)
		bo, bok := f.median(bosun, f.side)
		fmt.Fprintf(&b, " %s | %s | %s | %s |\n", cellIf(uok, f.format(u)), cellIf(bok, f.format(bo)), ratioCell(uok && bok, bo, u), targetCell(f.target, uok && bok, bo, u))
	}
	b.WriteString("\n")
	for _, runs := range [][]clusterRun{upstream, bosun} {
		for _, run := range runs {
			fmt.Fprintf(&b, "- %s: load average %.1f before the idle window; fill %v, rollout %v.\n", run.Side, run.LoadAverage,
				run.Fill.Round(time.Second), run.Rollout.Round(time.Second))
		}
	}
	b.WriteString("\n")
	for _, runs := range [][]clusterRun{upstream, bosun} {
		if len(runs) > 0 && runs[len(runs)-1].Profiles != "" {
			last := runs[len(runs)-1]
			fmt.Fprintf(&b, "Where it goes, %s (the last run's profiles):\n\n%s", last.Side, last.Profiles)
		}
	}
	return b.String()
}

// processLabelled is the figures of r's process labelled label; all zero when r has none.
func processLabelled(r clusterRun, label string) processFigures {
	for _, p := range r.Processes {
		if p.Label == label {
			return p
		}
	}
	return processFigures{}
}

// heapPerPod is a side's Go heap in use, summed over its processes, per pod of the cluster.
func heapPerPod(r clusterRun) float64 {
	return r.sum(func(p processFigures) float64 { return float64(p.HeapInUse) }) / float64(r.Pods)
}

func formatKiB(v float64) string { return fmt.Sprintf("%.1f", v/1024) }

func planMust(o *options) clusterPlan {
	p, _ := planCluster(o.cluster.pods, o.cluster.nodes)
	return p
}

func cellIf(ok bool, s string) string {
	if !ok {
		return "–"
	}
	return s
}

func ratioCell(ok bool, bosun, upstream float64) string {
	if !ok || upstream == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", bosun/upstream)
}

func targetCell(target float64, ok bool, bosun, upstream float64) string {
	if target == 0 {
		return ""
	}
	if !ok || upstream == 0 {
		return fmt.Sprintf("≤ %.1f×", target)
	}
	verdict := "met"
	if bosun/upstream > target {
		verdict = "**missed**"
	}
	return fmt.Sprintf("≤ %.1f× %s", target, verdict)
}
