package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
)

func TestPUBScenarioBudget(t *testing.T) {
	tests := []struct {
		scenario           string
		evictions, allowed int
		want               pubBudget
	}{
		// One pod more than evictions, so that admitting all of them still leaves a budget
		// of one pod to protect (a desired count of 0 is no budget at all).
		{pubRoomy, 200, 5, pubBudget{Pods: 201, Desired: 1, Allowed: 200}},
		{pubTight, 200, 5, pubBudget{Pods: 201, Desired: 196, Allowed: 5}},
		{pubTight, 3, 5, pubBudget{Pods: 4, Desired: 1, Allowed: 3}},
		{pubTight, 10, 0, pubBudget{Pods: 11, Desired: 11, Allowed: 0}},
		// No budget: nothing must stay, every eviction may pass.
		{pubNone, 200, 5, pubBudget{Pods: 201, Desired: 0, Allowed: 200}},
	}
	for _, tt := range tests {
		if got := pubScenarioBudget(tt.scenario, tt.evictions, tt.allowed); got != tt.want {
			t.Errorf("pubScenarioBudget(%s, %d, %d) = %+v, want %+v", tt.scenario, tt.evictions, tt.allowed, got, tt.want)
		}
	}
}

// Both budgets must state the same numbers: the PUB's total and maxUnavailable give the
// desired count that the PDB's minAvailable states directly.
func TestBenchBudgetsAgree(t *testing.T) {
	budget := pubScenarioBudget(pubTight, 200, 5)
	pub := newBenchPUB(budget)
	if got := pub.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; got != "201" {
		t.Errorf("protect-total-replicas = %q, want 201", got)
	}
	if pub.Spec.MinAvailable != nil || pub.Spec.MaxUnavailable == nil || *pub.Spec.MaxUnavailable != intstr.FromInt32(5) {
		t.Errorf("PUB maxUnavailable %v minAvailable %v, want maxUnavailable 5 only", pub.Spec.MaxUnavailable, pub.Spec.MinAvailable)
	}
	pdb := newBenchPDB(budget)
	if pdb.Spec.MaxUnavailable != nil || pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(196) {
		t.Errorf("PDB minAvailable %v maxUnavailable %v, want minAvailable 196 only", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
	if pub.Spec.Selector.MatchLabels["app"] != pubApp || pdb.Spec.Selector.MatchLabels["app"] != pubApp {
		t.Errorf("selectors %v and %v, want app=%s", pub.Spec.Selector, pdb.Spec.Selector, pubApp)
	}
}

func TestSummarizeBurst(t *testing.T) {
	ms := time.Millisecond
	answers := []evictionAnswer{
		{Took: 30 * ms, Done: 31 * ms, Code: 201},
		{Took: 10 * ms, Done: 11 * ms, Code: 201},
		{Took: 5 * ms, Done: 40 * ms, Code: 429, Message: "too many"},
		{Took: 50 * ms, Done: 52 * ms, Code: 429, Message: "later"},
		{Took: 20 * ms, Done: 20 * ms, Code: 0, Message: "connection reset"},
	}
	b := pubBurst{Budget: pubBudget{Pods: 6, Desired: 4, Allowed: 2}, Remaining: 4}
	summarizeBurst(&b, answers)
	if b.Evictions != 5 || b.Admitted != 2 {
		t.Errorf("evictions %d admitted %d, want 5 and 2", b.Evictions, b.Admitted)
	}
	if b.Wall != 52*ms || b.LastAdmitted != 31*ms {
		t.Errorf("wall %v last admitted %v, want 52ms and 31ms", b.Wall, b.LastAdmitted)
	}
	wantAll := []time.Duration{5 * ms, 10 * ms, 20 * ms, 30 * ms, 50 * ms}
	if !slices.Equal(b.Latencies, wantAll) || !slices.Equal(b.AdmittedLatencies, []time.Duration{10 * ms, 30 * ms}) ||
		!slices.Equal(b.DeniedLatencies, []time.Duration{5 * ms, 20 * ms, 50 * ms}) {
		t.Errorf("latencies %v, admitted %v, denied %v", b.Latencies, b.AdmittedLatencies, b.DeniedLatencies)
	}
	if b.Codes[201] != 2 || b.Codes[429] != 2 || b.Codes[0] != 1 {
		t.Errorf("codes %v", b.Codes)
	}
	if b.Messages[429] != "too many" || b.Messages[0] != "connection reset" {
		t.Errorf("first messages %v", b.Messages)
	}
	if _, ok := b.Messages[201]; ok {
		t.Error("an admitted answer's message was kept")
	}
	if got := b.admittedPerSecond(); got < 38.4 || got > 38.5 {
		t.Errorf("admittedPerSecond = %v, want 2 / 52 ms ≈ 38.46", got)
	}
	if p := b.problems(); len(p) != 0 {
		t.Errorf("problems %v for a burst within its budget", p)
	}
	if got := answersSummary(b.Codes); got != "no response×1, 201×2, 429×2" {
		t.Errorf("answersSummary = %q", got)
	}
}

func TestBurstProblems(t *testing.T) {
	b := pubBurst{Budget: pubBudget{Pods: 11, Desired: 6, Allowed: 5}, Evictions: 10, Admitted: 7, Remaining: 5,
		Webhook: &histogram{Bounds: []float64{0.01, posInf}, Counts: []float64{8, 8}}}
	got := strings.Join(b.problems(), "; ")
	for _, want := range []string{"7 evictions admitted, the budget allowed 5", "5 pods left after 7 admitted evictions of 11 pods, want 4",
		"the eviction webhook answered 8 requests for 10 evictions"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}

var posInf = math.Inf(1)

const exposition = `# HELP bosun_webhook_request_duration_seconds [ALPHA] Time taken to answer an admission request, by webhook.
# TYPE bosun_webhook_request_duration_seconds histogram
bosun_webhook_request_duration_seconds_bucket{webhook="mpod.kb.io",le="0.001"} 99
bosun_webhook_request_duration_seconds_bucket{webhook="mpod.kb.io",le="+Inf"} 99
bosun_webhook_request_duration_seconds_bucket{le="0.001",webhook="vpodeviction.kb.io"} 0
bosun_webhook_request_duration_seconds_bucket{le="0.005",webhook="vpodeviction.kb.io"} 50
bosun_webhook_request_duration_seconds_bucket{le="0.01",webhook="vpodeviction.kb.io"} 90
bosun_webhook_request_duration_seconds_bucket{le="0.1",webhook="vpodeviction.kb.io"} 100
bosun_webhook_request_duration_seconds_bucket{le="+Inf",webhook="vpodeviction.kb.io"} 100
bosun_webhook_request_duration_seconds_sum{webhook="vpodeviction.kb.io"} 0.7
bosun_webhook_request_duration_seconds_count{webhook="vpodeviction.kb.io"} 100
`

func TestParseHistogramAndQuantile(t *testing.T) {
	h, err := parseHistogram(exposition, webhookDurationMetric, "webhook", pubEvictionWebhook)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Bounds) != 5 || h.count() != 100 {
		t.Fatalf("parsed %+v, want the five buckets of the eviction webhook", h)
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{
		// Rank 50 ends the (1 ms, 5 ms] bucket exactly.
		{0.50, 5 * time.Millisecond},
		// Rank 25 is half-way through (1 ms, 5 ms].
		{0.25, 3 * time.Millisecond},
		// Rank 99 is 9/10 of the way through (10 ms, 100 ms].
		{0.99, 91 * time.Millisecond},
		{1, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		got, ok := h.quantile(tt.q)
		if !ok || (got-tt.want).Abs() > time.Microsecond {
			t.Errorf("quantile(%v) = %v, %v; want %v", tt.q, got, ok, tt.want)
		}
	}

	none, err := parseHistogram(exposition, webhookDurationMetric, "webhook", "vpod.kb.io")
	if err != nil || none.count() != 0 {
		t.Fatalf("a missing series: %+v, %v; want an empty histogram", none, err)
	}
	if _, ok := none.quantile(0.5); ok {
		t.Error("an empty histogram has a quantile")
	}

	// Everything in the +Inf bucket: the largest finite bound is the best estimate.
	slow := histogram{Bounds: []float64{0.01, 10, posInf}, Counts: []float64{0, 0, 4}}
	if got, _ := slow.quantile(0.99); got != 10*time.Second {
		t.Errorf("quantile in +Inf = %v, want 10s", got)
	}

	if _, err := parseHistogram(`x_bucket{le="1"} 5`+"\n"+`x_bucket{le="0.5"} 6`, "x", "webhook", ""); err == nil {
		t.Error("buckets out of order were accepted")
	}
}

func TestHistogramMinus(t *testing.T) {
	before := histogram{Bounds: []float64{0.01, posInf}, Counts: []float64{3, 4}}
	after := histogram{Bounds: []float64{0.01, posInf}, Counts: []float64{10, 14}}
	d, err := after.minus(before)
	if err != nil || d.Counts[0] != 7 || d.Counts[1] != 10 {
		t.Errorf("after − before = %+v, %v; want counts 7, 10", d, err)
	}
	// No series before the first request.
	if d, err := after.minus(histogram{}); err != nil || d.count() != 14 {
		t.Errorf("after − empty = %+v, %v", d, err)
	}
	if _, err := before.minus(after); err == nil {
		t.Error("a histogram going backwards (a restarted manager) was accepted")
	}
	if _, err := after.minus(histogram{Bounds: []float64{0.02, posInf}, Counts: []float64{1, 1}}); err == nil {
		t.Error("different buckets were accepted")
	}
}

func TestParseLoadAverage(t *testing.T) {
	if got := parseLoadAverage("0.42 0.50 0.99 2/345 6789\n"); got != 0.42 {
		t.Errorf("parseLoadAverage = %v, want 0.42", got)
	}
	if got := parseLoadAverage(""); got != 0 {
		t.Errorf("parseLoadAverage of nothing = %v", got)
	}
}

func TestPUBMedian(t *testing.T) {
	ms := time.Millisecond
	run := func(p99 time.Duration, admitted int) pubBurst {
		b := pubBurst{Budget: pubBudget{Pods: 3, Desired: 1, Allowed: 2}, Remaining: 3 - admitted, CPU: map[string]float64{"etcd": float64(admitted)}}
		answers := []evictionAnswer{{Took: ms, Done: ms, Code: 201}, {Took: p99, Done: p99, Code: 201}}
		if admitted == 1 {
			answers[1].Code = 403
		}
		summarizeBurst(&b, answers)
		return b
	}
	f := pubMedian([]pubBurst{run(10*ms, 2), run(30*ms, 1), run(20*ms, 2)})
	if f.p99 != 20*ms || f.admitted != 2 || f.cpu["etcd"] != 2 {
		t.Errorf("median p99 %v admitted %v cpu %v; want 20ms, 2, 2", f.p99, f.admitted, f.cpu)
	}
	if f.codes[201] != 5 || f.codes[403] != 1 {
		t.Errorf("codes over the runs %v, want 201×5 403×1", f.codes)
	}
	if f.webhook {
		t.Error("webhook figures reported without histograms")
	}
	if len(f.problems) != 0 {
		t.Errorf("problems %v", f.problems)
	}
}
