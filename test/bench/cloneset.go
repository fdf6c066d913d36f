package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// partCloneSet measures the CloneSet controllers: bosun's and kruise-manager's on
// apps.kruise.io CloneSets, and upstream's ReplicaSet controller where it compares (scaling
// from nothing).
const partCloneSet = "cloneset"

// The part's row groups (--cloneset-rows), each one or more rows of the report.
const (
	// cloneSetGroupScale creates a CloneSet of --cloneset-small and one of --cloneset-large
	// replicas (a ReplicaSet for upstream).
	cloneSetGroupScale = "scale"
	// cloneSetGroupInPlace updates the image of those CloneSets in place.
	cloneSetGroupInPlace = "inplace"
	// cloneSetGroupPVC creates a CloneSet of --cloneset-small replicas with a claim template.
	cloneSetGroupPVC = "pvc"
	// cloneSetGroupRecreate rolls a CloneSet of --cloneset-small replicas by recreating its
	// pods, with surge.
	cloneSetGroupRecreate = "recreate"
	// cloneSetGroupSteady counts the writes of a settled cluster of many CloneSets.
	cloneSetGroupSteady = "steady"
)

// The part's rows, keying its results, in report order.
const (
	rowScaleSmall   = "scale small"
	rowScaleLarge   = "scale large"
	rowScalePVC     = "scale small with a claim template"
	rowInPlaceSmall = "in-place small"
	rowInPlaceLarge = "in-place large"
	rowRecreate     = "recreate small"
	rowSteady       = "steady state"
)

var cloneSetRowOrder = []string{rowScaleSmall, rowScaleLarge, rowScalePVC, rowInPlaceSmall, rowInPlaceLarge, rowRecreate, rowSteady}

const (
	// bosunCloneSetControllers are bosun's --controllers in the part: the CloneSet
	// controller, and the pod-readiness controller, whose entry brings the pod webhook's
	// KruisePodReady readiness gate for the pods of apps.kruise.io workloads and which sets
	// that condition True, as a cluster runs them.
	bosunCloneSetControllers = "cloneset-controller,pod-readiness-controller"
	// upstreamCloneSetController is upstream's --controllers in the part.
	upstreamCloneSetController = "replicaset"

	// cloneSetMaxUnavailable is every CloneSet's rolling-update budget (the CloneSet's
	// default, written out); cloneSetRecreateSurge the surge of the recreate row.
	cloneSetMaxUnavailable = "20%"
	cloneSetRecreateSurge  = "25%"
	// cloneSetClaimSize is the request of the claim template's claims, which no
	// provisioner serves: they stay Pending, which neither controller waits for.
	cloneSetClaimSize = "1Gi"
	cloneSetClaimName = "data"

	// steadySettle is how long the steady-state row waits, once every CloneSet is settled,
	// before it starts counting: the trailing status writes of the creation belong to it.
	steadySettle = 10 * time.Second
)

// kruiseCloneSetControllers are kruise-manager's controllers of this part, whose workers
// the bench waits for.
var kruiseCloneSetControllers = []string{"cloneset-controller", "pod-readiness-controller"}

// cloneSetAuditPolicy logs the metadata of every request but watches: the part counts the
// managers' reads as well as their writes.
const cloneSetAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  verbs: ["watch"]
- level: Metadata
`

// cloneSetOptions are the part's flags.
type cloneSetOptions struct {
	runs             int
	managers         []string
	groups           []string
	qps              float64
	burst            int
	workers          int
	small, large     int
	steadySets       int
	steadyReplicas   int
	steadyWindow     time.Duration
	nodes            int
	bosunControllers string

	managersFlag, groupsFlag string
}

// register adds the part's flags to fs.
func (o *cloneSetOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.runs, "cloneset-runs", 5, "cloneset part: runs of every manager (the report gives p50 and p95 over them); "+
		"--repeat does not apply to this part")
	fs.StringVar(&o.managersFlag, "cloneset-managers", "upstream,bosun,kruise", "cloneset part: comma-separated managers to run: upstream "+
		"(kube-controller-manager --controllers=replicaset on ReplicaSets, scale rows only), bosun (bosun-controller-manager with "+
		"--cloneset-bosun-controllers and its webhooks), kruise (kruise-manager v1.9.0 with the OpenKruise CRDs its CloneSet controller "+
		"needs, see --kruise-crds)")
	fs.StringVar(&o.groupsFlag, "cloneset-rows", "scale,inplace,pvc,recreate,steady", "cloneset part: comma-separated row groups: "+
		"scale (create with --cloneset-small and --cloneset-large replicas), inplace (in-place image update of those), pvc (create "+
		"--cloneset-small replicas with a claim template), recreate (recreate rollout of --cloneset-small with maxSurge "+
		cloneSetRecreateSurge+"), steady (API writes of --cloneset-steady-sets settled CloneSets)")
	fs.Float64Var(&o.qps, "cloneset-kube-api-qps", 50, "cloneset part: client QPS of every manager (bosun --kube-api-qps and "+
		"--kruise-controllers-kube-api-qps, kruise-manager --rest-config-qps, upstream --kube-api-qps)")
	fs.IntVar(&o.burst, "cloneset-kube-api-burst", 100, "cloneset part: client burst of every manager, as --cloneset-kube-api-qps")
	fs.IntVar(&o.workers, "cloneset-workers", 3, "cloneset part: workers of the measured controller (bosun --concurrent-cloneset-syncs, "+
		"kruise-manager --cloneset-workers, upstream --concurrent-replicaset-syncs)")
	fs.IntVar(&o.small, "cloneset-small", 100, "cloneset part: replicas of the small rows")
	fs.IntVar(&o.large, "cloneset-large", 1000, "cloneset part: replicas of the large rows")
	fs.IntVar(&o.steadySets, "cloneset-steady-sets", 50, "cloneset part: CloneSets of the steady-state row")
	fs.IntVar(&o.steadyReplicas, "cloneset-steady-replicas", 20, "cloneset part: replicas of each CloneSet of the steady-state row")
	fs.DurationVar(&o.steadyWindow, "cloneset-steady-window", time.Minute, "cloneset part: how long the steady-state row counts writes")
	fs.IntVar(&o.nodes, "cloneset-nodes", 100, "cloneset part: simulated nodes the node stub binds pods to")
	fs.StringVar(&o.bosunControllers, "cloneset-bosun-controllers", bosunCloneSetControllers, "cloneset part: bosun's --controllers")
}

func (o *cloneSetOptions) validate() error {
	var err error
	if o.managers, err = parseNames("--cloneset-managers", o.managersFlag, managerUpstream, managerBosun, managerKruise); err != nil {
		return err
	}
	if o.groups, err = parseNames("--cloneset-rows", o.groupsFlag, cloneSetGroupScale, cloneSetGroupInPlace, cloneSetGroupPVC,
		cloneSetGroupRecreate, cloneSetGroupSteady); err != nil {
		return err
	}
	if o.runs < 1 || o.small < 1 || o.large < 1 || o.steadySets < 1 || o.steadyReplicas < 1 || o.nodes < 1 || o.workers < 1 || o.burst < 1 {
		return errors.New("--cloneset-runs, --cloneset-small, --cloneset-large, --cloneset-steady-sets, --cloneset-steady-replicas, " +
			"--cloneset-nodes, --cloneset-workers and --cloneset-kube-api-burst must be at least 1")
	}
	if o.steadyWindow <= 0 {
		return errors.New("--cloneset-steady-window must be positive")
	}
	if slices.Contains(o.managers, managerKruise) {
		if _, err := kruiseQPS(o.qps); err != nil {
			return fmt.Errorf("--cloneset-kube-api-qps: %w", err)
		}
	}
	return nil
}

func (o *cloneSetOptions) limits() clientLimits { return clientLimits{QPS: o.qps, Burst: o.burst} }

func (o *cloneSetOptions) wants(group string) bool { return slices.Contains(o.groups, group) }

// cloneSetRowResult is one row's figures from one run.
type cloneSetRowResult struct {
	// Pods is the row's number of pods (replicas; all CloneSets' in the steady state).
	Pods int
	// Wall, CPUSeconds and PeakRSS are the manager's over the row (see workloadEnv.measure);
	// in the steady state, over its window.
	Wall       time.Duration
	CPUSeconds float64
	PeakRSS    uint64
	// Requests are the manager's requests in the row's window by verb (watches not
	// counted), Agents the same by User-Agent (which of its clients sent them, for the
	// log); Writes every client's writes by resource (see countWrites).
	Requests map[string]int
	Agents   map[string]int
	Writes   map[string]map[string]writeCount
	// Window is how long requests were counted.
	Window time.Duration
	// Recreated counts the pods of a rollout that are not the pods it started with.
	Recreated int
}

// managerRequests is the number of the manager's requests.
func (r cloneSetRowResult) managerRequests() int {
	n := 0
	for _, c := range r.Requests {
		n += c
	}
	return n
}

// managerWrites is the number of the manager's write requests, every resource together.
func (r cloneSetRowResult) managerWrites() int {
	n := 0
	for _, c := range r.Writes[actorManager] {
		n += c.Requests
	}
	return n
}

// managerPodWrites is the number of the manager's writes to pods and their subresources.
func (r cloneSetRowResult) managerPodWrites() int {
	n := 0
	for resource, c := range r.Writes[actorManager] {
		if resource == "pods" || strings.HasPrefix(resource, "pods/") {
			n += c.Requests
		}
	}
	return n
}

// cloneSetRun is one manager's figures from one run of the part.
type cloneSetRun struct {
	Manager string
	Rows    map[string]cloneSetRowResult
	// IdleRSS is the manager's resident set after start-up; LoadAverage the machine's
	// one-minute load average just before the first row.
	IdleRSS     uint64
	LoadAverage float64
}

// cloneSetResults are the part's runs by manager, in order.
type cloneSetResults struct {
	runs map[string][]cloneSetRun
}

func newCloneSetResults() *cloneSetResults {
	return &cloneSetResults{runs: map[string][]cloneSetRun{}}
}

// runCloneSetPart runs the part --cloneset-runs times: in each run every chosen manager
// alone on a fresh control plane with an audit log, its CRDs and the simulated nodes.
func runCloneSetPart(ctx context.Context, o *options, res *cloneSetResults, upstreamBinary, logRoot string) error {
	cs := o.cloneSet
	for run := 1; run <= cs.runs; run++ {
		for _, name := range cs.managers {
			klog.FromContext(ctx).Info("Running the CloneSet rows", "manager", name, "rows", cs.groups, "run", run)
			logDir := fmt.Sprintf("%s/cloneset-%s-%d", logRoot, name, run)
			opts := framework.Options{BosunCRDs: name != managerKruise, AuditPolicy: cloneSetAuditPolicy}
			_, err := withControlPlaneOptions(ctx, logDir, opts, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
				if name == managerKruise {
					// OpenKruise's CloneSet CRD (see installKruise): kruise-manager runs the
					// controller of every installed CRD, so the others stay idle.
					if err := installKruise(ctx, o, cp, "CloneSet"); err != nil {
						return runResult{}, err
					}
				}
				r, err := runCloneSetSide(ctx, o, cp, client, name, upstreamBinary, logDir)
				if err != nil {
					return runResult{}, err
				}
				res.runs[name] = append(res.runs[name], r)
				return runResult{}, nil
			})
			if err != nil {
				return fmt.Errorf("cloneset %s, run %d: %w", name, run, err)
			}
		}
	}
	return nil
}

// cloneSetManager runs upstream with its ReplicaSet controller, kruise-manager (which runs
// its CloneSet controller because only that CRD, and those it needs, are installed), or
// bosun with --cloneset-bosun-controllers and its webhooks on a free loopback port, each
// with the part's client limits and workers, set explicitly.
func cloneSetManager(o *options, cp *framework.ControlPlane, name, upstreamBinary string) (managerSpec, error) {
	cs := o.cloneSet
	workers := strconv.Itoa(cs.workers)
	switch name {
	case managerUpstream:
		spec := upstreamManager(upstreamBinary, cp, "kube-controller-manager", upstreamCloneSetController, cs.limits(), o.verbosity)
		spec.Args = append(spec.Args, "--concurrent-replicaset-syncs="+workers)
		return spec, nil
	case managerKruise:
		spec, err := kruiseManager(o, cp, partCloneSet, cs.limits(), kruiseCloneSetControllers...)
		if err != nil {
			return managerSpec{}, err
		}
		spec.Kruise.ExtraArgs = append(spec.Kruise.ExtraArgs, "--cloneset-workers="+workers)
		return spec, nil
	}
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return managerSpec{}, err
	}
	opts := cs.limits().options(cs.bosunControllers, o.verbosity)
	opts.Webhooks, opts.WebhookPort = true, ports[0]
	opts.ExtraArgs = []string{
		"--webhook-bind-address=127.0.0.1",
		"--concurrent-cloneset-syncs=" + workers,
		// The limits of the OpenKruise-compatible controllers follow --kube-api-qps and
		// --kube-api-burst once those are given; named as well, so that nothing is left to
		// a default.
		"--kruise-controllers-kube-api-qps=" + strconv.FormatFloat(cs.qps, 'g', -1, 64),
		"--kruise-controllers-kube-api-burst=" + strconv.Itoa(cs.burst),
	}
	return managerSpec{
		Label:     "bosun-controller-manager",
		Path:      o.bosunBinary,
		Args:      framework.BosunControllerManagerArgs(cp, opts),
		ReadyPath: "/readyz",
	}, nil
}

// cloneSetSide is one manager's run: its control plane, the manager and the node stub.
type cloneSetSide struct {
	o       *options
	name    string
	cp      *framework.ControlPlane
	client  kubernetes.Interface
	bosun   bosunclientset.Interface
	env     *workloadEnv
	manager *manager
	stub    *nodeStub
}

// runCloneSetSide creates the simulated nodes, starts the manager and the node stub, and
// runs the chosen rows one after the other, each on objects of its own that are removed
// before the next.
func runCloneSetSide(ctx context.Context, o *options, cp *framework.ControlPlane, client kubernetes.Interface, name, upstreamBinary, logDir string) (cloneSetRun, error) {
	logger := klog.FromContext(ctx).WithValues("manager", name)
	nodes, err := createNodes(ctx, benchClientConfig(cp), o.cloneSet.nodes)
	if err != nil {
		return cloneSetRun{}, err
	}
	bosun, err := bosunClientFor(benchClientConfig(cp))
	if err != nil {
		return cloneSetRun{}, err
	}
	spec, err := cloneSetManager(o, cp, name, upstreamBinary)
	if err != nil {
		return cloneSetRun{}, err
	}
	m, err := startManager(ctx, spec, logDir)
	if err != nil {
		return cloneSetRun{}, err
	}
	defer m.Stop(framework.DefaultStopGracePeriod)

	stubConfig := benchClientConfig(cp)
	stubConfig.UserAgent = agentUserAgent
	stubClient, err := kubernetes.NewForConfig(stubConfig)
	if err != nil {
		return cloneSetRun{}, fmt.Errorf("creating the node stub's client: %w", err)
	}
	stub := newNodeStub(stubClient, benchNamespace, nodes)
	stubCtx, stopStub := context.WithCancel(ctx)
	stubDone := make(chan struct{})
	go func() {
		defer close(stubDone)
		stub.run(stubCtx, o.readierWorkers)
	}()
	defer func() {
		stopStub()
		<-stubDone
	}()
	if err := stub.waitForCache(ctx); err != nil {
		return cloneSetRun{}, err
	}

	// Let the manager finish its start-up unmeasured.
	time.Sleep(settleTime)
	if err := m.checkAlive(); err != nil {
		return cloneSetRun{}, err
	}
	idle, err := currentRSS(m.Pid())
	if err != nil {
		return cloneSetRun{}, err
	}
	env := &workloadEnv{client: client, namespace: benchNamespace, pid: m.Pid(), timeout: o.timeout}
	if o.profileSeconds > 0 {
		env.profiler = m.profiler(cp.Config().BearerToken, o.profileSeconds, logDir)
	}
	side := &cloneSetSide{o: o, name: name, cp: cp, client: client, bosun: bosun, env: env, manager: m, stub: stub}
	run := cloneSetRun{Manager: name, Rows: map[string]cloneSetRowResult{}, IdleRSS: idle, LoadAverage: loadAverage()}
	err = side.runRows(ctx, run.Rows)
	if aliveErr := m.checkAlive(); aliveErr != nil {
		return cloneSetRun{}, aliveErr
	}
	if err != nil {
		return cloneSetRun{}, fmt.Errorf("%w\nthe end of the %s log:\n%s", err, spec.Label, m.LogTail(20))
	}
	if errs := stub.errors(); len(errs) > 0 {
		return cloneSetRun{}, fmt.Errorf("the node stub failed %d times, first: %w", len(errs), errs[0])
	}
	for _, row := range cloneSetRowOrder {
		if r, ok := run.Rows[row]; ok {
			logger.Info("CloneSet row", "row", row, "pods", r.Pods, "wall", r.Wall.Round(time.Millisecond), "cpuSeconds", r.CPUSeconds,
				"peakRSSMiB", r.PeakRSS/mebibyte, "managerRequests", r.Requests, "managerClients", r.Agents, "managerWrites", r.Writes[actorManager],
				"stubWrites", r.Writes[actorAgents], "recreated", r.Recreated)
		}
	}
	return run, nil
}

// runRows runs the chosen rows in order; upstream runs the scale rows only.
func (s *cloneSetSide) runRows(ctx context.Context, rows map[string]cloneSetRowResult) error {
	cs := s.o.cloneSet
	if cs.wants(cloneSetGroupScale) || (cs.wants(cloneSetGroupInPlace) && s.name != managerUpstream) {
		for _, size := range []struct {
			scale, inPlace, name string
			replicas             int
		}{
			{rowScaleSmall, rowInPlaceSmall, "small", cs.small},
			{rowScaleLarge, rowInPlaceLarge, "large", cs.large},
		} {
			if err := s.scaleAndUpdateInPlace(ctx, rows, size.scale, size.inPlace, "cs-"+size.name, int32(size.replicas)); err != nil {
				return err
			}
		}
	}
	if s.name == managerUpstream {
		return nil
	}
	if cs.wants(cloneSetGroupPVC) {
		r, err := s.measureCreate(ctx, rowScalePVC, "cs-claims", int32(cs.small), true)
		if err != nil {
			return err
		}
		rows[rowScalePVC] = r
		if err := s.remove(ctx, "cs-claims"); err != nil {
			return err
		}
	}
	if cs.wants(cloneSetGroupRecreate) {
		if err := s.recreate(ctx, rows, "cs-recreate", int32(cs.small)); err != nil {
			return err
		}
	}
	if cs.wants(cloneSetGroupSteady) {
		r, err := s.steadyState(ctx)
		if err != nil {
			return err
		}
		rows[rowSteady] = r
	}
	return nil
}

// scaleAndUpdateInPlace creates the workload with replicas pods (the scale row, recorded
// when chosen), and for a CloneSet, once all are available, changes its image (the in-place
// row, when chosen); then it removes the workload.
func (s *cloneSetSide) scaleAndUpdateInPlace(ctx context.Context, rows map[string]cloneSetRowResult, scaleRow, inPlaceRow, name string, replicas int32) error {
	cs := s.o.cloneSet
	created, err := s.measureCreate(ctx, scaleRow, name, replicas, false)
	if err != nil {
		return err
	}
	if cs.wants(cloneSetGroupScale) {
		rows[scaleRow] = created
	}
	if s.name != managerUpstream && cs.wants(cloneSetGroupInPlace) {
		if err := s.waitAvailable(ctx, name, replicas, dsImage); err != nil {
			return err
		}
		time.Sleep(settleTime)
		updated, err := s.measureRollout(ctx, inPlaceRow, name, replicas)
		if err != nil {
			return err
		}
		if updated.Recreated > 0 {
			return fmt.Errorf("%s: %d of %d pods were recreated, not updated in place", inPlaceRow, updated.Recreated, replicas)
		}
		rows[inPlaceRow] = updated
	}
	return s.remove(ctx, name)
}

// recreate creates a CloneSet that recreates its pods on update, with surge, waits until
// its pods are available, and measures changing its image.
func (s *cloneSetSide) recreate(ctx context.Context, rows map[string]cloneSetRowResult, name string, replicas int32) error {
	obj := newBenchCloneSet(name, replicas, appsv1beta1.RecreateCloneSetPodUpdateStrategyType, cloneSetRecreateSurge, false)
	if _, err := s.bosun.AppsV1beta1().CloneSets(benchNamespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CloneSet %s: %w", name, err)
	}
	if err := s.waitAvailable(ctx, name, replicas, dsImage); err != nil {
		return err
	}
	time.Sleep(settleTime)
	r, err := s.measureRollout(ctx, rowRecreate, name, replicas)
	if err != nil {
		return err
	}
	rows[rowRecreate] = r
	return s.remove(ctx, name)
}

// newBenchCloneSet is the part's CloneSet: replicas pods of podTemplate(name), rolling
// update by policy with maxUnavailable 20% and maxSurge surge ("" for none), with one claim
// template when claims; revisionHistoryLimit 10 and no claim reuse written out, so that
// neither manager's defaulting decides them.
func newBenchCloneSet(name string, replicas int32, policy appsv1beta1.CloneSetPodUpdateStrategyType, surge string, claims bool) *appsv1beta1.CloneSet {
	maxSurge := intstr.FromInt32(0)
	if surge != "" {
		maxSurge = intstr.FromString(surge)
	}
	cs := &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: benchLabels(name)},
			Template: podTemplate(name),
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
					PodUpdatePolicy: policy,
					Partition:       ptr.To(intstr.FromInt32(0)),
					MaxUnavailable:  ptr.To(intstr.FromString(cloneSetMaxUnavailable)),
					MaxSurge:        &maxSurge,
				},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
	if claims {
		cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: cloneSetClaimName},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(cloneSetClaimSize)}},
			},
		}}
	}
	return cs
}

// workloadStatus is the part of a CloneSet's or ReplicaSet's status the rows wait on.
type workloadStatus struct {
	Generation, ObservedGeneration                 int64
	Replicas, Available, Updated, UpdatedAvailable int32
	UpdateRevision                                 string
}

// status reads the workload's status: the CloneSet in v1beta1, the version both
// controllers work on and store (no conversion), or upstream's ReplicaSet.
func (s *cloneSetSide) status(ctx context.Context, name string) (workloadStatus, error) {
	if s.name == managerUpstream {
		rs, err := s.client.AppsV1().ReplicaSets(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return workloadStatus{}, fmt.Errorf("reading ReplicaSet %s: %w", name, err)
		}
		st := rs.Status
		return workloadStatus{Generation: rs.Generation, ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas,
			Available: st.AvailableReplicas, Updated: st.Replicas, UpdatedAvailable: st.AvailableReplicas}, nil
	}
	cs, err := s.bosun.AppsV1beta1().CloneSets(benchNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return workloadStatus{}, fmt.Errorf("reading CloneSet %s: %w", name, err)
	}
	st := cs.Status
	return workloadStatus{Generation: cs.Generation, ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas,
		Available: st.AvailableReplicas, Updated: st.UpdatedReplicas, UpdatedAvailable: st.UpdatedAvailableReplicas, UpdateRevision: st.UpdateRevision}, nil
}

// measureCreate measures creating the workload with replicas pods (and claims) until its
// status counts them all and they (and their claims) exist.
func (s *cloneSetSide) measureCreate(ctx context.Context, row, name string, replicas int32, claims bool) (cloneSetRowResult, error) {
	create := func(ctx context.Context) error {
		if s.name == managerUpstream {
			if _, err := s.client.AppsV1().ReplicaSets(benchNamespace).Create(ctx, newNamedReplicaSet(name, replicas), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ReplicaSet %s: %w", name, err)
			}
			return nil
		}
		obj := newBenchCloneSet(name, replicas, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, "", claims)
		if _, err := s.bosun.AppsV1beta1().CloneSets(benchNamespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CloneSet %s: %w", name, err)
		}
		return nil
	}
	var problem string
	done := func(ctx context.Context) (time.Time, error) {
		st, err := s.status(ctx, name)
		if err != nil {
			return time.Time{}, err
		}
		if st.ObservedGeneration < st.Generation || st.Replicas != replicas {
			problem = fmt.Sprintf("status %+v", st)
			return time.Time{}, nil
		}
		seen := time.Now()
		// The status is the controller's claim, counted from its cache: the pods existed
		// when it was written, so listing them is not charged.
		pods, err := s.pods(ctx, name)
		if err != nil {
			return time.Time{}, err
		}
		if n := len(activePods(pods)); n != int(replicas) {
			problem = fmt.Sprintf("%d active pods", n)
			return time.Time{}, nil
		}
		if claims {
			n, err := s.claims(ctx, name)
			if err != nil {
				return time.Time{}, err
			}
			if n != int(replicas) {
				problem = fmt.Sprintf("%d claims", n)
				return time.Time{}, nil
			}
		}
		return seen, nil
	}
	what := fmt.Sprintf("%s to count %d replicas", name, replicas)
	return s.measureRow(ctx, row, int(replicas), what, create, done, 0, &problem)
}

// measureRollout measures changing the CloneSet's image until its status counts every
// replica updated and available and its pods agree: replicas active pods, all Ready and
// running the new image. It counts the pods that are not the ones it started with.
func (s *cloneSetSide) measureRollout(ctx context.Context, row, name string, replicas int32) (cloneSetRowResult, error) {
	before, err := s.pods(ctx, name)
	if err != nil {
		return cloneSetRowResult{}, err
	}
	original := map[types.UID]bool{}
	for _, pod := range activePods(before) {
		original[pod.UID] = true
	}
	old, err := s.status(ctx, name)
	if err != nil {
		return cloneSetRowResult{}, err
	}
	roll := func(ctx context.Context) error {
		patch, err := imagePatch(dsRolledImage)
		if err != nil {
			return err
		}
		if _, err := s.bosun.AppsV1beta1().CloneSets(benchNamespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("changing the image of CloneSet %s: %w", name, err)
		}
		return nil
	}
	var problem string
	recreated := 0
	done := func(ctx context.Context) (time.Time, error) {
		st, err := s.status(ctx, name)
		if err != nil {
			return time.Time{}, err
		}
		if !rolledOut(st, old.UpdateRevision, replicas) {
			problem = fmt.Sprintf("status %+v", st)
			return time.Time{}, nil
		}
		seen := time.Now()
		pods, err := s.pods(ctx, name)
		if err != nil {
			return time.Time{}, err
		}
		if problem = rolledPodsProblem(pods, replicas, dsRolledImage); problem != "" {
			return time.Time{}, nil
		}
		recreated = 0
		for _, pod := range activePods(pods) {
			if !original[pod.UID] {
				recreated++
			}
		}
		return seen, nil
	}
	what := fmt.Sprintf("CloneSet %s to run %d available pods of %s", name, replicas, dsRolledImage)
	r, err := s.measureRow(ctx, row, int(replicas), what, roll, done, settleTime, &problem)
	r.Recreated = recreated
	return r, err
}

// rolledOut is the status half of a rollout's end: the controller has seen the new
// template, whose revision is not old, and counts replicas pods, all updated and available.
func rolledOut(s workloadStatus, old string, replicas int32) bool {
	return s.ObservedGeneration >= s.Generation && s.UpdateRevision != "" && s.UpdateRevision != old && s.Replicas == replicas &&
		s.Updated == replicas && s.UpdatedAvailable == replicas && s.Available == replicas
}

// rolledPodsProblem says what keeps pods from being a finished rollout to image: exactly
// replicas active pods, each running image and Ready. "" when nothing does.
func rolledPodsProblem(pods []corev1.Pod, replicas int32, image string) string {
	active := activePods(pods)
	if len(active) != int(replicas) {
		return fmt.Sprintf("%d active pods, want %d", len(active), replicas)
	}
	for _, pod := range active {
		switch {
		case len(pod.Spec.Containers) == 0 || pod.Spec.Containers[0].Image != image:
			return fmt.Sprintf("pod %s does not run %s", pod.Name, image)
		case !podutil.IsPodReady(pod):
			return fmt.Sprintf("pod %s is not Ready", pod.Name)
		}
	}
	return ""
}

// measureRow measures one row (see workloadEnv.measure) and counts the requests the API
// server received from the trigger until the end, and trailing after it.
func (s *cloneSetSide) measureRow(ctx context.Context, row string, pods int, what string, trigger func(context.Context) error,
	done completion, trailing time.Duration, problem *string) (cloneSetRowResult, error) {
	began := time.Now()
	m, err := s.env.measure(ctx, row, what, trigger, done)
	if aliveErr := s.manager.checkAlive(); aliveErr != nil {
		return cloneSetRowResult{}, aliveErr
	}
	if err != nil {
		if *problem != "" {
			err = fmt.Errorf("%w (last seen: %s)", err, *problem)
		}
		return cloneSetRowResult{}, err
	}
	time.Sleep(trailing)
	return s.withRequests(cloneSetRowResult{Pods: pods, Wall: m.Wall, CPUSeconds: m.CPUSeconds, PeakRSS: m.PeakRSS}, began, m.Wall+trailing)
}

// withRequests completes r with the requests the API server received in the window that
// began at began: the manager's by verb and by User-Agent, and every client's writes.
func (s *cloneSetSide) withRequests(r cloneSetRowResult, began time.Time, window time.Duration) (cloneSetRowResult, error) {
	events, err := s.cp.AuditEvents()
	if err != nil {
		return cloneSetRowResult{}, err
	}
	events = eventsWithin(events, began, began.Add(window))
	r.Requests, r.Agents = requestsOf(events, actorManager)
	r.Writes = countWrites(events, began)
	r.Window = window
	return r, nil
}

// eventsWithin returns the events whose request the API server received in [from, to].
func eventsWithin(events []auditv1.Event, from, to time.Time) []auditv1.Event {
	var out []auditv1.Event
	for _, e := range events {
		if t := e.RequestReceivedTimestamp.Time; !t.Before(from) && !t.After(to) {
			out = append(out, e)
		}
	}
	return out
}

// requestsOf counts actor's completed requests in events, by verb and by User-Agent.
func requestsOf(events []auditv1.Event, actor string) (byVerb, byAgent map[string]int) {
	byVerb, byAgent = map[string]int{}, map[string]int{}
	for _, e := range events {
		if e.Stage == auditv1.StageResponseComplete && actorOf(e.UserAgent) == actor {
			byVerb[e.Verb]++
			byAgent[e.UserAgent]++
		}
	}
	return byVerb, byAgent
}

// pods lists the pods of the workload name.
func (s *cloneSetSide) pods(ctx context.Context, name string) ([]corev1.Pod, error) {
	list, err := s.client.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", name, err)
	}
	return list.Items, nil
}

// claims counts the claims of the CloneSet name that are not being deleted.
func (s *cloneSetSide) claims(ctx context.Context, name string) (int, error) {
	list, err := s.client.CoreV1().PersistentVolumeClaims(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return 0, fmt.Errorf("listing the claims of %s: %w", name, err)
	}
	n := 0
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// activePods returns pointers to the pods that are neither finished nor being deleted.
func activePods(pods []corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		if podutil.IsPodActive(&pods[i]) {
			out = append(out, &pods[i])
		}
	}
	return out
}

// waitAvailable waits, unmeasured, until the CloneSet's status counts replicas pods updated
// and available and its pods are Ready and run image.
func (s *cloneSetSide) waitAvailable(ctx context.Context, name string, replicas int32, image string) error {
	var problem string
	err := framework.WaitFor(ctx, s.o.timeout, fmt.Sprintf("CloneSet %s to have %d available pods", name, replicas), func(ctx context.Context) (bool, error) {
		st, err := s.status(ctx, name)
		if err != nil {
			return false, err
		}
		if st.ObservedGeneration < st.Generation || st.Replicas != replicas || st.UpdatedAvailable != replicas || st.Available != replicas {
			problem = fmt.Sprintf("status %+v", st)
			return false, nil
		}
		pods, err := s.pods(ctx, name)
		if err != nil {
			return false, err
		}
		problem = rolledPodsProblem(pods, replicas, image)
		return problem == "", nil
	})
	if err != nil && problem != "" {
		err = fmt.Errorf("%w (last seen: %s)", err, problem)
	}
	return err
}

// remove deletes the workload name and everything it made (no garbage collector runs):
// its pods at once (grace period 0: the node stub would only do the same), its claims
// (without the protection finalizer, which no controller would lift) and revisions; and
// waits until its pods are gone and settleTime more.
func (s *cloneSetSide) remove(ctx context.Context, name string) error {
	var err error
	if s.name == managerUpstream {
		err = s.client.AppsV1().ReplicaSets(benchNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	} else {
		err = s.bosun.AppsV1beta1().CloneSets(benchNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	selector := metav1.ListOptions{LabelSelector: "app=" + name}
	if err := s.client.CoreV1().Pods(benchNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, selector); err != nil {
		return fmt.Errorf("deleting the pods of %s: %w", name, err)
	}
	claims, err := s.client.CoreV1().PersistentVolumeClaims(benchNamespace).List(ctx, selector)
	if err != nil {
		return fmt.Errorf("listing the claims of %s: %w", name, err)
	}
	for _, claim := range claims.Items {
		if len(claim.Finalizers) == 0 {
			continue
		}
		_, err := s.client.CoreV1().PersistentVolumeClaims(benchNamespace).Patch(ctx, claim.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of claim %s: %w", claim.Name, err)
		}
	}
	if len(claims.Items) > 0 {
		if err := s.client.CoreV1().PersistentVolumeClaims(benchNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
			return fmt.Errorf("deleting the claims of %s: %w", name, err)
		}
	}
	if err := s.client.AppsV1().ControllerRevisions(benchNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		return fmt.Errorf("deleting the revisions of %s: %w", name, err)
	}
	// A manager that has not yet seen the workload's deletion replaces the pods deleted
	// above, and with no garbage collector those would stay: they are deleted as they come,
	// until none is left.
	err = framework.WaitFor(ctx, s.o.timeout, "the pods of "+name+" to be gone", func(ctx context.Context) (bool, error) {
		pods, err := s.client.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name, Limit: 1})
		if err != nil {
			return false, err
		}
		if len(pods.Items) == 0 {
			return true, nil
		}
		if err := s.client.CoreV1().Pods(benchNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, selector); err != nil {
			return false, fmt.Errorf("deleting the pods of %s again: %w", name, err)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	time.Sleep(settleTime)
	return nil
}

// steadyState creates --cloneset-steady-sets CloneSets of --cloneset-steady-replicas pods,
// waits until all have settled and steadySettle more, and counts the API requests over
// --cloneset-steady-window with nothing changing, with the manager's CPU time and peak RSS.
func (s *cloneSetSide) steadyState(ctx context.Context) (cloneSetRowResult, error) {
	cs := s.o.cloneSet
	replicas := int32(cs.steadyReplicas)
	names := make([]string, cs.steadySets)
	for i := range names {
		names[i] = fmt.Sprintf("cs-steady-%03d", i)
		obj := newBenchCloneSet(names[i], replicas, appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, "", false)
		if _, err := s.bosun.AppsV1beta1().CloneSets(benchNamespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return cloneSetRowResult{}, fmt.Errorf("creating CloneSet %s: %w", names[i], err)
		}
	}
	for _, name := range names {
		if err := s.waitAvailable(ctx, name, replicas, dsImage); err != nil {
			return cloneSetRowResult{}, err
		}
	}
	time.Sleep(steadySettle)
	meter, err := startMeter(s.manager.Pid())
	if err != nil {
		return cloneSetRowResult{}, err
	}
	began := time.Now()
	select {
	case <-ctx.Done():
		_, _ = meter.Stop()
		return cloneSetRowResult{}, ctx.Err()
	case <-time.After(cs.steadyWindow):
	}
	used, err := meter.Stop()
	if err != nil {
		return cloneSetRowResult{}, err
	}
	window := time.Since(began)
	return s.withRequests(cloneSetRowResult{
		Pods: cs.steadySets * cs.steadyReplicas, Wall: window, CPUSeconds: used.CPUSeconds, PeakRSS: used.PeakRSS,
	}, began, window)
}

// rowLabel is the report's name of a row, with the part's sizes filled in.
func (o *cloneSetOptions) rowLabel(row string) string {
	switch row {
	case rowScaleSmall:
		return "scale 0→" + thousands(o.small) + " (create → status.replicas)"
	case rowScaleLarge:
		return "scale 0→" + thousands(o.large) + " (create → status.replicas)"
	case rowScalePVC:
		return "scale 0→" + thousands(o.small) + ", 1 claim template (create → status.replicas, claims made)"
	case rowInPlaceSmall:
		return "in-place image update, " + thousands(o.small) + " pods, maxUnavailable " + cloneSetMaxUnavailable + " (→ updatedAvailableReplicas)"
	case rowInPlaceLarge:
		return "in-place image update, " + thousands(o.large) + " pods, maxUnavailable " + cloneSetMaxUnavailable + " (→ updatedAvailableReplicas)"
	case rowRecreate:
		return "recreate rollout, " + thousands(o.small) + " pods, maxSurge " + cloneSetRecreateSurge + ", maxUnavailable " +
			cloneSetMaxUnavailable + " (→ updatedAvailableReplicas)"
	case rowSteady:
		return fmt.Sprintf("steady state, %d CloneSets × %d pods, %s window", o.steadySets, o.steadyReplicas, o.steadyWindow)
	}
	return row
}
