package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The targets for the CloneSet, checked by the report (never by tests): bosun against
// kruise-manager at equal client limits, p50 against p50.
const (
	targetCSWallRatio     = 1.0
	targetCSCPURatio      = 0.5
	targetCSRSSRatio      = 0.6
	targetCSRequestsRatio = 1.1
	// targetCSPodWrites is bosun's most writes per pod of an in-place update.
	targetCSPodWrites = 3.0
	// targetCSSteadyWrites is bosun's writes per minute in the steady state.
	targetCSSteadyWrites = 0.0
)

// csManagerOrder is the order of the managers' columns.
var csManagerOrder = []string{managerBosun, managerKruise, managerUpstream}

// spread is the p50 and p95 of a figure over the runs that have it (nearest rank).
type spread struct {
	n        int
	p50, p95 float64
}

// spreadOf returns the spread of values.
func spreadOf(values []float64) spread {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return spread{n: len(sorted), p50: percentile(sorted, 50), p95: percentile(sorted, 95)}
}

// cell formats a spread as "p50 (p95)" with format, "—" when no run has it.
func (s spread) cell(format func(float64) string) string {
	if s.n == 0 {
		return "—"
	}
	if s.n == 1 {
		return format(s.p50)
	}
	return format(s.p50) + " (" + format(s.p95) + ")"
}

// csFigure is one figure of a row, read from one run's row.
type csFigure struct {
	name   string
	value  func(cloneSetRowResult) float64
	format func(float64) string
}

func formatSeconds(v float64) string { return fmt.Sprintf("%.1f s", v) }
func formatCPU(v float64) string     { return fmt.Sprintf("%.2f", v) }
func formatMiB(v float64) string     { return fmt.Sprintf("%.0f", v/mebibyte) }
func formatCount(v float64) string   { return strconv.FormatFloat(v, 'f', -1, 64) }
func formatRate(v float64) string    { return fmt.Sprintf("%.1f", v) }
func formatPerPod(v float64) string  { return fmt.Sprintf("%.2f", v) }

var (
	csWall     = csFigure{"wall", func(r cloneSetRowResult) float64 { return r.Wall.Seconds() }, formatSeconds}
	csCPU      = csFigure{"manager CPU-s", func(r cloneSetRowResult) float64 { return r.CPUSeconds }, formatCPU}
	csRSS      = csFigure{"manager peak RSS MiB", func(r cloneSetRowResult) float64 { return float64(r.PeakRSS) }, formatMiB}
	csRequests = csFigure{"manager API requests (watches not counted)", func(r cloneSetRowResult) float64 { return float64(r.managerRequests()) }, formatCount}
	csWrites   = csFigure{"of them writes", func(r cloneSetRowResult) float64 { return float64(r.managerWrites()) }, formatCount}
	csPodWrite = csFigure{"manager writes to pods per pod", func(r cloneSetRowResult) float64 {
		return float64(r.managerPodWrites()) / float64(max(r.Pods, 1))
	}, formatPerPod}
	csSteadyWrites = csFigure{"**manager API writes per minute**", func(r cloneSetRowResult) float64 {
		return float64(r.managerWrites()) / r.Window.Minutes()
	}, formatRate}
	csSteadyRequests = csFigure{"manager API requests per minute (watches not counted)", func(r cloneSetRowResult) float64 {
		return float64(r.managerRequests()) / r.Window.Minutes()
	}, formatRate}
	csSteadyCPU = csFigure{"manager CPU-s over the window", func(r cloneSetRowResult) float64 { return r.CPUSeconds }, formatCPU}
)

// figuresOf are the figures the report shows for row.
func figuresOf(row string) []csFigure {
	switch row {
	case rowSteady:
		return []csFigure{csSteadyWrites, csSteadyRequests, csSteadyCPU, csRSS}
	case rowInPlaceSmall, rowInPlaceLarge, rowRecreate:
		return []csFigure{csWall, csCPU, csRSS, csRequests, csWrites, csPodWrite}
	}
	return []csFigure{csWall, csCPU, csRSS, csRequests, csWrites}
}

// rowSpread is the spread of figure over manager's runs of row.
func (r *cloneSetResults) rowSpread(manager, row string, figure csFigure) spread {
	var values []float64
	for _, result := range r.rowResults(manager, row) {
		values = append(values, figure.value(result))
	}
	return spreadOf(values)
}

// columns are the managers that ran, in column order.
func (r *cloneSetResults) columns() []string {
	var out []string
	for _, name := range csManagerOrder {
		if len(r.runs[name]) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// markdown writes the cloneset part's section; "" when it did not run.
func (r *cloneSetResults) markdown(o *options) string {
	columns := r.columns()
	if len(columns) == 0 {
		return ""
	}
	cs := o.cloneSet
	var b strings.Builder
	b.WriteString("## CloneSet against kruise-manager and upstream's ReplicaSet controller\n\n")
	fmt.Fprintf(&b, "Each manager alone on a fresh control plane with an audit log of every request but watches, and %d simulated nodes (Node "+
		"objects, no kubelet). Every manager `QPS %s / burst %d` and %d workers, set explicitly: bosun-controller-manager `--controllers=%s "+
		"--kube-api-qps=%s --kube-api-burst=%d --kruise-controllers-kube-api-qps=%s --kruise-controllers-kube-api-burst=%d "+
		"--concurrent-cloneset-syncs=%d` with its webhooks on a loopback port and bosun's CRDs; kruise-manager v1.9.0 `--rest-config-qps=%s "+
		"--rest-config-burst=%d --cloneset-workers=%d` with %s, %s; upstream kube-controller-manager `--controllers=%s --kube-api-qps=%s "+
		"--kube-api-burst=%d --concurrent-replicaset-syncs=%d` on apps/v1 ReplicaSets of the same pod template (the scale rows only). "+
		"The CloneSets are written and read in apps.kruise.io/v1beta1, the version both CloneSet controllers work on and store, so no "+
		"conversion is in the path; InPlaceIfPossible (recreate row: ReCreate), partition 0, maxUnavailable %s, maxSurge 0 (recreate row: %s), "+
		"revisionHistoryLimit 10, one container. A node stub in the bench plays the scheduler and the kubelets for every manager alike: it binds "+
		"each new pod to a node, reports it Running with a container status per container (the spec's image, an imageID per image, restart "+
		"count +1 after an image change), Ready once every readiness gate is True, and removes a bound pod being deleted (grace period 0). "+
		"Each row on objects of its own, removed before the next; the in-place rows update the pods the scale rows created, once all are "+
		"available. Wall time from the create (or the template change) until the status says so (polled every %v) and the pods agree; manager "+
		"CPU-s and peak RSS over that time; API requests from the audit log (by User-Agent), from the trigger to the end (rollouts: %v more). "+
		"Cells: p50 (p95) over %d run(s), nearest rank.\n\n",
		cs.nodes, strconv.FormatFloat(cs.qps, 'g', -1, 64), cs.burst, cs.workers, cs.bosunControllers,
		strconv.FormatFloat(cs.qps, 'g', -1, 64), cs.burst, strconv.FormatFloat(cs.qps, 'g', -1, 64), cs.burst, cs.workers,
		strconv.FormatFloat(cs.qps, 'g', -1, 64), cs.burst, cs.workers,
		o.kruiseCRDsLabel("OpenKruise's CloneSet CRD installed, besides only the ImagePullJob CRD it cannot start without and a placeholder "+
			"CRD that makes the policy.kruise.io group exist without budgets (its other controllers idle; without the SidecarSet CRD its pod "+
			"webhook is off, so its pods get no KruisePodReady readiness gate, which bosun's pod webhook adds and its pod-readiness controller "+
			"sets True)"), o.kruiseGatesLabel(partCloneSet),
		upstreamCloneSetController, strconv.FormatFloat(cs.qps, 'g', -1, 64), cs.burst, cs.workers,
		cloneSetMaxUnavailable, cloneSetRecreateSurge, completionPollInterval, settleTime, cs.runs)

	hasBosun := slices.Contains(columns, managerBosun)
	var others []string
	if hasBosun {
		others = slices.DeleteFunc(slices.Clone(columns), func(name string) bool { return name == managerBosun })
	}
	b.WriteString("| Row | figure |")
	for _, name := range columns {
		fmt.Fprintf(&b, " %s |", managerLabel(name))
	}
	for _, name := range others {
		fmt.Fprintf(&b, " bosun ÷ %s (p50) |", managerLabel(name))
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(columns)+len(others)) + "\n")
	for _, row := range cloneSetRowOrder {
		if !r.ran(row) {
			continue
		}
		for i, figure := range figuresOf(row) {
			label := ""
			if i == 0 {
				label = "**" + cs.rowLabel(row) + "**"
			}
			fmt.Fprintf(&b, "| %s | %s |", label, figure.name)
			for _, name := range columns {
				fmt.Fprintf(&b, " %s |", r.rowSpread(name, row, figure).cell(figure.format))
			}
			x := r.rowSpread(managerBosun, row, figure)
			for _, name := range others {
				y := r.rowSpread(name, row, figure)
				fmt.Fprintf(&b, " %s |", ratio(x.n > 0 && y.n > 0, x.p50, y.p50))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "| idle after start-up | RSS MiB |")
	idle := map[string]spread{}
	for _, name := range columns {
		var values []float64
		for _, run := range r.runs[name] {
			values = append(values, float64(run.IdleRSS))
		}
		idle[name] = spreadOf(values)
		fmt.Fprintf(&b, " %s |", idle[name].cell(formatMiB))
	}
	for _, name := range others {
		fmt.Fprintf(&b, " %s |", ratio(true, idle[managerBosun].p50, idle[name].p50))
	}
	b.WriteString("\n\n")

	r.writeCloneSetWrites(&b, o)
	for _, name := range columns {
		var loads []float64
		for _, run := range r.runs[name] {
			loads = append(loads, run.LoadAverage)
		}
		fmt.Fprintf(&b, "- %s, load average (1 min) before each run: %s\n", managerLabel(name), loadsSummary(loads))
	}
	b.WriteString("\n")
	r.writeCloneSetTargets(&b, o)
	return b.String()
}

// ran reports whether any manager ran row.
func (r *cloneSetResults) ran(row string) bool {
	for _, runs := range r.runs {
		for _, run := range runs {
			if _, ok := run.Rows[row]; ok {
				return true
			}
		}
	}
	return false
}

// writeCloneSetWrites lists, per row and manager, the median writes of the manager and of
// the node stub by resource.
func (r *cloneSetResults) writeCloneSetWrites(b *strings.Builder, o *options) {
	b.WriteString("Writes by client and resource (median over the runs; conflicts and failures are among them):\n\n")
	b.WriteString("| Row | manager measured | client | writes by resource |\n|---|---|---|---|\n")
	for _, row := range cloneSetRowOrder {
		for _, name := range r.columns() {
			results := r.rowResults(name, row)
			if len(results) == 0 {
				continue
			}
			for _, actor := range []string{actorManager, actorAgents} {
				fmt.Fprintf(b, "| %s | %s | %s | %s |\n", o.cloneSet.rowLabel(row), managerLabel(name), csActorLabel(actor, name),
					medianWrites(results, actor))
			}
		}
	}
	b.WriteString("\n")
}

// medianWrites formats the median writes of actor by resource over results, "none" when it
// wrote nothing.
func medianWrites(results []cloneSetRowResult, actor string) string {
	resources := map[string]bool{}
	for _, r := range results {
		for resource := range r.Writes[actor] {
			resources[resource] = true
		}
	}
	var parts []string
	for _, resource := range slices.Sorted(maps.Keys(resources)) {
		var requests, conflicts, failed []float64
		for _, r := range results {
			c := r.Writes[actor][resource]
			requests = append(requests, float64(c.Requests))
			conflicts = append(conflicts, float64(c.Conflicts))
			failed = append(failed, float64(c.Failed))
		}
		w := ipjWriteFigures{requests: middle(requests), conflicts: middle(conflicts), failed: middle(failed)}
		parts = append(parts, "`"+resource+"` "+writesCell(w))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// csActorLabel names a client in the writes table of the run of manager.
func csActorLabel(actor, manager string) string {
	switch actor {
	case actorManager:
		switch manager {
		case managerKruise:
			return "kruise-manager"
		case managerUpstream:
			return "kube-controller-manager"
		}
		return "bosun-controller-manager"
	case actorAgents:
		return "node stub"
	}
	return actor
}

// writeCloneSetTargets checks bosun against the targets: against kruise-manager's p50 on
// every row (wall, CPU, RSS; requests on the scale rows without claims), and its own pod
// writes per in-place pod and steady-state writes.
func (r *cloneSetResults) writeCloneSetTargets(b *strings.Builder, o *options) {
	if len(r.runs[managerBosun]) == 0 {
		return
	}
	compare := len(r.runs[managerKruise]) > 0
	fmt.Fprintf(b, "Targets: bosun ÷ kruise-manager (p50 ÷ p50) wall ≤ %.2g×, CPU-s ≤ %.2g×, peak RSS ≤ %.2g×, API requests ≤ %.2g× "+
		"(scale rows without claims); bosun's writes to pods per in-place pod ≤ %.0f (p95); bosun's writes per minute in the steady "+
		"state %.0f (p95).\n\n", targetCSWallRatio, targetCSCPURatio, targetCSRSSRatio, targetCSRequestsRatio, targetCSPodWrites, targetCSSteadyWrites)
	for _, row := range cloneSetRowOrder {
		if len(r.rowResults(managerBosun, row)) == 0 {
			continue
		}
		var verdicts []string
		if compare && len(r.rowResults(managerKruise, row)) > 0 {
			ratioOf := func(f csFigure) float64 {
				return r.rowSpread(managerBosun, row, f).p50 / r.rowSpread(managerKruise, row, f).p50
			}
			if row != rowSteady {
				verdicts = append(verdicts, "wall "+verdict(ratioOf(csWall), targetCSWallRatio))
				verdicts = append(verdicts, "CPU "+verdict(ratioOf(csCPU), targetCSCPURatio))
			}
			verdicts = append(verdicts, "RSS "+verdict(ratioOf(csRSS), targetCSRSSRatio))
			if row == rowScaleSmall || row == rowScaleLarge {
				verdicts = append(verdicts, "requests "+verdict(ratioOf(csRequests), targetCSRequestsRatio))
			}
		}
		switch row {
		case rowInPlaceSmall, rowInPlaceLarge:
			verdicts = append(verdicts, "pod writes per pod "+atMost(r.rowSpread(managerBosun, row, csPodWrite).p95, targetCSPodWrites))
		case rowSteady:
			verdicts = append(verdicts, "writes per minute "+atMost(r.rowSpread(managerBosun, row, csSteadyWrites).p95, targetCSSteadyWrites))
		}
		if len(verdicts) > 0 {
			fmt.Fprintf(b, "- %s: %s\n", o.cloneSet.rowLabel(row), strings.Join(verdicts, ", "))
		}
	}
	b.WriteString("\n")
}

// rowResults are manager's results of row, one per run that has it.
func (r *cloneSetResults) rowResults(manager, row string) []cloneSetRowResult {
	var out []cloneSetRowResult
	for _, run := range r.runs[manager] {
		if result, ok := run.Rows[row]; ok {
			out = append(out, result)
		}
	}
	return out
}

// atMost is the verdict on an absolute figure against its upper bound.
func atMost(value, target float64) string {
	if value <= target {
		return fmt.Sprintf("%.2f (met)", value)
	}
	return fmt.Sprintf("%.2f (**missed**)", value)
}
