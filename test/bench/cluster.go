package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// partCluster measures a whole manager on a large cluster: bosun-controller-manager with
// --controllers=* against upstream kube-controller-manager (its workload controllers and
// garbage collector) and kruise-manager together, which is what bosun replaces.
const partCluster = "cluster"

// The two sides of the cluster part.
const (
	clusterSideBosun = "bosun"
	// clusterSideUpstream is kube-controller-manager plus kruise-manager, measured as one.
	clusterSideUpstream = "upstream+kruise"
)

// kubeControllerManagerLabel names kube-controller-manager among the other side's processes.
const kubeControllerManagerLabel = "kube-controller-manager"

// upstreamClusterControllers are kube-controller-manager's controllers that bosun's
// --controllers=* replaces.
const upstreamClusterControllers = "replicaset,deployment,garbagecollector"

// clusterImage is what the ImagePullJob pulls on every node.
const clusterImage = "registry.example.com/node-cache:1.0"

// clusterOptions are the part's flags.
type clusterOptions struct {
	pods        int
	nodes       int
	idle        time.Duration
	timeout     time.Duration
	stubWorkers int
	sides       []string
	sidesFlag   string
	// rolloutProfile is how long each manager's CPU is profiled from the rollout's start.
	rolloutProfile time.Duration
}

func (o *clusterOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.pods, "bench-pods", 50000, "cluster part: pods in the cluster (DaemonSets over every node, CloneSets, Deployments of mixed sizes)")
	fs.IntVar(&o.nodes, "cluster-nodes", 0, fmt.Sprintf("cluster part: simulated nodes; 0 for one per %d pods (2,000 for 50,000)", podsPerNode))
	fs.DurationVar(&o.idle, "cluster-idle", 5*time.Minute, "cluster part: how long the settled cluster is watched for idle CPU")
	fs.DurationVar(&o.timeout, "cluster-timeout", 60*time.Minute, "cluster part: how long filling the cluster, or rolling every workload, may take")
	fs.IntVar(&o.stubWorkers, "cluster-stub-workers", 64, "cluster part: parallel writers of the node stub (the scheduler and kubelets it plays)")
	fs.DurationVar(&o.rolloutProfile, "cluster-rollout-profile", 0, "cluster part: profile each manager's CPU for this long from the rollout's start, "+
		"into cpu-rollout-<process>.pb.gz in the log directory (a profile costs the process a few percent; 0 for none)")
	fs.StringVar(&o.sidesFlag, "cluster-sides", clusterSideUpstream+","+clusterSideBosun, "cluster part: comma-separated sides: "+
		clusterSideBosun+" (bosun-controller-manager --controllers=* with its webhooks), "+clusterSideUpstream+" (kube-controller-manager --controllers="+
		upstreamClusterControllers+" and kruise-manager v1.9.0 with every OpenKruise CRD, measured together)")
}

func (o *clusterOptions) validate() error {
	var err error
	if o.sides, err = parseNames("--cluster-sides", o.sidesFlag, clusterSideBosun, clusterSideUpstream); err != nil {
		return err
	}
	if o.pods < 1 || o.nodes < 0 || o.stubWorkers < 1 || o.idle < 0 || o.timeout <= 0 || o.rolloutProfile < 0 || o.rolloutProfile%time.Second != 0 {
		return errors.New("--bench-pods and --cluster-stub-workers must be at least 1, --cluster-nodes and --cluster-idle at least 0, --cluster-timeout positive, --cluster-rollout-profile whole seconds, at least 0")
	}
	_, err = planCluster(o.pods, o.nodes)
	return err
}

// processFigures are one process's figures in a cluster run.
type processFigures struct {
	Label string
	// Synced is how long the restarted process took to have synced its caches.
	Synced time.Duration
	// SteadyRSS is its resident set once settled after the restart; HeapInUse its Go heap
	// in use then (go_memstats_heap_inuse_bytes).
	SteadyRSS, HeapInUse uint64
	IdleCPU              float64
	FillCPU, RolloutCPU  float64
	RolloutPeakRSS       uint64
	// CachedPod is what one cached pod holds by the steady heap profile, in bytes; 0 when
	// the profile cannot tell (a process that decodes pods from JSON).
	CachedPod float64
}

// clusterRun is one side's run.
type clusterRun struct {
	Side          string
	Pods, Nodes   int
	Workloads     int
	Fill, Rollout time.Duration
	Synced        time.Duration // the slowest process's
	Processes     []processFigures
	LoadAverage   float64
	// LogDir holds the run's logs and profiles; Profiles is the top of each profile.
	LogDir   string
	Profiles string
}

func (r clusterRun) sum(f func(processFigures) float64) float64 {
	total := 0.0
	for _, p := range r.Processes {
		total += f(p)
	}
	return total
}

// clusterResults are every run of the part, by side.
type clusterResults struct {
	runs map[string][]clusterRun
}

func newClusterResults() *clusterResults { return &clusterResults{runs: map[string][]clusterRun{}} }

func runClusterPart(ctx context.Context, o *options, res *clusterResults, upstreamBinary, logRoot string, rep int) error {
	for _, side := range o.cluster.sides {
		klog.FromContext(ctx).Info("Running the cluster part", "side", side, "pods", o.cluster.pods, "repetition", rep)
		logDir := fmt.Sprintf("%s/cluster-%s-%d", logRoot, strings.ReplaceAll(side, "+", "-"), rep)
		r, err := runClusterSide(ctx, o, side, upstreamBinary, logDir)
		if err != nil {
			return fmt.Errorf("cluster part, %s, run %d: %w", side, rep, err)
		}
		res.runs[side] = append(res.runs[side], r)
	}
	return nil
}

// clusterSide is one side's run in progress.
type clusterSide struct {
	o         *options
	side      string
	cp        *framework.ControlPlane
	client    kubernetes.Interface
	bosun     bosunclientset.Interface
	plan      clusterPlan
	workloads []clusterWorkload
	logDir    string
	// specs are the side's processes; managers the running ones, in the same order.
	specs    []managerSpec
	managers []*manager
}

// runClusterSide fills a fresh cluster with the plan's workloads under the side's
// managers, restarts them to measure their start-up, then measures them settled, idle, and
// rolling every workload.
func runClusterSide(ctx context.Context, o *options, side, upstreamBinary, logDir string) (clusterRun, error) {
	cpOpts := framework.Options{
		BosunCRDs: side == clusterSideBosun,
		// A large cluster's API server: room for the managers' and the stub's requests.
		APIServerArgs: []string{"--max-requests-inflight=1000", "--max-mutating-requests-inflight=500"},
	}
	var run clusterRun
	_, err := withControlPlaneOptions(ctx, logDir, cpOpts, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		plan, _ := planCluster(o.cluster.pods, o.cluster.nodes)
		bosun, err := bosunClientFor(benchClientConfig(cp))
		if err != nil {
			return runResult{}, err
		}
		s := &clusterSide{o: o, side: side, cp: cp, client: client, bosun: bosun, plan: plan, workloads: plan.workloads(), logDir: logDir}
		run, err = s.run(ctx, upstreamBinary)
		return runResult{}, err
	})
	return run, err
}

func (s *clusterSide) run(ctx context.Context, upstreamBinary string) (clusterRun, error) {
	logger := klog.FromContext(ctx)
	run := clusterRun{Side: s.side, Pods: s.plan.pods(), Nodes: s.plan.nodes, Workloads: len(s.workloads), LogDir: s.logDir}
	nodes, err := s.prepare(ctx)
	if err != nil {
		return run, err
	}
	standIns, err := startStandIns(ctx, s.cp, nodes, s.o.cluster.stubWorkers)
	if err != nil {
		return run, err
	}
	defer standIns.stop()

	if s.specs, err = s.managerSpecs(upstreamBinary); err != nil {
		return run, err
	}
	if err := s.startManagers(ctx, "fill"); err != nil {
		return run, err
	}
	defer s.stopManagers()
	// Every node's NodeImage, which the managers make, exists in a real cluster long before
	// an ImagePullJob; a job created before them would find no node to pull on.
	if err := s.waitForNodeImages(ctx); err != nil {
		return run, err
	}

	// Fill: every workload created at once, as a cluster restored from a backup.
	fill, err := s.measure(ctx, &run.Fill, func(ctx context.Context) error {
		if err := s.createAll(ctx); err != nil {
			return err
		}
		return s.waitSettled(ctx, "v1", "the cluster to fill")
	})
	if err != nil {
		return run, err
	}
	logger.Info("Filled the cluster", "side", s.side, "pods", run.Pods, "took", run.Fill.Round(time.Second))

	// Start-up: the managers restarted on the full cluster, timed until their caches synced.
	s.stopManagers()
	synced, err := s.startManagersTimed(ctx)
	if err != nil {
		return run, err
	}
	time.Sleep(30 * time.Second) // their first syncs of every object, then steady
	if run.Processes, err = s.steady(ctx, synced); err != nil {
		return run, err
	}
	for i := range run.Processes {
		run.Processes[i].FillCPU = fill[i].CPUSeconds
		run.Synced = max(run.Synced, synced[i])
	}

	run.LoadAverage = loadAverage()
	var idleFor time.Duration
	idle, err := s.measure(ctx, &idleFor, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.o.cluster.idle):
			return nil
		}
	})
	if err != nil {
		return run, err
	}

	profiled := s.profileRollout(ctx)
	rolled, err := s.measure(ctx, &run.Rollout, func(ctx context.Context) error {
		if err := s.rollAll(ctx, "v2"); err != nil {
			return err
		}
		return s.waitSettled(ctx, "v2", "every workload to roll")
	})
	profiled()
	if err != nil {
		return run, err
	}
	for i := range run.Processes {
		p := &run.Processes[i]
		p.IdleCPU, p.RolloutCPU, p.RolloutPeakRSS = idle[i].CPUSeconds, rolled[i].CPUSeconds, rolled[i].PeakRSS
	}
	for _, m := range s.managers {
		if err := m.checkAlive(); err != nil {
			return run, err
		}
	}
	if err := standIns.check(ctx); err != nil {
		return run, err
	}
	// The profiles are read once everything is measured: `go tool pprof` on a large heap
	// takes seconds of CPU that must not fall into the idle window or the rollout.
	for i := range run.Processes {
		p := &run.Processes[i]
		if p.CachedPod, _, err = cachedPodBytes(ctx, heapProfilePath(s.logDir, p.Label), run.Pods); err != nil {
			return run, fmt.Errorf("reading what a cached pod holds in %s: %w", p.Label, err)
		}
	}
	if run.Profiles, err = profileTops(ctx, run); err != nil {
		return run, err
	}
	logger.Info("Measured the cluster", "side", s.side, "synced", run.Synced.Round(time.Millisecond), "rollout", run.Rollout.Round(time.Second))
	return run, nil
}

// prepare installs what the side's managers need besides the control plane (kruise-manager:
// every OpenKruise CRD, as its installation applies them), the namespaces and the simulated
// nodes, whose names it returns.
func (s *clusterSide) prepare(ctx context.Context) ([]string, error) {
	if s.side == clusterSideUpstream {
		if err := framework.InstallKruiseManifests(ctx, s.cp.Config()); err != nil {
			return nil, err
		}
	}
	for i := range clusterNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace(i)}}
		if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	return createNodes(ctx, benchClientConfig(s.cp), s.plan.nodes)
}

// measure runs work and returns what each of the side's processes used meanwhile, setting
// took to how long work ran.
func (s *clusterSide) measure(ctx context.Context, took *time.Duration, work func(context.Context) error) ([]usage, error) {
	meters, err := s.startMeters()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	err = work(ctx)
	*took = time.Since(began)
	used, stopErr := stopMeters(meters)
	return used, errors.Join(err, stopErr)
}

// steady reads each process's figures once it has settled after its restart: its resident
// set, a heap profile into the log directory, and its Go heap in use right after the
// garbage collection that profile asked for.
func (s *clusterSide) steady(ctx context.Context, synced []time.Duration) ([]processFigures, error) {
	figures := make([]processFigures, len(s.managers))
	for i, m := range s.managers {
		p := &figures[i]
		p.Label, p.Synced = s.specs[i].Label, synced[i]
		var err error
		if p.SteadyRSS, err = currentRSS(m.Pid()); err != nil {
			return nil, err
		}
		// gc=1 collects before profiling, so that the heap in use read after it is what the
		// process keeps, not how much garbage it happened to carry at that moment.
		heap := heapProfilePath(s.logDir, p.Label)
		if err := m.profiler(s.cp.Config().BearerToken, 0, s.logDir).fetch(ctx, "/debug/pprof/heap?gc=1", heap); err != nil {
			return nil, fmt.Errorf("collecting garbage in %s before reading its heap: %w", p.Label, err)
		}
		if p.HeapInUse, err = s.heapInUse(m); err != nil {
			return nil, err
		}
	}
	return figures, nil
}

// profileRollout starts a CPU profile of every manager over --cluster-rollout-profile and
// returns a function that waits for them. A profile that cannot be fetched is logged: it
// explains figures, it is none.
func (s *clusterSide) profileRollout(ctx context.Context) (wait func()) {
	seconds := int(s.o.cluster.rolloutProfile / time.Second)
	if seconds == 0 {
		return func() {}
	}
	var wg sync.WaitGroup
	for i, m := range s.managers {
		path := rolloutProfilePath(s.logDir, s.specs[i].Label)
		wg.Go(func() {
			if err := m.profiler(s.cp.Config().BearerToken, seconds, s.logDir).fetch(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), path); err != nil {
				klog.FromContext(ctx).Error(err, "No CPU profile of the rollout", "process", s.specs[i].Label)
			}
		})
	}
	return wg.Wait
}

// standIns play what the bench has no real process for: the scheduler and the kubelets of
// the simulated nodes (a node stub over every namespace) and their node agents' image pulls.
type standIns struct {
	stub     *nodeStub
	agentErr chan error
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func startStandIns(ctx context.Context, cp *framework.ControlPlane, nodes []string, stubWorkers int) (*standIns, error) {
	// Their writes are charged to the simulated agents, as in the other parts.
	config := benchClientConfig(cp)
	config.UserAgent = agentUserAgent
	stubClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the node stub's client: %w", err)
	}
	agentClient, err := bosunClientFor(config)
	if err != nil {
		return nil, err
	}
	s := &standIns{stub: newNodeStub(stubClient, metav1.NamespaceAll, nodes), agentErr: make(chan error, 1)}
	agents := newSimulatedAgents(agentClient, 200*time.Millisecond)
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.wg.Go(func() { s.stub.run(runCtx, stubWorkers) })
	s.wg.Go(func() { s.agentErr <- agents.run(runCtx, 64) })
	if err := s.stub.waitForCache(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// check fails if the agents stopped with an error, and logs the stub's retried writes.
func (s *standIns) check(ctx context.Context) error {
	select {
	case err := <-s.agentErr:
		if err != nil {
			return fmt.Errorf("the simulated node agents: %w", err)
		}
	default:
	}
	if errs := s.stub.errors(); len(errs) > 0 {
		klog.FromContext(ctx).Info("The node stub retried writes", "errors", len(errs), "first", errs[0].Error())
	}
	return nil
}

func (s *standIns) stop() {
	s.cancel()
	s.wg.Wait()
}

// managerSpecs are the side's processes.
func (s *clusterSide) managerSpecs(upstreamBinary string) ([]managerSpec, error) {
	o := s.o
	if s.side == clusterSideUpstream {
		kcm := upstreamManager(upstreamBinary, s.cp, kubeControllerManagerLabel, upstreamClusterControllers, o.limits, o.verbosity)
		kruise, err := kruiseManager(o, s.cp, partCluster, o.limits, framework.KruiseControllersOfBosunKinds...)
		if err != nil {
			return nil, err
		}
		kruise.Kruise.Pprof = true // for the heap profile; unused otherwise
		return []managerSpec{kcm, kruise}, nil
	}
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return nil, err
	}
	opts := o.limits.options("*", o.verbosity)
	opts.Webhooks, opts.WebhookPort = true, ports[0]
	opts.ExtraArgs = []string{"--webhook-bind-address=127.0.0.1"}
	return []managerSpec{{
		Label:     "bosun-controller-manager",
		Path:      o.bosunBinary,
		Args:      framework.BosunControllerManagerArgs(s.cp, opts),
		ReadyPath: "/readyz",
	}}, nil
}

func (s *clusterSide) startManagers(ctx context.Context, phase string) error {
	s.managers = nil
	logDir := filepath.Join(s.logDir, phase)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", logDir, err)
	}
	for _, spec := range s.specs {
		m, err := startManager(ctx, spec, logDir)
		if err != nil {
			s.stopManagers()
			return err
		}
		s.managers = append(s.managers, m)
	}
	return nil
}

// startManagersTimed starts the side's processes at once on the filled cluster and returns
// how long each took to have synced its caches: bosun until it serves (/healthz and
// /readyz, which hold its controllers' informers and its webhooks'), the others until the
// log line that says so (see syncedMarkers), by the line's own time.
func (s *clusterSide) startManagersTimed(ctx context.Context) ([]time.Duration, error) {
	logDir := filepath.Join(s.logDir, "restarted")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", logDir, err)
	}
	synced := make([]time.Duration, len(s.specs))
	managers := make([]*manager, len(s.specs))
	errs := make([]error, len(s.specs))
	var wg sync.WaitGroup
	for i, spec := range s.specs {
		wg.Go(func() {
			began := time.Now()
			m, err := startManager(ctx, spec, logDir)
			if err != nil {
				errs[i] = err
				return
			}
			managers[i] = m
			at := time.Now()
			if markers := syncedMarkers(spec); markers != nil {
				at, err = loggedAt(ctx, m, s.o.cluster.timeout, markers, began)
			}
			synced[i], errs[i] = at.Sub(began), err
		})
	}
	wg.Wait()
	for _, m := range managers {
		if m != nil {
			s.managers = append(s.managers, m)
		}
	}
	return synced, errors.Join(errs...)
}

// syncedMarkers are the log lines that together say a manager has synced its caches; nil
// for bosun, whose /healthz and /readyz say it. kube-controller-manager's garbage collector
// watches every resource through the informers its ReplicaSet and Deployment controllers
// share (their own "Caches are synced" lines do not name them); kruise-manager's
// controllers start their workers once their caches synced.
func syncedMarkers(spec managerSpec) []string {
	switch {
	case spec.Kruise != nil:
		var markers []string
		for _, c := range spec.Kruise.WaitForControllers {
			markers = append(markers, `"msg"="Starting workers" "controller"="`+c+`"`)
		}
		return markers
	case spec.ReadyPath == "":
		return []string{syncedMessage}
	}
	return nil
}

// loggedAt waits until the manager's log holds a line with each of markers and returns the
// time of the latest of those lines. It reads only what the log gained since its last look.
func loggedAt(ctx context.Context, m *manager, timeout time.Duration, markers []string, ref time.Time) (time.Time, error) {
	scanner := &logScanner{path: m.LogPath()}
	seen := map[string]time.Time{}
	var last time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		lines, err := scanner.next()
		if err != nil {
			return false, err
		}
		var ok bool
		last, ok, err = markersLoggedAt(lines, markers, seen, ref)
		return ok, err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("waiting for %s to log %q: %w\nthe end of its log:\n%s", m.Name(), markers, err, m.LogTail(20))
	}
	return last, nil
}

// markersLoggedAt records in seen, for each of markers not seen before, the time of the
// first of lines that holds it, and returns the latest of those times once every marker has
// been seen (ok is false until then).
func markersLoggedAt(lines, markers []string, seen map[string]time.Time, ref time.Time) (last time.Time, ok bool, err error) {
	for _, line := range lines {
		for _, marker := range markers {
			if _, done := seen[marker]; done || !strings.Contains(line, marker) {
				continue
			}
			at, found := logLineTime(line, ref)
			if !found {
				return time.Time{}, false, fmt.Errorf("no time in the log line %q", line)
			}
			seen[marker] = at
		}
	}
	for _, marker := range markers {
		at, done := seen[marker]
		if !done {
			return time.Time{}, false, nil
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true, nil
}

func (s *clusterSide) stopManagers() {
	for _, m := range s.managers {
		m.Stop(framework.DefaultStopGracePeriod)
	}
	s.managers = nil
}

func (s *clusterSide) startMeters() ([]*meter, error) {
	var meters []*meter
	for _, m := range s.managers {
		mt, err := startMeter(m.Pid())
		if err != nil {
			_, _ = stopMeters(meters)
			return nil, err
		}
		meters = append(meters, mt)
	}
	return meters, nil
}

func stopMeters(meters []*meter) ([]usage, error) {
	var out []usage
	var errs []error
	for _, m := range meters {
		u, err := m.Stop()
		out = append(out, u)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// heapInUse reads go_memstats_heap_inuse_bytes from the manager's /metrics.
func (s *clusterSide) heapInUse(m *manager) (uint64, error) {
	metrics, err := m.Metrics(s.cp.Config().BearerToken)
	if err != nil {
		return 0, err
	}
	value, ok := framework.MetricValue(metrics, "go_memstats_heap_inuse_bytes")
	if !ok {
		return 0, fmt.Errorf("%s exposes no go_memstats_heap_inuse_bytes", m.Name())
	}
	f, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return 0, fmt.Errorf("reading go_memstats_heap_inuse_bytes %q of %s: %w", value, m.Name(), err)
	}
	return uint64(f), nil
}

// createAll creates every workload, its budget, and the ImagePullJob, from parallel clients.
func (s *clusterSide) createAll(ctx context.Context) error {
	_, err := inParallelOver(ctx, s.workloads, 16, func(ctx context.Context, w clusterWorkload) error {
		if err := s.create(ctx, w); err != nil {
			return err
		}
		if !w.budget {
			return nil
		}
		budget := &policyv1beta1.PodUnavailableBudget{
			ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: w.namespace},
			Spec: policyv1beta1.PodUnavailableBudgetSpec{
				TargetReference: &policyv1beta1.TargetReference{APIVersion: w.apiVersion(), Kind: w.kind, Name: w.name},
				MaxUnavailable:  ptr.To(intstr.FromString(budgetMaxUnavailable)),
			},
		}
		if _, err := s.bosun.PolicyV1beta1().PodUnavailableBudgets(w.namespace).Create(ctx, budget, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the budget of %s %s/%s: %w", w.kind, w.namespace, w.name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	job := newBenchImagePullJob(max(s.plan.nodes/10, 1))
	job.Namespace, job.Spec.Image = clusterNamespace(0), clusterImage
	if _, err := s.bosun.AppsV1alpha1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ImagePullJob: %w", err)
	}
	return nil
}

func (w clusterWorkload) apiVersion() string {
	if w.kind == kindDeployment {
		return "apps/v1"
	}
	return appsv1beta1.SchemeGroupVersion.String()
}

func (s *clusterSide) create(ctx context.Context, w clusterWorkload) error {
	template := clusterPodTemplate(w.name, "v1")
	selector := &metav1.LabelSelector{MatchLabels: benchLabels(w.name)}
	var err error
	switch w.kind {
	case kindDaemonSet:
		ds := &appsv1beta1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: w.name},
			Spec: appsv1beta1.DaemonSetSpec{
				Selector: selector,
				Template: template,
				UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
					Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
					RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
						Type:           appsv1beta1.StandardRollingUpdateType,
						MaxUnavailable: ptr.To(intstr.FromString("10%")),
						MaxSurge:       ptr.To(intstr.FromInt32(0)),
					},
				},
			},
		}
		_, err = s.bosun.AppsV1beta1().DaemonSets(w.namespace).Create(ctx, ds, metav1.CreateOptions{})
	case kindCloneSet:
		cs := newBenchCloneSet(w.name, w.replicas, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, "", false)
		cs.Spec.Template = template
		_, err = s.bosun.AppsV1beta1().CloneSets(w.namespace).Create(ctx, cs, metav1.CreateOptions{})
	case kindDeployment:
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: w.name},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(w.replicas), Selector: selector, Template: template},
		}
		_, err = s.client.AppsV1().Deployments(w.namespace).Create(ctx, d, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", w.kind, w.namespace, w.name, err)
	}
	return nil
}

// rollAll changes every workload's image tag to tag at once: a recreate rollout of the
// Deployments and DaemonSets, an in-place one of the CloneSets.
func (s *clusterSide) rollAll(ctx context.Context, tag string) error {
	_, err := inParallelOver(ctx, s.workloads, 16, func(ctx context.Context, w clusterWorkload) error {
		patch := []byte(fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`,
			"registry.example.com/"+w.name+":"+tag))
		var err error
		switch w.kind {
		case kindDaemonSet:
			_, err = s.bosun.AppsV1beta1().DaemonSets(w.namespace).Patch(ctx, w.name, types.JSONPatchType, patch, metav1.PatchOptions{})
		case kindCloneSet:
			_, err = s.bosun.AppsV1beta1().CloneSets(w.namespace).Patch(ctx, w.name, types.JSONPatchType, patch, metav1.PatchOptions{})
		case kindDeployment:
			_, err = s.client.AppsV1().Deployments(w.namespace).Patch(ctx, w.name, types.JSONPatchType, patch, metav1.PatchOptions{})
		}
		if err != nil {
			return fmt.Errorf("rolling %s %s/%s: %w", w.kind, w.namespace, w.name, err)
		}
		return nil
	})
	return err
}

// waitSettled waits until every workload reports all its pods updated to tag and
// available, and the ImagePullJob has succeeded on every node.
func (s *clusterSide) waitSettled(ctx context.Context, tag, what string) error {
	pending := s.workloads
	lastLog := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, s.o.cluster.timeout, true, func(ctx context.Context) (bool, error) {
		var still []clusterWorkload
		for _, w := range pending {
			done, err := s.settled(ctx, w, tag)
			if err != nil {
				return false, err
			}
			if !done {
				still = append(still, w)
			}
		}
		pending = still
		if time.Since(lastLog) > 30*time.Second {
			lastLog = time.Now()
			klog.FromContext(ctx).Info("Waiting", "for", what, "workloadsLeft", len(pending))
		}
		if len(pending) > 0 {
			return false, nil
		}
		return s.imagePulled(ctx)
	})
	if err != nil {
		desc := "none"
		if len(pending) > 0 {
			desc = fmt.Sprintf("%d, the first %s %s/%s", len(pending), pending[0].kind, pending[0].namespace, pending[0].name)
		}
		return fmt.Errorf("waiting for %s: %w (workloads not settled: %s)", what, err, desc)
	}
	return nil
}

func (s *clusterSide) settled(ctx context.Context, w clusterWorkload, tag string) (bool, error) {
	image := "registry.example.com/" + w.name + ":" + tag
	switch w.kind {
	case kindDaemonSet:
		ds, err := s.bosun.AppsV1beta1().DaemonSets(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, n := ds.Status, int32(s.plan.nodes)
		return ds.Spec.Template.Spec.Containers[0].Image == image && st.ObservedGeneration == ds.Generation &&
			st.DesiredNumberScheduled == n && st.UpdatedNumberScheduled == n && st.NumberAvailable == n && st.CurrentNumberScheduled == n, nil
	case kindCloneSet:
		cs, err := s.bosun.AppsV1beta1().CloneSets(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := cs.Status
		return cs.Spec.Template.Spec.Containers[0].Image == image && st.ObservedGeneration == cs.Generation &&
			st.Replicas == w.replicas && st.UpdatedAvailableReplicas == w.replicas && st.AvailableReplicas == w.replicas, nil
	default:
		d, err := s.client.AppsV1().Deployments(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := d.Status
		return d.Spec.Template.Spec.Containers[0].Image == image && st.ObservedGeneration == d.Generation &&
			st.Replicas == w.replicas && st.UpdatedReplicas == w.replicas && st.AvailableReplicas == w.replicas, nil
	}
}

// waitForNodeImages waits until every node has its NodeImage.
func (s *clusterSide) waitForNodeImages(ctx context.Context) error {
	var have int
	err := wait.PollUntilContextTimeout(ctx, time.Second, s.o.cluster.timeout, true, func(ctx context.Context) (bool, error) {
		list, err := s.bosun.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		have = len(list.Items)
		return have >= s.plan.nodes, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the managers to make a NodeImage for each of %d nodes (%d so far): %w", s.plan.nodes, have, err)
	}
	return nil
}

// imagePulled reports whether the ImagePullJob succeeded on every node.
func (s *clusterSide) imagePulled(ctx context.Context) (bool, error) {
	job, err := s.bosun.AppsV1alpha1().ImagePullJobs(clusterNamespace(0)).Get(ctx, ipjName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return job.Status.Succeeded == int32(s.plan.nodes) && job.Status.CompletionTime != nil, nil
}
