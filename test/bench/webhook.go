package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"

	"github.com/bosun-dev/bosun/pkg/webhook/configuration"
	webhookdaemonset "github.com/bosun-dev/bosun/pkg/webhook/daemonset"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The webhook part's rows: the DaemonSet's two webhooks.
const (
	webhookMutating   = "mutating"
	webhookValidating = "validating"
)

const (
	// placeholderUID stands for the request UID in a prepared AdmissionReview body; every
	// request gets its own UID of the same length written over it.
	placeholderUID = "00000000-0000-4000-8000-000000000000"
	// webhookWarmupPerClient requests per client are sent, unmeasured, before each
	// webhook's measured run: they open the TLS connections and warm the server.
	webhookWarmupPerClient = 20
	// webhookRequestTimeout is the API server's default call timeout for a webhook.
	webhookRequestTimeout = 10 * time.Second
)

// webhookResult is one webhook's measured run.
type webhookResult struct {
	Webhook  string
	Requests int
	Clients  int
	// Latencies are the times from sending each request to having read its whole
	// response, for every request that got an HTTP response, sorted.
	Latencies []time.Duration
	Wall      time.Duration
	// Rejected counts answers with allowed=false; Errored counts requests without a
	// well-formed answer (transport errors, non-200 statuses, undecodable bodies, a wrong
	// UID). Patched counts answers that carry a patch.
	Rejected, Errored, Patched int
	// FirstProblem describes the first rejected or errored request.
	FirstProblem string
	// usage is the manager's over the measured run (the load generator shares its CPUs).
	usage
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted values by the
// nearest-rank method: the smallest value with at least p% of the values at or below it.
// It is 0 for no values.
func percentile[T time.Duration | float64 | uint64 | int](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// requestsPerSecond is the measured run's throughput.
func (r webhookResult) requestsPerSecond() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Wall.Seconds()
}

// runWebhookPart runs one repetition of the webhook part: bosun-controller-manager with
// the DaemonSet controller and its webhooks on a fresh control plane, and --webhook-clients
// parallel clients that POST --webhook-requests AdmissionReviews to each DaemonSet webhook
// straight to its TLS port, as the API server would.
func runWebhookPart(ctx context.Context, o *options, res *results, logRoot string, rep int) error {
	logDir := fmt.Sprintf("%s/webhook-%d", logRoot, rep)
	klog.FromContext(ctx).Info("Running the webhook latency part", "clients", o.webhookClients, "requests", o.webhookRequests, "repetition", rep)
	_, err := withControlPlaneOptions(ctx, logDir, framework.Options{BosunCRDs: true}, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		spec, err := bosunWebhookManager(o, cp, o.limits)
		if err != nil {
			return runResult{}, err
		}
		m, err := startManager(ctx, spec, logDir)
		if err != nil {
			return runResult{}, err
		}
		defer m.Stop(framework.DefaultStopGracePeriod)
		var prof *profiler
		if o.profileSeconds > 0 {
			prof = m.profiler(cp.Config().BearerToken, o.profileSeconds, logDir)
		}
		results, err := measureWebhooks(ctx, o, client, m.Pid(), prof)
		if aliveErr := m.checkAlive(); aliveErr != nil {
			return runResult{}, aliveErr
		}
		if err != nil {
			return runResult{}, fmt.Errorf("%w\nthe end of the %s log:\n%s", err, spec.Label, m.LogTail(20))
		}
		for _, r := range results {
			res.webhooks[r.Webhook] = append(res.webhooks[r.Webhook], r)
		}
		return runResult{}, nil
	})
	if err != nil {
		return fmt.Errorf("webhook latency, run %d: %w", rep, err)
	}
	return nil
}

// webhookTarget is where and how to call one webhook.
type webhookTarget struct {
	name string
	url  string
	// body is an AdmissionReview with placeholderUID as its request UID.
	body []byte
}

// measureWebhooks reads where the manager's configurations send the API server, checks
// the webhooks answer as expected, and measures each under load, profiling the manager
// during each measured run when prof is set.
func measureWebhooks(ctx context.Context, o *options, client kubernetes.Interface, pid int, prof *profiler) ([]webhookResult, error) {
	urls, caBundle, err := waitForWebhookConfigurations(ctx, client, o.timeout)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		return nil, fmt.Errorf("the caBundle of %s holds no PEM certificate", configuration.ValidatingName)
	}
	// The API server verifies the webhook's certificate against the caBundle; so does the
	// bench, which also checks that the manager's certificate and configuration agree.
	tlsConfig := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}

	userObject, err := json.Marshal(userDaemonSet())
	if err != nil {
		return nil, err
	}
	defaulted := userDaemonSet()
	appsv1alpha1.SetObjectDefaults_DaemonSet(defaulted)
	// What the API server sends the validating webhooks: the object after mutation and
	// after it filled in the metadata of a new object.
	defaulted.UID = "6f1a2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b"
	defaulted.CreationTimestamp = metav1.Now()
	defaulted.Generation = 1
	defaultedObject, err := json.Marshal(defaulted)
	if err != nil {
		return nil, err
	}
	benchObject, err := json.Marshal(typedKruiseDaemonSet(newKruiseDaemonSet()))
	if err != nil {
		return nil, err
	}
	mutatingBody, err := admissionReviewBody(userObject)
	if err != nil {
		return nil, err
	}
	validatingBody, err := admissionReviewBody(defaultedObject)
	if err != nil {
		return nil, err
	}
	benchBody, err := admissionReviewBody(benchObject)
	if err != nil {
		return nil, err
	}
	targets := []webhookTarget{
		{name: webhookMutating, url: urls[webhookMutating], body: mutatingBody},
		{name: webhookValidating, url: urls[webhookValidating], body: validatingBody},
	}

	clients := make([]*http.Client, o.webhookClients)
	for i := range clients {
		// One transport per client: each holds its own connection, as separate API server
		// replicas or busy API server goroutines would.
		clients[i] = &http.Client{
			Timeout:   webhookRequestTimeout,
			Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 1},
		}
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()

	// The daemonset part's object is written fully defaulted; the defaulting webhook must
	// leave it alone, or that part's bosun object would differ with and without webhooks.
	body, uid := withUID(benchBody, 0, 0)
	if ans, err := callWebhook(ctx, clients[0], urls[webhookMutating], body, uid); err != nil {
		return nil, fmt.Errorf("the mutating webhook on the daemonset part's object: %w", err)
	} else if !ans.allowed || ans.patched {
		return nil, fmt.Errorf("the mutating webhook changed or rejected the daemonset part's DaemonSet (allowed=%v, patched=%v, %s): it is not fully defaulted",
			ans.allowed, ans.patched, ans.message)
	}
	// And the realistic object must be allowed by both, with a patch from the mutating one.
	for _, t := range targets {
		body, uid := withUID(t.body, 0, 1)
		ans, err := callWebhook(ctx, clients[0], t.url, body, uid)
		if err != nil {
			return nil, fmt.Errorf("the %s webhook: %w", t.name, err)
		}
		if !ans.allowed {
			return nil, fmt.Errorf("the %s webhook rejected a valid DaemonSet: %s", t.name, ans.message)
		}
		if ans.patched != (t.name == webhookMutating) {
			return nil, fmt.Errorf("the %s webhook answered patched=%v", t.name, ans.patched)
		}
	}

	var results []webhookResult
	for _, t := range targets {
		if _, err := loadWebhook(ctx, clients, t, len(clients)*webhookWarmupPerClient, true); err != nil {
			return nil, fmt.Errorf("warming up the %s webhook: %w", t.name, err)
		}
		meter, err := startMeter(pid)
		if err != nil {
			return nil, err
		}
		finishProfile := func() error { return nil }
		if prof != nil {
			finishProfile = prof.start(ctx, "webhook "+t.name)
		}
		r, err := loadWebhook(ctx, clients, t, o.webhookRequests, false)
		used, stopErr := meter.Stop()
		if profileErr := finishProfile(); profileErr != nil {
			klog.FromContext(ctx).Error(profileErr, "Profiling failed", "webhook", t.name)
		}
		if err != nil {
			return nil, fmt.Errorf("the %s webhook: %w", t.name, err)
		}
		if stopErr != nil {
			return nil, stopErr
		}
		r.usage = used
		klog.FromContext(ctx).Info("Measured the webhook", "webhook", t.name, "requests", r.Requests, "clients", r.Clients,
			"p50", percentile(r.Latencies, 50), "p99", percentile(r.Latencies, 99), "max", percentile(r.Latencies, 100),
			"requestsPerSecond", int(r.requestsPerSecond()), "rejected", r.Rejected, "errored", r.Errored, "managerCPUSeconds", used.CPUSeconds)
		if r.FirstProblem != "" {
			klog.FromContext(ctx).Info("A webhook request failed", "webhook", t.name, "first", r.FirstProblem)
		}
		results = append(results, r)
		// Let the manager's garbage collector and idle connections settle between the two.
		time.Sleep(settleTime)
	}
	return results, nil
}

// waitForWebhookConfigurations waits until the manager has written both configurations
// with the DaemonSet webhooks and a caBundle, and returns the webhooks' URLs and the
// validating configuration's caBundle.
func waitForWebhookConfigurations(ctx context.Context, client kubernetes.Interface, timeout time.Duration) (map[string]string, []byte, error) {
	urls := map[string]string{}
	var caBundle []byte
	var problem string
	err := framework.WaitFor(ctx, timeout, "the DaemonSet webhook configurations", func(ctx context.Context) (bool, error) {
		admission := client.AdmissionregistrationV1()
		mutating, err := admission.MutatingWebhookConfigurations().Get(ctx, configuration.MutatingName, metav1.GetOptions{})
		if err != nil {
			problem = err.Error()
			return false, nil
		}
		validating, err := admission.ValidatingWebhookConfigurations().Get(ctx, configuration.ValidatingName, metav1.GetOptions{})
		if err != nil {
			problem = err.Error()
			return false, nil
		}
		var mutatingConfig, validatingConfig *admissionregistrationv1.WebhookClientConfig
		for i := range mutating.Webhooks {
			if mutating.Webhooks[i].Name == webhookdaemonset.MutatingName {
				mutatingConfig = &mutating.Webhooks[i].ClientConfig
			}
		}
		for i := range validating.Webhooks {
			if validating.Webhooks[i].Name == webhookdaemonset.ValidatingName {
				validatingConfig = &validating.Webhooks[i].ClientConfig
			}
		}
		if mutatingConfig == nil || validatingConfig == nil || len(validatingConfig.CABundle) == 0 {
			problem = "the DaemonSet webhooks or their caBundle are not written yet"
			return false, nil
		}
		if mutatingConfig.URL == nil || validatingConfig.URL == nil {
			return false, errors.New("the DaemonSet webhooks are configured with a Service, not a URL; the bench calls the URL the API server would")
		}
		urls[webhookMutating], urls[webhookValidating] = *mutatingConfig.URL, *validatingConfig.URL
		caBundle = validatingConfig.CABundle
		return true, nil
	})
	if err != nil && problem != "" {
		err = fmt.Errorf("%w (last seen: %s)", err, problem)
	}
	return urls, caBundle, err
}

// loadWebhook sends total requests of t from len(clients) parallel clients and collects
// what came back. A warm-up fails at any request without a well-formed, allowed answer.
func loadWebhook(ctx context.Context, clients []*http.Client, t webhookTarget, total int, warmup bool) (webhookResult, error) {
	type workerResult struct {
		latencies                  []time.Duration
		rejected, errored, patched int
		firstProblem               string
	}
	perWorker := make([]workerResult, len(clients))
	var next atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for w, client := range clients {
		wg.Go(func() {
			r := &perWorker[w]
			r.latencies = make([]time.Duration, 0, total/len(clients)+1)
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				body, uid := withUID(t.body, w, int(i))
				sent := time.Now()
				ans, err := callWebhook(ctx, client, t.url, body, uid)
				took := time.Since(sent)
				problem := ""
				switch {
				case err != nil:
					r.errored++
					problem = err.Error()
				case !ans.allowed:
					r.rejected++
					problem = "rejected: " + ans.message
				}
				if ans.responded {
					r.latencies = append(r.latencies, took)
				}
				if ans.patched {
					r.patched++
				}
				if problem != "" && r.firstProblem == "" {
					r.firstProblem = problem
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(began)
	if err := ctx.Err(); err != nil {
		return webhookResult{}, err
	}
	res := webhookResult{Webhook: t.name, Requests: total, Clients: len(clients), Wall: wall}
	for _, r := range perWorker {
		res.Latencies = append(res.Latencies, r.latencies...)
		res.Rejected += r.rejected
		res.Errored += r.errored
		res.Patched += r.patched
		if res.FirstProblem == "" {
			res.FirstProblem = r.firstProblem
		}
	}
	slices.Sort(res.Latencies)
	if warmup && res.FirstProblem != "" {
		return webhookResult{}, errors.New(res.FirstProblem)
	}
	return res, nil
}

// answer is what one webhook call returned.
type answer struct {
	// responded is set when an HTTP response was read in full.
	responded bool
	allowed   bool
	patched   bool
	message   string
}

// callWebhook POSTs one AdmissionReview and checks the answer is a well-formed review for
// uid; an error means it was not.
func callWebhook(ctx context.Context, client *http.Client, url string, body []byte, uid string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return answer{}, fmt.Errorf("reading the answer: %w", err)
	}
	ans := answer{responded: true}
	if resp.StatusCode != http.StatusOK {
		return ans, fmt.Errorf("status %d: %.200s", resp.StatusCode, data)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		return ans, fmt.Errorf("decoding the answer: %w", err)
	}
	if review.Response == nil {
		return ans, errors.New("the answer has no response")
	}
	if review.Response.UID != types.UID(uid) {
		return ans, fmt.Errorf("the answer is for UID %q, the request was %q", review.Response.UID, uid)
	}
	ans.allowed = review.Response.Allowed
	ans.patched = len(review.Response.Patch) > 0 && !bytes.Equal(bytes.TrimSpace(review.Response.Patch), []byte("[]"))
	if review.Response.Result != nil {
		ans.message = review.Response.Result.Message
	}
	return ans, nil
}

// admissionReviewBody is the AdmissionReview the API server sends for a CREATE of the
// apps.kruise.io DaemonSet object (its JSON) by an admin, with placeholderUID as UID.
func admissionReviewBody(object []byte) ([]byte, error) {
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(object, &meta); err != nil {
		return nil, err
	}
	kind := metav1.GroupVersionKind{Group: appsv1alpha1.GroupName, Version: "v1alpha1", Kind: "DaemonSet"}
	res := metav1.GroupVersionResource{Group: appsv1alpha1.GroupName, Version: "v1alpha1", Resource: "daemonsets"}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:             placeholderUID,
			Kind:            kind,
			Resource:        res,
			RequestKind:     &kind,
			RequestResource: &res,
			Name:            meta.Metadata.Name,
			Namespace:       meta.Metadata.Namespace,
			Operation:       admissionv1.Create,
			UserInfo:        authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}},
			Object:          runtime.RawExtension{Raw: object},
			DryRun:          ptr.To(false),
			Options:         runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply","fieldValidation":"Strict"}`)},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	if bytes.Count(body, []byte(placeholderUID)) != 1 {
		return nil, errors.New("the AdmissionReview must hold the placeholder UID exactly once")
	}
	return body, nil
}

// withUID returns a copy of body with a UID unique to (worker, i) in place of the
// placeholder, and that UID: every request, like the API server's, has its own.
func withUID(body []byte, worker, i int) ([]byte, string) {
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", worker, i)
	at := bytes.Index(body, []byte(placeholderUID))
	out := slices.Clone(body)
	copy(out[at:], uid)
	return out, uid
}

// typedKruiseDaemonSet sets the type meta the API server's AdmissionReview objects carry.
func typedKruiseDaemonSet(ds *appsv1alpha1.DaemonSet) *appsv1alpha1.DaemonSet {
	ds.APIVersion = appsv1alpha1.SchemeGroupVersion.String()
	ds.Kind = "DaemonSet"
	ds.Namespace = benchNamespace
	return ds
}

// userDaemonSet is a realistic DaemonSet as a user writes it: a node agent with probes,
// resources, host mounts and tolerations, and none of the fields the webhook defaults.
func userDaemonSet() *appsv1alpha1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "node-agent", "app.kubernetes.io/part-of": "observability"}
	maxUnavailable := intstr.FromString(dsMaxUnavailable)
	hostPathType := corev1.HostPathDirectory
	return typedKruiseDaemonSet(&appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "node-agent",
			Labels:      labels,
			Annotations: map[string]string{"deployment.kubernetes.io/owner": "platform-team"},
		},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9100"}},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-node-critical",
					ServiceAccountName: "node-agent",
					HostPID:            true,
					Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:  "agent",
						Image: "quay.io/prometheus/node-exporter:v1.8.2",
						Args:  []string{"--path.rootfs=/host", "--web.listen-address=:9100", "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys)($|/)"},
						Env: []corev1.EnvVar{
							{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							{Name: "GOMAXPROCS", Value: "1"},
						},
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/metrics", Port: intstr.FromString("metrics")}},
							PeriodSeconds: 10,
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "root", MountPath: "/host", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &hostPathType}}}},
				},
			},
		},
	})
}
