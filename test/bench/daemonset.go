package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	kruiseclient "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The daemonset part's workloads, keying its report rows.
const (
	workloadCreateDS = "create DaemonSet"
	workloadRollDS   = "roll DaemonSet once"
	workloadDSBoth   = "create + roll DaemonSet"
)

const (
	// bosunDaemonSetController and upstreamDaemonSetController are the --controllers of
	// either manager in the daemonset part: its DaemonSet controller and nothing else.
	bosunDaemonSetController    = "advanced-daemonset-controller"
	upstreamDaemonSetController = "daemonset"

	dsName = "bench-ds"
	// dsImage is the template's image at creation, dsRolledImage the one the roll sets.
	dsImage       = "registry.k8s.io/pause:3.10"
	dsRolledImage = "registry.k8s.io/pause:3.10.1"
	// dsMaxUnavailable is both DaemonSets' rolling-update budget.
	dsMaxUnavailable = "10%"
	// dsBurstReplicas is bosun's default spec.burstReplicas and the fixed burst of upstream's
	// controller (it has no such field), written out so the object needs no defaulting.
	dsBurstReplicas = appsv1alpha1.DefaultDaemonSetBurstReplicas

	// benchNodeLabel marks the simulated nodes, so that they can be deleted together.
	benchNodeLabel = "bench.bosun.dev/simulated-node"
	// nodeCreateClients create the simulated nodes in parallel before a manager starts.
	nodeCreateClients = 32
)

// The client limits the daemonset part runs the managers with (--daemonset-client-limits).
const (
	// limitsGiven are --kube-api-qps and --kube-api-burst, the same for every manager.
	limitsGiven = "given"
	// limitsDefaults are no rate-limit flags at all: each manager with its own defaults, as
	// an operator who sets none runs it.
	limitsDefaults = "defaults"
)

// runDaemonSetPart runs one repetition of the daemonset part: each chosen manager alone with
// its DaemonSet controller, on its own fresh control plane with --daemonset-nodes nodes,
// once per chosen client-limit setting.
func runDaemonSetPart(ctx context.Context, o *options, res *results, upstreamBinary, logRoot string, rep int) error {
	for _, setting := range o.daemonSetLimits {
		limits, runs := o.limits, res.daemonSets
		if setting == limitsDefaults {
			limits, runs = clientLimits{Defaults: true}, res.daemonSetDefaults
		}
		for _, name := range o.daemonSetManagers {
			klog.FromContext(ctx).Info("Running the DaemonSet workloads", "manager", name, "nodes", o.daemonSetNodes, "clientLimits", setting, "repetition", rep)
			logDir := fmt.Sprintf("%s/daemonset-%s-%d", logRoot, name, rep)
			if setting == limitsDefaults {
				logDir = fmt.Sprintf("%s/daemonset-%s-defaults-%d", logRoot, name, rep)
			}
			r, err := runDaemonSet(ctx, o, name, upstreamBinary, logDir, limits)
			if err != nil {
				return fmt.Errorf("daemonset %s (client limits: %s), run %d: %w", name, setting, rep, err)
			}
			runs[name] = append(runs[name], r)
		}
	}
	return nil
}

// kruiseDaemonSetController is kruise-manager's Advanced DaemonSet controller, whose workers
// the bench waits for.
const kruiseDaemonSetController = "daemonset-controller"

// daemonSetManager runs the named manager with its DaemonSet controller alone. bosun serves
// its admission webhooks unless --daemonset-webhooks=false: it does by default
// (--webhook-port is 9876 unless set), so that is what a user runs. The DaemonSet the bench
// creates is written fully defaulted, so the object the controller sees is the same either
// way, and the only admission calls are its create and its one update. kruise-manager has no
// switch for its controllers or webhooks: it runs those of the CRDs installed, here the
// DaemonSet's alone (see runDaemonSet), and always serves its webhooks.
func daemonSetManager(o *options, name, upstreamBinary string, cp *framework.ControlPlane, limits clientLimits) (managerSpec, error) {
	switch name {
	case managerUpstream:
		return upstreamManager(upstreamBinary, cp, "kube-controller-manager", upstreamDaemonSetController, limits, o.verbosity), nil
	case managerKruise:
		return kruiseManager(o, cp, partDaemonSet, limits, kruiseDaemonSetController)
	}
	if !o.daemonSetWebhooks {
		opts := limits.options(bosunDaemonSetController, o.verbosity)
		opts.ExtraArgs = []string{"--webhook-port=0"}
		return managerSpec{Label: "bosun-controller-manager", Path: o.bosunBinary, Args: framework.BosunControllerManagerArgs(cp, opts)}, nil
	}
	return bosunWebhookManager(o, cp, limits)
}

// bosunWebhookManager runs bosun with the DaemonSet controller and its webhooks on a free
// loopback port. The webhook configurations it writes name https://127.0.0.1:<port>, its
// default, and its certificates live in the default Secret; start waits for /readyz, which
// holds the webhook server, its certificate and the written configurations.
func bosunWebhookManager(o *options, cp *framework.ControlPlane, limits clientLimits) (managerSpec, error) {
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		return managerSpec{}, err
	}
	opts := limits.options(bosunDaemonSetController, o.verbosity)
	opts.ExtraArgs = []string{"--webhook-port=" + strconv.Itoa(ports[0]), "--webhook-bind-address=127.0.0.1"}
	return managerSpec{
		Label:     "bosun-controller-manager",
		Path:      o.bosunBinary,
		Args:      framework.BosunControllerManagerArgs(cp, opts),
		ReadyPath: "/readyz",
	}, nil
}

// daemonSetControlPlane is the control plane options of a manager's daemonset run: bosun's
// CRDs for bosun and upstream (so that their API servers are configured alike), none for
// kruise-manager, whose own DaemonSet CRD runDaemonSet installs.
func daemonSetControlPlane(name string) framework.Options {
	if name == managerKruise {
		return framework.Options{}
	}
	return framework.Options{BosunCRDs: true}
}

// runDaemonSet measures one manager creating a DaemonSet over the simulated nodes and
// rolling it once. The nodes exist before the manager starts, so its start-up (and its
// node cache) is not charged to the create.
func runDaemonSet(ctx context.Context, o *options, name, upstreamBinary, logDir string, limits clientLimits) (runResult, error) {
	return withControlPlaneOptions(ctx, logDir, daemonSetControlPlane(name), func(ctx context.Context, cp *framework.ControlPlane, client kubernetes.Interface) (runResult, error) {
		if name == managerKruise {
			// OpenKruise's DaemonSet CRD (see installKruise): kruise-manager runs the
			// controller of every installed CRD, so the others stay idle.
			if err := installKruise(ctx, o, cp, "DaemonSet"); err != nil {
				return runResult{}, err
			}
		}
		nodes, err := createNodes(ctx, benchClientConfig(cp), o.daemonSetNodes)
		if err != nil {
			return runResult{}, err
		}
		driver, err := newDaemonSetDriver(name, cp, client, benchNamespace)
		if err != nil {
			return runResult{}, err
		}
		spec, err := daemonSetManager(o, name, upstreamBinary, cp, limits)
		if err != nil {
			return runResult{}, err
		}
		workloads := func(e *workloadEnv, ctx context.Context) ([]measurement, error) {
			return e.createAndRollDaemonSet(ctx, driver, nodes)
		}
		r, err := measureManager(ctx, o, cp, spec, client, logDir, workloads)
		if err != nil {
			return runResult{}, err
		}
		// The control plane goes with the run, but the nodes are cluster-scoped: removing
		// them keeps a control plane kept for debugging (or a shared one) free of them.
		selector := metav1.ListOptions{LabelSelector: benchNodeLabel}
		if err := client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
			return runResult{}, fmt.Errorf("deleting the simulated nodes: %w", err)
		}
		return r, nil
	})
}

// simulatedNode is a Ready, untainted node as a kubelet would register it. No kubelet
// runs: the pods the controllers create for it stay unbound (they name it through node
// affinity), and the pod readier marks them Ready.
func simulatedNode(i int) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("bench-node-%04d", i),
			Labels: map[string]string{benchNodeLabel: "true", corev1.LabelHostname: fmt.Sprintf("bench-node-%04d", i)},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
}

// createNodes creates n simulated nodes, Ready and untainted, with parallel clients and
// returns their names. A node's status is kept on create (a kubelet registers that way);
// should the API server drop it, it is written through the status subresource.
func createNodes(ctx context.Context, config *rest.Config, n int) ([]string, error) {
	names := make([]string, n)
	took, err := inParallel(ctx, config, n, nodeCreateClients, func(ctx context.Context, client kubernetes.Interface, i int) error {
		node := simulatedNode(i)
		created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
		// kube-apiserver's TaintNodesByCondition admission taints every new node
		// not-ready:NoSchedule, which no DaemonSet pod tolerates; the node lifecycle
		// controller would lift it for a Ready node, but none runs here, so the bench does.
		if len(created.Spec.Taints) > 0 {
			created.Spec.Taints = nil
			if created, err = client.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("removing the taints of node %s: %w", node.Name, err)
			}
		}
		if !nodeReady(created) {
			created.Status = node.Status
			if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("marking node %s Ready: %w", node.Name, err)
			}
		}
		names[i] = node.Name
		return nil
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Created the simulated nodes", "nodes", n, "took", took.Round(time.Millisecond))
	return names, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// dsStatus is the part of either DaemonSet's status the workloads wait on.
type dsStatus struct {
	Generation, ObservedGeneration                    int64
	Desired, Current, Updated, Available, Unavailable int32
}

// daemonSetDriver creates, rolls and reads the DaemonSet of one API: apps/v1 for upstream,
// apps.kruise.io/v1alpha1 for bosun.
type daemonSetDriver interface {
	create(ctx context.Context) error
	// setImage changes the pod template's image, which starts a rollout.
	setImage(ctx context.Context, image string) error
	status(ctx context.Context) (dsStatus, error)
}

func newDaemonSetDriver(manager string, cp *framework.ControlPlane, client kubernetes.Interface, namespace string) (daemonSetDriver, error) {
	if manager == managerUpstream {
		return &appsV1DaemonSets{client: client, namespace: namespace}, nil
	}
	// Custom resources have no protobuf encoding.
	config := benchClientConfig(cp)
	config.ContentType = runtime.ContentTypeJSON
	kruise, err := kruiseclient.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the apps.kruise.io client: %w", err)
	}
	d := &kruiseDaemonSets{client: kruise, namespace: namespace}
	if manager != managerKruise {
		return d, nil
	}
	dynamicClient, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	return &storedVersionDaemonSets{kruiseDaemonSets: d, client: dynamicClient}, nil
}

// imagePatch is a JSON patch of the first container's image: strategic merge patches are
// not served for custom resources, so both drivers send the same kind of patch.
func imagePatch(image string) ([]byte, error) {
	return json.Marshal([]map[string]string{{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": image}})
}

type appsV1DaemonSets struct {
	client    kubernetes.Interface
	namespace string
}

// newAppsV1DaemonSet is upstream's DaemonSet: rolling update with maxUnavailable 10% and
// no surge, as the bosun one.
func newAppsV1DaemonSet() *appsv1.DaemonSet {
	maxUnavailable, noSurge := intstr.FromString(dsMaxUnavailable), intstr.FromInt32(0)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: dsName},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: benchLabels(dsName)},
			Template: podTemplate(dsName),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable, MaxSurge: &noSurge},
			},
			RevisionHistoryLimit: ptr.To(appsv1alpha1.DefaultDaemonSetRevisionHistoryLimit),
		},
	}
}

func (d *appsV1DaemonSets) create(ctx context.Context) error {
	if _, err := d.client.AppsV1().DaemonSets(d.namespace).Create(ctx, newAppsV1DaemonSet(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating DaemonSet %s: %w", dsName, err)
	}
	return nil
}

func (d *appsV1DaemonSets) setImage(ctx context.Context, image string) error {
	patch, err := imagePatch(image)
	if err != nil {
		return err
	}
	if _, err := d.client.AppsV1().DaemonSets(d.namespace).Patch(ctx, dsName, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("rolling DaemonSet %s: %w", dsName, err)
	}
	return nil
}

func (d *appsV1DaemonSets) status(ctx context.Context) (dsStatus, error) {
	ds, err := d.client.AppsV1().DaemonSets(d.namespace).Get(ctx, dsName, metav1.GetOptions{})
	if err != nil {
		return dsStatus{}, err
	}
	s := ds.Status
	return dsStatus{
		Generation: ds.Generation, ObservedGeneration: s.ObservedGeneration,
		Desired: s.DesiredNumberScheduled, Current: s.CurrentNumberScheduled, Updated: s.UpdatedNumberScheduled,
		Available: s.NumberAvailable, Unavailable: s.NumberUnavailable,
	}, nil
}

type kruiseDaemonSets struct {
	client    kruiseclient.Interface
	namespace string
}

// newKruiseDaemonSet is bosun's DaemonSet with every field its mutating webhook defaults
// written out (TestKruiseDaemonSetIsDefaulted checks that), so that its stored object
// does not depend on whether the webhooks run.
func newKruiseDaemonSet() *appsv1alpha1.DaemonSet {
	maxUnavailable, noSurge := intstr.FromString(dsMaxUnavailable), intstr.FromInt32(0)
	burst := intstr.FromInt32(dsBurstReplicas)
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: dsName},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: benchLabels(dsName)},
			Template: podTemplate(dsName),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type:           appsv1alpha1.StandardRollingUpdateType,
					MaxUnavailable: &maxUnavailable,
					MaxSurge:       &noSurge,
				},
			},
			BurstReplicas:        &burst,
			RevisionHistoryLimit: ptr.To(appsv1alpha1.DefaultDaemonSetRevisionHistoryLimit),
		},
	}
}

func (d *kruiseDaemonSets) create(ctx context.Context) error {
	if _, err := d.client.AppsV1alpha1().DaemonSets(d.namespace).Create(ctx, newKruiseDaemonSet(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating apps.kruise.io DaemonSet %s: %w", dsName, err)
	}
	return nil
}

func (d *kruiseDaemonSets) setImage(ctx context.Context, image string) error {
	patch, err := imagePatch(image)
	if err != nil {
		return err
	}
	if _, err := d.client.AppsV1alpha1().DaemonSets(d.namespace).Patch(ctx, dsName, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("rolling apps.kruise.io DaemonSet %s: %w", dsName, err)
	}
	return nil
}

func (d *kruiseDaemonSets) status(ctx context.Context) (dsStatus, error) {
	ds, err := d.client.AppsV1alpha1().DaemonSets(d.namespace).Get(ctx, dsName, metav1.GetOptions{})
	if err != nil {
		return dsStatus{}, err
	}
	s := ds.Status
	return dsStatus{
		Generation: ds.Generation, ObservedGeneration: s.ObservedGeneration,
		Desired: s.DesiredNumberScheduled, Current: s.CurrentNumberScheduled, Updated: s.UpdatedNumberScheduled,
		Available: s.NumberAvailable, Unavailable: s.NumberUnavailable,
	}, nil
}

// kruiseStorageDaemonSets is apps.kruise.io/v1beta1, the version OpenKruise v1.9 stores
// DaemonSets in; its CRD converts other versions through kruise-manager's conversion
// webhook.
var kruiseStorageDaemonSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "daemonsets"}

// storedVersionDaemonSets is kruiseDaemonSets for kruise-manager: it creates and rolls the
// same v1alpha1 object, as a user coming from bosun would (two conversions by
// kruise-manager's webhook), but reads the status in the stored version. Reading v1alpha1
// would make kruise-manager convert every one of the bench's status polls (20 a second),
// work neither bosun nor upstream is charged for; the status fields the bench reads are the
// same in both versions.
type storedVersionDaemonSets struct {
	*kruiseDaemonSets
	client dynamic.Interface
}

func (d *storedVersionDaemonSets) status(ctx context.Context) (dsStatus, error) {
	ds, err := d.client.Resource(kruiseStorageDaemonSets).Namespace(d.namespace).Get(ctx, dsName, metav1.GetOptions{})
	if err != nil {
		return dsStatus{}, err
	}
	return unstructuredDSStatus(ds)
}

// unstructuredDSStatus reads dsStatus from a DaemonSet of either apps.kruise.io version.
func unstructuredDSStatus(ds *unstructured.Unstructured) (dsStatus, error) {
	s := dsStatus{Generation: ds.GetGeneration()}
	for field, into := range map[string]*int32{
		"desiredNumberScheduled": &s.Desired, "currentNumberScheduled": &s.Current, "updatedNumberScheduled": &s.Updated,
		"numberAvailable": &s.Available, "numberUnavailable": &s.Unavailable,
	} {
		v, _, err := unstructured.NestedInt64(ds.Object, "status", field)
		if err != nil {
			return dsStatus{}, fmt.Errorf("reading status.%s of DaemonSet %s: %w", field, ds.GetName(), err)
		}
		*into = int32(v)
	}
	observed, _, err := unstructured.NestedInt64(ds.Object, "status", "observedGeneration")
	if err != nil {
		return dsStatus{}, fmt.Errorf("reading status.observedGeneration of DaemonSet %s: %w", ds.GetName(), err)
	}
	s.ObservedGeneration = observed
	return s, nil
}

// statusSettled is the status half of a DaemonSet workload's end: the controller has seen
// the latest spec, wants a pod on every node, counts every one available and, when
// rolled, every one updated.
func statusSettled(s dsStatus, nodes int32, rolled bool) bool {
	if s.ObservedGeneration < s.Generation || s.Desired != nodes || s.Available != nodes || s.Current != nodes {
		return false
	}
	return !rolled || s.Updated == nodes
}

// createAndRollDaemonSet measures creating the DaemonSet until every node has an available
// pod, then changing its image until every node has an available pod of the new image and
// no old pod is left, while a pod readier plays the kubelets. It returns both halves and
// their sum.
func (e *workloadEnv) createAndRollDaemonSet(ctx context.Context, driver daemonSetDriver, nodes []string) ([]measurement, error) {
	readier := framework.StartPodReadier(ctx, e.client, e.namespace, e.readierWorkers, nil)
	defer func() { _ = readier.Stop() }()

	created, err := e.measureDaemonSet(ctx, workloadCreateDS, driver.create, driver, nodes, dsImage, false)
	if err != nil {
		return nil, err
	}
	time.Sleep(settleTime)
	roll := func(ctx context.Context) error { return driver.setImage(ctx, dsRolledImage) }
	rolled, err := e.measureDaemonSet(ctx, workloadRollDS, roll, driver, nodes, dsRolledImage, true)
	if err != nil {
		return nil, err
	}
	if err := readier.Stop(); err != nil {
		return nil, fmt.Errorf("the pod readier failed: %w", err)
	}
	both := measurement{
		Workload: workloadDSBoth,
		Wall:     created.Wall + rolled.Wall,
		usage: usage{
			CPUSeconds: created.CPUSeconds + rolled.CPUSeconds,
			PeakRSS:    max(created.PeakRSS, rolled.PeakRSS),
		},
	}
	return []measurement{created, rolled, both}, nil
}

// measureDaemonSet measures trigger until the DaemonSet's status has settled (see
// statusSettled) and the pods agree: exactly one active, Ready pod of image per node.
func (e *workloadEnv) measureDaemonSet(ctx context.Context, name string, trigger func(context.Context) error, driver daemonSetDriver,
	nodes []string, image string, rolled bool) (measurement, error) {
	var problem string
	done := func(ctx context.Context) (time.Time, error) {
		s, err := driver.status(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if !statusSettled(s, int32(len(nodes)), rolled) {
			problem = fmt.Sprintf("status %+v", s)
			return time.Time{}, nil
		}
		seen := time.Now()
		// As for the ReplicaSet: the status is the controller's claim, counted from its
		// cache, so the pods existed when it was written; listing them is not charged.
		pods, err := e.client.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + dsName})
		if err != nil {
			return time.Time{}, fmt.Errorf("listing pods: %w", err)
		}
		if problem = daemonPodsProblem(pods.Items, nodes, image); problem != "" {
			return time.Time{}, nil
		}
		return seen, nil
	}
	what := fmt.Sprintf("DaemonSet %s to run a Ready pod of %s on each of %d nodes", dsName, image, len(nodes))
	m, err := e.measure(ctx, name, what, trigger, done)
	if err != nil && problem != "" {
		err = fmt.Errorf("%w (last seen: %s)", err, problem)
	}
	return m, err
}

// daemonPodsProblem says what keeps pods from being a finished DaemonSet over nodes: one
// active, Ready pod of image on every node and no other active pod. It returns "" when
// nothing does.
func daemonPodsProblem(pods []corev1.Pod, nodes []string, image string) string {
	perNode := make(map[string]int, len(nodes))
	for _, n := range nodes {
		perNode[n] = 0
	}
	for i := range pods {
		pod := &pods[i]
		if !podutil.IsPodActive(pod) {
			continue
		}
		node := podTargetNode(pod)
		count, known := perNode[node]
		switch {
		case !known:
			return fmt.Sprintf("pod %s targets %q, not a simulated node", pod.Name, node)
		case count > 0:
			return fmt.Sprintf("node %s has more than one active pod", node)
		case len(pod.Spec.Containers) == 0 || pod.Spec.Containers[0].Image != image:
			return fmt.Sprintf("pod %s on %s does not run %s", pod.Name, node, image)
		case !podutil.IsPodReady(pod):
			return fmt.Sprintf("pod %s on %s is not Ready", pod.Name, node)
		}
		perNode[node] = 1
	}
	missing := 0
	for _, n := range nodes {
		if perNode[n] == 0 {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Sprintf("%d of %d nodes have no pod", missing, len(nodes))
	}
	return ""
}

// podTargetNode is the node a daemon pod is for: its spec.nodeName once bound, else the
// single name of a `metadata.name In [...]` match field in its required node affinity,
// which is how both controllers pin an unbound pod to its node. "" when it names none.
func podTargetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
	}
	return ""
}

// daemonSetLabel is the report's name of a daemonset workload.
func daemonSetLabel(workload string, nodes int) string {
	n := thousands(nodes)
	switch workload {
	case workloadCreateDS:
		return "create DaemonSet over " + n + " nodes (all available)"
	case workloadRollDS:
		return "roll its image, maxUnavailable " + dsMaxUnavailable + " (all updated and available)"
	case workloadDSBoth:
		return "**create + roll DaemonSet, " + n + " nodes**"
	}
	return workload
}

// daemonSetOrder is the order of the daemonset part's rows.
var daemonSetOrder = []string{workloadCreateDS, workloadRollDS, workloadDSBoth}
