package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// partConversion measures CRD version conversion: bosun-controller-manager's /convert
// answering reviews of many large DaemonSets, and kube-apiserver listing DaemonSets in the
// version they are not stored in, through that webhook, against the same LIST without
// conversion.
const partConversion = "conversion"

const (
	// daemonSetCRD is the CRD whose conversion webhook the part measures.
	daemonSetCRD = "daemonsets.apps.kruise.io"
	// convertPath is where the manager serves the conversion webhook.
	convertPath = "/convert"

	// conversionRequestTimeout is the API server's call timeout for a conversion webhook.
	conversionRequestTimeout = 30 * time.Second
	// conversionWarmupReviews are sent per direction, unmeasured, before the measured ones:
	// they open the connection and grow the manager's heap to its working size.
	conversionWarmupReviews = 3
	// conversionWarmupLists are run per LIST variant, unmeasured, before the measured ones.
	conversionWarmupLists = 2
	// conversionCreateClients create and write the status of the listed DaemonSets in
	// parallel before anything is measured.
	conversionCreateClients = 32

	// The manager's conversion histogram, scraped around each measured run to tell the
	// webhook's own time from the rest of a request.
	conversionDurationSum   = "bosun_conversion_duration_seconds_sum"
	conversionDurationCount = "bosun_conversion_duration_seconds_count"
)

// The directions of a review sent to /convert.
const (
	directionUp   = "up"
	directionDown = "down"
)

var (
	appsAlphaVersion = appsv1alpha1.SchemeGroupVersion.String()
	appsBetaVersion  = appsv1beta1.SchemeGroupVersion.String()
	crdResource      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// The targets: the API server allows a webhook about 4 ms per object; bosun's
// /convert answers within 50 ms plus 1 ms per object at the 99th percentile, and a LIST in
// the version not stored takes at most twice the LIST in the stored one.
const (
	targetConvertBase      = 50 * time.Millisecond
	targetConvertPerObject = time.Millisecond
	targetListRatio        = 2.0
)

// convertTarget is the p99 target of a review of objects objects.
func convertTarget(objects int) time.Duration {
	return targetConvertBase + time.Duration(objects)*targetConvertPerObject
}

// conversionOptions are the conversion part's flags.
type conversionOptions struct {
	objects         int
	objectKiB       int
	reviews         int
	listObjects     int
	listObjectKiB   int
	lists           int
	listPage        int
	listCompression bool
	watchCaches     []string
}

// register adds the part's flags to fs.
func (o *conversionOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.objects, "conversion-objects", 500, "conversion part: apps.kruise.io/v1alpha1 DaemonSets in each ConversionReview sent to /convert")
	fs.IntVar(&o.objectKiB, "conversion-object-kib", 20, "conversion part: size of each of those DaemonSets, KiB of compact JSON")
	fs.IntVar(&o.reviews, "conversion-reviews", 100, "conversion part: measured reviews per direction (up to v1beta1, down to v1alpha1)")
	fs.IntVar(&o.listObjects, "conversion-list-objects", 5000, "conversion part: apps.kruise.io/v1beta1 DaemonSets created for the LISTs")
	fs.IntVar(&o.listObjectKiB, "conversion-list-object-kib", 2, "conversion part: size of each listed DaemonSet as created, KiB of compact "+
		"JSON (the API server's metadata and managed fields, and the status the bench writes, come on top)")
	fs.IntVar(&o.lists, "conversion-lists", 10, "conversion part: measured LISTs per variant (v1beta1 and v1alpha1, whole and paginated)")
	fs.IntVar(&o.listPage, "conversion-list-page", 500, "conversion part: limit of the paginated LISTs; 0 runs only the LISTs without a limit")
	fs.Func("conversion-list-watch-cache", "conversion part: comma-separated kube-apiserver settings to LIST against, each on a control "+
		"plane of its own: on (its default: each served version of a CRD has its own watch cache, which converts every write as it "+
		"happens, and LISTs are served from it), off (--watch-cache=false: every LIST reads etcd and converts each object; /convert "+
		"is measured on the first control plane) (default on,off)", func(value string) error {
		names, err := parseNames("--conversion-list-watch-cache", value, watchCacheOn, watchCacheOff)
		o.watchCaches = names
		return err
	})
	fs.BoolVar(&o.listCompression, "conversion-list-compression", true, "conversion part: the LIST client accepts gzip, as client-go "+
		"and kubectl do by default (kube-apiserver compresses large responses); false lists uncompressed")
}

func (o *conversionOptions) validate() error {
	if o.watchCaches == nil {
		o.watchCaches = []string{watchCacheOn, watchCacheOff}
	}
	if o.objects < 1 || o.objectKiB < 1 || o.reviews < 1 || o.listObjects < 1 || o.listObjectKiB < 1 || o.lists < 1 {
		return errors.New("--conversion-objects, --conversion-object-kib, --conversion-reviews, --conversion-list-objects, " +
			"--conversion-list-object-kib and --conversion-lists must be at least 1")
	}
	if o.listPage < 0 {
		return errors.New("--conversion-list-page must not be negative")
	}
	return nil
}

// The kube-apiserver settings the LISTs run against (--conversion-list-watch-cache).
const (
	// watchCacheOn is kube-apiserver's default: every served version of a CRD has a watch
	// cache of its own, filled from etcd through the conversion webhook object by object as
	// objects are written, and LISTs are served from it.
	watchCacheOn = "on"
	// watchCacheOff is kube-apiserver --watch-cache=false (custom resources have no
	// per-resource setting): every LIST reads etcd and converts each object it decodes.
	watchCacheOff = "off"
)

// listVariant is one way of listing the DaemonSets: a version, a page size (0: one LIST
// without a limit) and the API server's watch-cache setting.
type listVariant struct {
	Version    string
	Limit      int
	WatchCache string
}

// converts reports whether the API server converts this variant's objects (they are
// stored in v1beta1).
func (v listVariant) converts() bool { return v.Version != appsv1beta1.SchemeGroupVersion.Version }

// listVariants are the variants measured against one watch-cache setting: whole LISTs in
// both versions, then paginated ones when page is above 0.
func listVariants(page int, watchCache string) []listVariant {
	variants := []listVariant{{Version: "v1beta1", WatchCache: watchCache}, {Version: "v1alpha1", WatchCache: watchCache}}
	if page > 0 {
		variants = append(variants, listVariant{Version: "v1beta1", Limit: page, WatchCache: watchCache},
			listVariant{Version: "v1alpha1", Limit: page, WatchCache: watchCache})
	}
	return variants
}

// runConversionPart runs one repetition of the conversion part: for each chosen
// watch-cache setting a fresh control plane with bosun's CRDs and bosun-controller-manager
// with no controllers and its webhook server on a free loopback port, which serves
// /convert and points the DaemonSet CRD at itself. /convert is measured on the first.
func runConversionPart(ctx context.Context, o *options, res *conversionResults, logRoot string, rep int) error {
	co := o.conversion
	klog.FromContext(ctx).Info("Running the conversion part", "objects", co.objects, "objectKiB", co.objectKiB, "reviews", co.reviews,
		"listObjects", co.listObjects, "lists", co.lists, "watchCache", co.watchCaches, "repetition", rep)
	var run conversionRun
	for k, watchCache := range co.watchCaches {
		logDir := fmt.Sprintf("%s/conversion-cache-%s-%d", logRoot, watchCache, rep)
		opts := framework.Options{BosunCRDs: true}
		if watchCache == watchCacheOff {
			opts.APIServerArgs = []string{"--watch-cache=false"}
		}
		_, err := withControlPlaneOptions(ctx, logDir, opts, func(ctx context.Context, cp *framework.ControlPlane, _ kubernetes.Interface) (runResult, error) {
			spec, port, err := conversionManager(o, cp)
			if err != nil {
				return runResult{}, err
			}
			m, err := startManager(ctx, spec, logDir)
			if err != nil {
				return runResult{}, err
			}
			defer m.Stop(framework.DefaultStopGracePeriod)
			err = measureConversion(ctx, o, cp, m, port, logDir, watchCache, k == 0, &run)
			if aliveErr := m.checkAlive(); aliveErr != nil {
				return runResult{}, aliveErr
			}
			if err != nil {
				return runResult{}, fmt.Errorf("%w\nthe end of the %s log:\n%s", err, spec.Label, m.LogTail(20))
			}
			return runResult{}, nil
		})
		if err != nil {
			return fmt.Errorf("conversion (watch cache %s), run %d: %w", watchCache, rep, err)
		}
	}
	res.runs = append(res.runs, run)
	return nil
}

// conversionManager runs bosun-controller-manager with no controllers at all (nothing but
// the bench writes objects, so nothing else moves) and its webhook server on a free
// loopback port: it serves /convert and writes the conversion webhook's URL and CA into the
// CRDs. start waits for /readyz, which holds the webhook server and the CRDs' configuration.
func conversionManager(o *options, cp *framework.ControlPlane) (managerSpec, int, error) {
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return managerSpec{}, 0, err
	}
	opts := o.limits.options("", o.verbosity)
	opts.Webhooks, opts.WebhookPort = true, ports[0]
	opts.ExtraArgs = []string{"--controllers=", "--webhook-bind-address=127.0.0.1"}
	return managerSpec{
		Label:     "bosun-controller-manager",
		Path:      o.bosunBinary,
		Args:      framework.BosunControllerManagerArgs(cp, opts),
		ReadyPath: "/readyz",
	}, ports[0], nil
}

// conversionRun is one repetition's figures.
type conversionRun struct {
	Reviews []convertRun
	// RoundTrip describes how down(up(x)) differed from x for the first object that did;
	// empty when every object came back identical.
	RoundTrip string
	Setups    []listSetup
	Lists     []listRun
}

// listSetup is the creation of the listed DaemonSets against one watch-cache setting.
type listSetup struct {
	WatchCache string
	// Took is how long creating them and writing their statuses took; Webhook is what the
	// manager converted meanwhile (the watch cache of v1alpha1 converts every write).
	Took    time.Duration
	Webhook webhookTime
	// Converted is how long after the first write the manager answered its last review of
	// them (to within webhookPollInterval); 0 when it answered none.
	Converted time.Duration
}

// measureConversion checks the API server converts through the manager, then measures
// /convert (when withConvert) and the LISTs against the control plane's watch-cache
// setting, adding the figures to run.
func measureConversion(ctx context.Context, o *options, cp *framework.ControlPlane, m *manager, port int, logDir, watchCache string,
	withConvert bool, run *conversionRun) error {
	logger := klog.FromContext(ctx)
	url, caBundle, err := waitForConversionWebhook(ctx, cp.Config(), port, o.timeout)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		return fmt.Errorf("the conversion caBundle of CRD %s holds no PEM certificate", daemonSetCRD)
	}
	// One connection, verified against the CRD's caBundle, as the API server holds it.
	client := &http.Client{
		Timeout:   conversionRequestTimeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true},
	}
	defer client.CloseIdleConnections()
	apiServerPid, apiServerPort, err := apiServerProcess(cp)
	if err != nil {
		return err
	}
	token := cp.Config().BearerToken
	env := &conversionEnv{o: o.conversion, manager: m, token: token, apiServerPid: apiServerPid, apiServerPort: apiServerPort, watchCache: watchCache}

	if withConvert {
		reviews, roundTrip, err := env.measureConvert(ctx, client, url)
		if err != nil {
			return err
		}
		run.Reviews, run.RoundTrip = reviews, roundTrip
		if roundTrip != "" {
			logger.Info("A DaemonSet did not come back identical from /convert up and down", "difference", roundTrip)
		}
	}

	bosun, err := bosunClientFor(conversionListConfig(cp, true))
	if err != nil {
		return err
	}
	before, err := env.scrapeWebhookTime()
	if err != nil {
		return err
	}
	began := time.Now()
	if err := createListDaemonSets(ctx, bosun, o.conversion); err != nil {
		return err
	}
	setup := listSetup{WatchCache: watchCache, Took: time.Since(began)}
	// The v1alpha1 watch cache converts the writes' events after the writes return; wait
	// for the last of them, so that the LISTs have the API server to themselves.
	after, lastReview, err := env.waitForQuietWebhook(ctx, before, o.timeout)
	if err != nil {
		return err
	}
	setup.Webhook = after.minus(before)
	if !lastReview.IsZero() {
		setup.Converted = lastReview.Sub(began)
	}
	run.Setups = append(run.Setups, setup)
	logger.Info("Created the listed DaemonSets", "objects", o.conversion.listObjects, "watchCache", watchCache, "took", setup.Took.Round(time.Millisecond),
		"reviewsMeanwhile", setup.Webhook.reviews, "webhookSeconds", setup.Webhook.seconds, "lastReviewAfter", setup.Converted.Round(time.Millisecond))
	time.Sleep(settleTime)
	lister, err := bosunClientFor(conversionListConfig(cp, o.conversion.listCompression))
	if err != nil {
		return err
	}
	env.rest = lister.AppsV1beta1().RESTClient()
	lists, err := env.measureLists(ctx)
	if err != nil {
		return err
	}
	run.Lists = append(run.Lists, lists...)

	if o.profileSeconds > 0 {
		env.profile(ctx, client, url, logDir, o.profileSeconds, withConvert)
	}
	return nil
}

// conversionListConfig is the admin configuration of the bench's apps.kruise.io client, with
// or without gzip responses.
func conversionListConfig(cp *framework.ControlPlane, compression bool) *rest.Config {
	config := benchClientConfig(cp)
	config.DisableCompression = !compression
	return config
}

// waitForConversionWebhook waits until the DaemonSet CRD converts through the manager's
// webhook port (the control plane pointed it at a server in the bench process first; the
// manager's writer corrects that) and returns the URL and CA the API server uses.
func waitForConversionWebhook(ctx context.Context, config *rest.Config, port int, timeout time.Duration) (string, []byte, error) {
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return "", nil, fmt.Errorf("building a dynamic client: %w", err)
	}
	want := fmt.Sprintf("https://127.0.0.1:%d%s", port, convertPath)
	var caBundle []byte
	var seen string
	err = framework.WaitFor(ctx, timeout, "CRD "+daemonSetCRD+" to convert through the manager at "+want, func(ctx context.Context) (bool, error) {
		crd, err := client.Resource(crdResource).Get(ctx, daemonSetCRD, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading CRD %s: %w", daemonSetCRD, err)
		}
		url, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url")
		ca, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		seen = url
		if url != want || ca == "" {
			return false, nil
		}
		caBundle, err = base64.StdEncoding.DecodeString(ca)
		if err != nil {
			return false, fmt.Errorf("the conversion caBundle of CRD %s: %w", daemonSetCRD, err)
		}
		return true, nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("%w (its clientConfig URL is %q)", err, seen)
	}
	return want, caBundle, nil
}

// conversionEnv is what the conversion part's measurements share.
type conversionEnv struct {
	o            conversionOptions
	manager      *manager
	token        string
	apiServerPid int
	// apiServerPort is kube-apiserver's secure port, for its profiles.
	apiServerPort int
	// watchCache is the control plane's watch-cache setting.
	watchCache string
	// rest lists DaemonSets (set once they exist).
	rest rest.Interface
	// up is the prepared review up, set by measureConvert, which the profile phase resends.
	up *preparedReview
}

// webhookTime is the manager's conversion histogram at one moment: seconds spent answering
// reviews, and reviews answered.
type webhookTime struct {
	seconds, reviews float64
}

func (e *conversionEnv) scrapeWebhookTime() (webhookTime, error) {
	exposition, err := e.manager.Metrics(e.token)
	if err != nil {
		return webhookTime{}, fmt.Errorf("scraping the manager's metrics: %w", err)
	}
	sum, ok1 := metricValue(exposition, conversionDurationSum, nil)
	count, ok2 := metricValue(exposition, conversionDurationCount, nil)
	if !ok1 || !ok2 {
		// The histogram has no series before its first observation.
		return webhookTime{}, nil
	}
	return webhookTime{seconds: sum, reviews: count}, nil
}

// webhookPollInterval is how often waitForQuietWebhook scrapes the manager.
const webhookPollInterval = 250 * time.Millisecond

// waitForQuietWebhook waits until the manager has answered no review for settleTime and
// returns its histogram then and when the last review since start (a scrape) was seen
// answered, zero when none was.
func (e *conversionEnv) waitForQuietWebhook(ctx context.Context, start webhookTime, timeout time.Duration) (webhookTime, time.Time, error) {
	last, lastChange, quietSince := start, time.Time{}, time.Now()
	deadline := time.Now().Add(timeout)
	for time.Since(quietSince) < settleTime {
		if time.Now().After(deadline) {
			return last, lastChange, fmt.Errorf("the manager still answered conversion reviews %v after the writes ended", timeout)
		}
		select {
		case <-ctx.Done():
			return last, lastChange, ctx.Err()
		case <-time.After(webhookPollInterval):
		}
		now, err := e.scrapeWebhookTime()
		if err != nil {
			return last, lastChange, err
		}
		if now.reviews != last.reviews {
			last, lastChange, quietSince = now, time.Now(), time.Now()
		}
	}
	return last, lastChange, nil
}

func (w webhookTime) minus(earlier webhookTime) webhookTime {
	return webhookTime{seconds: w.seconds - earlier.seconds, reviews: w.reviews - earlier.reviews}
}

// preparedReview is a ConversionReview body with placeholderUID as its UID, and what it holds.
type preparedReview struct {
	direction string
	desired   string
	body      []byte
	objects   []json.RawMessage
}

// convertRun is one direction's measured reviews.
type convertRun struct {
	Direction string
	Objects   int
	// ObjectBytes is the mean size of an object sent, BodyBytes the review's and
	// AnswerBytes the answer's.
	ObjectBytes, BodyBytes, AnswerBytes int
	// Latencies are from sending each review to having read its whole answer, sorted.
	Latencies []time.Duration
	Wall      time.Duration
	// Webhook is the manager's own time answering them, from its histogram.
	Webhook webhookTime
	// usage is the manager's over the measured reviews.
	usage
	LoadAverage float64
}

// measureConvert sends the up and down reviews, checks their answers, and measures each
// direction. It returns, besides the runs, how the round trip changed an object, if it did.
func (e *conversionEnv) measureConvert(ctx context.Context, client *http.Client, url string) ([]convertRun, string, error) {
	alphas := make([]json.RawMessage, e.o.objects)
	for i := range alphas {
		ds, err := convertDaemonSet(i, e.o.objectKiB<<10)
		if err != nil {
			return nil, "", err
		}
		if alphas[i], err = json.Marshal(ds); err != nil {
			return nil, "", err
		}
	}
	up, err := prepareReview(directionUp, appsBetaVersion, alphas)
	if err != nil {
		return nil, "", err
	}
	// The down review holds what the manager answered up: v1beta1 as bosun writes it.
	body, uid := withUID(up.body, 0, 0)
	_, answer, err := postReview(ctx, client, url, body)
	if err != nil {
		return nil, "", fmt.Errorf("the first review: %w", err)
	}
	betas, err := checkConversionAnswer(answer, uid, up.desired, up.objects)
	if err != nil {
		return nil, "", fmt.Errorf("the first review: %w", err)
	}
	down, err := prepareReview(directionDown, appsAlphaVersion, betas)
	if err != nil {
		return nil, "", err
	}
	body, uid = withUID(down.body, 0, 1)
	if _, answer, err = postReview(ctx, client, url, body); err != nil {
		return nil, "", fmt.Errorf("the first review down: %w", err)
	}
	back, err := checkConversionAnswer(answer, uid, down.desired, down.objects)
	if err != nil {
		return nil, "", fmt.Errorf("the first review down: %w", err)
	}
	roundTrip, err := roundTripDifference(alphas, back)
	if err != nil {
		return nil, "", err
	}
	e.up = up

	var runs []convertRun
	for worker, r := range []*preparedReview{up, down} {
		run, err := e.measureDirection(ctx, client, url, r, worker+1)
		if err != nil {
			return nil, "", fmt.Errorf("reviews %s: %w", r.direction, err)
		}
		runs = append(runs, run)
	}
	return runs, roundTrip, nil
}

// measureDirection sends conversionWarmupReviews and then the measured reviews of r, one
// at a time, each with its own UID (worker tells the directions' UIDs apart), checking
// every answer after its latency is taken.
func (e *conversionEnv) measureDirection(ctx context.Context, client *http.Client, url string, r *preparedReview, worker int) (convertRun, error) {
	logger := klog.FromContext(ctx)
	send := func(i int) (time.Duration, int, error) {
		body, uid := withUID(r.body, worker, i)
		took, answer, err := postReview(ctx, client, url, body)
		if err != nil {
			return 0, 0, err
		}
		if _, err := checkConversionAnswer(answer, uid, r.desired, r.objects); err != nil {
			return 0, 0, err
		}
		return took, len(answer), nil
	}
	for i := range conversionWarmupReviews {
		if _, _, err := send(i); err != nil {
			return convertRun{}, fmt.Errorf("warming up: %w", err)
		}
	}
	time.Sleep(settleTime)
	run := convertRun{Direction: r.direction, Objects: len(r.objects), BodyBytes: len(r.body), ObjectBytes: meanLength(r.objects)}
	before, err := e.scrapeWebhookTime()
	if err != nil {
		return convertRun{}, err
	}
	run.LoadAverage = loadAverage()
	meter, err := startMeter(e.manager.Pid())
	if err != nil {
		return convertRun{}, err
	}
	began := time.Now()
	for i := range e.o.reviews {
		took, answerBytes, err := send(conversionWarmupReviews + i)
		if err != nil {
			_, _ = meter.Stop()
			return convertRun{}, fmt.Errorf("review %d: %w", i+1, err)
		}
		run.Latencies = append(run.Latencies, took)
		run.AnswerBytes = answerBytes
	}
	run.Wall = time.Since(began)
	if run.usage, err = meter.Stop(); err != nil {
		return convertRun{}, err
	}
	after, err := e.scrapeWebhookTime()
	if err != nil {
		return convertRun{}, err
	}
	run.Webhook = after.minus(before)
	slices.Sort(run.Latencies)
	logger.Info("Measured /convert", "direction", r.direction, "objects", run.Objects, "reviews", len(run.Latencies),
		"p50", percentile(run.Latencies, 50), "p90", percentile(run.Latencies, 90), "p99", percentile(run.Latencies, 99),
		"max", percentile(run.Latencies, 100), "managerCPUSeconds", run.CPUSeconds, "webhookSeconds", run.Webhook.seconds)
	return run, nil
}

// The wire form of apiextensions.k8s.io/v1 ConversionReview, the part of it the bench
// writes and reads (k8s.io/apiextensions-apiserver is not among bosun's dependencies).
type conversionReview struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Request    *conversionRequest  `json:"request,omitempty"`
	Response   *conversionResponse `json:"response,omitempty"`
}

type conversionRequest struct {
	UID               string            `json:"uid"`
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

type conversionResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           metav1.Status     `json:"result"`
}

// prepareReview is the ConversionReview the API server sends to convert objects to
// desired, with placeholderUID as its UID.
func prepareReview(direction, desired string, objects []json.RawMessage) (*preparedReview, error) {
	review := conversionReview{
		APIVersion: "apiextensions.k8s.io/v1",
		Kind:       "ConversionReview",
		Request:    &conversionRequest{UID: placeholderUID, DesiredAPIVersion: desired, Objects: objects},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, fmt.Errorf("encoding the review %s: %w", direction, err)
	}
	if bytes.Count(body, []byte(placeholderUID)) != 1 {
		return nil, errors.New("the ConversionReview must hold the placeholder UID exactly once")
	}
	return &preparedReview{direction: direction, desired: desired, body: body, objects: objects}, nil
}

// postReview POSTs one review and returns the time from sending it to having read the
// whole answer, and the answer; an error for a transport error or a status other than 200.
func postReview(ctx context.Context, client *http.Client, url string, body []byte) (time.Duration, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	sent := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(sent)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, data)
	}
	return took, data, nil
}

// objectIdentity is what a conversion must keep of an object, and the version it must set.
type objectIdentity struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
}

// checkConversionAnswer checks an answer to the review of sent with uid: a successful
// review for uid, the objects in order, as many as sent, each in desired with its kind,
// name, namespace and UID kept. It returns the converted objects.
func checkConversionAnswer(answer []byte, uid, desired string, sent []json.RawMessage) ([]json.RawMessage, error) {
	var review conversionReview
	if err := json.Unmarshal(answer, &review); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	resp := review.Response
	switch {
	case review.APIVersion != "apiextensions.k8s.io/v1" || review.Kind != "ConversionReview":
		return nil, fmt.Errorf("the answer is a %s %s, not an apiextensions.k8s.io/v1 ConversionReview", review.APIVersion, review.Kind)
	case resp == nil:
		return nil, errors.New("the answer has no response")
	case resp.UID != uid:
		return nil, fmt.Errorf("the answer is for UID %q, the review was %q", resp.UID, uid)
	case resp.Result.Status != metav1.StatusSuccess:
		return nil, fmt.Errorf("the review failed: %s", resp.Result.Message)
	case len(resp.ConvertedObjects) != len(sent):
		return nil, fmt.Errorf("%d objects converted of %d sent", len(resp.ConvertedObjects), len(sent))
	}
	for i, obj := range resp.ConvertedObjects {
		var in, out objectIdentity
		if err := json.Unmarshal(sent[i], &in); err != nil {
			return nil, fmt.Errorf("decoding object %d sent: %w", i, err)
		}
		if err := json.Unmarshal(obj, &out); err != nil {
			return nil, fmt.Errorf("decoding converted object %d: %w", i, err)
		}
		if out.APIVersion != desired {
			return nil, fmt.Errorf("converted object %d is in %s, not %s", i, out.APIVersion, desired)
		}
		out.APIVersion = in.APIVersion
		if out != in {
			return nil, fmt.Errorf("converted object %d is %+v, it was sent as %+v", i, out, in)
		}
	}
	return resp.ConvertedObjects, nil
}

// roundTripDifference compares the objects sent up with those that came back down, as
// JSON values: "" when all are equal, else which object differed and where first.
func roundTripDifference(sent, back []json.RawMessage) (string, error) {
	for i := range sent {
		var x, y any
		if err := json.Unmarshal(sent[i], &x); err != nil {
			return "", err
		}
		if err := json.Unmarshal(back[i], &y); err != nil {
			return "", err
		}
		if path := firstDifference(x, y, ""); path != "" {
			return fmt.Sprintf("object %d (of %d) differs at %s", i, len(sent), path), nil
		}
	}
	return "", nil
}

// firstDifference returns the path of the first place where two decoded JSON values
// differ ("." for the roots themselves), "" when they are equal.
func firstDifference(x, y any, path string) string {
	xm, xok := x.(map[string]any)
	ym, yok := y.(map[string]any)
	if xok && yok {
		keys := map[string]bool{}
		for k := range xm {
			keys[k] = true
		}
		for k := range ym {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			xv, inX := xm[k]
			yv, inY := ym[k]
			if inX != inY {
				return path + "." + k
			}
			if d := firstDifference(xv, yv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	}
	xs, xok := x.([]any)
	ys, yok := y.([]any)
	if xok && yok && len(xs) == len(ys) {
		for i := range xs {
			if d := firstDifference(xs[i], ys[i], path+"["+strconv.Itoa(i)+"]"); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(x, y) {
		if path == "" {
			return "."
		}
		return path
	}
	return ""
}

func meanLength(objects []json.RawMessage) int {
	if len(objects) == 0 {
		return 0
	}
	total := 0
	for _, o := range objects {
		total += len(o)
	}
	return total / len(objects)
}

// createListDaemonSets creates the listed DaemonSets in v1beta1, the stored version, and
// writes each one's status, from parallel clients.
func createListDaemonSets(ctx context.Context, client bosunclientset.Interface, o conversionOptions) error {
	indexes := make([]int, o.listObjects)
	for i := range indexes {
		indexes[i] = i
	}
	_, err := inParallelOver(ctx, indexes, conversionCreateClients, func(ctx context.Context, i int) error {
		ds, err := listDaemonSet(i, o.listObjectKiB<<10)
		if err != nil {
			return err
		}
		daemonSets := client.AppsV1beta1().DaemonSets(benchNamespace)
		created, err := daemonSets.Create(ctx, ds, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating DaemonSet %s: %w", ds.Name, err)
		}
		created.Status = listDaemonSetStatus(created.Generation)
		if _, err := daemonSets.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing the status of DaemonSet %s: %w", ds.Name, err)
		}
		return nil
	})
	return err
}

// listRun is one LIST variant's measured LISTs in one repetition.
type listRun struct {
	Variant listVariant
	// Walls are the LISTs' times, in the order taken: for a paginated LIST the sum of its
	// pages' request times (each from sending to having read the page).
	Walls []time.Duration
	// Items, Bytes and Pages describe one LIST: the objects, the bytes of the
	// (uncompressed) bodies and the requests.
	Items, Bytes, Pages int
	// Webhook is the manager's time answering reviews over all the variant's LISTs; the
	// CPU times are over them as well.
	Webhook                  webhookTime
	ManagerCPU, APIServerCPU float64
	LoadAverages             []float64
}

// measureLists runs conversionWarmupLists of every variant, then the measured LISTs,
// alternating the variants in a rotating order so that a drift of the machine's speed
// falls on all of them alike.
func (e *conversionEnv) measureLists(ctx context.Context) ([]listRun, error) {
	variants := listVariants(e.o.listPage, e.watchCache)
	runs := make([]listRun, len(variants))
	for i, v := range variants {
		runs[i].Variant = v
		for range conversionWarmupLists {
			if _, err := e.list(ctx, v); err != nil {
				return nil, fmt.Errorf("warming up the %s LIST: %w", v.label(), err)
			}
		}
	}
	for round := range e.o.lists {
		for k := range variants {
			i := (round + k) % len(variants)
			if err := e.measureList(ctx, &runs[i]); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range runs {
		sorted := slices.Sorted(slices.Values(r.Walls))
		klog.FromContext(ctx).Info("Measured the LISTs", "variant", r.Variant.label(), "lists", len(r.Walls), "items", r.Items, "pages", r.Pages,
			"bytes", r.Bytes, "median", middle(sorted), "min", sorted[0], "max", sorted[len(sorted)-1], "reviews", r.Webhook.reviews,
			"webhookSeconds", r.Webhook.seconds, "managerCPUSeconds", r.ManagerCPU, "apiServerCPUSeconds", r.APIServerCPU)
	}
	return runs, nil
}

// measureList takes one measured LIST of r's variant and adds it to r.
func (e *conversionEnv) measureList(ctx context.Context, r *listRun) error {
	before, err := e.scrapeWebhookTime()
	if err != nil {
		return err
	}
	r.LoadAverages = append(r.LoadAverages, loadAverage())
	managerMeter, err := startMeter(e.manager.Pid())
	if err != nil {
		return err
	}
	apiMeter, err := startMeter(e.apiServerPid)
	if err != nil {
		_, _ = managerMeter.Stop()
		return err
	}
	page, listErr := e.list(ctx, r.Variant)
	managerUsed, managerErr := managerMeter.Stop()
	apiUsed, apiErr := apiMeter.Stop()
	if err := errors.Join(listErr, managerErr, apiErr); err != nil {
		return fmt.Errorf("the %s LIST: %w", r.Variant.label(), err)
	}
	after, err := e.scrapeWebhookTime()
	if err != nil {
		return err
	}
	d := after.minus(before)
	r.Webhook.seconds += d.seconds
	r.Webhook.reviews += d.reviews
	r.ManagerCPU += managerUsed.CPUSeconds
	r.APIServerCPU += apiUsed.CPUSeconds
	r.Walls = append(r.Walls, page.wall)
	r.Items, r.Bytes, r.Pages = page.items, page.bytes, page.pages
	// Without a watch cache the API server converts every object it reads from etcd; with
	// one, a LIST is served from the version's cache, converted when the objects were
	// written, and calls no webhook.
	if r.Variant.converts() && r.Variant.WatchCache == watchCacheOff && d.reviews < 1 {
		return fmt.Errorf("the %s LIST did not call the manager's /convert (its conversion histogram did not move)", r.Variant.label())
	}
	if !r.Variant.converts() && d.reviews > 0 {
		return fmt.Errorf("the %s LIST of the stored version called /convert %v times", r.Variant.label(), d.reviews)
	}
	return nil
}

// listed is what one LIST (all its pages) read.
type listed struct {
	wall                time.Duration
	items, bytes, pages int
}

// listPage is the part of a DaemonSet list the bench checks.
type listPage struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []struct {
		APIVersion string `json:"apiVersion"`
	} `json:"items"`
}

// list reads every DaemonSet of the namespace in v's version and page size. Only the
// requests are timed: decoding each page for its continue token and checking it happens
// between them.
func (e *conversionEnv) list(ctx context.Context, v listVariant) (listed, error) {
	var out listed
	cont := ""
	for {
		req := e.rest.Get().AbsPath("/apis", appsv1alpha1.GroupName, v.Version, "namespaces", benchNamespace, "daemonsets")
		if v.Limit > 0 {
			req = req.Param("limit", strconv.Itoa(v.Limit))
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		began := time.Now()
		data, err := req.DoRaw(ctx)
		out.wall += time.Since(began)
		if err != nil {
			return listed{}, err
		}
		out.pages++
		out.bytes += len(data)
		var page listPage
		if err := json.Unmarshal(data, &page); err != nil {
			return listed{}, fmt.Errorf("decoding page %d: %w", out.pages, err)
		}
		want := appsv1alpha1.GroupName + "/" + v.Version
		for _, item := range page.Items {
			if item.APIVersion != want {
				return listed{}, fmt.Errorf("page %d holds an item in %s, not %s", out.pages, item.APIVersion, want)
			}
		}
		out.items += len(page.Items)
		if cont = page.Metadata.Continue; cont == "" {
			break
		}
	}
	if out.items != e.o.listObjects {
		return listed{}, fmt.Errorf("listed %d DaemonSets, %d exist", out.items, e.o.listObjects)
	}
	return out, nil
}

// label names a variant in logs and the report.
func (v listVariant) label() string {
	if v.Limit > 0 {
		return fmt.Sprintf("%s, limit %d, watch cache %s", v.Version, v.Limit, v.WatchCache)
	}
	return fmt.Sprintf("%s, watch cache %s", v.Version, v.WatchCache)
}

// profile takes, after the measurements, CPU profiles of the manager while it answers up
// reviews (when withConvert), of the manager and kube-apiserver while v1alpha1 LISTs run,
// and of kube-apiserver while v1beta1 LISTs run, each as long as --profile-seconds, into the
// log directory. The measured figures are never taken under a profiler.
func (e *conversionEnv) profile(ctx context.Context, client *http.Client, url, logDir string, seconds int, withConvert bool) {
	logger := klog.FromContext(ctx)
	keepBusy := func(name string, profilers []*profiler, names []string, work func(i int) error) {
		var finishers []func() error
		for k, p := range profilers {
			finishers = append(finishers, p.start(ctx, names[k]))
		}
		deadline := time.Now().Add(time.Duration(seconds) * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			if err := work(i); err != nil {
				logger.Error(err, "Profiling load failed", "profile", name)
				break
			}
		}
		for k, finish := range finishers {
			if err := finish(); err != nil {
				logger.Error(err, "Profiling failed", "profile", names[k])
			}
		}
		logger.Info("Profiled", "profile", name, "files", names, "dir", logDir)
	}
	managerProfiler := e.manager.profiler(e.token, seconds, logDir)
	apiProfiler := newProfiler(e.apiServerPid, securePort(e.apiServerPort), e.token, seconds, logDir)
	if withConvert {
		keepBusy("convert up", []*profiler{managerProfiler}, []string{"conversion convert up manager"}, func(i int) error {
			body, _ := withUID(e.up.body, 9, i)
			_, _, err := postReview(ctx, client, url, body)
			return err
		})
	}
	prefix := "conversion watch cache " + e.watchCache + " list "
	alpha := listVariant{Version: "v1alpha1", WatchCache: e.watchCache}
	keepBusy(prefix+"v1alpha1", []*profiler{managerProfiler, apiProfiler}, []string{prefix + "v1alpha1 manager", prefix + "v1alpha1 kube-apiserver"},
		func(int) error {
			_, err := e.list(ctx, alpha)
			return err
		})
	beta := listVariant{Version: "v1beta1", WatchCache: e.watchCache}
	keepBusy(prefix+"v1beta1", []*profiler{apiProfiler}, []string{prefix + "v1beta1 kube-apiserver"}, func(int) error {
		_, err := e.list(ctx, beta)
		return err
	})
}
