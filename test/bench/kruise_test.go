package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/featuregate"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"

	"github.com/bosun-dev/bosun/pkg/features"
)

// dsRun is one daemonset run with the three workloads: create and roll as given, their
// sum as createAndRollDaemonSet adds it.
func dsRun(create, roll time.Duration, cpu float64, rssMiB uint64, idleMiB uint64, load float64) runResult {
	m := func(workload string, wall time.Duration, cpu float64) measurement {
		return measurement{Workload: workload, Wall: wall, usage: usage{CPUSeconds: cpu, PeakRSS: rssMiB * mebibyte}}
	}
	return runResult{
		IdleRSS:     idleMiB * mebibyte,
		LoadAverage: load,
		Measurements: []measurement{
			m(workloadCreateDS, create, cpu/2), m(workloadRollDS, roll, cpu/2), m(workloadDSBoth, create+roll, cpu),
		},
	}
}

func TestDaemonSetReportHasAKruiseColumn(t *testing.T) {
	o := &options{limits: clientLimits{QPS: 1000, Burst: 1000}, daemonSetNodes: 1000, daemonSetWebhooks: true, repeat: 1, verbosity: 2}
	r := newResults(o, time.Now())
	r.daemonSets[managerBosun] = []runResult{dsRun(4*time.Second, 6*time.Second, 3, 90, 70, 0.5)}
	r.daemonSets[managerUpstream] = []runResult{dsRun(5*time.Second, 5*time.Second, 4, 100, 75, 1.25)}
	r.daemonSets[managerKruise] = []runResult{dsRun(10*time.Second, 15*time.Second, 10, 150, 120, 2)}
	r.daemonSetDefaults[managerBosun] = []runResult{dsRun(40*time.Second, 50*time.Second, 3, 90, 70, 0.5)}
	r.daemonSetDefaults[managerKruise] = []runResult{dsRun(30*time.Second, 45*time.Second, 8, 150, 120, 0.5)}

	report := r.markdown()
	for _, want := range []string{
		"### Client limits `--kube-api-qps=1000 --kube-api-burst=1000` (kruise-manager: `--rest-config-qps`, `--rest-config-burst`)",
		"| Workload | figure | bosun | upstream | kruise-manager | bosun ÷ upstream | bosun ÷ kruise-manager |",
		"|---|---|---:|---:|---:|---:|---:|",
		"| **create + roll DaemonSet, 1,000 nodes** | wall | 10.0 s | 10.0 s | 25.0 s | 1.00× | 0.40× |",
		"|  | CPU-s | 3.00 | 4.00 | 10.00 | 0.75× | 0.30× |",
		"|  | peak RSS MiB | 90 | 100 | 150 | 0.90× | 0.60× |",
		"| idle after start-up | RSS MiB | 70 | 75 | 120 | 0.93× | 0.58× |",
		"- kruise-manager, load average (1 min) before each run: 2.00",
		"- create + roll DaemonSet, 1,000 nodes: wall 1.00× (met), CPU 0.75× (met), RSS 0.90× (**missed**)",
		"- create + roll DaemonSet, 1,000 nodes: wall 0.40× (met), CPU 0.30× (met), RSS 0.60× (**missed**)",
		"its DaemonSet webhooks and conversion webhook served, its default feature gates;",
		// The default-limits rows: only the managers that ran get a column.
		"### Each manager with its default client limits (no rate-limit flag)",
		"| Workload | figure | bosun | kruise-manager | bosun ÷ kruise-manager |",
		"| **create + roll DaemonSet, 1,000 nodes** | wall | 90.0 s | 75.0 s | 1.20× |",
		"Target (bosun ÷ kruise-manager, create + roll, defaults): wall ≤ 1×: 1.20× (**missed**).",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}

	// Without bosun there is nothing to divide: no ratio columns, no targets.
	r = newResults(o, time.Now())
	r.daemonSets[managerKruise] = []runResult{dsRun(10*time.Second, 15*time.Second, 10, 150, 120, 2)}
	report = r.markdown()
	if !strings.Contains(report, "| Workload | figure | kruise-manager |\n|---|---|---:|\n") || strings.Contains(report, "÷") || strings.Contains(report, "Targets") {
		t.Errorf("a kruise-only report has ratios or targets:\n%s", report)
	}
}

func TestUnstructuredDSStatus(t *testing.T) {
	ds := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": dsName, "generation": int64(2)},
		"status": map[string]any{
			"observedGeneration": int64(2), "desiredNumberScheduled": int64(10), "currentNumberScheduled": int64(9),
			"updatedNumberScheduled": int64(8), "numberAvailable": int64(7), "numberReady": int64(7),
		},
	}}
	got, err := unstructuredDSStatus(ds)
	if err != nil {
		t.Fatal(err)
	}
	// numberUnavailable is omitted when 0, as the v1beta1 type does.
	want := dsStatus{Generation: 2, ObservedGeneration: 2, Desired: 10, Current: 9, Updated: 8, Available: 7}
	if got != want {
		t.Errorf("unstructuredDSStatus() = %+v, want %+v", got, want)
	}
	ds.Object["status"].(map[string]any)["numberAvailable"] = "seven"
	if _, err := unstructuredDSStatus(ds); err == nil {
		t.Error("a string numberAvailable was read without error")
	}
}

// kruise-manager's budget must state what bosun's does, in the fields its v1beta1 controller
// reads.
func TestKruiseBudgetMatchesBosuns(t *testing.T) {
	budget := pubScenarioBudget(pubTight, 200, 5)
	alpha := newBenchPUB(budget)
	beta := newKruisePUB(budget)
	if beta.GetAPIVersion() != "policy.kruise.io/v1beta1" || beta.GetName() != alpha.Name {
		t.Errorf("kruise budget %s %s, want policy.kruise.io/v1beta1 %s", beta.GetAPIVersion(), beta.GetName(), alpha.Name)
	}
	total, _, _ := unstructured.NestedInt64(beta.Object, "spec", "protectTotalReplicas")
	if want := alpha.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; want != "201" || total != 201 {
		t.Errorf("protectTotalReplicas %d, annotation %q; want both 201", total, want)
	}
	maxUnavailable, _, _ := unstructured.NestedInt64(beta.Object, "spec", "maxUnavailable")
	if int64(alpha.Spec.MaxUnavailable.IntValue()) != maxUnavailable || maxUnavailable != 5 {
		t.Errorf("maxUnavailable %d, bosun's %v; want 5", maxUnavailable, alpha.Spec.MaxUnavailable)
	}
	labels, _, _ := unstructured.NestedStringMap(beta.Object, "spec", "selector", "matchLabels")
	if labels["app"] != alpha.Spec.Selector.MatchLabels["app"] || len(labels) != 1 {
		t.Errorf("selector %v, bosun's %v", labels, alpha.Spec.Selector.MatchLabels)
	}
}

// kruiseGates leaves kruise-manager at its defaults where they equal bosun's; that claim
// rests on bosun's defaults below (kruise-manager v1.9's are the same) and on
// ImagePullJobGate being the one difference, turned on where it matters.
func TestKruiseGates(t *testing.T) {
	gate := features.NewFeatureGate()
	for f, want := range map[featuregate.Feature]bool{
		features.KruiseDaemon:                       true,
		features.PodUnavailableBudgetDeleteGate:     true,
		features.PodUnavailableBudgetUpdateGate:     false,
		features.PreDownloadImageForDaemonSetUpdate: false,
		features.ImagePullJobGate:                   true,
	} {
		if gate.Enabled(f) != want {
			t.Errorf("bosun's default for %s is %t; the bench's choice of kruise-manager's gates assumes %t", f, gate.Enabled(f), want)
		}
	}
	o := &options{}
	for part, want := range map[string]string{partDaemonSet: "", partPUB: "", partImagePullJob: "ImagePullJobGate=true"} {
		if got := o.kruiseGates(part); got != want {
			t.Errorf("kruiseGates(%s) = %q, want %q", part, got, want)
		}
	}
	if got := o.kruiseGatesLabel(partDaemonSet); got != "its default feature gates" {
		t.Errorf("kruiseGatesLabel(daemonset) = %q", got)
	}
	o.kruiseFeatureGates = "AllAlpha=true"
	if got := o.kruiseGates(partDaemonSet); got != "AllAlpha=true" {
		t.Errorf("--kruise-feature-gates is not used: %q", got)
	}
	if got := o.kruiseGatesLabel(partPUB); got != "`--feature-gates=AllAlpha=true`" {
		t.Errorf("kruiseGatesLabel(pub) = %q", got)
	}
}

func TestKruiseQPS(t *testing.T) {
	if got, err := kruiseQPS(1000); got != 1000 || err != nil {
		t.Errorf("kruiseQPS(1000) = %d, %v", got, err)
	}
	for _, qps := range []float64{0, 0.5, 20.5, -3, 1e12} {
		if _, err := kruiseQPS(qps); err == nil {
			t.Errorf("kruiseQPS(%v) took a value --rest-config-qps cannot", qps)
		}
	}
}

func TestParseNames(t *testing.T) {
	got, err := parseNames("--daemonset-managers", "upstream, bosun,kruise", managerUpstream, managerBosun, managerKruise)
	if err != nil || !slices.Equal(got, []string{"upstream", "bosun", "kruise"}) {
		t.Errorf("parseNames() = %v, %v", got, err)
	}
	if _, err := parseNames("--imagepulljob-managers", "bosun,upstream", managerBosun, managerKruise); err == nil ||
		!strings.Contains(err.Error(), `--imagepulljob-managers: unknown value "upstream" (one of bosun, kruise)`) {
		t.Errorf("parseNames() with an unknown name: %v", err)
	}
}

// The kruise side of the pub part: its row, its problems and the no-slower target.
func TestPUBReportHasAKruiseRow(t *testing.T) {
	o := &options{limits: clientLimits{QPS: 1000, Burst: 1000}, pubEvictions: 4, pubTightAllowed: 1, repeat: 1,
		pubScenarios: []string{pubRoomy}}
	budget := pubScenarioBudget(pubRoomy, 4, 1)
	burst := func(manager string, took time.Duration, cpu float64) pubBurst {
		b := pubBurst{Scenario: pubRoomy, Manager: manager, Budget: budget, Remaining: 1, LoadAverage: 1.5,
			CPU: map[string]float64{"kube-apiserver": 1, "etcd": 0.25}}
		b.CPU[map[string]string{managerBosun: "bosun-controller-manager", managerKruise: "kruise-manager"}[manager]] = cpu
		var answers []evictionAnswer
		for i := range 4 {
			answers = append(answers, evictionAnswer{Took: took + time.Duration(i)*time.Millisecond, Done: took + time.Duration(i)*time.Millisecond, Code: 201})
		}
		summarizeBurst(&b, answers)
		h := histogram{Bounds: []float64{0.01, 0.1, 1e308}, Counts: []float64{4, 4, 4}}
		b.Webhook = &h
		return b
	}
	r := newPUBResults()
	r.add(burst(managerBosun, 100*time.Millisecond, 0.5))
	r.add(burst(managerKruise, 400*time.Millisecond, 2))
	report := r.markdown(o)
	for _, want := range []string{
		"| kruise-manager: PodUnavailableBudget, webhook `vpodeviction.kb.io` (`/validate-pod`) | 4 of 4 | 201×4 | 401.00 ms |",
		"| 0.50 / 1.00 / 0.25 |",
		"| 2.00 / 1.00 / 0.25 |",
		"- kruise-manager, load average (1 min) before each burst: 1.50",
		"- no slower than kruise-manager: admitted/s 39 / 10 = 3.91×, p99 103.00 ms / 403.00 ms (met)",
		"`controller_runtime_webhook_latency_seconds` of `/validate-pod`",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "**kruise-manager:") {
		t.Errorf("a correct kruise burst is reported with problems:\n%s", report)
	}
}

func TestNoSlowerVerdict(t *testing.T) {
	fast := pubFigures{rate: 100, p99: 100 * time.Millisecond}
	slow := pubFigures{rate: 50, p99: 300 * time.Millisecond}
	if got := noSlowerVerdict(fast, slow); !strings.HasSuffix(got, "(met)") {
		t.Errorf("faster bosun: %s", got)
	}
	if got := noSlowerVerdict(slow, fast); !strings.HasSuffix(got, "(**missed**)") {
		t.Errorf("slower bosun: %s", got)
	}
	// A higher rate does not excuse a higher p99.
	if got := noSlowerVerdict(pubFigures{rate: 100, p99: time.Second}, slow); !strings.HasSuffix(got, "(**missed**)") {
		t.Errorf("bosun with the higher p99: %s", got)
	}
	if got := noSlowerVerdict(fast, pubFigures{}); !strings.Contains(got, "kruise-manager admitted none") {
		t.Errorf("kruise-manager admitting none: %s", got)
	}
}

func TestImagePullJobReportComparesKruise(t *testing.T) {
	o := &options{limits: clientLimits{QPS: 1000, Burst: 1000}, repeat: 1,
		imagePullJob: imagePullJobOptions{nodes: 500, parallelism: 50, pullDuration: 200 * time.Millisecond, agentQPS: 500, agentBurst: 100, agentWorkers: 64}}
	run := func(manager string, wall time.Duration, cpu float64, specWrites int) imagePullJobRun {
		return imagePullJobRun{
			Manager: manager, Wall: wall, CPUSeconds: cpu, PeakRSS: 80 * mebibyte, IdleRSS: 70 * mebibyte, PeakPulling: 40, LoadAverage: 1,
			Writes: map[string]map[string]writeCount{
				actorManager: {"nodeimages": {Requests: specWrites}, "imagepulljobs/status": {Requests: 20}},
				actorAgents:  {"nodeimages/status": {Requests: 1000}},
			},
		}
	}
	r := newImagePullJobResults()
	for _, x := range []imagePullJobRun{run(managerBosun, 6*time.Second, 1.8, 500), run(managerKruise, 12*time.Second, 3.6, 1000)} {
		x.Status.Succeeded, x.Status.Desired = 500, 500
		r.runs[x.Manager] = append(r.runs[x.Manager], x)
	}
	report := r.markdown(o)
	for _, want := range []string{
		"| Figure | bosun | kruise-manager | bosun ÷ kruise-manager |\n|---|---:|---:|---:|",
		"| **time to completion** (job create → completionTime, 500 nodes) | **6.00 s** | **12.00 s** | 0.50× |",
		"| floor: ⌈500 / 50⌉ = 10 rounds × 200ms simulated pull | 2.00 s | 2.00 s | — |",
		"| **manager CPU-s** | **1.80** | **3.60** | 0.50× |",
		"| **manager writes per NodeImage**: `nodeimages` (spec) | **1.00** | **2.00** | — |",
		"| kruise-manager | kruise-manager | `nodeimages` | 1000 | 2.00 |",
		"| bosun | bosun-controller-manager | `nodeimages` | 500 | 1.00 |",
		"- kruise-manager, time to completion of each run: 12.00 s",
		"Target (bosun ÷ kruise-manager, time to completion): ≤ 1×: 0.50× (met).",
		"webhooks idle), `--feature-gates=ImagePullJobGate=true`.",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

func TestActorOfKruiseManager(t *testing.T) {
	for _, ua := range []string{"kruise-manager", "kruise-manager/imagepulljob-controller"} {
		if got := actorOf(ua); got != actorManager {
			t.Errorf("actorOf(%q) = %s, want the manager", ua, got)
		}
	}
}
