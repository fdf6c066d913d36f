package main

import (
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// longestPadEntry bounds how far padding may pass its target: one entry.
func longestPadEntry() int {
	longest := 0
	for n := range 1000 {
		longest = max(longest, newPadEntry(n).jsonLength)
	}
	return longest
}

func TestConvertDaemonSetSize(t *testing.T) {
	slack := longestPadEntry()
	for _, target := range []int{20 << 10, 8 << 10} {
		for _, i := range []int{0, 1, 499, 4999} {
			ds, err := convertDaemonSet(i, target)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(ds)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) < target || len(data) > target+slack {
				t.Errorf("DaemonSet %d padded to %d bytes is %d bytes, want %d to %d", i, target, len(data), target, target+slack)
			}
			// What the API server sends decodes into the type it claims, unchanged.
			var decoded appsv1alpha1.DaemonSet
			if err := json.Unmarshal(data, &decoded); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(&decoded, ds) {
				t.Errorf("DaemonSet %d does not survive its own JSON", i)
			}
			if decoded.APIVersion != appsAlphaVersion || decoded.Kind != "DaemonSet" || decoded.UID == placeholderUID {
				t.Errorf("DaemonSet %d: apiVersion %q, kind %q, uid %q", i, decoded.APIVersion, decoded.Kind, decoded.UID)
			}
			_, progressive := decoded.Annotations[appsv1alpha1.ProgressiveCreatePodAnnotation]
			if progressive != (i%2 == 0) {
				t.Errorf("DaemonSet %d: progressive-create-pod annotation present = %v", i, progressive)
			}
		}
	}
}

func TestConvertDaemonSetsDiffer(t *testing.T) {
	a, err := convertDaemonSet(0, 20<<10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := convertDaemonSet(1, 20<<10)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name == b.Name || a.UID == b.UID || a.ResourceVersion == b.ResourceVersion {
		t.Errorf("two DaemonSets share their identity: %s/%s/%s and %s/%s/%s", a.Name, a.UID, a.ResourceVersion, b.Name, b.UID, b.ResourceVersion)
	}
}

func TestListDaemonSetSize(t *testing.T) {
	slack := longestPadEntry()
	target := 2 << 10
	for _, i := range []int{0, 1, 4999} {
		ds, err := listDaemonSet(i, target)
		if err != nil {
			t.Fatal(err)
		}
		size, err := jsonSize(ds)
		if err != nil {
			t.Fatal(err)
		}
		if size < target || size > target+slack {
			t.Errorf("DaemonSet %d is %d bytes, want %d to %d", i, size, target, target+slack)
		}
		partitioned := ds.Spec.ScaleStrategy != nil && ds.Spec.ScaleStrategy.PartitionedScaling
		if partitioned != (i%2 == 0) {
			t.Errorf("DaemonSet %d: partitioned scaling = %v", i, partitioned)
		}
		if ds.Spec.UpdateStrategy.RollingUpdate.Type != appsv1beta1.StandardRollingUpdateType {
			t.Errorf("DaemonSet %d: rolling update type %q", i, ds.Spec.UpdateStrategy.RollingUpdate.Type)
		}
	}
}

func TestPadTemplateLeavesALargeEnoughObject(t *testing.T) {
	ds, err := listDaemonSet(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Spec.Template.Spec.Containers[0].Env) != 1 || len(ds.Spec.Template.Annotations) != 1 {
		t.Errorf("an object already past its target was padded: %d env vars, %d annotations",
			len(ds.Spec.Template.Spec.Containers[0].Env), len(ds.Spec.Template.Annotations))
	}
}

func TestConvertTarget(t *testing.T) {
	if got := convertTarget(500); got != 550*time.Millisecond {
		t.Errorf("convertTarget(500) = %v, want 550ms", got)
	}
	if got := convertTarget(1); got != 51*time.Millisecond {
		t.Errorf("convertTarget(1) = %v, want 51ms", got)
	}
}

// smallObjects are three v1alpha1 DaemonSets' JSON for reviews.
func smallObjects(t *testing.T) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for i := range 3 {
		ds, err := convertDaemonSet(i, 0)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(ds)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// answerFor builds the answer a correct webhook gives to objects for uid: the same objects
// in desired, then lets change spoil it.
func answerFor(t *testing.T, uid, desired string, objects []json.RawMessage, change func(*conversionReview)) []byte {
	t.Helper()
	var converted []json.RawMessage
	for _, obj := range objects {
		var m map[string]any
		if err := json.Unmarshal(obj, &m); err != nil {
			t.Fatal(err)
		}
		m["apiVersion"] = desired
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		converted = append(converted, data)
	}
	review := conversionReview{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview", Response: &conversionResponse{UID: uid, ConvertedObjects: converted}}
	review.Response.Result.Status = "Success"
	if change != nil {
		change(&review)
	}
	data, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPrepareReviewCarriesEveryObject(t *testing.T) {
	objects := smallObjects(t)
	r, err := prepareReview(directionUp, appsBetaVersion, objects)
	if err != nil {
		t.Fatal(err)
	}
	body, uid := withUID(r.body, 1, 42)
	var review conversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatal(err)
	}
	if review.APIVersion != "apiextensions.k8s.io/v1" || review.Kind != "ConversionReview" || review.Request == nil {
		t.Fatalf("not a ConversionReview request: %s %s", review.APIVersion, review.Kind)
	}
	if review.Request.UID != uid || review.Request.DesiredAPIVersion != appsBetaVersion || len(review.Request.Objects) != len(objects) {
		t.Errorf("request uid %q (want %q), desired %q, %d objects", review.Request.UID, uid, review.Request.DesiredAPIVersion, len(review.Request.Objects))
	}
	for i := range objects {
		if string(review.Request.Objects[i]) != string(objects[i]) {
			t.Errorf("object %d changed in the review", i)
		}
	}
}

func TestCheckConversionAnswer(t *testing.T) {
	objects := smallObjects(t)
	const uid = "00000001-0000-4000-8000-000000000007"
	good := answerFor(t, uid, appsBetaVersion, objects, nil)
	converted, err := checkConversionAnswer(good, uid, appsBetaVersion, objects)
	if err != nil {
		t.Fatalf("a correct answer was refused: %v", err)
	}
	if len(converted) != len(objects) {
		t.Errorf("%d objects returned", len(converted))
	}

	tests := []struct {
		name   string
		answer []byte
	}{
		{"other UID", answerFor(t, "someone-else", appsBetaVersion, objects, nil)},
		{"failure", answerFor(t, uid, appsBetaVersion, objects, func(r *conversionReview) {
			r.Response.Result.Status, r.Response.Result.Message = "Failure", "no"
		})},
		{"an object missing", answerFor(t, uid, appsBetaVersion, objects, func(r *conversionReview) {
			r.Response.ConvertedObjects = r.Response.ConvertedObjects[:2]
		})},
		{"objects reordered", answerFor(t, uid, appsBetaVersion, objects, func(r *conversionReview) {
			objs := r.Response.ConvertedObjects
			objs[0], objs[1] = objs[1], objs[0]
		})},
		{"wrong version", answerFor(t, uid, appsAlphaVersion, objects, nil)},
		{"renamed", answerFor(t, uid, appsBetaVersion, objects, func(r *conversionReview) {
			r.Response.ConvertedObjects[2] = json.RawMessage(strings.Replace(string(r.Response.ConvertedObjects[2]), `"name":"agent-0002"`, `"name":"other"`, 1))
		})},
		{"no response", answerFor(t, uid, appsBetaVersion, objects, func(r *conversionReview) { r.Response = nil })},
		{"not a review", answerFor(t, uid, appsBetaVersion, objects, func(r *conversionReview) { r.Kind = "AdmissionReview" })},
		{"not JSON", []byte("<html>")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := checkConversionAnswer(tt.answer, uid, appsBetaVersion, objects); err == nil {
				t.Error("a wrong answer was accepted")
			}
		})
	}
}

func TestRoundTripDifference(t *testing.T) {
	sent := []json.RawMessage{
		json.RawMessage(`{"a":1,"m":{"x":"1","y":[1,2]}}`),
		json.RawMessage(`{"b":true}`),
	}
	same := []json.RawMessage{
		json.RawMessage(`{"m":{"y":[1,2],"x":"1"},"a":1}`),
		json.RawMessage(`{"b":true}`),
	}
	if d, err := roundTripDifference(sent, same); err != nil || d != "" {
		t.Errorf("equal objects: %q, %v", d, err)
	}
	tests := []struct {
		back []json.RawMessage
		want string
	}{
		{[]json.RawMessage{json.RawMessage(`{"a":1,"m":{"x":"1","y":[1,3]}}`), sent[1]}, "object 0 (of 2) differs at .m.y[1]"},
		{[]json.RawMessage{sent[0], json.RawMessage(`{"b":true,"c":null}`)}, "object 1 (of 2) differs at .c"},
		{[]json.RawMessage{json.RawMessage(`{"a":1,"m":{"x":"1","y":[1]}}`), sent[1]}, "object 0 (of 2) differs at .m.y"},
		{[]json.RawMessage{sent[0], json.RawMessage(`[]`)}, "object 1 (of 2) differs at ."},
	}
	for _, tt := range tests {
		if d, err := roundTripDifference(sent, tt.back); err != nil || d != tt.want {
			t.Errorf("roundTripDifference = %q, %v; want %q", d, err, tt.want)
		}
	}
}

func TestListVariants(t *testing.T) {
	whole := listVariants(0, watchCacheOn)
	if len(whole) != 2 || whole[0].converts() || !whole[1].converts() || whole[0].Limit != 0 || whole[1].WatchCache != watchCacheOn {
		t.Errorf("listVariants(0) = %+v", whole)
	}
	paged := listVariants(500, watchCacheOff)
	if len(paged) != 4 || paged[2].Limit != 500 || paged[3].Limit != 500 || paged[2].converts() || !paged[3].converts() || paged[3].WatchCache != watchCacheOff {
		t.Errorf("listVariants(500) = %+v", paged)
	}
}

func TestConversionOptions(t *testing.T) {
	var o conversionOptions
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
	if o.objects != 500 || o.objectKiB != 20 || o.listObjects != 5000 || len(o.watchCaches) != 2 || !o.listCompression {
		t.Errorf("defaults: %+v", o)
	}

	o = conversionOptions{}
	fs = flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	o.register(fs)
	if err := fs.Parse([]string{"-conversion-list-watch-cache=off", "-conversion-list-page=0"}); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil || len(o.watchCaches) != 1 || o.watchCaches[0] != watchCacheOff {
		t.Errorf("watch caches %v, %v", o.watchCaches, err)
	}
	if err := fs.Parse([]string{"-conversion-list-watch-cache=sometimes"}); err == nil {
		t.Error("an unknown watch-cache setting was accepted")
	}
	o.listPage = -1
	if err := o.validate(); err == nil {
		t.Error("a negative page size was accepted")
	}
	o.listPage, o.reviews = 0, 0
	if err := o.validate(); err == nil {
		t.Error("no measured reviews was accepted")
	}
}

// milliseconds turns whole milliseconds into durations.
func milliseconds(ms ...int) []time.Duration {
	var out []time.Duration
	for _, m := range ms {
		out = append(out, time.Duration(m)*time.Millisecond)
	}
	return out
}

func TestConvertMedian(t *testing.T) {
	run := func(latencies []time.Duration, webhookSeconds float64) conversionRun {
		return conversionRun{Reviews: []convertRun{{
			Direction: directionUp, Objects: 500, Latencies: latencies,
			Webhook: webhookTime{seconds: webhookSeconds, reviews: float64(len(latencies))},
			usage:   usage{CPUSeconds: float64(len(latencies)) * 0.1},
		}}}
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	runs := []conversionRun{run(hundred, 5), run(milliseconds(10, 20, 30, 40), 0.2), run(milliseconds(1, 2, 3, 500), 0.4)}
	f, ok := convertMedian(runs, directionUp)
	if !ok {
		t.Fatal("no figures")
	}
	// p50 of each run: 50, 20, 2 → 20; p90: 90, 40, 500 → 90; p99: 99, 40, 500 → 99; max 100, 40, 500 → 100.
	if f.p50 != 20*time.Millisecond || f.p90 != 90*time.Millisecond || f.p99 != 99*time.Millisecond || f.max != 100*time.Millisecond {
		t.Errorf("percentiles p50 %v p90 %v p99 %v max %v", f.p50, f.p90, f.p99, f.max)
	}
	// Webhook time per review: 50 ms, 50 ms, 100 ms → 50 ms; CPU per review 0.1 in each.
	if f.webhook != 50*time.Millisecond || f.cpu < 0.0999 || f.cpu > 0.1001 || f.reviews != 108 || f.runs != 3 {
		t.Errorf("figures %+v", f)
	}
	if _, ok := convertMedian(runs, directionDown); ok {
		t.Error("figures for a direction that never ran")
	}
}

func TestListMedianAndRatio(t *testing.T) {
	beta, alpha := listVariant{Version: "v1beta1", WatchCache: watchCacheOff}, listVariant{Version: "v1alpha1", WatchCache: watchCacheOff}
	runs := []conversionRun{
		{Lists: []listRun{
			{Variant: beta, Walls: milliseconds(100, 120, 110), Items: 5000, Pages: 1, APIServerCPU: 0.3},
			{Variant: alpha, Walls: milliseconds(300, 250, 280), Items: 5000, Pages: 1, Webhook: webhookTime{seconds: 1.5, reviews: 15000}, ManagerCPU: 0.9},
		}},
		{Lists: []listRun{
			{Variant: beta, Walls: milliseconds(200, 200)},
			{Variant: alpha, Walls: milliseconds(300, 300)},
		}},
	}
	f, ok := listMedian(runs, alpha)
	if !ok {
		t.Fatal("no figures")
	}
	// Medians 280 and 300 → 290; fastest and slowest of all five LISTs.
	if f.median != 290*time.Millisecond || f.fastest != 250*time.Millisecond || f.slowest != 300*time.Millisecond || f.lists != 5 {
		t.Errorf("figures %+v", f)
	}
	// Per LIST: 15000/3 = 5000 reviews and 0.5 s in the first run, none in the second.
	if f.reviews != 2500 || f.webhook != 250*time.Millisecond {
		t.Errorf("reviews %v, webhook %v per LIST", f.reviews, f.webhook)
	}
	// Ratios 280/110 ≈ 2.545 and 300/200 = 1.5 → median 2.02.
	ratio, ok := listRatio(runs, 0, watchCacheOff)
	if !ok || ratio < 2.02 || ratio > 2.03 {
		t.Errorf("listRatio = %v, %v", ratio, ok)
	}
	if _, ok := listRatio(runs, 500, watchCacheOff); ok {
		t.Error("a ratio for paginated LISTs that never ran")
	}
	if _, ok := listRatio(runs, 0, watchCacheOn); ok {
		t.Error("a ratio for a watch-cache setting that never ran")
	}
}

func TestConversionReport(t *testing.T) {
	o := &options{}
	o.conversion = conversionOptions{objects: 500, objectKiB: 20, reviews: 3, listObjects: 5000, listObjectKiB: 2, lists: 2, listPage: 0,
		watchCaches: []string{watchCacheOn, watchCacheOff}, listCompression: true}
	on := func(version string) listVariant { return listVariant{Version: version, WatchCache: watchCacheOn} }
	off := func(version string) listVariant { return listVariant{Version: version, WatchCache: watchCacheOff} }
	res := &conversionResults{runs: []conversionRun{{
		Reviews: []convertRun{
			{Direction: directionUp, Objects: 500, Latencies: milliseconds(100, 150, 200)},
			{Direction: directionDown, Objects: 500, Latencies: milliseconds(100, 150, 600)},
		},
		Setups: []listSetup{{WatchCache: watchCacheOn, Took: 20 * time.Second, Webhook: webhookTime{reviews: 10000, seconds: 3}, Converted: 25 * time.Second}},
		Lists: []listRun{
			{Variant: on("v1beta1"), Walls: milliseconds(400, 400), Items: 5000, Pages: 1},
			{Variant: on("v1alpha1"), Walls: milliseconds(410, 410), Items: 5000, Pages: 1},
			{Variant: off("v1beta1"), Walls: milliseconds(1000, 1000), Items: 5000, Pages: 1},
			{Variant: off("v1alpha1"), Walls: milliseconds(3000, 3000), Items: 5000, Pages: 1},
		},
	}}}
	report := res.markdown(o)
	for _, want := range []string{
		"## Version conversion",
		"up p99 200.00 ms (met), down p99 600.00 ms (**missed**)",
		"p99 ≤ 550.00 ms",
		"- watch cache (default): 1.02× (met)",
		"- `--watch-cache=false`: 3.00× (**missed**)",
		"took 20.00 s; meanwhile the manager answered 10,000 reviews (3.00 s of webhook time, the last of them 25.00 s after the first write)",
		"Round trip: every object",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	res.runs[0].RoundTrip = "object 3 (of 500) differs at .metadata.annotations"
	if report := res.markdown(o); !strings.Contains(report, "**run 1: an object sent up and back down was not identical: object 3") {
		t.Errorf("the report hides a failed round trip:\n%s", report)
	}
	if report := newConversionResults().markdown(o); report != "" {
		t.Errorf("a part that did not run has a report: %q", report)
	}
}

func TestWebhookTimeMinus(t *testing.T) {
	got := webhookTime{seconds: 3.5, reviews: 12}.minus(webhookTime{seconds: 1, reviews: 2})
	if got != (webhookTime{seconds: 2.5, reviews: 10}) || perReview(got) != 250*time.Millisecond {
		t.Errorf("minus = %+v, per review %v", got, perReview(got))
	}
	if perReview(webhookTime{}) != 0 {
		t.Error("time per review without reviews")
	}
}

func TestListVariantLabel(t *testing.T) {
	if got := (listVariant{Version: "v1alpha1", Limit: 500, WatchCache: watchCacheOff}).label(); got != "v1alpha1, limit 500, watch cache off" {
		t.Errorf("label = %q", got)
	}
	if got := (listVariant{Version: "v1beta1", WatchCache: watchCacheOn}).label(); got != "v1beta1, watch cache on" {
		t.Errorf("label = %q", got)
	}
}
