package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The gc part's workloads, keying its report rows.
const (
	workloadGCCascade          = "cascade-delete ReplicaSet"
	workloadGCCascadeUnlimited = "cascade-delete ReplicaSet, no client limits"
)

const (
	// gcControllers is the --controllers of either manager in the gc part: its garbage
	// collector and nothing else.
	gcControllers = "garbagecollector"
	// gcDependentsPerOwner is how many owned ConfigMaps and Secrets share one owner
	// ConfigMap in the large cluster.
	gcDependentsPerOwner = 10
	// collectorPollInterval is how often a starting collector's log is read, and
	// metricsPollInterval how often its /metrics (dearer to serve) afterwards.
	collectorPollInterval = 50 * time.Millisecond
	metricsPollInterval   = 200 * time.Millisecond
	// listPageSize pages the lists that count the large cluster's objects.
	listPageSize = 5000
)

// gcResults are the figures of the gc part, by collector ("bosun", "upstream").
type gcResults struct {
	// cascade and unlimited are the cascade deletes at --kube-api-qps and without client
	// limits; IdleRSS is the collector's RSS after its monitors synced.
	cascade   map[string][]runResult
	unlimited map[string][]runResult
	// baselines are the raw deletes of the same pods, by number of parallel clients.
	baselines map[int][]time.Duration
	clusters  map[string][]clusterResult
}

func newGCResults() *gcResults {
	return &gcResults{
		cascade:   map[string][]runResult{},
		unlimited: map[string][]runResult{},
		baselines: map[int][]time.Duration{},
		clusters:  map[string][]clusterResult{},
	}
}

func (r *gcResults) empty() bool {
	return len(r.cascade)+len(r.unlimited)+len(r.baselines)+len(r.clusters) == 0
}

// clusterResult is one collector's start on the large cluster.
type clusterResult struct {
	// Objects is the number of objects in the watched resources (the collector's graph
	// nodes), counted before it started.
	Objects int
	// Synced is from the process start to the log line about its monitors; GaveUp is set
	// when that line said it stopped waiting for them (its initial-sync timeout).
	Synced time.Duration
	GaveUp bool
	// SyncCPU is the CPU-seconds the process had used when the line was seen.
	SyncCPU float64
	// Drained is from the process start until its graph-changes queue was first seen
	// empty after the sync, zero when it exposes no such gauge.
	Drained time.Duration
	// PeakRSS is VmHWM after the settle (the process's whole life); RSS is VmRSS then.
	PeakRSS uint64
	RSS     uint64
	// HeapInuse and HeapAlloc are the Go runtime's figures after a forced collection.
	HeapInuse uint64
	HeapAlloc uint64
}

// bytesPerNode is the heap in use per graph node.
func (c clusterResult) bytesPerNode() float64 {
	if c.Objects == 0 {
		return 0
	}
	return float64(c.HeapInuse) / float64(c.Objects)
}

// runGCPart runs one repetition of the gc part: for each chosen collector the cascade
// delete at the usual limits, then the raw delete baselines and the unlimited cascade
// deletes, then the large cluster. Each on its own fresh control plane.
func runGCPart(ctx context.Context, o *options, res *gcResults, upstreamBinary, logRoot string, rep int) error {
	logger := klog.FromContext(ctx)
	for _, name := range o.gcManagers {
		logger.Info("Running the cascade delete", "collector", name, "repetition", rep)
		r, err := runGCCascade(ctx, o, name, upstreamBinary, o.limits, workloadGCCascade, fmt.Sprintf("%s/gc-cascade-%s-%d", logRoot, name, rep))
		if err != nil {
			return fmt.Errorf("gc cascade delete, %s, run %d: %w", name, rep, err)
		}
		res.cascade[name] = append(res.cascade[name], r)
	}
	for _, clients := range o.baselineClients {
		logger.Info("Running the raw delete baseline", "clients", clients, "repetition", rep)
		wall, err := runDeleteBaseline(ctx, o, clients)
		if err != nil {
			return fmt.Errorf("raw delete baseline with %d clients: %w", clients, err)
		}
		res.baselines[clients] = append(res.baselines[clients], wall)
	}
	for _, name := range o.gcManagers {
		logger.Info("Running the cascade delete without client limits", "collector", name, "repetition", rep)
		r, err := runGCCascade(ctx, o, name, upstreamBinary, o.unlimited, workloadGCCascadeUnlimited,
			fmt.Sprintf("%s/gc-unlimited-%s-%d", logRoot, name, rep))
		if err != nil {
			return fmt.Errorf("gc cascade delete without client limits, %s, run %d: %w", name, rep, err)
		}
		res.unlimited[name] = append(res.unlimited[name], r)
	}
	for _, name := range o.gcManagers {
		logger.Info("Running the large cluster", "collector", name, "repetition", rep)
		c, err := runGCCluster(ctx, o, name, upstreamBinary, fmt.Sprintf("%s/gc-cluster-%s-%d", logRoot, name, rep))
		if err != nil {
			return fmt.Errorf("gc large cluster, %s, run %d: %w", name, rep, err)
		}
		res.clusters[name] = append(res.clusters[name], c)
	}
	return nil
}

// gcManager runs the named manager with its garbage collector alone.
func gcManager(o *options, name, upstreamBinary string, cp *framework.ControlPlane, limits clientLimits) managerSpec {
	if name == managerBosun {
		return bosunManager(o.bosunBinary, cp, gcControllers, limits, o.verbosity)
	}
	return upstreamManager(upstreamBinary, cp, "kube-controller-manager", gcControllers, limits, o.verbosity)
}

// runGCCascade measures one collector deleting the pods of a deleted ReplicaSet. The bench
// creates the ReplicaSet (0 replicas: no ReplicaSet controller runs) and --gc-pods pods
// naming it as controller, then starts the collector, waits until it has synced and built
// its graph, lets it settle, and deletes the ReplicaSet with background propagation: the
// wall time runs until no pod is left.
func runGCCascade(ctx context.Context, o *options, name, upstreamBinary string, limits clientLimits, workload, logDir string) (runResult, error) {
	return withControlPlane(ctx, logDir, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		if err := createOwnedPods(ctx, o, cp, client); err != nil {
			return runResult{}, err
		}
		c, err := startCollector(ctx, gcManager(o, name, upstreamBinary, cp, limits), logDir, cp.Config().BearerToken, o.timeout)
		if err != nil {
			return runResult{}, err
		}
		defer c.Stop(framework.DefaultStopGracePeriod)
		if c.gaveUp {
			klog.FromContext(ctx).Info("The collector stopped waiting for its monitors; measuring anyway", "collector", name)
		}
		time.Sleep(settleTime)
		idle, err := currentRSS(c.Pid())
		if err != nil {
			return runResult{}, err
		}
		env := &workloadEnv{client: client, namespace: benchNamespace, pid: c.Pid(), timeout: o.timeout}
		if o.profileSeconds > 0 {
			env.profiler = newProfiler(c.Pid(), securePort(c.Port), cp.Config().BearerToken, o.profileSeconds, logDir)
		}
		m, err := env.deleteAndWaitForEmpty(ctx, workload, func(ctx context.Context, options metav1.DeleteOptions) error {
			if err := client.AppsV1().ReplicaSets(benchNamespace).Delete(ctx, rsName, options); err != nil {
				return fmt.Errorf("deleting ReplicaSet %s: %w", rsName, err)
			}
			return nil
		})
		if aliveErr := c.checkAlive(); aliveErr != nil {
			return runResult{}, aliveErr
		}
		if err != nil {
			return runResult{}, fmt.Errorf("%w\nthe end of the %s log:\n%s", err, c.Name(), c.LogTail(20))
		}
		return runResult{IdleRSS: idle, Measurements: []measurement{m}}, nil
	})
}

// createOwnedPods creates the ReplicaSet (0 replicas) and --gc-pods pods naming it as their
// controller, with --gc-create-clients parallel clients.
func createOwnedPods(ctx context.Context, o *options, cp *framework.ControlPlane, client kubernetes.Interface) error {
	owner, err := client.AppsV1().ReplicaSets(benchNamespace).Create(ctx, newReplicaSet(0), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the owner ReplicaSet: %w", err)
	}
	took, err := createPodsInParallel(ctx, benchClientConfig(cp), benchNamespace, owner, o.gcPods, o.gcCreateClients)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Created the pods", "pods", o.gcPods, "took", took.Round(time.Millisecond))
	return nil
}

// runDeleteBaseline is the raw API-server baseline of the cascade delete: on a fresh control
// plane with nothing else running, it creates the same ReplicaSet and pods, lists them, and
// measures deleting them by name (background propagation, UID precondition, as a collector
// deletes) from clients parallel unthrottled clients.
func runDeleteBaseline(ctx context.Context, o *options, clients int) (time.Duration, error) {
	var wall time.Duration
	_, err := withControlPlane(ctx, "", func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		if err := createOwnedPods(ctx, o, cp, client); err != nil {
			return runResult{}, err
		}
		pods, err := client.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return runResult{}, fmt.Errorf("listing pods: %w", err)
		}
		if len(pods.Items) != o.gcPods {
			return runResult{}, fmt.Errorf("%d pods exist after creating %d", len(pods.Items), o.gcPods)
		}
		// The collectors also get a settled API server: they start only after the creates.
		time.Sleep(settleTime)
		policy := metav1.DeletePropagationBackground
		wall, err = inParallel(ctx, benchClientConfig(cp), len(pods.Items), clients, func(ctx context.Context, client kubernetes.Interface, i int) error {
			pod := &pods.Items[i]
			options := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: metav1.NewUIDPreconditions(string(pod.UID))}
			if err := client.CoreV1().Pods(benchNamespace).Delete(ctx, pod.Name, options); err != nil {
				return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
			}
			return nil
		})
		if err != nil {
			return runResult{}, err
		}
		env := &workloadEnv{client: client, namespace: benchNamespace}
		if left, err := env.countActivePods(ctx, rsName); err != nil || left != 0 {
			return runResult{}, fmt.Errorf("%d pods left after deleting them all (%v)", left, err)
		}
		klog.FromContext(ctx).Info("Measured the raw delete baseline", "clients", clients, "pods", len(pods.Items), "wall", wall.Round(time.Millisecond))
		return runResult{}, nil
	})
	return wall, err
}

// runGCCluster fills a fresh control plane with the large cluster, counts the objects the
// collector will watch, then starts the collector and measures its start: the time until
// its monitors synced and its graph was built, and, after a settle, its peak RSS and its
// Go heap. Nothing may be deleted, as every owner exists: a recount afterwards checks that.
func runGCCluster(ctx context.Context, o *options, name, upstreamBinary, logDir string) (clusterResult, error) {
	var res clusterResult
	_, err := withControlPlane(ctx, logDir, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		logger := klog.FromContext(ctx)
		config := benchClientConfig(cp)
		began := time.Now()
		if err := fillCluster(ctx, o, config); err != nil {
			return runResult{}, err
		}
		if err := createOwnedPods(ctx, o, cp, client); err != nil {
			return runResult{}, err
		}
		objects, err := countGraphObjects(ctx, cp.Config())
		if err != nil {
			return runResult{}, err
		}
		res.Objects = objects
		logger.Info("Filled the cluster", "objects", objects, "took", time.Since(began).Round(time.Second))
		// Let etcd and the API server finish with the creates before the collector lists.
		time.Sleep(settleTime)

		token := cp.Config().BearerToken
		c, err := startCollector(ctx, gcManager(o, name, upstreamBinary, cp, o.limits), logDir, token, o.timeout)
		if err != nil {
			return runResult{}, err
		}
		defer c.Stop(framework.DefaultStopGracePeriod)
		res.Synced, res.GaveUp, res.SyncCPU = c.synced.Sub(c.started), c.gaveUp, c.syncCPU
		if !c.drained.IsZero() {
			res.Drained = c.drained.Sub(c.started)
		}
		time.Sleep(settleTime)

		// ?gc=1 collects first, so the heap is what the collector keeps, not garbage that
		// happens to await the next cycle; debug=1 appends runtime.MemStats in text.
		heapFile := filepath.Join(logDir, "heap-after-sync.txt")
		if err := newProfiler(c.Pid(), securePort(c.Port), token, 0, logDir).fetch(ctx, "/debug/pprof/heap?gc=1&debug=1", heapFile); err != nil {
			return runResult{}, err
		}
		profile, err := os.ReadFile(heapFile)
		if err != nil {
			return runResult{}, err
		}
		if res.HeapInuse, err = heapMemStat(string(profile), "HeapInuse"); err != nil {
			return runResult{}, err
		}
		if res.HeapAlloc, err = heapMemStat(string(profile), "HeapAlloc"); err != nil {
			return runResult{}, err
		}
		hwm, err := statusKiB(c.Pid(), "VmHWM")
		if err != nil {
			return runResult{}, err
		}
		res.PeakRSS = hwm * 1024
		if res.RSS, err = currentRSS(c.Pid()); err != nil {
			return runResult{}, err
		}
		if err := c.checkAlive(); err != nil {
			return runResult{}, err
		}
		// Every owner exists, so a collector that removed anything got it wrong, and its
		// figures would be for a smaller graph.
		left, err := countGraphObjects(ctx, cp.Config())
		if err != nil {
			return runResult{}, err
		}
		if left < objects {
			return runResult{}, fmt.Errorf("%s deleted objects whose owners exist: %d objects before it started, %d after", c.Name(), objects, left)
		}
		logger.Info("Measured the large cluster", "collector", name, "objects", res.Objects, "synced", res.Synced.Round(time.Millisecond),
			"gaveUp", res.GaveUp, "drained", res.Drained.Round(time.Millisecond), "syncCPUSeconds", res.SyncCPU,
			"peakRSSMiB", res.PeakRSS/mebibyte, "heapInuseMiB", res.HeapInuse/mebibyte, "heapAllocMiB", res.HeapAlloc/mebibyte,
			"bytesPerNode", int(res.bytesPerNode()))
		return runResult{}, nil
	})
	return res, err
}

// fillCluster creates the large cluster's ConfigMaps and Secrets: one owner ConfigMap per
// gcDependentsPerOwner owned objects, then --gc-objects owned objects (even indices
// ConfigMaps, odd ones Secrets) with 1–4 KiB of data each, naming their owner by UID.
func fillCluster(ctx context.Context, o *options, config *rest.Config) error {
	owners := make([]types.UID, ceilDiv(o.gcObjects, gcDependentsPerOwner))
	took, err := inParallel(ctx, config, len(owners), o.gcCreateClients, func(ctx context.Context, client kubernetes.Interface, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gc-owner-%06d", i)},
			Data:       map[string]string{"role": "owner"},
		}
		created, err := client.CoreV1().ConfigMaps(benchNamespace).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating owner ConfigMap %s: %w", cm.Name, err)
		}
		owners[i] = created.UID
		return nil
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Created the owners", "configMaps", len(owners), "took", took.Round(time.Millisecond))
	took, err = inParallel(ctx, config, o.gcObjects, o.gcCreateClients, func(ctx context.Context, client kubernetes.Interface, i int) error {
		owner := i / gcDependentsPerOwner
		meta := metav1.ObjectMeta{
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "ConfigMap",
				Name:       fmt.Sprintf("gc-owner-%06d", owner),
				UID:        owners[owner],
			}},
		}
		if i%2 == 0 {
			meta.Name = fmt.Sprintf("gc-cm-%06d", i)
			cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": string(dependentData(i, true))}}
			if _, err := client.CoreV1().ConfigMaps(benchNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ConfigMap %s: %w", meta.Name, err)
			}
			return nil
		}
		meta.Name = fmt.Sprintf("gc-secret-%06d", i)
		secret := &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"data": dependentData(i, false)}}
		if _, err := client.CoreV1().Secrets(benchNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Secret %s: %w", meta.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Created the owned ConfigMaps and Secrets", "objects", o.gcObjects, "took", took.Round(time.Millisecond))
	return nil
}

// countGraphObjects counts the objects of every resource a collector watches
// (graphResources): the nodes its graph will hold once it has synced.
func countGraphObjects(ctx context.Context, config *rest.Config) (int, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return 0, err
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil {
		return 0, fmt.Errorf("discovering resources: %w", err)
	}
	client, err := metadata.NewForConfig(config)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, gvr := range graphResources(lists) {
		opts := metav1.ListOptions{Limit: listPageSize}
		for {
			page, err := client.Resource(gvr).List(ctx, opts)
			if err != nil {
				return 0, fmt.Errorf("listing %s: %w", gvr, err)
			}
			total += len(page.Items)
			if opts.Continue = page.Continue; opts.Continue == "" {
				break
			}
		}
	}
	return total, nil
}

// collector is a running manager whose garbage collector has reported on its monitors.
type collector struct {
	*manager
	// started is just before the process was started; synced is when it logged that its
	// monitors synced (or, with gaveUp, that it stopped waiting for them), by the log
	// line's own timestamp; syncCPU is its CPU time when the line was seen.
	started time.Time
	synced  time.Time
	gaveUp  bool
	syncCPU float64
	// drained is when its graph-changes queue was first seen empty after that, zero when
	// it exposes no such gauge.
	drained time.Time
}

// startCollector starts spec and waits until its garbage collector has logged that its
// monitors synced (or that it stopped waiting for them) and has then emptied its
// graph-changes queue.
func startCollector(ctx context.Context, spec managerSpec, logDir, token string, timeout time.Duration) (*collector, error) {
	logger := klog.FromContext(ctx)
	started := time.Now()
	m, err := startManager(ctx, spec, logDir)
	if err != nil {
		return nil, err
	}
	c := &collector{manager: m, started: started}
	ok := false
	defer func() {
		if !ok {
			m.Stop(framework.DefaultStopGracePeriod)
		}
	}()

	scanner := &logScanner{path: m.LogPath()}
	err = wait.PollUntilContextTimeout(ctx, collectorPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := m.checkAlive(); err != nil {
			return false, err
		}
		lines, err := scanner.next()
		if err != nil {
			return false, err
		}
		for _, line := range lines {
			state := classifySyncLine(line)
			if state == syncUnknown {
				continue
			}
			seen := time.Now()
			if c.syncCPU, err = cpuSeconds(m.Pid()); err != nil {
				return false, err
			}
			c.synced = seen
			if at, ok := logLineTime(line, seen); ok {
				c.synced = at
			}
			c.gaveUp = state == syncGaveUp
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		if wait.Interrupted(err) {
			err = fmt.Errorf("timed out after %v", timeout)
		}
		return nil, fmt.Errorf("waiting for %s to log %q: %w\nthe end of its log:\n%s", spec.Label, syncedMessage, err, m.LogTail(20))
	}

	depth := map[string]string{"name": graphChangesQueue}
	missing := false
	err = wait.PollUntilContextTimeout(ctx, metricsPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		metrics, err := m.Metrics(token)
		if err != nil {
			return false, err
		}
		value, found := metricValue(metrics, "workqueue_depth", depth)
		if !found {
			missing = true
			return true, nil
		}
		if value == 0 {
			c.drained = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		if wait.Interrupted(err) {
			err = fmt.Errorf("timed out after %v", timeout)
		}
		return nil, fmt.Errorf("waiting for the %s queue of %s to drain: %w", graphChangesQueue, spec.Label, err)
	}
	if missing {
		logger.Info("The collector exposes no depth of its graph-changes queue; not waiting for it", "collector", spec.Label, "queue", graphChangesQueue)
	}
	logger.Info("The garbage collector is ready", "collector", spec.Label, "synced", c.synced.Sub(started).Round(time.Millisecond),
		"gaveUp", c.gaveUp, "drained", durationSince(started, c.drained), "syncCPUSeconds", c.syncCPU)
	ok = true
	return c, nil
}

// durationSince is t - from rounded to milliseconds, or zero for a zero t.
func durationSince(from, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(from).Round(time.Millisecond)
}
