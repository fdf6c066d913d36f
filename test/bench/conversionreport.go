package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// conversionResults are the conversion part's repetitions, in order.
type conversionResults struct {
	runs []conversionRun
}

func newConversionResults() *conversionResults {
	return &conversionResults{}
}

// convertFigures are one direction's figures: the median over the repetitions of each
// percentile and per-review mean.
type convertFigures struct {
	runs, reviews                       int
	objects                             int
	objectBytes, bodyBytes, answerBytes int
	p50, p90, p99, max                  time.Duration
	// webhook is the manager's own mean time per review, cpu its CPU-seconds per review.
	webhook time.Duration
	cpu     float64
}

// convertMedian summarizes the runs of direction; ok is false when there are none.
func convertMedian(runs []conversionRun, direction string) (convertFigures, bool) {
	var f convertFigures
	var p50s, p90s, p99s, maxes, webhooks []time.Duration
	var cpus []float64
	for _, run := range runs {
		for _, r := range run.Reviews {
			if r.Direction != direction || len(r.Latencies) == 0 {
				continue
			}
			f.runs++
			f.reviews += len(r.Latencies)
			f.objects, f.objectBytes, f.bodyBytes, f.answerBytes = r.Objects, r.ObjectBytes, r.BodyBytes, r.AnswerBytes
			p50s = append(p50s, percentile(r.Latencies, 50))
			p90s = append(p90s, percentile(r.Latencies, 90))
			p99s = append(p99s, percentile(r.Latencies, 99))
			maxes = append(maxes, percentile(r.Latencies, 100))
			webhooks = append(webhooks, perReview(r.Webhook))
			cpus = append(cpus, r.CPUSeconds/float64(len(r.Latencies)))
		}
	}
	if f.runs == 0 {
		return f, false
	}
	f.p50, f.p90, f.p99, f.max = middle(p50s), middle(p90s), middle(p99s), middle(maxes)
	f.webhook, f.cpu = middle(webhooks), middle(cpus)
	return f, true
}

// perReview is the manager's mean time per review answered; 0 without reviews.
func perReview(w webhookTime) time.Duration {
	if w.reviews <= 0 {
		return 0
	}
	return seconds2Duration(w.seconds / w.reviews)
}

// listFigures are one LIST variant's figures: the median over the repetitions of each
// repetition's median LIST time, the fastest and slowest LIST of all, and per-LIST means.
type listFigures struct {
	lists                    int
	median, fastest, slowest time.Duration
	items, bytes, pages      int
	reviews                  float64
	webhook                  time.Duration
	managerCPU, apiServerCPU float64
	loads                    []float64
}

func listMedian(runs []conversionRun, v listVariant) (listFigures, bool) {
	var f listFigures
	var medians, webhooks []time.Duration
	var reviews, managerCPUs, apiCPUs []float64
	for _, run := range runs {
		for _, r := range run.Lists {
			if r.Variant != v || len(r.Walls) == 0 {
				continue
			}
			n := float64(len(r.Walls))
			f.lists += len(r.Walls)
			f.items, f.bytes, f.pages = r.Items, r.Bytes, r.Pages
			medians = append(medians, middle(r.Walls))
			for _, w := range r.Walls {
				if f.fastest == 0 || w < f.fastest {
					f.fastest = w
				}
				f.slowest = max(f.slowest, w)
			}
			reviews = append(reviews, r.Webhook.reviews/n)
			webhooks = append(webhooks, seconds2Duration(r.Webhook.seconds/n))
			managerCPUs = append(managerCPUs, r.ManagerCPU/n)
			apiCPUs = append(apiCPUs, r.APIServerCPU/n)
			f.loads = append(f.loads, r.LoadAverages...)
		}
	}
	if len(medians) == 0 {
		return f, false
	}
	f.median, f.webhook = middle(medians), middle(webhooks)
	f.reviews, f.managerCPU, f.apiServerCPU = middle(reviews), middle(managerCPUs), middle(apiCPUs)
	return f, true
}

// listRatio is the median over the repetitions of each one's median LIST time in the
// converted variant divided by the stored one's, for LISTs of page size limit against the
// watch-cache setting; ok is false when no repetition has both.
func listRatio(runs []conversionRun, limit int, watchCache string) (float64, bool) {
	converted := listVariant{Version: "v1alpha1", Limit: limit, WatchCache: watchCache}
	stored := listVariant{Version: "v1beta1", Limit: limit, WatchCache: watchCache}
	var ratios []float64
	for _, run := range runs {
		var x, y time.Duration
		for _, r := range run.Lists {
			if len(r.Walls) == 0 {
				continue
			}
			switch r.Variant {
			case converted:
				x = middle(r.Walls)
			case stored:
				y = middle(r.Walls)
			}
		}
		if x > 0 && y > 0 {
			ratios = append(ratios, x.Seconds()/y.Seconds())
		}
	}
	if len(ratios) == 0 {
		return 0, false
	}
	return middle(ratios), true
}

func kib(bytes int) string {
	return fmt.Sprintf("%.1f KiB", float64(bytes)/1024)
}

func mibs(bytes int) string {
	return fmt.Sprintf("%.1f MiB", float64(bytes)/mebibyte)
}

// directionLabel names a direction in the report.
func directionLabel(direction string) string {
	if direction == directionUp {
		return "up: v1alpha1 → v1beta1"
	}
	return "down: v1beta1 → v1alpha1"
}

// listVariantLabel names a LIST variant in the report.
func listVariantLabel(v listVariant) string {
	what := "stored version, no conversion"
	switch {
	case v.converts() && v.WatchCache == watchCacheOff:
		what = "each object through `/convert`"
	case v.converts():
		what = "from its own watch cache, converted as written"
	}
	if v.Limit > 0 {
		return fmt.Sprintf("%s, `limit=%d` (%s)", v.Version, v.Limit, what)
	}
	return fmt.Sprintf("**%s** (%s)", v.Version, what)
}

// markdown writes the conversion part's section; "" when it did not run.
func (r *conversionResults) markdown(o *options) string {
	if len(r.runs) == 0 {
		return ""
	}
	co := o.conversion
	var b strings.Builder
	b.WriteString("## Version conversion\n\n")
	fmt.Fprintf(&b, "bosun-controller-manager `--controllers=` (none: nothing but the bench writes objects) with its webhook server on a "+
		"loopback `--webhook-port`, which serves `%s` and has pointed CRD `%s` (v1alpha1 and v1beta1 served, v1beta1 stored, conversion "+
		"strategy Webhook) at itself, on a fresh control plane with bosun's CRDs. Median of %d run(s).%s\n\n",
		convertPath, daemonSetCRD, len(r.runs), profiledNote(o))

	b.WriteString("### `/convert`\n\n")
	fmt.Fprintf(&b, "One client with one HTTP/2 connection, verified against the CRD's caBundle, POSTs `apiextensions.k8s.io/v1` "+
		"ConversionReviews to the CRD's clientConfig URL one at a time, as the API server's webhook client does: each holds %d "+
		"apps.kruise.io/v1alpha1 DaemonSets of about %d KiB of compact JSON (a node agent's pod template, its configuration in "+
		"environment variables and annotations, the API server's metadata and managed fields, a status, and on every other one "+
		"the progressive-create-pod annotation) for v1beta1 (up), or the v1beta1 objects the manager answered for v1alpha1 (down). "+
		"%d unmeasured reviews per direction, then %d measured; every answer is checked (UID, Success, count and order, apiVersion, "+
		"kind, name, namespace and UID of each object). Latency is from sending a review to having read its whole answer, nearest-rank "+
		"percentiles; the webhook's own time is the manager's `bosun_conversion_duration_seconds`; the manager's CPU time is over the "+
		"measured reviews. (kube-apiserver itself sends one object per review, see the LISTs below: a review of %d is the handler's "+
		"heaviest case.)\n\n", co.objects, co.objectKiB, conversionWarmupReviews, co.reviews, co.objects)
	b.WriteString("| Review | objects × mean size | review / answer | p50 | p90 | p99 | max | webhook's own time, mean | manager CPU-s per review |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	target := convertTarget(co.objects)
	var verdicts []string
	for _, direction := range []string{directionUp, directionDown} {
		f, ok := convertMedian(r.runs, direction)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d × %s | %s / %s | %s | %s | **%s** | %s | %s | %.3f |\n", directionLabel(direction), f.objects, kib(f.objectBytes),
			mibs(f.bodyBytes), mibs(f.answerBytes), latency(f.p50), latency(f.p90), latency(f.p99), latency(f.max), latency(f.webhook), f.cpu)
		met := "met"
		if f.p99 > target {
			met = "**missed**"
		}
		verdicts = append(verdicts, fmt.Sprintf("%s p99 %s (%s)", direction, latency(f.p99), met))
	}
	fmt.Fprintf(&b, "\nTarget: p99 ≤ %s (50 ms + 1 ms per object): %s.\n\n", latency(target), strings.Join(verdicts, ", "))
	for i, run := range r.runs {
		if run.RoundTrip != "" {
			fmt.Fprintf(&b, "- **run %d: an object sent up and back down was not identical: %s**\n", i+1, run.RoundTrip)
		}
	}
	if slices.IndexFunc(r.runs, func(run conversionRun) bool { return run.RoundTrip != "" }) < 0 {
		b.WriteString("Round trip: every object the manager converted up and back down came back identical to the one sent.\n\n")
	} else {
		b.WriteString("\n")
	}

	b.WriteString("### LIST through conversion\n\n")
	compression := "accepts gzip (client-go's and kubectl's default; kube-apiserver compresses large responses; the sizes below are uncompressed)"
	if !co.listCompression {
		compression = "does not accept gzip (`--conversion-list-compression=false`)"
	}
	fmt.Fprintf(&b, "%s apps.kruise.io/v1beta1 DaemonSets (a log shipper, %d KiB of compact JSON each as created; the API server adds "+
		"its metadata and managed fields, the bench then writes a status) are created by %d parallel clients before anything is "+
		"measured, on a control plane of their own for each kube-apiserver setting below. The bench's client (admin, JSON) %s LISTs the "+
		"namespace in v1beta1, the stored version, and in v1alpha1, with no limit (one request: the API server does not page it) and, "+
		"when shown, with a limit (following `continue`). %d unmeasured LISTs per variant, then %d measured ones each, the variants "+
		"taken in turn in a rotating order. A LIST's time runs from sending each request to having read its body, summed over its pages. "+
		"Reviews to `/convert`, the webhook's own time and CPU-seconds are per LIST.\n\n",
		thousands(co.listObjects), co.listObjectKiB, conversionCreateClients, compression, conversionWarmupLists, co.lists)
	b.WriteString("kube-apiserver converts a custom resource one object at a time, as it decodes it from etcd into the version asked " +
		"for: every served version has its own storage, with a watch cache of its own. With its watch cache (the default) a LIST is " +
		"served from the cache of its version, whose objects were converted as they were written (each create and status write of a " +
		"DaemonSet is one review for the v1alpha1 cache), so the LIST itself calls no webhook. With `--watch-cache=false` every LIST " +
		"reads etcd and a v1alpha1 LIST sends one review per object.\n\n")
	fmt.Fprintf(&b, "| LIST of %s DaemonSets | kube-apiserver | median | fastest | slowest | requests | read | reviews to `/convert` | webhook's own time | manager CPU-s | kube-apiserver CPU-s |\n",
		thousands(co.listObjects))
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var loads []float64
	for _, watchCache := range co.watchCaches {
		for _, v := range listVariants(co.listPage, watchCache) {
			f, ok := listMedian(r.runs, v)
			if !ok {
				continue
			}
			median := latency(f.median)
			if v.Limit == 0 {
				median = "**" + median + "**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s (%s per object) | %.0f | %s | %.2f | %.2f |\n", listVariantLabel(v), watchCacheLabel(watchCache),
				median, latency(f.fastest), latency(f.slowest), f.pages, mibs(f.bytes), kib(f.bytes/max(f.items, 1)), f.reviews, latency(f.webhook),
				f.managerCPU, f.apiServerCPU)
			loads = append(loads, f.loads...)
		}
	}
	b.WriteString("\n")
	for _, watchCache := range co.watchCaches {
		var setups []string
		for _, run := range r.runs {
			for _, s := range run.Setups {
				if s.WatchCache == watchCache {
					converted := ""
					if s.Converted > 0 {
						converted = fmt.Sprintf(", the last of them %s after the first write", latency(s.Converted))
					}
					setups = append(setups, fmt.Sprintf("%s; meanwhile the manager answered %s reviews (%s of webhook time%s)", latency(s.Took),
						thousands(int(s.Webhook.reviews)), latency(seconds2Duration(s.Webhook.seconds)), converted))
				}
			}
		}
		if len(setups) > 0 {
			fmt.Fprintf(&b, "- %s: creating the DaemonSets and writing their statuses took %s.\n", watchCacheLabel(watchCache), strings.Join(setups, "; "))
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Target: a v1alpha1 LIST of %s DaemonSets through conversion within %.0f× the same LIST in v1beta1:\n\n", thousands(co.listObjects), targetListRatio)
	for _, watchCache := range co.watchCaches {
		x, ok := listRatio(r.runs, 0, watchCache)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s", watchCacheLabel(watchCache), verdict(x, targetListRatio))
		if y, ok := listRatio(r.runs, co.listPage, watchCache); ok && co.listPage > 0 {
			fmt.Fprintf(&b, "; paginated (`limit=%d`, no target): %.2f×", co.listPage, y)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	if len(loads) > 0 {
		fmt.Fprintf(&b, "Load average (1 min) before the measured LISTs: %.2f to %.2f, median %.2f.\n\n", slices.Min(loads), slices.Max(loads), middle(loads))
	}
	return b.String()
}

// watchCacheLabel names a kube-apiserver watch-cache setting in the report.
func watchCacheLabel(watchCache string) string {
	if watchCache == watchCacheOff {
		return "`--watch-cache=false`"
	}
	return "watch cache (default)"
}

// profiledNote says where the conversion part's profiles went, when it took any.
func profiledNote(o *options) string {
	if o.profileSeconds <= 0 {
		return ""
	}
	return fmt.Sprintf(" With `--profile-seconds=%d` the part takes its CPU profiles after its measurements (up reviews: the manager; "+
		"v1alpha1 LISTs: the manager and kube-apiserver; v1beta1 LISTs: kube-apiserver), so its figures are not taken under a profiler.",
		o.profileSeconds)
}
