package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	appslisters "github.com/bosun-dev/client-go/listers/apps/v1alpha1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// partImagePullJob measures the ImagePullJob fan-out of bosun and kruise-manager: the
// manager side, with the node agents' status writes simulated by the bench. Upstream has no
// such API, so there is no upstream side.
const partImagePullJob = "imagepulljob"

const (
	// bosunImagePullJobControllers are bosun's --controllers in the imagepulljob part: the
	// job controller, which hands the image to the NodeImages, and the NodeImage
	// controller beside it, as a cluster runs them.
	bosunImagePullJobControllers = "imagepulljob,nodeimage"

	ipjName = "bench-pull"
	// ipjImageName and ipjTag make up the job's image, ipjImage.
	ipjImageName = "registry.example.com/bench/app"
	ipjTag       = "1.0"
	ipjImage     = ipjImageName + ":" + ipjTag
	// ipjActiveDeadlineSeconds is the job's deadline: far beyond any run, so that the job
	// completes by its nodes, never by the deadline.
	ipjActiveDeadlineSeconds = 3600

	// ipjNodeNamePrefix names the simulated NodeImages.
	ipjNodeNamePrefix = "bench-node-"

	// agentUserAgent is the User-Agent of the simulated agents' client, by which the audit
	// log tells their writes from the manager's and the bench's own.
	agentUserAgent = "bosun-bench-agent"
	// managerUserAgentPrefix starts the User-Agent of every client of
	// bosun-controller-manager (client-go's default agent of the binary, then the client's
	// name); kruiseUserAgentPrefix that of kruise-manager's ("kruise-manager", or
	// "kruise-manager/<client name>").
	managerUserAgentPrefix = "bosun-controller-manager/"
	kruiseUserAgentPrefix  = "kruise-manager"
	// upstreamUserAgentPrefix starts the User-Agent of every client of upstream
	// kube-controller-manager (the cloneset part counts its requests).
	upstreamUserAgentPrefix = "kube-controller-manager/"
	// benchUserAgent is the User-Agent of benchClientConfig, which creates the job.
	benchUserAgent = "bosun-bench"
)

// ipjAuditPolicy logs the metadata of every write and nothing else: the part counts writes,
// and logging reads and watches as well would only load the API server.
const ipjAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// imagePullJobOptions are the imagepulljob part's flags.
type imagePullJobOptions struct {
	nodes        int
	parallelism  int
	pullDuration time.Duration
	agentQPS     float64
	agentBurst   int
	agentWorkers int
}

// register adds the part's flags to fs.
func (o *imagePullJobOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.nodes, "imagepulljob-nodes", 500, "imagepulljob part: simulated NodeImages (no Node behind them) the job pulls its image on")
	fs.IntVar(&o.parallelism, "imagepulljob-parallelism", 50, "imagepulljob part: the job's parallelism, the nodes pulling at once")
	fs.DurationVar(&o.pullDuration, "imagepulljob-pull-duration", 200*time.Millisecond, "imagepulljob part: how long a simulated "+
		"agent reports Pulling before it reports Succeeded")
	fs.Float64Var(&o.agentQPS, "imagepulljob-agent-qps", 500, "imagepulljob part: client-side limit on the simulated agents' "+
		"requests, all agents together")
	fs.IntVar(&o.agentBurst, "imagepulljob-agent-burst", 100, "imagepulljob part: burst of the simulated agents' limit")
	fs.IntVar(&o.agentWorkers, "imagepulljob-agent-workers", 64, "imagepulljob part: NodeImages the simulated agents handle at once")
}

func (o *imagePullJobOptions) validate() error {
	if o.nodes < 1 || o.parallelism < 1 || o.agentWorkers < 1 || o.agentQPS <= 0 || o.agentBurst < 1 {
		return errors.New("--imagepulljob-nodes, --imagepulljob-parallelism, --imagepulljob-agent-workers, " +
			"--imagepulljob-agent-qps and --imagepulljob-agent-burst must be positive")
	}
	if o.pullDuration < 0 {
		return errors.New("--imagepulljob-pull-duration must not be negative")
	}
	return nil
}

// writeCount counts the write requests of one client to one resource.
type writeCount struct {
	// Requests is every write request, answered or refused; Conflicts the 409s among them
	// and Failed the other answers of 400 and above.
	Requests, Conflicts, Failed int
}

// The actors the audit log's writes are charged to.
const (
	actorManager = "manager"
	actorAgents  = "agents"
	actorBench   = "bench"
	actorOther   = "other"
)

// writeVerbs are the verbs that change objects.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// countWrites counts the completed write requests in events that the API server received
// from since on, by actor (see actorOf) and by resource ("nodeimages", "nodeimages/status").
func countWrites(events []auditv1.Event, since time.Time) map[string]map[string]writeCount {
	out := map[string]map[string]writeCount{}
	for _, e := range events {
		if e.Stage != auditv1.StageResponseComplete || !slices.Contains(writeVerbs, e.Verb) || e.ObjectRef == nil ||
			e.RequestReceivedTimestamp.Time.Before(since) {
			continue
		}
		actor := actorOf(e.UserAgent)
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		if out[actor] == nil {
			out[actor] = map[string]writeCount{}
		}
		c := out[actor][resource]
		c.Requests++
		if e.ResponseStatus != nil {
			switch code := e.ResponseStatus.Code; {
			case code == 409:
				c.Conflicts++
			case code >= 400:
				c.Failed++
			}
		}
		out[actor][resource] = c
	}
	return out
}

// writeLatencies returns, sorted, how long the API server took to answer each write of
// actor to resource that it received from since on (from receiving the request to having
// answered it, the admission webhooks included).
func writeLatencies(events []auditv1.Event, since time.Time, actor, resource string) []time.Duration {
	var out []time.Duration
	for _, e := range events {
		if e.Stage != auditv1.StageResponseComplete || !slices.Contains(writeVerbs, e.Verb) || e.ObjectRef == nil ||
			e.ObjectRef.Resource != resource || e.ObjectRef.Subresource != "" || actorOf(e.UserAgent) != actor ||
			e.RequestReceivedTimestamp.Time.Before(since) {
			continue
		}
		out = append(out, e.StageTimestamp.Sub(e.RequestReceivedTimestamp.Time))
	}
	slices.Sort(out)
	return out
}

// actorOf names the client behind a User-Agent.
func actorOf(userAgent string) string {
	switch {
	case strings.HasPrefix(userAgent, managerUserAgentPrefix), strings.HasPrefix(userAgent, kruiseUserAgentPrefix),
		strings.HasPrefix(userAgent, upstreamUserAgentPrefix):
		return actorManager
	case userAgent == agentUserAgent:
		return actorAgents
	case userAgent == benchUserAgent:
		return actorBench
	}
	// kube-apiserver's own writes (its identity lease, for one).
	return actorOther
}

// imagePullJobRun is one repetition's figures.
type imagePullJobRun struct {
	// Manager is the manager measured: bosun or kruise.
	Manager string
	// Wall runs from the job's create to the bench seeing its completionTime; CPUSeconds
	// and PeakRSS are the manager's over that time, IdleRSS its resident set before.
	Wall       time.Duration
	CPUSeconds float64
	PeakRSS    uint64
	IdleRSS    uint64
	// Writes are the write requests from the job's create until settleTime after its
	// completion, by actor and resource (see countWrites).
	Writes map[string]map[string]writeCount
	// NodeImageWriteLatencies are the API server's times, sorted, for the manager's writes
	// of NodeImage specs (see writeLatencies).
	NodeImageWriteLatencies []time.Duration
	// PeakPulling is the most NodeImages that held the job's tag unfinished at once, as the
	// simulated agents saw them; the job's parallelism bounds it.
	PeakPulling int
	// Status is the job's status at the end.
	Status appsv1alpha1.ImagePullJobStatus
	// LoadAverage is the machine's one-minute load average just before the job's create.
	LoadAverage float64
}

// imagePullJobResults are the part's runs by manager, in order.
type imagePullJobResults struct {
	runs map[string][]imagePullJobRun
}

func newImagePullJobResults() *imagePullJobResults {
	return &imagePullJobResults{runs: map[string][]imagePullJobRun{}}
}

// runImagePullJobPart runs one repetition of the imagepulljob part: each chosen manager on a
// fresh control plane with an audit log of writes and its own CRDs (bosun's, or OpenKruise's
// NodeImage and ImagePullJob CRDs and what kruise-manager needs besides, see installKruise).
func runImagePullJobPart(ctx context.Context, o *options, res *imagePullJobResults, logRoot string, rep int) error {
	ipj := o.imagePullJob
	for _, name := range o.imagePullJobManagers {
		klog.FromContext(ctx).Info("Running the ImagePullJob fan-out", "manager", name, "nodes", ipj.nodes, "parallelism", ipj.parallelism,
			"pullDuration", ipj.pullDuration, "repetition", rep)
		logDir := fmt.Sprintf("%s/imagepulljob-%s-%d", logRoot, name, rep)
		opts := framework.Options{BosunCRDs: name != managerKruise, AuditPolicy: ipjAuditPolicy}
		_, err := withControlPlaneOptions(ctx, logDir, opts, func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
			if name == managerKruise {
				if err := installKruise(ctx, o, cp, "NodeImage", "ImagePullJob"); err != nil {
					return runResult{}, err
				}
			}
			r, err := runImagePullJob(ctx, o, cp, client, name, logDir)
			if err != nil {
				return runResult{}, err
			}
			res.runs[name] = append(res.runs[name], r)
			return runResult{}, nil
		})
		if err != nil {
			return fmt.Errorf("imagepulljob %s, run %d: %w", name, rep, err)
		}
	}
	return nil
}

// kruiseImagePullJobControllers are kruise-manager's controllers of this part, whose
// workers the bench waits for.
var kruiseImagePullJobControllers = []string{"imagepulljob-controller", "nodeimage-controller"}

// imagePullJobManager runs bosun with the job and NodeImage controllers and their webhooks
// on a free loopback port, as a cluster runs them, or kruise-manager, which runs its job and
// NodeImage controllers and webhooks because only those CRDs are installed.
func imagePullJobManager(o *options, cp *framework.ControlPlane, name string) (managerSpec, error) {
	if name == managerKruise {
		return kruiseManager(o, cp, partImagePullJob, o.limits, kruiseImagePullJobControllers...)
	}
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return managerSpec{}, err
	}
	opts := o.limits.options(bosunImagePullJobControllers, o.verbosity)
	opts.Webhooks, opts.WebhookPort = true, ports[0]
	opts.ExtraArgs = []string{"--webhook-bind-address=127.0.0.1"}
	return managerSpec{
		Label:     "bosun-controller-manager",
		Path:      o.bosunBinary,
		Args:      framework.BosunControllerManagerArgs(cp, opts),
		ReadyPath: "/readyz",
	}, nil
}

// runImagePullJob creates the NodeImages, starts the manager and the simulated agents, and
// measures one ImagePullJob over every NodeImage from its create to its completion.
func runImagePullJob(ctx context.Context, o *options, cp *framework.ControlPlane, client kubernetes.Interface, name, logDir string) (imagePullJobRun, error) {
	ipj := o.imagePullJob
	logger := klog.FromContext(ctx)
	bosun, err := bosunClientFor(benchClientConfig(cp))
	if err != nil {
		return imagePullJobRun{}, err
	}
	// The NodeImages exist before the manager starts, so that its start-up and initial
	// lists are not charged to the job, as the nodes are in the daemonset part.
	if err := createNodeImages(ctx, benchClientConfig(cp), ipj.nodes); err != nil {
		return imagePullJobRun{}, err
	}

	spec, err := imagePullJobManager(o, cp, name)
	if err != nil {
		return imagePullJobRun{}, err
	}
	m, err := startManager(ctx, spec, logDir)
	if err != nil {
		return imagePullJobRun{}, err
	}
	defer m.Stop(framework.DefaultStopGracePeriod)

	agentConfig := benchClientConfig(cp)
	agentConfig.UserAgent = agentUserAgent
	agentConfig.QPS, agentConfig.Burst = float32(ipj.agentQPS), ipj.agentBurst
	agentClient, err := bosunClientFor(agentConfig)
	if err != nil {
		return imagePullJobRun{}, err
	}
	agentCtx, stopAgents := context.WithCancel(ctx)
	agents := newSimulatedAgents(agentClient, ipj.pullDuration)
	agentsDone := make(chan error, 1)
	go func() { agentsDone <- agents.run(agentCtx, ipj.agentWorkers) }()
	defer func() {
		stopAgents()
		<-agentsDone
	}()
	if err := agents.waitForCache(ctx); err != nil {
		return imagePullJobRun{}, err
	}

	// Let the manager finish its start-up (initial lists, first syncs of the NodeImages)
	// unmeasured.
	time.Sleep(settleTime)
	if err := m.checkAlive(); err != nil {
		return imagePullJobRun{}, err
	}
	idle, err := currentRSS(m.Pid())
	if err != nil {
		return imagePullJobRun{}, err
	}
	env := &workloadEnv{client: client, namespace: benchNamespace, pid: m.Pid(), timeout: o.timeout}
	if o.profileSeconds > 0 {
		env.profiler = m.profiler(cp.Config().BearerToken, o.profileSeconds, logDir)
	}

	jobs := bosun.AppsV1alpha1().ImagePullJobs(benchNamespace)
	create := func(ctx context.Context) error {
		if _, err := jobs.Create(ctx, newBenchImagePullJob(ipj.parallelism), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ImagePullJob %s: %w", ipjName, err)
		}
		return nil
	}
	var status appsv1alpha1.ImagePullJobStatus
	done := func(ctx context.Context) (time.Time, error) {
		job, err := jobs.Get(ctx, ipjName, metav1.GetOptions{})
		if err != nil {
			return time.Time{}, fmt.Errorf("reading ImagePullJob %s: %w", ipjName, err)
		}
		status = job.Status
		if job.Status.CompletionTime == nil {
			return time.Time{}, nil
		}
		return time.Now(), nil
	}
	load := loadAverage()
	began := time.Now()
	what := fmt.Sprintf("ImagePullJob %s to complete on %d NodeImages", ipjName, ipj.nodes)
	measured, err := env.measure(ctx, "ImagePullJob fan-out", what, create, done)
	if aliveErr := m.checkAlive(); aliveErr != nil {
		return imagePullJobRun{}, aliveErr
	}
	if err != nil {
		return imagePullJobRun{}, fmt.Errorf("%w (last status: %+v)\nthe end of the %s log:\n%s", err, status, spec.Label, m.LogTail(20))
	}

	// Writes that trail the completion (the finalizer's removal, the last status) belong
	// to the job as well.
	time.Sleep(settleTime)
	events, err := cp.AuditEvents()
	if err != nil {
		return imagePullJobRun{}, err
	}
	r := imagePullJobRun{
		Manager:                 name,
		Wall:                    measured.Wall,
		CPUSeconds:              measured.CPUSeconds,
		PeakRSS:                 measured.PeakRSS,
		IdleRSS:                 idle,
		Writes:                  countWrites(events, began),
		NodeImageWriteLatencies: writeLatencies(events, began, actorManager, "nodeimages"),
		PeakPulling:             agents.peakPulling(),
		Status:                  status,
		LoadAverage:             load,
	}
	agentErrors := agents.errors()
	for _, p := range r.problems(ipj, agents.succeeded(), agentErrors) {
		logger.Info("The ImagePullJob went wrong", "problem", p)
	}
	nodeImageWrites := r.Writes[actorManager]["nodeimages"]
	logger.Info("Measured the ImagePullJob fan-out", "manager", name, "nodes", ipj.nodes, "wall", r.Wall.Round(time.Millisecond), "cpuSeconds", r.CPUSeconds,
		"peakRSSMiB", r.PeakRSS/mebibyte, "managerNodeImageWrites", nodeImageWrites.Requests, "managerWrites", r.Writes[actorManager],
		"agentWrites", r.Writes[actorAgents], "nodeImageWriteP50", percentile(r.NodeImageWriteLatencies, 50),
		"nodeImageWriteP99", percentile(r.NodeImageWriteLatencies, 99), "peakPulling", r.PeakPulling, "status", r.Status, "loadAverage", load)
	if len(agentErrors) > 0 {
		return imagePullJobRun{}, fmt.Errorf("the simulated agents failed %d times, first: %w", len(agentErrors), agentErrors[0])
	}
	if agents.succeeded() != ipj.nodes || r.Status.Succeeded != int32(ipj.nodes) || r.Status.Failed != 0 {
		return imagePullJobRun{}, fmt.Errorf("the job completed with status %+v and %d NodeImages reporting the image pulled, want %d succeeded",
			r.Status, agents.succeeded(), ipj.nodes)
	}
	return r, nil
}

// problems lists what makes a run's outcome wrong rather than slow: nodes that did not
// succeed, more nodes pulling at once than the parallelism allows, agent failures.
func (r imagePullJobRun) problems(o imagePullJobOptions, succeeded int, agentErrors []error) []string {
	var out []string
	if int(r.Status.Desired) != o.nodes || int(r.Status.Succeeded) != o.nodes || r.Status.Failed != 0 {
		out = append(out, fmt.Sprintf("job status desired %d succeeded %d failed %d, want %d succeeded of %d",
			r.Status.Desired, r.Status.Succeeded, r.Status.Failed, o.nodes, o.nodes))
	}
	if succeeded != o.nodes {
		out = append(out, fmt.Sprintf("%d of %d NodeImages report the image pulled", succeeded, o.nodes))
	}
	if r.PeakPulling > o.parallelism {
		out = append(out, fmt.Sprintf("%d NodeImages pulled at once, the parallelism is %d", r.PeakPulling, o.parallelism))
	}
	if len(agentErrors) > 0 {
		out = append(out, fmt.Sprintf("the simulated agents failed %d times, first: %v", len(agentErrors), agentErrors[0]))
	}
	return out
}

// bosunClientFor builds an apps.kruise.io client. Custom resources have no protobuf
// encoding.
func bosunClientFor(config *rest.Config) (bosunclientset.Interface, error) {
	config = rest.CopyConfig(config)
	config.ContentType = runtime.ContentTypeJSON
	client, err := bosunclientset.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the apps.kruise.io client: %w", err)
	}
	return client, nil
}

// newBenchImagePullJob pulls the image on every NodeImage (no selector), parallelism at a
// time, and completes once all have: completion policy Always with a deadline that no run
// reaches. The webhook defaults the rest.
func newBenchImagePullJob(parallelism int) *appsv1alpha1.ImagePullJob {
	return &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: ipjName, Namespace: benchNamespace},
		Spec: appsv1alpha1.ImagePullJobSpec{
			Image: ipjImage,
			ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				Parallelism: ptr.To(intstr.FromInt32(int32(parallelism))),
				CompletionPolicy: appsv1alpha1.CompletionPolicy{
					Type:                  appsv1alpha1.Always,
					ActiveDeadlineSeconds: ptr.To[int64](ipjActiveDeadlineSeconds),
				},
			},
		},
	}
}

// simulatedNodeImage is the empty NodeImage of node i, labelled like a node (a NodeImage
// carries its node's labels) and marked fake, so that the NodeImage controller keeps it
// although no Node exists.
func simulatedNodeImage(i int) *appsv1alpha1.NodeImage {
	name := fmt.Sprintf("%s%04d", ipjNodeNamePrefix, i)
	return &appsv1alpha1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				appsv1alpha1.FakeNodeImageLabelKey: "true",
				benchNodeLabel:                     "true",
				"kubernetes.io/hostname":           name,
				"kubernetes.io/os":                 "linux",
				"kubernetes.io/arch":               "amd64",
				"topology.kubernetes.io/zone":      "zone-" + strconv.Itoa(i%3),
			},
		},
	}
}

// createNodeImages creates n simulated NodeImages from parallel goroutines.
func createNodeImages(ctx context.Context, config *rest.Config, n int) error {
	client, err := bosunClientFor(config)
	if err != nil {
		return err
	}
	indexes := make([]int, n)
	for i := range indexes {
		indexes[i] = i
	}
	took, err := inParallelOver(ctx, indexes, nodeCreateClients, func(ctx context.Context, i int) error {
		ni := simulatedNodeImage(i)
		if _, err := client.AppsV1alpha1().NodeImages().Create(ctx, ni, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating NodeImage %s: %w", ni.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Created the simulated NodeImages", "nodeImages", n, "took", took.Round(time.Millisecond))
	return nil
}

// tagKey names one tag of one image.
type tagKey struct {
	image, tag string
}

// simulatedAgents play the node agents of every NodeImage: for each tag of the spec
// without a current status they report Pulling at once and, the pull duration later,
// Succeeded, each time writing the whole status with its counters as a real agent does.
// They watch NodeImages, react only to spec changes (their own status writes queue
// nothing), and remember what they reported, like a real agent's pull workers.
type simulatedAgents struct {
	client       bosunclientset.Interface
	pullDuration time.Duration
	factory      bosuninformers.SharedInformerFactory
	informer     cache.SharedIndexInformer
	lister       appslisters.NodeImageLister
	queue        workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// reported holds, by NodeImage, the tag statuses the agent has decided on.
	reported map[string]map[tagKey]appsv1alpha1.ImageTagStatus
	// pulling counts the tags being pulled now; peak is its maximum.
	pulling, peak int
	done          int
	errs          []error
}

func newSimulatedAgents(client bosunclientset.Interface, pullDuration time.Duration) *simulatedAgents {
	factory := bosuninformers.NewSharedInformerFactory(client, 0)
	nodeImages := factory.Apps().V1alpha1().NodeImages()
	a := &simulatedAgents{
		client:       client,
		pullDuration: pullDuration,
		factory:      factory,
		informer:     nodeImages.Informer(),
		lister:       nodeImages.Lister(),
		queue:        workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		reported:     map[string]map[tagKey]appsv1alpha1.ImageTagStatus{},
	}
	_, _ = a.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: a.enqueue,
		UpdateFunc: func(old, cur any) {
			oldNI, ok1 := old.(*appsv1alpha1.NodeImage)
			curNI, ok2 := cur.(*appsv1alpha1.NodeImage)
			if ok1 && ok2 && oldNI.Generation == curNI.Generation {
				return
			}
			a.enqueue(cur)
		},
	})
	return a
}

func (a *simulatedAgents) enqueue(obj any) {
	if ni, ok := obj.(*appsv1alpha1.NodeImage); ok {
		a.queue.Add(ni.Name)
	}
}

// run starts the watch and workers NodeImages at once until ctx ends.
func (a *simulatedAgents) run(ctx context.Context, workers int) error {
	defer a.queue.ShutDown()
	a.factory.Start(ctx.Done())
	defer a.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), a.informer.HasSynced) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for a.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	a.queue.ShutDown()
	wg.Wait()
	return nil
}

// waitForCache returns once the agents' watch has listed the NodeImages.
func (a *simulatedAgents) waitForCache(ctx context.Context) error {
	return framework.WaitFor(ctx, time.Minute, "the simulated agents' NodeImage cache to sync", func(context.Context) (bool, error) {
		return a.informer.HasSynced(), nil
	})
}

func (a *simulatedAgents) processNext(ctx context.Context) bool {
	name, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(name)
	if err := a.sync(ctx, name); err != nil {
		if ctx.Err() != nil {
			return false
		}
		a.mu.Lock()
		a.errs = append(a.errs, err)
		a.mu.Unlock()
		a.queue.AddRateLimited(name)
		return true
	}
	a.queue.Forget(name)
	return true
}

// sync advances the pulls of one NodeImage and writes its status when that changed it.
func (a *simulatedAgents) sync(ctx context.Context, name string) error {
	cached, err := a.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading NodeImage %s from the cache: %w", name, err)
	}
	next := a.advance(name, cached, time.Now())
	if next > 0 {
		a.queue.AddAfter(name, next)
	}
	a.mu.Lock()
	reported := maps.Clone(a.reported[name])
	a.mu.Unlock()

	current := cached
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if current == nil {
			fresh, err := a.client.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current = fresh
		}
		status := agentStatus(current.Spec, current.Status, reported)
		if apiequality.Semantic.DeepEqual(status, current.Status) {
			return nil
		}
		updated := current.DeepCopy()
		updated.Status = status
		if _, err := a.client.AppsV1alpha1().NodeImages().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			current = nil
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("writing the status of NodeImage %s: %w", name, err)
		}
		return nil
	})
}

// advance decides what the agent of a NodeImage reports now: a tag of the spec it has not
// reported at its version starts Pulling (unless the status already shows it finished at
// that version: a real agent keeps such a status as it is); a Pulling tag whose pull time
// is over has Succeeded. It returns how long until the next pull finishes, 0 when none is
// left.
func (a *simulatedAgents) advance(name string, ni *appsv1alpha1.NodeImage, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	reported := a.reported[name]
	if reported == nil {
		reported = map[tagKey]appsv1alpha1.ImageTagStatus{}
		a.reported[name] = reported
	}
	var next time.Duration
	for image, spec := range ni.Spec.Images {
		for _, tag := range spec.Tags {
			key := tagKey{image, tag.Tag}
			status, known := reported[key]
			if !known || status.Version != tag.Version {
				if finished := statusOf(ni.Status, image, tag.Tag); finished != nil && finished.Version == tag.Version && finished.CompletionTime != nil {
					continue
				}
				if known && status.Phase == appsv1alpha1.ImagePhasePulling {
					a.pulling-- // the version changed under a pull: the old one is dropped
				}
				status = appsv1alpha1.ImageTagStatus{
					Tag: tag.Tag, Phase: appsv1alpha1.ImagePhasePulling, Version: tag.Version,
					StartTime: &metav1.Time{Time: now},
				}
				reported[key] = status
				a.pulling++
				a.peak = max(a.peak, a.pulling)
			}
			if status.Phase != appsv1alpha1.ImagePhasePulling {
				continue
			}
			if left := status.StartTime.Add(a.pullDuration).Sub(now); left > 0 {
				if next == 0 || left < next {
					next = left
				}
				continue
			}
			reported[key] = succeededStatus(status, image, now)
			a.pulling--
			a.done++
		}
	}
	return next
}

// succeededStatus is a finished pull of pulling: progress 100, the completion time and an
// image ID `<name>@sha256:<hex>` as the CRI would give it.
func succeededStatus(pulling appsv1alpha1.ImageTagStatus, image string, now time.Time) appsv1alpha1.ImageTagStatus {
	sum := sha256.Sum256([]byte(image + ":" + pulling.Tag))
	s := pulling
	s.Phase = appsv1alpha1.ImagePhaseSucceeded
	s.Progress = 100
	s.CompletionTime = &metav1.Time{Time: now}
	s.ImageID = image + "@sha256:" + hex.EncodeToString(sum[:])
	return s
}

// statusOf returns the status of image:tag in status, nil when it has none.
func statusOf(status appsv1alpha1.NodeImageStatus, image, tag string) *appsv1alpha1.ImageTagStatus {
	for i, s := range status.ImageStatuses[image].Tags {
		if s.Tag == tag {
			return &status.ImageStatuses[image].Tags[i]
		}
	}
	return nil
}

// agentStatus is the whole status an agent writes for spec: for every tag of the spec, what
// the agent reported at the tag's version, else the status it already had at that version
// (kept as is), else nothing yet; tags sorted by tag; desired counts the spec's tags and the
// phase counters the statuses. Statuses of tags no longer in spec are dropped.
func agentStatus(spec appsv1alpha1.NodeImageSpec, old appsv1alpha1.NodeImageStatus, reported map[tagKey]appsv1alpha1.ImageTagStatus) appsv1alpha1.NodeImageStatus {
	out := appsv1alpha1.NodeImageStatus{FirstSyncStatus: old.FirstSyncStatus}
	for _, image := range slices.Sorted(maps.Keys(spec.Images)) {
		var tags []appsv1alpha1.ImageTagStatus
		for _, tag := range spec.Images[image].Tags {
			out.Desired++
			s, ok := reported[tagKey{image, tag.Tag}]
			if !ok || s.Version != tag.Version {
				kept := statusOf(old, image, tag.Tag)
				if kept == nil || kept.Version != tag.Version {
					continue
				}
				s = *kept
			}
			switch s.Phase {
			case appsv1alpha1.ImagePhaseSucceeded:
				out.Succeeded++
			case appsv1alpha1.ImagePhaseFailed:
				out.Failed++
			case appsv1alpha1.ImagePhasePulling:
				out.Pulling++
			case appsv1alpha1.ImagePhaseWaiting:
				out.Waiting++
			}
			tags = append(tags, s)
		}
		if len(tags) == 0 {
			continue
		}
		slices.SortFunc(tags, func(x, y appsv1alpha1.ImageTagStatus) int { return strings.Compare(x.Tag, y.Tag) })
		if out.ImageStatuses == nil {
			out.ImageStatuses = map[string]appsv1alpha1.ImageStatus{}
		}
		out.ImageStatuses[image] = appsv1alpha1.ImageStatus{Tags: tags}
	}
	return out
}

func (a *simulatedAgents) peakPulling() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// succeeded is the number of tags the agents reported pulled.
func (a *simulatedAgents) succeeded() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done
}

func (a *simulatedAgents) errors() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.errs)
}
