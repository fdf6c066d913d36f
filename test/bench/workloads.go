package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The workloads, in the order a full run drives them. Their names key the report.
const (
	workloadScaleRS      = "scale ReplicaSet 0→N"
	workloadDeleteRS     = "delete that ReplicaSet (GC)"
	workloadCreateDeploy = "create Deployment"
	workloadRollDeploy   = "roll Deployment once"
	workloadCreateRoll   = "create + roll Deployment"
	workloadDeleteDeploy = "delete Deployment (GC)"
)

const (
	rsName     = "bench-rs"
	deployName = "bench-deploy"
	// rollAnnotation is changed in the pod template to roll the Deployment.
	rollAnnotation = "bench.bosun.dev/revision"
	// settleTime lets a manager finish the tail of the previous workload (status writes,
	// late events) before the next one is measured, so each is charged only its own work.
	settleTime = 3 * time.Second
)

// measurement is one workload's figures for the measured manager.
type measurement struct {
	Workload string
	Wall     time.Duration
	usage
}

// workloadEnv is what the workloads of one run share.
type workloadEnv struct {
	client    kubernetes.Interface
	namespace string
	// pid is the measured controller manager.
	pid            int
	rsReplicas     int32
	deployReplicas int32
	readierWorkers int
	timeout        time.Duration
	// profiler, when set, takes a CPU and a heap profile of the manager per workload.
	profiler *profiler
}

// completionPollInterval is how often a workload's end is checked. Finer than the
// framework's 100 ms because the unthrottled scale-up takes only a few seconds; the checks
// are single-object GETs or one-item lists, cheap for the API server.
const completionPollInterval = 50 * time.Millisecond

// completion reports when a workload finished: the zero time while it has not.
type completion func(ctx context.Context) (time.Time, error)

// once turns a condition into a completion that ended when the condition was first seen.
func once(condition func(ctx context.Context) (bool, error)) completion {
	return func(ctx context.Context) (time.Time, error) {
		ok, err := condition(ctx)
		if !ok || err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
}

// measure runs trigger, the API write that starts a workload, and waits until done reports
// the end, measuring the wall time in between and the manager's CPU and peak RSS (up to the
// moment the wait ended, which trails the end by at most one poll and a check).
func (e *workloadEnv) measure(ctx context.Context, name, what string, trigger func(context.Context) error, done completion) (measurement, error) {
	m, err := startMeter(e.pid)
	if err != nil {
		return measurement{}, fmt.Errorf("%s: %w", name, err)
	}
	finishProfile := func() error { return nil }
	if e.profiler != nil {
		finishProfile = e.profiler.start(ctx, name)
	}
	began := time.Now()
	if err := trigger(ctx); err != nil {
		_, _ = m.Stop()
		return measurement{}, fmt.Errorf("%s: %w", name, err)
	}
	var ended time.Time
	err = wait.PollUntilContextTimeout(ctx, completionPollInterval, e.timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		ended, err = done(ctx)
		return !ended.IsZero(), err
	})
	used, stopErr := m.Stop()
	if profileErr := finishProfile(); profileErr != nil {
		klog.FromContext(ctx).Error(profileErr, "Profiling failed", "workload", name)
	}
	if err != nil {
		if wait.Interrupted(err) {
			err = fmt.Errorf("timed out after %v", e.timeout)
		}
		return measurement{}, fmt.Errorf("%s: waiting for %s: %w", name, what, err)
	}
	if stopErr != nil {
		return measurement{}, fmt.Errorf("%s: %w", name, stopErr)
	}
	wall := ended.Sub(began)
	klog.FromContext(ctx).Info("Measured", "workload", name, "wall", wall.Round(time.Millisecond), "cpuSeconds", used.CPUSeconds, "peakRSSMiB", used.PeakRSS/mebibyte)
	return measurement{Workload: name, Wall: wall, usage: used}, nil
}

// runAllWorkloads drives the full sequence against whichever manager runs: scale a
// ReplicaSet up and delete it, then create, roll and delete a Deployment.
func (e *workloadEnv) runAllWorkloads(ctx context.Context) ([]measurement, error) {
	var results []measurement
	scale, err := e.scaleReplicaSet(ctx)
	if err != nil {
		return nil, err
	}
	results = append(results, scale)
	time.Sleep(settleTime)
	deleteRS, err := e.deleteAndWaitForEmpty(ctx, workloadDeleteRS, func(ctx context.Context, options metav1.DeleteOptions) error {
		if err := e.client.AppsV1().ReplicaSets(e.namespace).Delete(ctx, rsName, options); err != nil {
			return fmt.Errorf("deleting ReplicaSet %s: %w", rsName, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	results = append(results, deleteRS)
	time.Sleep(settleTime)
	rollout, err := e.createAndRollDeployment(ctx)
	if err != nil {
		return nil, err
	}
	results = append(results, rollout...)
	time.Sleep(settleTime)
	deleteDeploy, err := e.deleteAndWaitForEmpty(ctx, workloadDeleteDeploy, func(ctx context.Context, options metav1.DeleteOptions) error {
		if err := e.client.AppsV1().Deployments(e.namespace).Delete(ctx, deployName, options); err != nil {
			return fmt.Errorf("deleting Deployment %s: %w", deployName, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(results, deleteDeploy), nil
}

// benchLabels select the pods of one workload object.
func benchLabels(app string) map[string]string {
	return map[string]string{"app": app}
}

// podTemplate is the pod every workload creates: one container, no probes. No scheduler or
// kubelet runs, so pods stay unbound; the Deployment workload marks them Ready itself.
func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: benchLabels(app)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "pause",
				Image: "registry.k8s.io/pause:3.10",
			}},
		},
	}
}

func newReplicaSet(replicas int32) *appsv1.ReplicaSet {
	return newNamedReplicaSet(rsName, replicas)
}

// newNamedReplicaSet is a ReplicaSet of replicas pods of podTemplate(name), selected by
// benchLabels(name).
func newNamedReplicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: benchLabels(name)},
			Template: podTemplate(name),
		},
	}
}

// scaleReplicaSet creates the ReplicaSet at 0 replicas, waits until the manager has seen
// it, and measures scaling it to rsReplicas: from the scale write until its status counts
// them all and the pods exist.
func (e *workloadEnv) scaleReplicaSet(ctx context.Context) (measurement, error) {
	rsClient := e.client.AppsV1().ReplicaSets(e.namespace)
	if _, err := rsClient.Create(ctx, newReplicaSet(0), metav1.CreateOptions{}); err != nil {
		return measurement{}, fmt.Errorf("creating ReplicaSet %s: %w", rsName, err)
	}
	// A status at generation 1 proves the ReplicaSet controller is up and has the object in
	// its cache, so what follows measures the scale-up and not the manager's start.
	err := framework.WaitFor(ctx, e.timeout, "ReplicaSet "+rsName+" to be observed", func(ctx context.Context) (bool, error) {
		rs, err := rsClient.Get(ctx, rsName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return rs.Status.ObservedGeneration >= rs.Generation, nil
	})
	if err != nil {
		return measurement{}, err
	}
	time.Sleep(settleTime)

	want := e.rsReplicas
	scale := func(ctx context.Context) error {
		patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, want)
		if _, err := rsClient.Patch(ctx, rsName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("scaling ReplicaSet %s to %d: %w", rsName, want, err)
		}
		return nil
	}
	scaled := func(ctx context.Context) (time.Time, error) {
		rs, err := rsClient.Get(ctx, rsName, metav1.GetOptions{})
		if err != nil {
			return time.Time{}, err
		}
		if rs.Status.ObservedGeneration < rs.Generation || rs.Status.Replicas != want {
			return time.Time{}, nil
		}
		seen := time.Now()
		// The status is the controller's own claim; the pods must really be there. They are
		// listed only once the status agrees, which keeps polling cheap, and the listing's
		// own time is not charged to the controller: the workload ended when its status said
		// so (the controller counts pods from its cache, so they existed by then).
		active, err := e.countActivePods(ctx, rsName)
		if err != nil || active != int(want) {
			return time.Time{}, err
		}
		return seen, nil
	}
	return e.measure(ctx, workloadScaleRS, fmt.Sprintf("ReplicaSet %s at %d replicas", rsName, want), scale, scaled)
}

func (e *workloadEnv) countActivePods(ctx context.Context, app string) (int, error) {
	pods, err := e.client.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	active := 0
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			active++
		}
	}
	return active, nil
}

func newDeployment(replicas int32) *appsv1.Deployment {
	quarter := intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deployName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: benchLabels(deployName)},
			Template: podTemplate(deployName),
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter},
			},
		},
	}
}

// createAndRollDeployment measures creating the Deployment until its rollout is complete,
// then changing its template once until that rollout is complete, while a pod readier
// plays the kubelet. It returns both halves and their sum.
func (e *workloadEnv) createAndRollDeployment(ctx context.Context) ([]measurement, error) {
	deployClient := e.client.AppsV1().Deployments(e.namespace)
	readier := framework.StartPodReadier(ctx, e.client, e.namespace, e.readierWorkers, nil)
	defer func() { _ = readier.Stop() }()

	what := fmt.Sprintf("Deployment %s to finish its rollout", deployName)
	complete := once(func(ctx context.Context) (bool, error) {
		d, err := deployClient.Get(ctx, deployName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return rolloutComplete(d)
	})
	create := func(ctx context.Context) error {
		if _, err := deployClient.Create(ctx, newDeployment(e.deployReplicas), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Deployment %s: %w", deployName, err)
		}
		return nil
	}
	created, err := e.measure(ctx, workloadCreateDeploy, what, create, complete)
	if err != nil {
		return nil, err
	}
	roll := func(ctx context.Context) error {
		patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:"2"}}}}}`, rollAnnotation)
		if _, err := deployClient.Patch(ctx, deployName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("rolling Deployment %s: %w", deployName, err)
		}
		return nil
	}
	rolled, err := e.measure(ctx, workloadRollDeploy, what, roll, complete)
	if err != nil {
		return nil, err
	}
	if err := readier.Stop(); err != nil {
		return nil, fmt.Errorf("the pod readier failed: %w", err)
	}
	both := measurement{
		Workload: workloadCreateRoll,
		Wall:     created.Wall + rolled.Wall,
		usage: usage{
			CPUSeconds: created.CPUSeconds + rolled.CPUSeconds,
			PeakRSS:    max(created.PeakRSS, rolled.PeakRSS),
		},
	}
	return []measurement{created, rolled, both}, nil
}

// rolloutComplete is `kubectl rollout status`'s test: the controller has seen the latest
// spec, every replica runs the new template, no old replica is left, and all are available.
func rolloutComplete(d *appsv1.Deployment) (bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return false, fmt.Errorf("deployment %s exceeded its progress deadline", d.Name)
		}
	}
	if d.Spec.Replicas != nil && d.Status.UpdatedReplicas < *d.Spec.Replicas {
		return false, nil
	}
	if d.Status.Replicas > d.Status.UpdatedReplicas {
		return false, nil
	}
	return d.Status.AvailableReplicas >= d.Status.UpdatedReplicas, nil
}

// deleteAndWaitForEmpty runs del with background propagation, as kubectl deletes, and
// measures until the garbage collector has removed every ReplicaSet and pod of the
// namespace.
func (e *workloadEnv) deleteAndWaitForEmpty(ctx context.Context, name string, del func(context.Context, metav1.DeleteOptions) error) (measurement, error) {
	policy := metav1.DeletePropagationBackground
	trigger := func(ctx context.Context) error {
		return del(ctx, metav1.DeleteOptions{PropagationPolicy: &policy})
	}
	empty := once(func(ctx context.Context) (bool, error) {
		// One item is enough to know the namespace is not empty yet.
		one := metav1.ListOptions{Limit: 1}
		replicaSets, err := e.client.AppsV1().ReplicaSets(e.namespace).List(ctx, one)
		if err != nil || len(replicaSets.Items) > 0 {
			return false, err
		}
		pods, err := e.client.CoreV1().Pods(e.namespace).List(ctx, one)
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	return e.measure(ctx, name, "no ReplicaSet and no pod left in "+e.namespace, trigger, empty)
}

// createPodsInParallel is the raw API-server baseline: it creates total pods, shaped like
// the ones the ReplicaSet controller creates for owner, from clients parallel clients
// without client-side rate limits, and returns how long that took. It measures what the API
// server can take, the ceiling for any controller.
func createPodsInParallel(ctx context.Context, config *rest.Config, namespace string, owner *appsv1.ReplicaSet, total, clients int) (time.Duration, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    owner.Name + "-",
			Labels:          owner.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
		},
		Spec: owner.Spec.Template.Spec,
	}
	return inParallel(ctx, config, total, clients, func(ctx context.Context, client kubernetes.Interface, _ int) error {
		// A copy per call: encoding a request sets the object's TypeMeta for a moment, so
		// one object shared by concurrent creates is a data race.
		if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating a pod: %w", err)
		}
		return nil
	})
}

// inParallel calls do for every index in [0, total) from clients parallel workers, each with
// its own clientset of config, and returns how long the calls took (not counting building
// the clients). It stops handing out indices at the first error and returns that error.
func inParallel(ctx context.Context, config *rest.Config, total, clients int, do func(ctx context.Context, client kubernetes.Interface, i int) error) (time.Duration, error) {
	workers := make([]kubernetes.Interface, clients)
	for i := range workers {
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			return 0, fmt.Errorf("creating client %d: %w", i, err)
		}
		workers[i] = client
	}
	var next atomic.Int64
	var failed atomic.Bool
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	began := time.Now()
	for _, client := range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				if err := do(ctx, client, int(i)); err != nil {
					errOnce.Do(func() { firstErr = err })
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(began), firstErr
}
