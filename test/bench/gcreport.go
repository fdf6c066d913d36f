package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The targets for the garbage collector, checked by the report (never by tests).
const (
	// On the large cluster: peak RSS ≤ 0.5× upstream's collector, and monitors synced no
	// later than upstream's.
	targetGCClusterRSSRatio  = 0.5
	targetGCClusterSyncRatio = 1.0
	// Cascade delete of 5,000 pods at equal QPS: wall ≤ 1.0×, CPU-seconds ≤ 0.8×.
	targetGCCascadeWallRatio = 1.0
	targetGCCascadeCPURatio  = 0.8
	// Without client limits: within 1.15× of the raw delete baseline.
	targetGCUnlimitedRatio = 1.15
)

// clusterFigures are one collector's median figures on the large cluster.
type clusterFigures struct {
	ok bool
	// runs is how many runs the medians are over, gaveUp how many of them stopped waiting
	// for their monitors (their Synced is the moment they gave up).
	runs, gaveUp int
	objects      int
	synced       time.Duration
	drained      time.Duration
	drainedOK    bool
	syncCPU      float64
	peakRSS      uint64
	rss          uint64
	heapInuse    uint64
	bytesPerNode float64
}

// clusterMedian returns the median of each figure over runs; drained only over the runs
// that measured it.
func clusterMedian(runs []clusterResult) clusterFigures {
	if len(runs) == 0 {
		return clusterFigures{}
	}
	f := clusterFigures{ok: true, runs: len(runs)}
	var objects []float64
	var synced, drained []time.Duration
	var syncCPU, perNode []float64
	var peak, rss, heap []uint64
	for _, c := range runs {
		if c.GaveUp {
			f.gaveUp++
		}
		objects = append(objects, float64(c.Objects))
		synced = append(synced, c.Synced)
		if c.Drained > 0 {
			drained = append(drained, c.Drained)
		}
		syncCPU = append(syncCPU, c.SyncCPU)
		peak = append(peak, c.PeakRSS)
		rss = append(rss, c.RSS)
		heap = append(heap, c.HeapInuse)
		perNode = append(perNode, c.bytesPerNode())
	}
	f.objects = int(middle(objects))
	f.synced, f.syncCPU = middle(synced), middle(syncCPU)
	if len(drained) > 0 {
		f.drained, f.drainedOK = middle(drained), true
	}
	f.peakRSS, f.rss, f.heapInuse, f.bytesPerNode = middle(peak), middle(rss), middle(heap), middle(perNode)
	return f
}

// gcLabel is the report's name of a gc workload, with the sizes filled in.
func (r *results) gcLabel(workload string) string {
	o := r.options
	switch workload {
	case workloadGCCascade:
		return fmt.Sprintf("cascade-delete a ReplicaSet of %s pods, `--kube-api-qps=%s --kube-api-burst=%d`",
			thousands(o.gcPods), strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst)
	case workloadGCCascadeUnlimited:
		return fmt.Sprintf("the same, `--kube-api-qps=%s --kube-api-burst=%d`",
			strconv.FormatFloat(o.unlimited.QPS, 'g', -1, 64), o.unlimited.Burst)
	}
	return workload
}

// writeGC writes the gc part: the cascade deletes, the unlimited one against the raw delete
// baseline, the large cluster, and the targets.
func (r *results) writeGC(b *strings.Builder) {
	o, g := r.options, r.gc
	fmt.Fprintf(b, "## Garbage collectors alone\n\n")
	fmt.Fprintf(b, "bosun-controller-manager vs upstream kube-controller-manager, each with `--controllers=%s` and nothing else "+
		"(collectors run: %s), on a fresh etcd + kube-apiserver that the bench fills itself before the collector starts; no other "+
		"controller runs. A collector is measured once it has logged %q and its `%s` queue is empty, plus %v.\n\n",
		gcControllers, strings.Join(o.gcManagers, ", "), syncedMessage, graphChangesQueue, settleTime)

	if len(g.cascade)+len(g.unlimited) > 0 {
		fmt.Fprintf(b, "### Cascade delete\n\n")
		fmt.Fprintf(b, "A ReplicaSet (0 replicas) and %s pods naming it as controller (unbound, never Ready), created by the bench; the "+
			"ReplicaSet is deleted with background propagation and the wall time runs until no pod is left. CPU-seconds and peak RSS "+
			"are the collector's over that time.\n\n", thousands(o.gcPods))
		b.WriteString("| Workload | bosun wall | upstream wall | ratio | bosun CPU-s | upstream CPU-s | ratio | bosun peak RSS MiB | upstream peak RSS MiB | ratio |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, w := range []struct {
			workload string
			runs     map[string][]runResult
		}{{workloadGCCascade, g.cascade}, {workloadGCCascadeUnlimited, g.unlimited}} {
			x, y := median(w.runs[managerBosun], w.workload), median(w.runs[managerUpstream], w.workload)
			if !x.ok && !y.ok {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.gcLabel(w.workload),
				seconds(x.ok, x.wall), seconds(y.ok, y.wall), ratio(x.ok && y.ok, x.wall.Seconds(), y.wall.Seconds()),
				cpu(x.ok, x.cpu), cpu(y.ok, y.cpu), ratio(x.ok && y.ok, x.cpu, y.cpu),
				mib(x.ok, x.peakRSS), mib(y.ok, y.peakRSS), ratio(x.ok && y.ok, float64(x.peakRSS), float64(y.peakRSS)))
		}
		xi, xok := medianIdleRSS(g.cascade[managerBosun])
		yi, yok := medianIdleRSS(g.cascade[managerUpstream])
		fmt.Fprintf(b, "| idle after sync, %s pods in the graph (RSS) | | | | | | | %s | %s | %s |\n\n", thousands(o.gcPods),
			mib(xok, xi), mib(yok, yi), ratio(xok && yok, float64(xi), float64(yi)))
	}
	if len(g.unlimited) > 0 && len(g.baselines) > 0 {
		r.writeGCUnlimited(b)
	}
	if len(g.clusters) > 0 {
		r.writeGCCluster(b)
	}
	r.writeGCTargets(b)
}

// writeGCUnlimited compares the cascade deletes without client limits with the raw delete
// baseline of the same repetition.
func (r *results) writeGCUnlimited(b *strings.Builder) {
	o, g := r.options, r.gc
	fmt.Fprintf(b, "Without client limits, against the raw API-server baseline: deleting the same %s pods by name (listed "+
		"beforehand; background propagation and UID precondition, as a collector deletes) from N parallel unthrottled admin "+
		"clients, each N on its own fresh control plane.\n\n", thousands(o.gcPods))
	b.WriteString("| Run | wall | pods/s |\n|---|---:|---:|\n")
	for _, clients := range o.baselineClients {
		if walls := g.baselines[clients]; len(walls) > 0 {
			wall := middle(walls)
			fmt.Fprintf(b, "| raw delete baseline, %d clients | %s | %.0f |\n", clients, seconds(true, wall), float64(o.gcPods)/wall.Seconds())
		}
	}
	for _, name := range []string{managerBosun, managerUpstream} {
		if x := median(g.unlimited[name], workloadGCCascadeUnlimited); x.ok {
			fmt.Fprintf(b, "| %s: cascade delete, no client limits | %s | %.0f |\n", name, seconds(true, x.wall), float64(o.gcPods)/x.wall.Seconds())
		}
	}
	b.WriteString("\n| Repetition | best raw baseline | bosun | bosun / baseline | upstream | upstream / baseline |\n|---|---:|---:|---:|---:|---:|\n")
	reps := max(len(g.unlimited[managerBosun]), len(g.unlimited[managerUpstream]))
	for rep := range reps {
		best, bestClients := bestBaseline(g.baselines, o.baselineClients, rep)
		if best == 0 {
			continue
		}
		fmt.Fprintf(b, "| %d | %s (%d clients) |", rep+1, seconds(true, best), bestClients)
		for _, name := range []string{managerBosun, managerUpstream} {
			wall, ok := repetitionWall(g.unlimited[name], rep)
			fmt.Fprintf(b, " %s | %s |", seconds(ok, wall), ratio(ok, wall.Seconds(), best.Seconds()))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// unlimitedRatio is the median over the repetitions of a collector's unlimited cascade delete
// divided by the best raw delete baseline of the same repetition (the API server's speed
// drifts with whatever else the machine does).
func (r *results) unlimitedRatio(name string) (float64, bool) {
	var ratios []float64
	for rep := range r.gc.unlimited[name] {
		best, _ := bestBaseline(r.gc.baselines, r.options.baselineClients, rep)
		if wall, ok := repetitionWall(r.gc.unlimited[name], rep); ok && best > 0 {
			ratios = append(ratios, wall.Seconds()/best.Seconds())
		}
	}
	if len(ratios) == 0 {
		return 0, false
	}
	return middle(ratios), true
}

// repetitionWall is the wall time of the first measurement of repetition rep.
func repetitionWall(runs []runResult, rep int) (time.Duration, bool) {
	if rep >= len(runs) || len(runs[rep].Measurements) == 0 {
		return 0, false
	}
	return runs[rep].Measurements[0].Wall, true
}

// writeGCCluster reports the collectors' start on the large cluster.
func (r *results) writeGCCluster(b *strings.Builder) {
	o, g := r.options, r.gc
	owners := ceilDiv(o.gcObjects, gcDependentsPerOwner)
	fmt.Fprintf(b, "### %s-object cluster\n\n", thousands(o.gcObjects))
	fmt.Fprintf(b, "%s ConfigMaps and Secrets (half each) with %d–%d KiB of data (sizes uniform, seeded: the same cluster every run), "+
		"each owned by one of %s owner ConfigMaps (%d each, small), plus a ReplicaSet and its %s pods, all created (%d parallel "+
		"clients) before the collector starts with `--kube-api-qps=%s --kube-api-burst=%d`. Nothing is collected: every owner exists.\n\n",
		thousands(o.gcObjects), minDataSize>>10, maxDataSize>>10, thousands(owners), gcDependentsPerOwner, thousands(o.gcPods),
		o.gcCreateClients, strconv.FormatFloat(o.limits.QPS, 'g', -1, 64), o.limits.Burst)
	x, y := clusterMedian(g.clusters[managerBosun]), clusterMedian(g.clusters[managerUpstream])
	both := x.ok && y.ok
	b.WriteString("| Figure | bosun | upstream | bosun / upstream |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(b, "| objects in the graph (counted) | %s | %s | |\n", count(x.ok, x.objects), count(y.ok, y.objects))
	fmt.Fprintf(b, "| monitors synced (process start → log line) | %s | %s | %s |\n",
		syncSeconds(x), syncSeconds(y), ratio(both, x.synced.Seconds(), y.synced.Seconds()))
	fmt.Fprintf(b, "| graph built (process start → `%s` empty) | %s | %s | %s |\n", graphChangesQueue,
		seconds(x.drainedOK, x.drained), seconds(y.drainedOK, y.drained), ratio(x.drainedOK && y.drainedOK, x.drained.Seconds(), y.drained.Seconds()))
	fmt.Fprintf(b, "| CPU-s until synced | %s | %s | %s |\n", cpu(x.ok, x.syncCPU), cpu(y.ok, y.syncCPU), ratio(both, x.syncCPU, y.syncCPU))
	fmt.Fprintf(b, "| **peak RSS MiB** (VmHWM, start to settled) | %s | %s | %s |\n", mib(x.ok, x.peakRSS), mib(y.ok, y.peakRSS),
		ratio(both, float64(x.peakRSS), float64(y.peakRSS)))
	fmt.Fprintf(b, "| RSS MiB, settled | %s | %s | %s |\n", mib(x.ok, x.rss), mib(y.ok, y.rss), ratio(both, float64(x.rss), float64(y.rss)))
	fmt.Fprintf(b, "| Go heap in use MiB, settled | %s | %s | %s |\n", mib(x.ok, x.heapInuse), mib(y.ok, y.heapInuse),
		ratio(both, float64(x.heapInuse), float64(y.heapInuse)))
	fmt.Fprintf(b, "| heap bytes per graph node | %s | %s | %s |\n\n", count(x.ok, int(x.bytesPerNode)), count(y.ok, int(y.bytesPerNode)),
		ratio(both, x.bytesPerNode, y.bytesPerNode))
	b.WriteString("Heap bytes per graph node = `HeapInuse` ÷ objects in the graph. `HeapInuse` is the Go runtime's figure from " +
		"`/debug/pprof/heap?gc=1&debug=1` once settled (`gc=1` collects first, so it is what the collector keeps); objects in the " +
		"graph are the objects of every resource that discovery lists with the verbs delete, list and watch, events excepted " +
		"(what either collector watches), counted before it starts: the ConfigMaps, Secrets, ReplicaSet and pods above plus " +
		"what the API server keeps itself (namespaces, RBAC, leases, …). The heap includes everything else the process holds.\n\n")
	for _, f := range []struct {
		name string
		fig  clusterFigures
	}{{"bosun", x}, {"upstream", y}} {
		if f.fig.gaveUp > 0 {
			fmt.Fprintf(b, "%s logged %q in %d of %d run(s): its time above is when it gave up, not when its monitors synced.\n\n",
				f.name, gaveUpMessage, f.fig.gaveUp, f.fig.runs)
		}
	}
}

// gcTargets are the targets that the runs have figures for, as report lines.
func (r *results) gcTargets() []string {
	o, g := r.options, r.gc
	var lines []string
	x, y := clusterMedian(g.clusters[managerBosun]), clusterMedian(g.clusters[managerUpstream])
	if x.ok && y.ok {
		cluster := thousands(o.gcObjects) + "-object cluster"
		lines = append(lines, fmt.Sprintf("%s, peak RSS ≤ %.2g× upstream's collector: %s", cluster, targetGCClusterRSSRatio,
			verdict(float64(x.peakRSS)/float64(y.peakRSS), targetGCClusterRSSRatio)))
		sync := verdict(x.synced.Seconds()/y.synced.Seconds(), targetGCClusterSyncRatio)
		if x.gaveUp > 0 {
			sync = fmt.Sprintf("bosun gave up waiting for its monitors in %d of %d run(s) (**missed**)", x.gaveUp, x.runs)
		}
		lines = append(lines, fmt.Sprintf("%s, monitors synced no later than upstream's (≤ %.2g×): %s", cluster, targetGCClusterSyncRatio, sync))
	}
	cascade := "cascade delete of " + thousands(o.gcPods) + " pods"
	if x, y := median(g.cascade[managerBosun], workloadGCCascade), median(g.cascade[managerUpstream], workloadGCCascade); x.ok && y.ok {
		lines = append(lines,
			fmt.Sprintf("%s, wall ≤ %.2g× upstream at equal QPS: %s", cascade, targetGCCascadeWallRatio,
				verdict(x.wall.Seconds()/y.wall.Seconds(), targetGCCascadeWallRatio)),
			fmt.Sprintf("%s, CPU-seconds ≤ %.2g× upstream: %s", cascade, targetGCCascadeCPURatio, verdict(x.cpu/y.cpu, targetGCCascadeCPURatio)))
	}
	if value, ok := r.unlimitedRatio(managerBosun); ok {
		lines = append(lines, fmt.Sprintf("%s without client limits, wall ≤ %.2f× the best raw delete baseline (median of the "+
			"repetitions' ratios): %s", cascade, targetGCUnlimitedRatio, verdict(value, targetGCUnlimitedRatio)))
	}
	return lines
}

func (r *results) writeGCTargets(b *strings.Builder) {
	lines := r.gcTargets()
	if len(lines) == 0 {
		return
	}
	b.WriteString("### Targets (garbage collector)\n\n")
	for _, line := range lines {
		fmt.Fprintf(b, "- %s\n", line)
	}
	b.WriteString("\n")
}

func syncSeconds(f clusterFigures) string {
	s := seconds(f.ok, f.synced)
	if f.gaveUp > 0 {
		s += fmt.Sprintf(" (gave up in %d of %d)", f.gaveUp, f.runs)
	}
	return s
}

func count(ok bool, n int) string {
	if !ok {
		return "—"
	}
	return thousands(n)
}
