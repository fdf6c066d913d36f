package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The pub part's scenarios. Both evict the same pods; only the budget differs.
const (
	// pubRoomy's budget admits every eviction: the headline throughput and latency of an
	// admitted eviction, which spends the budget with a status write.
	pubRoomy = "roomy"
	// pubTight's budget admits --pub-tight-allowed evictions and denies the rest: how fast a
	// denial is answered while a few admissions write the budget.
	pubTight = "tight"
	// pubNone has no budget at all: the floor the API server sets for 200 concurrent
	// evictions on the machine and, for bosun, the cost of its webhook alone (it is called
	// for every eviction and allows an untagged pod at once).
	pubNone = "none"
)

const (
	// bosunPUBController and upstreamPDBController are the --controllers of either manager
	// in the pub part: the controller that keeps the budget's status and nothing else.
	bosunPUBController    = "podunavailablebudget-controller"
	upstreamPDBController = "disruption"

	pubBudgetName = "bench-budget"
	pubApp        = "pub-bench"
	// pubEvictionWebhook is the name of bosun's webhook that answers evictions; its
	// bosun_webhook_request_duration_seconds series carries it as the webhook label.
	pubEvictionWebhook    = "vpodeviction.kb.io"
	webhookDurationMetric = "bosun_webhook_request_duration_seconds"
	// pubPodCreateClients create, and mark Ready, the pods before the budget exists.
	pubPodCreateClients = 32
)

// pubBudget is what a scenario's budget must allow before the burst: Pods pods, Desired of
// which must stay available, so Allowed = Pods − Desired evictions may pass.
type pubBudget struct {
	Pods, Desired, Allowed int
}

// pubScenarioBudget sizes a scenario's budget for evictions concurrent evictions. There is
// always one pod more than evictions: the roomy budget then admits every eviction while
// still protecting that pod (desired 1). With as many pods as evictions, admitting all of
// them needs desired 0, and a budget of 0 is no budget: bosun's webhook allows without
// spending anything (no status write), while the API server's eviction path still
// decrements its PodDisruptionBudget, so the two would not be doing the same work.
func pubScenarioBudget(scenario string, evictions, tightAllowed int) pubBudget {
	pods := evictions + 1
	switch scenario {
	case pubTight:
		allowed := min(tightAllowed, evictions)
		return pubBudget{Pods: pods, Desired: pods - allowed, Allowed: allowed}
	case pubNone:
		return pubBudget{Pods: pods, Allowed: evictions}
	}
	return pubBudget{Pods: pods, Desired: 1, Allowed: evictions}
}

// evictionAnswer is what one eviction request got.
type evictionAnswer struct {
	// Took runs from sending the request to having read its answer; Done from the burst's
	// release to having read it.
	Took, Done time.Duration
	// Code is the HTTP status; 0 when no response was read (a transport error).
	Code    int
	Message string
}

func (a evictionAnswer) admitted() bool { return a.Code >= 200 && a.Code < 300 }

// pubBurst is one side's figures for one scenario in one repetition.
type pubBurst struct {
	Scenario, Manager string
	Budget            pubBudget
	Evictions         int
	// Latencies are every answer's, AdmittedLatencies and DeniedLatencies those of the
	// admitted (2xx) and the other answers; all sorted.
	Latencies, AdmittedLatencies, DeniedLatencies []time.Duration
	Admitted                                      int
	// Codes counts answers by HTTP status (0: no response); Messages holds the first
	// message of each status that is not 2xx.
	Codes    map[int]int
	Messages map[int]string
	// Wall runs from the release to the last answer; LastAdmitted to the last 2xx.
	Wall, LastAdmitted time.Duration
	// Remaining is the number of pods left, not being deleted, after the burst.
	Remaining int
	// Webhook is the change of the eviction webhook's histogram over the burst (bosun and
	// kruise-manager; upstream has no webhook).
	Webhook *histogram
	// CPU is the CPU time over the burst by process: the manager, kube-apiserver and etcd.
	CPU map[string]float64
	// LoadAverage is the machine's one-minute load average (/proc/loadavg) just before the burst.
	LoadAverage float64
}

// summarizeBurst fills the figures a burst's answers give.
func summarizeBurst(b *pubBurst, answers []evictionAnswer) {
	b.Evictions = len(answers)
	b.Codes, b.Messages = map[int]int{}, map[int]string{}
	b.Latencies, b.AdmittedLatencies, b.DeniedLatencies, b.Admitted, b.Wall, b.LastAdmitted = nil, nil, nil, 0, 0, 0
	for _, a := range answers {
		b.Latencies = append(b.Latencies, a.Took)
		b.Codes[a.Code]++
		b.Wall = max(b.Wall, a.Done)
		if a.admitted() {
			b.Admitted++
			b.AdmittedLatencies = append(b.AdmittedLatencies, a.Took)
			b.LastAdmitted = max(b.LastAdmitted, a.Done)
			continue
		}
		b.DeniedLatencies = append(b.DeniedLatencies, a.Took)
		if _, seen := b.Messages[a.Code]; !seen {
			b.Messages[a.Code] = a.Message
		}
	}
	slices.Sort(b.Latencies)
	slices.Sort(b.AdmittedLatencies)
	slices.Sort(b.DeniedLatencies)
}

// admittedPerSecond is the throughput of admitted evictions over the whole burst.
func (b pubBurst) admittedPerSecond() float64 {
	if b.Wall <= 0 {
		return 0
	}
	return float64(b.Admitted) / b.Wall.Seconds()
}

// problems lists what makes the burst's outcome wrong, not just slow: more evictions
// admitted than the budget allowed, pods gone that no admitted eviction removed (or the
// other way round), and, for bosun and kruise-manager, evictions that never reached the
// webhook.
func (b pubBurst) problems() []string {
	var out []string
	if b.Admitted > b.Budget.Allowed {
		out = append(out, fmt.Sprintf("%d evictions admitted, the budget allowed %d", b.Admitted, b.Budget.Allowed))
	}
	if want := b.Budget.Pods - b.Admitted; b.Remaining != want {
		out = append(out, fmt.Sprintf("%d pods left after %d admitted evictions of %d pods, want %d", b.Remaining, b.Admitted, b.Budget.Pods, want))
	}
	if b.Webhook != nil && int(b.Webhook.count()) != b.Evictions {
		out = append(out, fmt.Sprintf("the eviction webhook answered %.0f requests for %d evictions", b.Webhook.count(), b.Evictions))
	}
	return out
}

// pubResults are the pub part's bursts by scenario and manager, over the repetitions.
type pubResults struct {
	bursts map[string]map[string][]pubBurst
}

func newPUBResults() *pubResults {
	return &pubResults{bursts: map[string]map[string][]pubBurst{}}
}

func (r *pubResults) add(b pubBurst) {
	if r.bursts[b.Scenario] == nil {
		r.bursts[b.Scenario] = map[string][]pubBurst{}
	}
	r.bursts[b.Scenario][b.Manager] = append(r.bursts[b.Scenario][b.Manager], b)
}

// runPUBPart runs one repetition of the pub part: each chosen manager on its own fresh
// control plane, every chosen scenario in its own namespace there.
func runPUBPart(ctx context.Context, o *options, res *pubResults, upstreamBinary, logRoot string, rep int) error {
	for _, name := range o.pubManagers {
		klog.FromContext(ctx).Info("Running the eviction budget part", "manager", name, "evictions", o.pubEvictions, "repetition", rep)
		logDir := fmt.Sprintf("%s/pub-%s-%d", logRoot, name, rep)
		opts := framework.Options{BosunCRDs: true}
		if name == managerKruise {
			opts = framework.Options{}
		}
		_, err := withControlPlaneOptions(ctx, logDir, opts, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
			if name == managerKruise {
				// OpenKruise's PodUnavailableBudget CRD (see installKruise): kruise-manager
				// runs the controller of every installed CRD, so the others stay idle.
				if err := installKruise(ctx, o, cp, "PodUnavailableBudget"); err != nil {
					return runResult{}, err
				}
			}
			bursts, err := runPUBSide(ctx, o, cp, client, name, upstreamBinary, logDir)
			for _, b := range bursts {
				res.add(b)
			}
			return runResult{}, err
		})
		if err != nil {
			return fmt.Errorf("pub %s, run %d: %w", name, rep, err)
		}
	}
	return nil
}

// kruisePUBController is kruise-manager's PodUnavailableBudget controller, whose workers the
// bench waits for.
const kruisePUBController = "podunavailablebudget-controller"

// pubManager runs bosun with the budget controller and its webhooks on a free loopback
// port, upstream with the PodDisruptionBudget controller, or kruise-manager, which runs its
// budget controller and pod webhooks because only its PodUnavailableBudget CRD is installed.
// bosun's CRDs are installed for bosun and upstream, so that their API servers are
// configured alike.
func pubManager(o *options, name, upstreamBinary string, cp *framework.ControlPlane) (managerSpec, error) {
	switch name {
	case managerUpstream:
		return upstreamManager(upstreamBinary, cp, "kube-controller-manager", upstreamPDBController, o.limits, o.verbosity), nil
	case managerKruise:
		return kruiseManager(o, cp, partPUB, o.limits, kruisePUBController)
	}
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return managerSpec{}, err
	}
	opts := o.limits.options(bosunPUBController, o.verbosity)
	opts.Webhooks, opts.WebhookPort = true, ports[0]
	opts.ExtraArgs = []string{"--webhook-bind-address=127.0.0.1"}
	return managerSpec{
		Label:     "bosun-controller-manager",
		Path:      o.bosunBinary,
		Args:      framework.BosunControllerManagerArgs(cp, opts),
		ReadyPath: "/readyz",
	}, nil
}

// runPUBSide runs every scenario against one manager.
func runPUBSide(ctx context.Context, o *options, cp *framework.ControlPlane, client kubernetes.Interface, name, upstreamBinary, logDir string) ([]pubBurst, error) {
	spec, err := pubManager(o, name, upstreamBinary, cp)
	if err != nil {
		return nil, err
	}
	m, err := startManager(ctx, spec, logDir)
	if err != nil {
		return nil, err
	}
	defer m.Stop(framework.DefaultStopGracePeriod)
	time.Sleep(settleTime)
	driver, err := newBudgetDriver(name, cp, client)
	if err != nil {
		return nil, err
	}
	var bursts []pubBurst
	for _, scenario := range o.pubScenarios {
		b, err := runPUBScenario(ctx, o, cp, client, m, driver, name, scenario, logDir)
		if aliveErr := m.checkAlive(); aliveErr != nil {
			return bursts, aliveErr
		}
		if err != nil {
			return bursts, fmt.Errorf("scenario %s: %w\nthe end of the %s log:\n%s", scenario, err, spec.Label, m.LogTail(20))
		}
		bursts = append(bursts, b)
	}
	return bursts, nil
}

// runPUBScenario creates the scenario's pods and budget in a namespace of its own, waits
// until the budget's status is computed, fires the burst and checks its outcome.
func runPUBScenario(ctx context.Context, o *options, cp *framework.ControlPlane, client kubernetes.Interface, m *manager, driver budgetDriver,
	name, scenario, logDir string) (pubBurst, error) {
	logger := klog.FromContext(ctx).WithValues("manager", name, "scenario", scenario)
	budget := pubScenarioBudget(scenario, o.pubEvictions, o.pubTightAllowed)
	namespace := "pub-" + scenario
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return pubBurst{}, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	names, err := createReadyPods(ctx, benchClientConfig(cp), namespace, budget.Pods)
	if err != nil {
		return pubBurst{}, err
	}
	if scenario == pubNone {
		driver = noBudget{}
	}
	if err := driver.create(ctx, namespace, budget); err != nil {
		return pubBurst{}, err
	}
	var problem string
	err = framework.WaitFor(ctx, o.timeout, fmt.Sprintf("the budget in %s to allow %d evictions", namespace, budget.Allowed), func(ctx context.Context) (bool, error) {
		var err error
		problem, err = driver.notReady(ctx, namespace, budget)
		return problem == "", err
	})
	if err != nil {
		if problem != "" {
			err = fmt.Errorf("%w (last seen: %s)", err, problem)
		}
		return pubBurst{}, err
	}
	// The status is written; let the manager finish whatever the tagging and the first
	// syncs left behind before the burst.
	time.Sleep(settleTime)

	clients, err := evictionClients(ctx, benchClientConfig(cp), namespace, names[:o.pubEvictions])
	if err != nil {
		return pubBurst{}, err
	}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()

	token := cp.Config().BearerToken
	var before *histogram
	if name != managerUpstream {
		h, err := scrapeEvictionHistogram(m, name, token)
		if err != nil {
			return pubBurst{}, err
		}
		before = &h
	}
	meters := map[string]*meter{}
	processes := map[string]int{m.Name(): m.Pid()}
	for _, p := range cp.Processes() {
		processes[p.Name()] = p.Pid()
	}
	for label, pid := range processes {
		mt, err := startMeter(pid)
		if err != nil {
			for _, started := range meters {
				_, _ = started.Stop()
			}
			return pubBurst{}, err
		}
		meters[label] = mt
	}
	finishProfile := func() error { return nil }
	if o.profileSeconds > 0 {
		finishManager := m.profiler(token, o.profileSeconds, logDir).start(ctx, "pub "+scenario)
		finishProfile = finishManager
		// The API server does most of the work of an eviction on either side: profile it too.
		if apiServer, port, err := apiServerProcess(cp); err != nil {
			logger.Error(err, "Not profiling kube-apiserver")
		} else {
			finishServer := newProfiler(apiServer, securePort(port), token, o.profileSeconds, logDir).start(ctx, "pub "+scenario+" kube-apiserver")
			finishProfile = func() error { return errors.Join(finishManager(), finishServer()) }
		}
	}
	load := loadAverage()

	answers, err := fireEvictions(ctx, clients)

	cpu := map[string]float64{}
	for label, mt := range meters {
		used, stopErr := mt.Stop()
		if stopErr != nil && err == nil {
			err = stopErr
		}
		cpu[label] = used.CPUSeconds
	}
	if profileErr := finishProfile(); profileErr != nil {
		logger.Error(profileErr, "Profiling failed")
	}
	if err != nil {
		return pubBurst{}, err
	}
	b := pubBurst{Scenario: scenario, Manager: name, Budget: budget, CPU: cpu, LoadAverage: load}
	summarizeBurst(&b, answers)
	if before != nil {
		after, err := scrapeEvictionHistogram(m, name, token)
		if err != nil {
			return pubBurst{}, err
		}
		delta, err := after.minus(*before)
		if err != nil {
			return pubBurst{}, err
		}
		b.Webhook = &delta
	}
	// Pods without a node are deleted at once, so an admitted eviction has removed its pod
	// by the time it is answered.
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + pubApp})
	if err != nil {
		return pubBurst{}, fmt.Errorf("listing the pods left in %s: %w", namespace, err)
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			b.Remaining++
		}
	}
	keys := []any{"admitted", b.Admitted, "allowed", budget.Allowed, "evictions", b.Evictions,
		"p50", percentile(b.Latencies, 50), "p99", percentile(b.Latencies, 99), "max", percentile(b.Latencies, 100),
		"wall", b.Wall.Round(time.Millisecond), "admittedPerSecond", int(b.admittedPerSecond()), "codes", b.Codes, "remaining", b.Remaining,
		"loadAverage", load}
	if b.Webhook != nil {
		p50, _ := b.Webhook.quantile(0.50)
		p99, _ := b.Webhook.quantile(0.99)
		keys = append(keys, "webhookP50", p50, "webhookP99", p99)
	}
	logger.Info("Measured the eviction burst", keys...)
	for code, message := range b.Messages {
		logger.Info("An eviction was not admitted", "code", code, "first", message)
	}
	for _, p := range b.problems() {
		logger.Info("The burst went wrong", "problem", p)
	}
	return b, nil
}

// createReadyPods creates n plain pods labelled app=pub-bench in namespace and marks each
// Running and Ready, as a kubelet would. They have no node: without a kubelet, only an
// unbound pod is deleted at once (a bound one would wait for its kubelet to confirm), so an
// admitted eviction removes its pod before it is answered. No owner either: the budgets
// are sized without one (see pubScenarioBudget and the drivers).
func createReadyPods(ctx context.Context, config *rest.Config, namespace string, n int) ([]string, error) {
	names := make([]string, n)
	took, err := inParallel(ctx, config, n, pubPodCreateClients, func(ctx context.Context, client kubernetes.Interface, i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", pubApp, i), Labels: benchLabels(pubApp)},
			Spec:       podTemplate(pubApp).Spec,
		}
		created, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		if _, err := framework.SetPodRunning(ctx, client, namespace, created.Name, true, time.Time{}); err != nil {
			return err
		}
		names[i] = created.Name
		return nil
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Created the Ready pods", "namespace", namespace, "pods", n, "took", took.Round(time.Millisecond))
	return names, nil
}

// apiServerProcess returns the pid and secure port of cp's kube-apiserver.
func apiServerProcess(cp *framework.ControlPlane) (pid, port int, err error) {
	u, err := url.Parse(cp.Host())
	if err != nil {
		return 0, 0, fmt.Errorf("parsing the API server's address %q: %w", cp.Host(), err)
	}
	port, err = strconv.Atoi(u.Port())
	if err != nil {
		return 0, 0, fmt.Errorf("the API server's address %q has no port", cp.Host())
	}
	for _, p := range cp.Processes() {
		if p.Name() == "kube-apiserver" {
			return p.Pid(), port, nil
		}
	}
	return 0, 0, errors.New("the control plane has no kube-apiserver process")
}

// budgetDriver creates one side's budget and says when its status is ready for the burst.
type budgetDriver interface {
	create(ctx context.Context, namespace string, budget pubBudget) error
	// notReady says what the status still lacks; "" when it allows exactly budget.Allowed
	// evictions of budget.Pods Ready pods.
	notReady(ctx context.Context, namespace string, budget pubBudget) (string, error)
}

func newBudgetDriver(manager string, cp *framework.ControlPlane, client kubernetes.Interface) (budgetDriver, error) {
	if manager == managerUpstream {
		return &pdbDriver{client: client}, nil
	}
	// Custom resources have no protobuf encoding.
	config := benchClientConfig(cp)
	config.ContentType = runtime.ContentTypeJSON
	if manager == managerKruise {
		dynamicClient, err := dynamic.NewForConfig(config)
		if err != nil {
			return nil, fmt.Errorf("creating a dynamic client: %w", err)
		}
		return &storedVersionPUBDriver{client: client, dynamic: dynamicClient}, nil
	}
	bosun, err := bosunclientset.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the policy.kruise.io client: %w", err)
	}
	return &pubDriver{client: client, bosun: bosun}, nil
}

// noBudget is the none scenario's: nothing to create, nothing to wait for.
type noBudget struct{}

func (noBudget) create(context.Context, string, pubBudget) error { return nil }

func (noBudget) notReady(context.Context, string, pubBudget) (string, error) { return "", nil }

// pubDriver drives a policy.kruise.io/v1alpha1 PodUnavailableBudget.
type pubDriver struct {
	client kubernetes.Interface
	bosun  bosunclientset.Interface
}

// newBenchPUB selects the pods by label. Their expected count cannot come from an owner
// (they have none, and a selector budget adds nothing for pods without one), so
// pub.kruise.io/protect-total-replicas states it; maxUnavailable is then an absolute
// count, and desiredAvailable = total − maxUnavailable.
func newBenchPUB(budget pubBudget) *policyv1alpha1.PodUnavailableBudget {
	maxUnavailable := intstr.FromInt32(int32(budget.Allowed))
	return &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pubBudgetName,
			Annotations: map[string]string{policyv1alpha1.PubProtectTotalReplicasAnnotation: strconv.Itoa(budget.Pods)},
		},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: benchLabels(pubApp)},
			MaxUnavailable: &maxUnavailable,
		},
	}
}

func (d *pubDriver) create(ctx context.Context, namespace string, budget pubBudget) error {
	if _, err := d.bosun.PolicyV1alpha1().PodUnavailableBudgets(namespace).Create(ctx, newBenchPUB(budget), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PodUnavailableBudget %s: %w", pubBudgetName, err)
	}
	return nil
}

// notReady also wants every pod tagged with the budget: the webhook charges only tagged
// pods, so an untagged one would be evicted for free.
func (d *pubDriver) notReady(ctx context.Context, namespace string, budget pubBudget) (string, error) {
	pub, err := d.bosun.PolicyV1alpha1().PodUnavailableBudgets(namespace).Get(ctx, pubBudgetName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading PodUnavailableBudget %s: %w", pubBudgetName, err)
	}
	s := pub.Status
	if s.ObservedGeneration < pub.Generation || int(s.TotalReplicas) != budget.Pods || int(s.DesiredAvailable) != budget.Desired ||
		int(s.CurrentAvailable) != budget.Pods || int(s.UnavailableAllowed) != budget.Allowed {
		return fmt.Sprintf("status %+v, generation %d", s, pub.Generation), nil
	}
	return podsUntagged(ctx, d.client, namespace, budget)
}

// podsUntagged says how many of the scenario's pods do not yet carry the budget's name in
// either related-pub annotation ("" when all do): the eviction webhooks of bosun and
// kruise-manager charge only tagged pods, so an untagged one would be evicted for free.
func podsUntagged(ctx context.Context, client kubernetes.Interface, namespace string, budget pubBudget) (string, error) {
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + pubApp})
	if err != nil {
		return "", fmt.Errorf("listing pods: %w", err)
	}
	untagged := 0
	for _, pod := range pods.Items {
		if pod.Annotations[policyv1alpha1.PodRelatedPubAnnotationNew] != pubBudgetName && pod.Annotations[policyv1alpha1.PodRelatedPubAnnotation] != pubBudgetName {
			untagged++
		}
	}
	if untagged > 0 || len(pods.Items) != budget.Pods {
		return fmt.Sprintf("%d of %d pods not tagged with the budget", untagged, len(pods.Items)), nil
	}
	return "", nil
}

// kruiseStoragePUBs is policy.kruise.io/v1beta1, the version OpenKruise v1.9 stores
// PodUnavailableBudgets in and its controller reads.
var kruiseStoragePUBs = schema.GroupVersionResource{Group: "policy.kruise.io", Version: "v1beta1", Resource: "podunavailablebudgets"}

// storedVersionPUBDriver drives kruise-manager's budget in v1beta1. OpenKruise v1.9's CRD
// converts between versions without a webhook (only the apiVersion changes), and its
// controller reads spec.protectTotalReplicas, which v1beta1 has in place of v1alpha1's
// pub.kruise.io/protect-total-replicas annotation; a v1alpha1 budget with the annotation
// would count the bench's ownerless pods as expecting none. The budget is otherwise the same
// as bosun's: the same selector and maxUnavailable.
type storedVersionPUBDriver struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
}

// newKruisePUB is newBenchPUB in v1beta1: the expected count is spec.protectTotalReplicas.
func newKruisePUB(budget pubBudget) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kruiseStoragePUBs.GroupVersion().String(),
		"kind":       "PodUnavailableBudget",
		"metadata":   map[string]any{"name": pubBudgetName},
		"spec": map[string]any{
			"selector":             map[string]any{"matchLabels": map[string]any{"app": pubApp}},
			"maxUnavailable":       int64(budget.Allowed),
			"protectTotalReplicas": int64(budget.Pods),
		},
	}}
}

func (d *storedVersionPUBDriver) create(ctx context.Context, namespace string, budget pubBudget) error {
	if _, err := d.dynamic.Resource(kruiseStoragePUBs).Namespace(namespace).Create(ctx, newKruisePUB(budget), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PodUnavailableBudget %s: %w", pubBudgetName, err)
	}
	return nil
}

func (d *storedVersionPUBDriver) notReady(ctx context.Context, namespace string, budget pubBudget) (string, error) {
	pub, err := d.dynamic.Resource(kruiseStoragePUBs).Namespace(namespace).Get(ctx, pubBudgetName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading PodUnavailableBudget %s: %w", pubBudgetName, err)
	}
	status := map[string]int64{}
	for _, field := range []string{"observedGeneration", "totalReplicas", "desiredAvailable", "currentAvailable", "unavailableAllowed"} {
		v, _, err := unstructured.NestedInt64(pub.Object, "status", field)
		if err != nil {
			return "", fmt.Errorf("reading status.%s of PodUnavailableBudget %s: %w", field, pubBudgetName, err)
		}
		status[field] = v
	}
	if status["observedGeneration"] < pub.GetGeneration() || int(status["totalReplicas"]) != budget.Pods ||
		int(status["desiredAvailable"]) != budget.Desired || int(status["currentAvailable"]) != budget.Pods ||
		int(status["unavailableAllowed"]) != budget.Allowed {
		return fmt.Sprintf("status %v, generation %d", status, pub.GetGeneration()), nil
	}
	return podsUntagged(ctx, d.client, namespace, budget)
}

// pdbDriver drives a policy/v1 PodDisruptionBudget.
type pdbDriver struct {
	client kubernetes.Interface
}

// newBenchPDB selects the same pods. A percentage or maxUnavailable would make the
// disruption controller look up the pods' scalable owner, which they lack; minAvailable as a
// count needs none, so it states desiredHealthy directly.
func newBenchPDB(budget pubBudget) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(int32(budget.Desired))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: pubBudgetName},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:     &metav1.LabelSelector{MatchLabels: benchLabels(pubApp)},
			MinAvailable: &minAvailable,
		},
	}
}

func (d *pdbDriver) create(ctx context.Context, namespace string, budget pubBudget) error {
	if _, err := d.client.PolicyV1().PodDisruptionBudgets(namespace).Create(ctx, newBenchPDB(budget), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PodDisruptionBudget %s: %w", pubBudgetName, err)
	}
	return nil
}

func (d *pdbDriver) notReady(ctx context.Context, namespace string, budget pubBudget) (string, error) {
	pdb, err := d.client.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, pubBudgetName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading PodDisruptionBudget %s: %w", pubBudgetName, err)
	}
	s := pdb.Status
	if s.ObservedGeneration < pdb.Generation || int(s.ExpectedPods) != budget.Pods || int(s.DesiredHealthy) != budget.Desired ||
		int(s.CurrentHealthy) != budget.Pods || int(s.DisruptionsAllowed) != budget.Allowed {
		return fmt.Sprintf("status observedGeneration %d expected %d desired %d current %d allowed %d, generation %d",
			s.ObservedGeneration, s.ExpectedPods, s.DesiredHealthy, s.CurrentHealthy, s.DisruptionsAllowed, pdb.Generation), nil
	}
	return "", nil
}

// evictionClient evicts one pod over a connection of its own.
type evictionClient struct {
	pod       string
	namespace string
	rest      rest.Interface
	close     func()
}

// evictionClients builds one client per pod, each with its own transport and so its own
// TLS connection (as separate drains or controllers would have), and opens it with a GET of
// its pod, unmeasured.
func evictionClients(ctx context.Context, config *rest.Config, namespace string, pods []string) ([]*evictionClient, error) {
	clients := make([]*evictionClient, 0, len(pods))
	for _, pod := range pods {
		c := rest.CopyConfig(config)
		// A custom dialer keeps client-go from sharing one cached transport between
		// clients of the same configuration.
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		c.Dial = dialer.DialContext
		httpClient, err := rest.HTTPClientFor(c)
		if err != nil {
			return nil, err
		}
		clientset, err := kubernetes.NewForConfigAndClient(c, httpClient)
		if err != nil {
			return nil, err
		}
		clients = append(clients, &evictionClient{
			pod: pod, namespace: namespace,
			// The policy/v1 client encodes the Eviction, as client-go's Evict does.
			rest:  clientset.PolicyV1().RESTClient(),
			close: httpClient.CloseIdleConnections,
		})
	}
	_, err := inParallelOver(ctx, clients, pubPodCreateClients, func(ctx context.Context, c *evictionClient) error {
		return c.rest.Get().AbsPath("/api/v1").Namespace(c.namespace).Resource("pods").Name(c.pod).Do(ctx).Error()
	})
	if err != nil {
		for _, c := range clients {
			c.close()
		}
		return nil, fmt.Errorf("opening the eviction clients' connections: %w", err)
	}
	return clients, nil
}

// inParallelOver calls do for every item from workers parallel goroutines and returns how
// long that took and the first error.
func inParallelOver[T any](ctx context.Context, items []T, workers int, do func(context.Context, T) error) (time.Duration, error) {
	work := make(chan T)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	began := time.Now()
	for range min(workers, len(items)) {
		wg.Go(func() {
			for item := range work {
				if err := do(ctx, item); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, item := range items {
		work <- item
	}
	close(work)
	wg.Wait()
	return time.Since(began), first
}

// fireEvictions has every client POST the eviction of its pod at the same moment and
// returns the answers. client-go's own retries are off: a 429 or a 5xx with Retry-After
// would otherwise be retried inside the measured call.
func fireEvictions(ctx context.Context, clients []*evictionClient) ([]evictionAnswer, error) {
	answers := make([]evictionAnswer, len(clients))
	release := make(chan struct{})
	var began time.Time
	var ready, done sync.WaitGroup
	ready.Add(len(clients))
	for i, c := range clients {
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: c.pod, Namespace: c.namespace}}
		done.Go(func() {
			req := c.rest.Post().AbsPath("/api/v1").Namespace(c.namespace).Resource("pods").Name(c.pod).
				SubResource("eviction").Body(eviction).MaxRetries(0)
			ready.Done()
			<-release
			sent := time.Now()
			result := req.Do(ctx)
			took := time.Since(sent)
			a := evictionAnswer{Took: took, Done: time.Since(began)}
			result.StatusCode(&a.Code)
			if err := result.Error(); err != nil {
				a.Message = err.Error()
				var status apierrors.APIStatus
				if a.Code == 0 && errors.As(err, &status) {
					a.Code = int(status.Status().Code)
				}
			}
			answers[i] = a
		})
	}
	ready.Wait()
	began = time.Now()
	close(release)
	done.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return answers, nil
}

// kruiseWebhookDurationMetric is controller-runtime's webhook latency histogram, which
// kruise-manager serves; its webhook label is the handler's path, and kruise-manager answers
// evictions (vpodeviction.kb.io) and pod updates and deletes (vpod.kb.io) on one path.
const (
	kruiseWebhookDurationMetric = "controller_runtime_webhook_latency_seconds"
	kruisePodValidatingPath     = "/validate-pod"
)

// scrapeEvictionHistogram reads the eviction webhook's latency histogram from the manager's
// /metrics: bosun's vpodeviction.kb.io series, or kruise-manager's /validate-pod one. Before
// the first request there is no series, which is an empty histogram.
func scrapeEvictionHistogram(m *manager, name, token string) (histogram, error) {
	metrics, err := m.Metrics(token)
	if err != nil {
		return histogram{}, err
	}
	if name == managerKruise {
		return parseHistogram(metrics, kruiseWebhookDurationMetric, "webhook", kruisePodValidatingPath)
	}
	return parseHistogram(metrics, webhookDurationMetric, "webhook", pubEvictionWebhook)
}

// histogram is one series of a Prometheus histogram: the upper bounds of its buckets
// ("le", +Inf last) and their cumulative counts.
type histogram struct {
	Bounds []float64
	Counts []float64
}

// parseHistogram reads the buckets of the series of name whose label has value from a
// Prometheus text exposition. No such series is an empty histogram.
func parseHistogram(exposition, name, label, value string) (histogram, error) {
	var h histogram
	prefix := name + "_bucket{"
	for line := range strings.Lines(exposition) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			return histogram{}, fmt.Errorf("malformed line %q", line)
		}
		labels, err := parseLabels(line[len(prefix):end])
		if err != nil {
			return histogram{}, fmt.Errorf("line %q: %w", line, err)
		}
		if labels[label] != value {
			continue
		}
		le, ok := labels["le"]
		if !ok {
			return histogram{}, fmt.Errorf("line %q has no le label", line)
		}
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return histogram{}, fmt.Errorf("line %q: le: %w", line, err)
		}
		count, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return histogram{}, fmt.Errorf("line %q: value: %w", line, err)
		}
		h.Bounds = append(h.Bounds, bound)
		h.Counts = append(h.Counts, count)
	}
	for i := 1; i < len(h.Bounds); i++ {
		if h.Bounds[i] <= h.Bounds[i-1] || h.Counts[i] < h.Counts[i-1] {
			return histogram{}, fmt.Errorf("the buckets of %s{%s=%q} are not in increasing order", name, label, value)
		}
	}
	return h, nil
}

// minus returns the buckets' change since earlier, a scrape of the same series. An empty
// earlier (the series did not exist yet) counts as all zero.
func (h histogram) minus(earlier histogram) (histogram, error) {
	if len(earlier.Bounds) == 0 {
		return histogram{Bounds: slices.Clone(h.Bounds), Counts: slices.Clone(h.Counts)}, nil
	}
	if !slices.Equal(h.Bounds, earlier.Bounds) {
		return histogram{}, errors.New("the histogram's buckets changed between scrapes")
	}
	out := histogram{Bounds: slices.Clone(h.Bounds), Counts: make([]float64, len(h.Counts))}
	for i := range h.Counts {
		out.Counts[i] = h.Counts[i] - earlier.Counts[i]
		if out.Counts[i] < 0 {
			return histogram{}, errors.New("the histogram went backwards between scrapes (did the manager restart?)")
		}
	}
	return out, nil
}

// count is the number of observations: the +Inf bucket's.
func (h histogram) count() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// quantile estimates the q-quantile (0 < q ≤ 1) the way Prometheus' histogram_quantile
// does: find the bucket that holds the rank, and interpolate linearly inside it, the first
// bucket starting at 0. A rank in the +Inf bucket answers the largest finite bound. ok is
// false without observations.
func (h histogram) quantile(q float64) (time.Duration, bool) {
	total := h.count()
	if total == 0 {
		return 0, false
	}
	rank := q * total
	for i, cumulative := range h.Counts {
		if cumulative < rank {
			continue
		}
		upper := h.Bounds[i]
		if math.IsInf(upper, 1) {
			if i == 0 {
				return 0, true
			}
			return seconds2Duration(h.Bounds[i-1]), true
		}
		lower, below := 0.0, 0.0
		if i > 0 {
			lower, below = h.Bounds[i-1], h.Counts[i-1]
		}
		inBucket := cumulative - below
		if inBucket == 0 {
			return seconds2Duration(upper), true
		}
		return seconds2Duration(lower + (upper-lower)*(rank-below)/inBucket), true
	}
	return seconds2Duration(h.Bounds[len(h.Bounds)-1]), true
}

func seconds2Duration(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}

// loadAverage is the one-minute load average, 0 when it cannot be read.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	return parseLoadAverage(string(data))
}

// parseLoadAverage reads the first field of /proc/loadavg; 0 when malformed.
func parseLoadAverage(loadavg string) float64 {
	fields := strings.Fields(loadavg)
	if len(fields) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0
	}
	return v
}
