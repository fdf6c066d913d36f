// Command bench measures bosun-controller-manager against upstream kube-controller-manager
// (built by hack/build-test-servers.sh from k8s.io/kubernetes at the same version) and, for
// bosun's OpenKruise controllers, against OpenKruise's own kruise-manager (v1.9.0, built by
// hack/build-kruise.sh from the Go module proxy) on the same workloads: scale a ReplicaSet
// from 0 to 5,000 pods, create a 1,000-replica Deployment and roll it once, and delete both.
// Each manager gets a fresh etcd + kube-apiserver with the same flags, the same client rate
// limits and the equivalent controllers, its own garbage collector among them, so the delete
// workloads measure bosun's collector against upstream's. For every workload it reports the
// wall time and the measured manager's CPU time and peak RSS.
//
// A second part runs bosun without client-side rate limits and compares its scale-up with
// the API server's own ceiling: the same number of pods created by N parallel clients.
//
// A third part ("gc") measures the garbage collectors alone: bosun-controller-manager and
// upstream kube-controller-manager, each with --controllers=garbagecollector only, on a fresh
// control plane that the benchmark fills itself. It cascade-deletes a ReplicaSet of 5,000
// pods at the usual client limits and without them (against a raw baseline: the same pods
// deleted by N parallel clients), and starts the collector on a cluster of 50,000 owned
// ConfigMaps and Secrets plus 5,000 pods to measure how long its monitors take to sync, its
// peak RSS and its Go heap per graph node.
//
// A fourth part ("daemonset") measures the DaemonSet controllers alone: bosun's Advanced
// DaemonSet (apps.kruise.io/v1alpha1, --controllers=advanced-daemonset-controller),
// kruise-manager's (the same API, with only the OpenKruise CRDs it needs for it, so that its
// other controllers idle) and upstream's (apps/v1, --controllers=daemonset), each creating a
// DaemonSet over 1,000 simulated nodes and rolling its image once with maxUnavailable 10%,
// at the given client limits and, as a second row set, with each binary's own defaults. A
// fifth ("webhook") measures the admission latency of bosun's two DaemonSet webhooks under
// 50 parallel clients that POST AdmissionReviews straight to the manager's webhook port.
//
// A sixth ("pub") measures eviction budgets: bosun's PodUnavailableBudget
// (--controllers=podunavailablebudget-controller with its pod webhooks) and kruise-manager's
// (with the OpenKruise CRDs its budget controller needs) against the API server's own PodDisruptionBudget check
// (upstream --controllers=disruption), each with --pub-evictions (200) concurrent evictions of
// Ready pods under a budget that allows them all, one that allows a few, and none (the API
// server's floor): client-side latency, admitted evictions per second, and the eviction
// webhook's histogram.
//
// A seventh ("imagepulljob") measures the ImagePullJob fan-out of bosun and kruise-manager
// (with its NodeImage and ImagePullJob CRDs; upstream has no such API): one ImagePullJob over
// --imagepulljob-nodes (500) simulated NodeImages, the node agents' status writes played by
// the bench, with bosun-controller-manager --controllers=imagepulljob,nodeimage and its
// webhooks: time to completion, the manager's CPU-seconds, and its API writes per node from
// the API server's audit log.
//
// An eighth ("conversion") measures CRD version conversion, bosun alone (upstream has no such
// API; kruise-manager's webhook cannot share a control plane with bosun's CRDs): reviews of
// --conversion-objects (500) apps.kruise.io/v1alpha1 DaemonSets of 20 KiB POSTed straight to
// bosun-controller-manager's /convert as the API server sends them, up to v1beta1 and back,
// and a LIST of --conversion-list-objects (5,000) DaemonSets stored in v1beta1, read in
// v1alpha1 against the same LIST in v1beta1, whole and paginated, with kube-apiserver's watch
// cache (v1alpha1 is served from its own cache, converted as objects are written) and without
// it (every object of a v1alpha1 LIST goes through that webhook).
//
// A ninth ("cloneset") measures the CloneSet controllers: bosun's
// (--cloneset-bosun-controllers, the CloneSet and pod-readiness controllers, with its
// webhooks) and kruise-manager's (with the OpenKruise CRDs its CloneSet controller needs),
// and upstream's ReplicaSet controller on the rows it has a counterpart for, all at
// --cloneset-kube-api-qps and --cloneset-kube-api-burst (50 and 100) with --cloneset-workers
// (3) workers, set explicitly, on fresh control planes with an audit log and simulated nodes
// whose scheduler and kubelets a node stub in the bench plays (binding, Running, container
// statuses with imageIDs, Ready by the readiness gates, final deletes). Rows: create with
// --cloneset-small (100) and --cloneset-large (1,000) replicas until the status counts
// them, the small one with a claim template, an in-place image update of both
// (maxUnavailable 20%) and a recreate rollout of the small one (maxSurge 25%) until every
// replica is updated and available, and the API writes per minute of --cloneset-steady-sets
// (50) settled CloneSets of --cloneset-steady-replicas (20) pods. It reports wall time,
// manager CPU-seconds, peak RSS and API requests from the audit log (writes to pods per pod
// for the rollouts) as p50 and p95 over --cloneset-runs (5) runs, which --repeat does not
// change.
//
// `make bench` runs it; it is not part of `make test`, and its figures are recorded in
// docs/benchmarks.md. It prints a Markdown report and writes it to _output/bench/results.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The parts of a benchmark (--runs): the two managers on the full workloads, bosun without
// client limits against the raw baseline, and the two garbage collectors alone.
const (
	managerBosun    = "bosun"
	managerUpstream = "upstream"
	partUnlimited   = "unlimited"
	partGC          = "gc"
	partDaemonSet   = "daemonset"
	partWebhook     = "webhook"
	partPUB         = "pub"
)

// defaultControllers is the --controllers list of both measured managers in the side-by-side
// workloads: each runs its own garbage collector, which removes the pods of deleted objects.
const defaultControllers = "replicaset,deployment,garbagecollector"

const benchNamespace = "bench"

// options are the command-line flags.
type options struct {
	limits               clientLimits
	unlimited            clientLimits
	rsReplicas           int
	deployReplicas       int
	baselineClients      []int
	runs                 []string
	bosunControllers     string
	upstreamControllers  string
	readierWorkers       int
	repeat               int
	verbosity            int
	timeout              time.Duration
	bosunBinary          string
	outDir               string
	profileSeconds       int
	gcPods               int
	gcObjects            int
	gcManagers           []string
	gcCreateClients      int
	daemonSetNodes       int
	daemonSetManagers    []string
	daemonSetLimits      []string
	daemonSetWebhooks    bool
	webhookRequests      int
	webhookClients       int
	pubEvictions         int
	pubTightAllowed      int
	pubManagers          []string
	pubScenarios         []string
	imagePullJob         imagePullJobOptions
	imagePullJobManagers []string
	conversion           conversionOptions
	cloneSet             cloneSetOptions
	cluster              clusterOptions
	kruiseFeatureGates   string
	kruiseCRDs           string
}

func parseFlags() (*options, error) {
	o := &options{}
	klog.InitFlags(nil)
	flag.Float64Var(&o.limits.QPS, "kube-api-qps", 500, "--kube-api-qps of both measured managers (in every part but the runs without client limits)")
	flag.IntVar(&o.limits.Burst, "kube-api-burst", 500, "--kube-api-burst of both measured managers (in every part but the runs without client limits)")
	flag.Float64Var(&o.unlimited.QPS, "unlimited-qps", 1e6, "--kube-api-qps of the managers in the runs without client limits; "+
		"bosun rejects 0 and negative values, and a token bucket this large never makes a client wait")
	flag.IntVar(&o.unlimited.Burst, "unlimited-burst", 1e6, "--kube-api-burst of the managers in the runs without client limits")
	flag.IntVar(&o.rsReplicas, "replicaset-replicas", 5000, "replicas the ReplicaSet is scaled to")
	flag.IntVar(&o.deployReplicas, "deployment-replicas", 1000, "replicas of the Deployment")
	clients := flag.String("baseline-clients", "8,32,128", "comma-separated numbers of parallel clients for the raw baselines "+
		"(pod creation for the unlimited part, pod deletion for the gc part)")
	runs := flag.String("runs", "upstream,bosun,unlimited,gc,daemonset,webhook,pub,imagepulljob,conversion,cloneset", "comma-separated parts to run: upstream, bosun (the side-by-side workloads), "+
		"unlimited (bosun without client limits against the raw baseline), gc (the garbage collectors alone: cascade delete, "+
		"with and without client limits, and a large cluster's sync and memory), daemonset (the DaemonSet controllers alone: "+
		"create and roll a DaemonSet over --daemonset-nodes simulated nodes), webhook (admission latency of bosun's DaemonSet webhooks), "+
		"pub (concurrent evictions under bosun's PodUnavailableBudget against upstream's PodDisruptionBudget), "+
		"imagepulljob (bosun alone: one ImagePullJob over --imagepulljob-nodes simulated NodeImages), "+
		"conversion (bosun's /convert answering large ConversionReviews, and DaemonSet LISTs through it against LISTs of the stored version), "+
		"cloneset (the CloneSet controllers of bosun and kruise-manager, and upstream's ReplicaSet controller, at --cloneset-kube-api-qps: "+
		"scale, in-place and recreate rollouts, and the writes of a steady state; --cloneset-runs runs), "+
		"cluster (not run by default: an hour at 50,000 pods; bosun --controllers=* against kube-controller-manager plus kruise-manager on "+
		"--bench-pods pods over simulated nodes: start-up, steady memory, idle CPU and a rolling update of every workload)")
	flag.StringVar(&o.bosunControllers, "bosun-controllers", defaultControllers, "--controllers of bosun-controller-manager in the side-by-side "+
		"workloads and the unlimited part; its garbage collector removes the pods of the deleted objects")
	flag.StringVar(&o.upstreamControllers, "upstream-controllers", defaultControllers, "--controllers of the measured upstream "+
		"kube-controller-manager in the side-by-side workloads; its garbage collector removes the pods of the deleted objects")
	flag.IntVar(&o.gcPods, "gc-pods", 5000, "gc part: pods of the cascade-deleted ReplicaSet, and pods in the large cluster")
	flag.IntVar(&o.gcObjects, "gc-objects", 50000, fmt.Sprintf("gc part: owned ConfigMaps and Secrets (half each, 1-4 KiB of data) in the "+
		"large cluster, besides one owner ConfigMap per %d of them and the --gc-pods pods", gcDependentsPerOwner))
	gcManagers := flag.String("gc-managers", "upstream,bosun", "gc part: comma-separated collectors to run: upstream "+
		"(kube-controller-manager --controllers=garbagecollector), bosun (bosun-controller-manager --controllers=garbagecollector)")
	flag.IntVar(&o.gcCreateClients, "gc-create-clients", 64, "gc part: parallel clients that create the objects before a collector starts")
	flag.IntVar(&o.daemonSetNodes, "daemonset-nodes", 1000, "daemonset part: simulated nodes (Ready, untainted, no kubelet) the DaemonSet runs on")
	dsManagers := flag.String("daemonset-managers", "upstream,bosun,kruise", "daemonset part: comma-separated managers to run: upstream "+
		"(kube-controller-manager --controllers=daemonset, apps/v1), bosun (bosun-controller-manager --controllers=advanced-daemonset-controller, "+
		"apps.kruise.io/v1alpha1), kruise (kruise-manager v1.9.0 with the OpenKruise CRDs its DaemonSet controller needs, see --kruise-crds)")
	dsLimits := flag.String("daemonset-client-limits", "given,defaults", "daemonset part: comma-separated client-limit settings to run every "+
		"manager with: given (--kube-api-qps and --kube-api-burst), defaults (no rate-limit flag at all: each binary's own defaults)")
	flag.BoolVar(&o.daemonSetWebhooks, "daemonset-webhooks", true, "daemonset part: bosun serves its admission webhooks, as it does by default "+
		"(the DaemonSet is written fully defaulted either way); false runs it with --webhook-port=0")
	flag.IntVar(&o.webhookRequests, "webhook-requests", 20000, "webhook part: measured requests per webhook (mutating and validating)")
	flag.IntVar(&o.webhookClients, "webhook-clients", 50, "webhook part: parallel clients, each with its own TLS connection")
	flag.IntVar(&o.pubEvictions, "pub-evictions", 200, "pub part: concurrent evictions, one client each, of as many Ready pods (plus one pod the budget keeps)")
	flag.IntVar(&o.pubTightAllowed, "pub-tight-allowed", 5, "pub part: evictions the tight scenario's budget allows")
	pubManagers := flag.String("pub-managers", "upstream,bosun,kruise", "pub part: comma-separated sides to run: upstream "+
		"(kube-controller-manager --controllers=disruption, a PodDisruptionBudget), bosun (bosun-controller-manager "+
		"--controllers=podunavailablebudget-controller with its webhooks, a PodUnavailableBudget), kruise (kruise-manager v1.9.0 with "+
		"the OpenKruise CRDs its budget controller needs, see --kruise-crds)")
	pubScenarios := flag.String("pub-scenarios", "none,roomy,tight", "pub part: comma-separated scenarios: none (no budget: the API "+
		"server's floor, and bosun's webhook alone), roomy (the budget allows every eviction), tight (it allows --pub-tight-allowed)")
	o.imagePullJob.register(flag.CommandLine)
	o.conversion.register(flag.CommandLine)
	o.cloneSet.register(flag.CommandLine)
	o.cluster.register(flag.CommandLine)
	kruiseCRDs := flag.String("kruise-crds", kruiseCRDsNeeded, "OpenKruise CRDs installed for kruise-manager: needed (the part's kinds and "+
		"those kruise-manager cannot run them without, so that its other controllers and pod webhooks idle), all (every OpenKruise CRD, as its "+
		"installation applies them: every controller runs, and its pod webhooks are called)")
	ipjManagers := flag.String("imagepulljob-managers", "bosun,kruise", "imagepulljob part: comma-separated managers to run: bosun "+
		"(bosun-controller-manager --controllers=imagepulljob,nodeimage with its webhooks), kruise (kruise-manager v1.9.0 with OpenKruise's "+
		"NodeImage and ImagePullJob CRDs, see --kruise-crds)")
	flag.StringVar(&o.kruiseFeatureGates, "kruise-feature-gates", "", "--feature-gates of kruise-manager in every part; by default "+
		"its own defaults, which equal bosun's for the gates the compared controllers consult, and "+kruiseImagePullJobGates+" in the imagepulljob "+
		"part (on in bosun by default, off in kruise-manager). OpenKruise's CI uses "+framework.KruiseCIFeatureGates)
	flag.IntVar(&o.readierWorkers, "readier-workers", 32, "parallel writers of the helper that marks pods Ready (the same in every run)")
	flag.IntVar(&o.repeat, "repeat", 3, "how often every part runs; the report shows the median of each figure")
	flag.IntVar(&o.verbosity, "manager-v", 2, "--v of every controller manager")
	flag.DurationVar(&o.timeout, "workload-timeout", 5*time.Minute, "how long one workload may take before the benchmark fails")
	flag.StringVar(&o.bosunBinary, "bosun-binary", "", "bosun-controller-manager to measure (default <repo>/_output/bin/bosun-controller-manager, from `make build`)")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 0, "when above 0, take a CPU profile of this many seconds from the start of "+
		"every workload, and a heap profile at its end, from each measured manager's /debug/pprof into the log directory; "+
		"profiling slows the manager, so such figures are for finding hot spots, not for the record")
	flag.StringVar(&o.outDir, "out", "", "directory for results.md and the process logs (default <repo>/_output/bench)")
	flag.Parse()

	var err error
	for _, field := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--baseline-clients: %q is not a positive number", field)
		}
		o.baselineClients = append(o.baselineClients, n)
	}
	for _, run := range strings.Split(*runs, ",") {
		switch run = strings.TrimSpace(run); run {
		case managerUpstream, managerBosun, partUnlimited, partGC, partDaemonSet, partWebhook, partPUB, partImagePullJob, partConversion, partCloneSet, partCluster:
			o.runs = append(o.runs, run)
		default:
			return nil, fmt.Errorf("--runs: unknown part %q", run)
		}
	}
	for _, name := range strings.Split(*gcManagers, ",") {
		switch name = strings.TrimSpace(name); name {
		case managerUpstream, managerBosun:
			o.gcManagers = append(o.gcManagers, name)
		default:
			return nil, fmt.Errorf("--gc-managers: unknown collector %q", name)
		}
	}
	if o.daemonSetManagers, err = parseNames("--daemonset-managers", *dsManagers, managerUpstream, managerBosun, managerKruise); err != nil {
		return nil, err
	}
	if o.daemonSetLimits, err = parseNames("--daemonset-client-limits", *dsLimits, limitsGiven, limitsDefaults); err != nil {
		return nil, err
	}
	if o.pubManagers, err = parseNames("--pub-managers", *pubManagers, managerUpstream, managerBosun, managerKruise); err != nil {
		return nil, err
	}
	if o.imagePullJobManagers, err = parseNames("--imagepulljob-managers", *ipjManagers, managerBosun, managerKruise); err != nil {
		return nil, err
	}
	crds, err := parseNames("--kruise-crds", *kruiseCRDs, kruiseCRDsNeeded, kruiseCRDsAll)
	if err != nil || len(crds) != 1 {
		return nil, fmt.Errorf("--kruise-crds: one of %s, %s", kruiseCRDsNeeded, kruiseCRDsAll)
	}
	o.kruiseCRDs = crds[0]
	for _, name := range strings.Split(*pubScenarios, ",") {
		switch name = strings.TrimSpace(name); name {
		case pubRoomy, pubTight, pubNone:
			o.pubScenarios = append(o.pubScenarios, name)
		default:
			return nil, fmt.Errorf("--pub-scenarios: unknown scenario %q", name)
		}
	}
	if o.pubEvictions < 1 || o.pubTightAllowed < 0 {
		return nil, fmt.Errorf("--pub-evictions must be at least 1, --pub-tight-allowed at least 0")
	}
	if o.daemonSetNodes < 1 || o.webhookRequests < 1 || o.webhookClients < 1 {
		return nil, fmt.Errorf("--daemonset-nodes, --webhook-requests and --webhook-clients must be at least 1")
	}
	if err := o.imagePullJob.validate(); err != nil {
		return nil, err
	}
	if err := o.conversion.validate(); err != nil {
		return nil, err
	}
	if err := o.cloneSet.validate(); err != nil {
		return nil, err
	}
	if o.wants(partCluster) {
		if err := o.cluster.validate(); err != nil {
			return nil, err
		}
	}
	if o.repeat < 1 {
		return nil, fmt.Errorf("--repeat must be at least 1")
	}
	if o.gcPods < 1 || o.gcObjects < 0 || o.gcCreateClients < 1 {
		return nil, fmt.Errorf("--gc-pods and --gc-create-clients must be at least 1, --gc-objects at least 0")
	}
	if o.needsKruise() {
		if _, err := kruiseQPS(o.limits.QPS); err != nil {
			return nil, fmt.Errorf("--kube-api-qps: %w", err)
		}
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	if o.bosunBinary == "" {
		o.bosunBinary = filepath.Join(root, "_output", "bin", "bosun-controller-manager")
	}
	if o.outDir == "" {
		o.outDir = filepath.Join(root, "_output", "bench")
	}
	return o, nil
}

func (o *options) wants(run string) bool {
	return slices.Contains(o.runs, run)
}

// parseNames splits a comma-separated flag value and checks every name against allowed.
func parseNames(flagName, value string, allowed ...string) ([]string, error) {
	var names []string
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(allowed, name) {
			return nil, fmt.Errorf("%s: unknown value %q (one of %s)", flagName, name, strings.Join(allowed, ", "))
		}
		names = append(names, name)
	}
	return names, nil
}

// needsBosun reports whether any chosen part runs bosun-controller-manager.
func (o *options) needsBosun() bool {
	return o.wants(managerBosun) || o.wants(partUnlimited) || o.wants(partWebhook) || o.wants(partConversion) ||
		(o.wants(partImagePullJob) && slices.Contains(o.imagePullJobManagers, managerBosun)) ||
		(o.wants(partGC) && slices.Contains(o.gcManagers, managerBosun)) ||
		(o.wants(partDaemonSet) && slices.Contains(o.daemonSetManagers, managerBosun)) ||
		(o.wants(partPUB) && slices.Contains(o.pubManagers, managerBosun)) ||
		(o.wants(partCloneSet) && slices.Contains(o.cloneSet.managers, managerBosun)) ||
		(o.wants(partCluster) && slices.Contains(o.cluster.sides, clusterSideBosun))
}

// needsKruise reports whether any chosen part runs kruise-manager.
func (o *options) needsKruise() bool {
	return (o.wants(partDaemonSet) && slices.Contains(o.daemonSetManagers, managerKruise)) ||
		(o.wants(partPUB) && slices.Contains(o.pubManagers, managerKruise)) ||
		(o.wants(partImagePullJob) && slices.Contains(o.imagePullJobManagers, managerKruise)) ||
		(o.wants(partCloneSet) && slices.Contains(o.cloneSet.managers, managerKruise)) ||
		(o.wants(partCluster) && slices.Contains(o.cluster.sides, clusterSideUpstream))
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, o *options) error {
	logger := klog.FromContext(ctx)
	if _, err := os.Stat(o.bosunBinary); err != nil && o.needsBosun() {
		return fmt.Errorf("%w (run `make build` first)", err)
	}
	upstreamBinary, err := framework.ToolPath("kube-controller-manager")
	if err != nil {
		return fmt.Errorf("%w (run `make test-servers` first)", err)
	}
	if o.needsKruise() {
		if _, err := framework.ToolPath(framework.KruiseManagerBinary); err != nil {
			return fmt.Errorf("%w (run `hack/build-kruise.sh kruise-manager` first, or leave kruise out of the --*-managers flags)", err)
		}
	}
	logRoot := filepath.Join(o.outDir, "logs")
	if err := os.RemoveAll(logRoot); err != nil {
		return fmt.Errorf("clearing old logs: %w", err)
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", o.outDir, err)
	}

	began := time.Now()
	res := newResults(o, began)
	pubRes := newPUBResults()
	ipjRes := newImagePullJobResults()
	convRes := newConversionResults()
	csRes := newCloneSetResults()
	clusterRes := newClusterResults()
	for rep := 1; rep <= o.repeat; rep++ {
		for _, name := range []string{managerUpstream, managerBosun} {
			if !o.wants(name) {
				continue
			}
			logger.Info("Running the workloads", "manager", name, "repetition", rep)
			r, err := runManager(ctx, o, name, upstreamBinary, fmt.Sprintf("%s/%s-%d", logRoot, name, rep))
			if err != nil {
				return fmt.Errorf("%s run %d: %w", name, rep, err)
			}
			res.managers[name] = append(res.managers[name], r)
		}
		if o.wants(partUnlimited) {
			for _, clients := range o.baselineClients {
				logger.Info("Running the raw baseline", "clients", clients, "repetition", rep)
				wall, err := runBaseline(ctx, o, clients)
				if err != nil {
					return fmt.Errorf("raw baseline with %d clients: %w", clients, err)
				}
				res.baselines[clients] = append(res.baselines[clients], wall)
			}
			logger.Info("Running bosun without client limits", "repetition", rep)
			r, err := runUnlimited(ctx, o, fmt.Sprintf("%s/unlimited-%d", logRoot, rep))
			if err != nil {
				return fmt.Errorf("unlimited run %d: %w", rep, err)
			}
			res.unlimited = append(res.unlimited, r)
		}
		if o.wants(partGC) {
			if err := runGCPart(ctx, o, res.gc, upstreamBinary, logRoot, rep); err != nil {
				return err
			}
		}
		if o.wants(partDaemonSet) {
			if err := runDaemonSetPart(ctx, o, res, upstreamBinary, logRoot, rep); err != nil {
				return err
			}
		}
		if o.wants(partWebhook) {
			if err := runWebhookPart(ctx, o, res, logRoot, rep); err != nil {
				return err
			}
		}
		if o.wants(partPUB) {
			if err := runPUBPart(ctx, o, pubRes, upstreamBinary, logRoot, rep); err != nil {
				return err
			}
		}
		if o.wants(partImagePullJob) {
			if err := runImagePullJobPart(ctx, o, ipjRes, logRoot, rep); err != nil {
				return err
			}
		}
		if o.wants(partConversion) {
			if err := runConversionPart(ctx, o, convRes, logRoot, rep); err != nil {
				return err
			}
		}
		if o.wants(partCluster) {
			if err := runClusterPart(ctx, o, clusterRes, upstreamBinary, logRoot, rep); err != nil {
				return err
			}
		}
	}
	// The cloneset part has its own number of runs (--cloneset-runs), for its percentiles.
	if o.wants(partCloneSet) {
		if err := runCloneSetPart(ctx, o, csRes, upstreamBinary, logRoot); err != nil {
			return err
		}
	}
	res.duration = time.Since(began)

	report := res.markdown() + pubRes.markdown(o) + ipjRes.markdown(o) + convRes.markdown(o) + csRes.markdown(o) + clusterRes.markdown(o)
	fmt.Print(report)
	path := filepath.Join(o.outDir, "results.md")
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	logger.Info("Wrote the report", "path", path, "took", res.duration.Round(time.Second))
	return nil
}

// runResult is one manager's figures from one run.
type runResult struct {
	// IdleRSS is the manager's RSS after start-up, before any workload.
	IdleRSS      uint64
	Measurements []measurement
	// LoadAverage is the machine's one-minute load average just before the first workload.
	LoadAverage float64
}

// runManager measures one manager on the full workload sequence against a fresh control
// plane. Nothing else runs beside it: its own garbage collector (in the default
// --bosun-controllers and --upstream-controllers) removes the pods of the deleted objects.
func runManager(ctx context.Context, o *options, name, upstreamBinary, logDir string) (runResult, error) {
	return withControlPlane(ctx, logDir, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		var spec managerSpec
		switch name {
		case managerBosun:
			spec = bosunManager(o.bosunBinary, cp, o.bosunControllers, o.limits, o.verbosity)
		case managerUpstream:
			spec = upstreamManager(upstreamBinary, cp, "kube-controller-manager", o.upstreamControllers, o.limits, o.verbosity)
		}
		return measureManager(ctx, o, cp, spec, client, logDir, (*workloadEnv).runAllWorkloads)
	})
}

// runUnlimited measures bosun's ReplicaSet scale-up without client-side rate limits. Nothing
// else runs beside it, as the raw baseline it is compared with had the API server to itself
// too; bosun runs the same --bosun-controllers as in the side-by-side workloads.
func runUnlimited(ctx context.Context, o *options, logDir string) (runResult, error) {
	return withControlPlane(ctx, logDir, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		spec := bosunManager(o.bosunBinary, cp, o.bosunControllers, o.unlimited, o.verbosity)
		scaleOnly := func(e *workloadEnv, ctx context.Context) ([]measurement, error) {
			m, err := e.scaleReplicaSet(ctx)
			return []measurement{m}, err
		}
		return measureManager(ctx, o, cp, spec, client, logDir, scaleOnly)
	})
}

// measureManager starts spec, lets it settle, and runs workloads against it. The manager is
// checked to have survived, since a crash would make its figures meaningless.
func measureManager(ctx context.Context, o *options, cp *framework.ControlPlane, spec managerSpec, client kubernetes.Interface, logDir string,
	workloads func(*workloadEnv, context.Context) ([]measurement, error)) (runResult, error) {
	m, err := startManager(ctx, spec, logDir)
	if err != nil {
		return runResult{}, err
	}
	defer m.Stop(framework.DefaultStopGracePeriod)
	// Let the manager finish its start-up (initial lists, first syncs) unmeasured.
	time.Sleep(settleTime)
	idle, err := currentRSS(m.Pid())
	if err != nil {
		return runResult{}, err
	}
	env := &workloadEnv{
		client:         client,
		namespace:      benchNamespace,
		pid:            m.Pid(),
		rsReplicas:     int32(o.rsReplicas),
		deployReplicas: int32(o.deployReplicas),
		readierWorkers: o.readierWorkers,
		timeout:        o.timeout,
	}
	if o.profileSeconds > 0 {
		env.profiler = m.profiler(cp.Config().BearerToken, o.profileSeconds, logDir)
	}
	load := loadAverage()
	measurements, err := workloads(env, ctx)
	if aliveErr := m.checkAlive(); aliveErr != nil {
		return runResult{}, aliveErr
	}
	if err != nil {
		return runResult{}, fmt.Errorf("%w\nthe end of the %s log:\n%s", err, spec.Label, m.LogTail(20))
	}
	return runResult{IdleRSS: idle, Measurements: measurements, LoadAverage: load}, nil
}

// runBaseline creates rsReplicas pods with clients parallel clients against a fresh control
// plane with nothing else running, and returns how long that took.
func runBaseline(ctx context.Context, o *options, clients int) (time.Duration, error) {
	var wall time.Duration
	_, err := withControlPlane(ctx, "", func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		// The pods name a ReplicaSet as their controller, like the ones a controller makes,
		// so that both create the same objects. No controller runs to act on it.
		owner, err := client.AppsV1().ReplicaSets(benchNamespace).Create(ctx, newReplicaSet(0), metav1.CreateOptions{})
		if err != nil {
			return runResult{}, fmt.Errorf("creating the owner ReplicaSet: %w", err)
		}
		wall, err = createPodsInParallel(ctx, benchClientConfig(cp), benchNamespace, owner, o.rsReplicas, clients)
		if err != nil {
			return runResult{}, err
		}
		env := &workloadEnv{client: client, namespace: benchNamespace}
		created, err := env.countActivePods(ctx, rsName)
		if err != nil {
			return runResult{}, err
		}
		if created != o.rsReplicas {
			return runResult{}, fmt.Errorf("%d pods exist after creating %d", created, o.rsReplicas)
		}
		klog.FromContext(ctx).Info("Measured the raw baseline", "clients", clients, "pods", created, "wall", wall.Round(time.Millisecond))
		return runResult{}, nil
	})
	return wall, err
}

// withControlPlane starts a fresh etcd + kube-apiserver with the benchmark namespace, runs
// body, and tears everything down, printing the server logs' ends if body failed.
func withControlPlane(ctx context.Context, logDir string, body func(context.Context, *framework.ControlPlane, kubernetes.Interface) (runResult, error)) (runResult, error) {
	return withControlPlaneOptions(ctx, logDir, framework.Options{}, body)
}

// withControlPlaneOptions is withControlPlane with a control plane started with opts (for
// example with bosun's CRDs installed).
func withControlPlaneOptions(ctx context.Context, logDir string, opts framework.Options,
	body func(context.Context, *framework.ControlPlane, kubernetes.Interface) (runResult, error)) (_ runResult, err error) {
	if logDir != "" {
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			return runResult{}, fmt.Errorf("creating %s: %w", logDir, err)
		}
	}
	cp, err := framework.StartControlPlane(ctx, opts)
	if err != nil {
		return runResult{}, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nthe end of the server logs:\n%s", err, cp.LogTails(15))
		}
		if stopErr := cp.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	client, err := kubernetes.NewForConfig(benchClientConfig(cp))
	if err != nil {
		return runResult{}, fmt.Errorf("creating the benchmark client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return runResult{}, fmt.Errorf("creating namespace %s: %w", benchNamespace, err)
	}
	return body(ctx, cp, client)
}

// benchClientConfig is the admin configuration of the benchmark's own clients: protobuf like
// the managers, and no client-side rate limit (a negative QPS builds none), so that the
// drivers and the pod readier never hold a workload back.
func benchClientConfig(cp *framework.ControlPlane) *rest.Config {
	config := cp.Config()
	config.QPS = -1
	config.ContentType = runtime.ContentTypeProtobuf
	config.UserAgent = benchUserAgent
	return config
}
