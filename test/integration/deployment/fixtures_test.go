package deployment

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Strings users and tools read (annotations, reasons, messages, events), checked verbatim.
const (
	revisionAnnotation        = "deployment.kubernetes.io/revision"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	maxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	lastAppliedAnnotation     = "kubectl.kubernetes.io/last-applied-configuration"
	changeCauseAnnotation     = "kubernetes.io/change-cause"
	podTemplateHashLabel      = "pod-template-hash"

	reasonNewRSCreated           = "NewReplicaSetCreated"
	reasonRSUpdated              = "ReplicaSetUpdated"
	reasonNewRSAvailable         = "NewReplicaSetAvailable"
	reasonProgressDeadline       = "ProgressDeadlineExceeded"
	reasonPaused                 = "DeploymentPaused"
	reasonResumed                = "DeploymentResumed"
	reasonMinimumAvailable       = "MinimumReplicasAvailable"
	reasonMinimumUnavailable     = "MinimumReplicasUnavailable"
	messageMinimumAvailable      = "Deployment has minimum availability."
	messageMinimumUnavailable    = "Deployment does not have minimum availability."
	messagePaused                = "Deployment is paused"
	messageResumed               = "Deployment is resumed"
	eventScalingReplicaSet       = "ScalingReplicaSet"
	deploymentControllerName     = "deployment-controller"
	terminatingReplicasGate      = "DeploymentReplicaSetTerminatingReplicas"
	controllersUnderTest         = "replicaset,deployment"
	garbageCollectorControllerID = "garbagecollector"
)

const (
	// holdFinalizer keeps deleted pods terminating: nothing but the test's cleanup
	// removes it, as a kubelet would only once the containers stopped.
	holdFinalizer = "bosun.dev/test-hold"

	// fakeImage is the image of the first revision of every Deployment.
	fakeImage = "fake-image"

	// testTimeout bounds a whole test; waitTimeout a single awaited state. They are
	// generous because the machine is small and shared; a healthy run is far quicker.
	testTimeout = 4 * time.Minute
	waitTimeout = 2 * time.Minute
)

// testEnv is what every test works with: the framework's environment, with a context
// bounded by testTimeout, for the test t.
type testEnv struct {
	*framework.Env
	t *testing.T
}

// setup prepares a test and runs bosun-controller-manager with the ReplicaSet and
// Deployment controllers and the given --feature-gates value ("" for the defaults). The
// manager stops when the test ends, before the test's workloads are removed.
func setup(t *testing.T, featureGates string) *testEnv {
	t.Helper()
	e := setupWithoutControllers(t)
	framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Controllers:  controllersUnderTest,
		FeatureGates: featureGates,
	})
	return e
}

// setupWithoutControllers prepares a test that needs only the API server. When the test
// ends, the namespace's Deployments, ReplicaSets and pods are removed, held pods included.
func setupWithoutControllers(t *testing.T) *testEnv {
	t.Helper()
	env := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		Timeout: testTimeout, WaitTimeout: waitTimeout,
		Remove: []string{"deployments.apps", "replicasets.apps", "pods"},
	})
	return &testEnv{Env: env, t: t}
}

// deployments are the namespace's Deployments, shown by describeDeployment when a wait
// fails.
func (e *testEnv) deployments() *framework.Objects[*appsv1.Deployment] {
	return e.Deployments().DescribedBy(describeDeployment)
}

// startPodReadier marks the namespace's pods Running and Ready as they appear, except those
// accept refuses (nil accepts all), in place of a kubelet.
func (e *testEnv) startPodReadier(accept func(*corev1.Pod) bool) {
	e.t.Helper()
	e.StartPodReadier(e.t, 8, accept)
}

// exceptImages is a readier filter that leaves pods of the given images not ready.
func exceptImages(images ...string) func(*corev1.Pod) bool {
	return func(pod *corev1.Pod) bool {
		for _, c := range pod.Spec.Containers {
			for _, image := range images {
				if c.Image == image {
					return false
				}
			}
		}
		return true
	}
}

// newDeployment is an apps/v1 Deployment selecting name=<name>, with one container of
// fakeImage; everything else is left to the API server's defaults.
func newDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"name": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyLabels(labels)},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "main", Image: fakeImage}},
				},
			},
		},
	}
}

func copyLabels(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// setImage changes the image of the Deployment's first container: a new template.
func (e *testEnv) setImage(name, image string) *appsv1.Deployment {
	e.t.Helper()
	return e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
}

func (e *testEnv) scaleDeployment(name string, replicas int32) *appsv1.Deployment {
	e.t.Helper()
	return e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.Replicas = &replicas })
}

// allReplicaSets lists the namespace's ReplicaSets, oldest first (name breaks ties).
func (e *testEnv) allReplicaSets(ctx context.Context) ([]*appsv1.ReplicaSet, error) {
	list, err := e.Client.AppsV1().ReplicaSets(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	rses := make([]*appsv1.ReplicaSet, 0, len(list.Items))
	for i := range list.Items {
		rses = append(rses, &list.Items[i])
	}
	sortByCreation(rses)
	return rses, nil
}

func sortByCreation(rses []*appsv1.ReplicaSet) {
	sort.SliceStable(rses, func(i, j int) bool {
		a, b := rses[i].CreationTimestamp, rses[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return rses[i].Name < rses[j].Name
	})
}

// replicaSetsOf lists the ReplicaSets controlled by the Deployment with uid, oldest first.
func (e *testEnv) replicaSetsOf(ctx context.Context, uid types.UID) ([]*appsv1.ReplicaSet, error) {
	all, err := e.allReplicaSets(ctx)
	if err != nil {
		return nil, err
	}
	var owned []*appsv1.ReplicaSet
	for _, rs := range all {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == uid {
			owned = append(owned, rs)
		}
	}
	return owned, nil
}

// mustReplicaSetsOf is replicaSetsOf for the test's own goroutine.
func (e *testEnv) mustReplicaSetsOf(d *appsv1.Deployment) []*appsv1.ReplicaSet {
	e.t.Helper()
	rses, err := e.replicaSetsOf(e.Ctx, d.UID)
	if err != nil {
		e.t.Fatal(err)
	}
	return rses
}

// sameTemplateIgnoringHash reports whether two pod templates are equal once the
// pod-template-hash label is removed from both: how the controller recognises the new
// ReplicaSet.
func sameTemplateIgnoringHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, podTemplateHashLabel)
	delete(b.Labels, podTemplateHashLabel)
	return equality.Semantic.DeepEqual(a, b)
}

// newReplicaSetAmong returns the oldest ReplicaSet whose template is the Deployment's.
func newReplicaSetAmong(d *appsv1.Deployment, rses []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	for _, rs := range rses {
		if sameTemplateIgnoringHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// describeDeployment renders a Deployment for the failure messages of waits.
func describeDeployment(d *appsv1.Deployment) string {
	return fmt.Sprintf("generation %d, annotations %v, status %s", generationOf(d), annotationsOf(d), statusString(d))
}

func generationOf(d *appsv1.Deployment) int64 {
	if d == nil {
		return 0
	}
	return d.Generation
}

func annotationsOf(d *appsv1.Deployment) map[string]string {
	if d == nil {
		return nil
	}
	return d.Annotations
}

// statusString renders a Deployment status compactly for failure messages.
func statusString(d *appsv1.Deployment) string {
	if d == nil {
		return "<none>"
	}
	s := d.Status
	var b strings.Builder
	fmt.Fprintf(&b, "{observedGeneration %d, replicas %d, updated %d, ready %d, available %d, unavailable %d, terminating %s, collisionCount %s, conditions [",
		s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas,
		int32PtrString(s.TerminatingReplicas), int32PtrString(s.CollisionCount))
	for i, c := range s.Conditions {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message)
	}
	b.WriteString("]}")
	return b.String()
}

func int32PtrString(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// observed reports whether the controller has seen the Deployment's latest spec.
func observed(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation
}

// waitForObserved waits until the controller has processed the Deployment's latest
// generation.
func (e *testEnv) waitForObserved(name string) *appsv1.Deployment {
	e.t.Helper()
	return e.deployments().WaitFor(e.t, name, "observedGeneration to reach generation", observed)
}

// complete is the Deployment's "successfully rolled out" state as kubectl rollout status
// and the controller define it: everything updated and available, and the
// Progressing condition saying so.
func complete(d *appsv1.Deployment) bool {
	replicas := *d.Spec.Replicas
	s := d.Status
	if !observed(d) || s.UpdatedReplicas != replicas || s.Replicas != replicas || s.AvailableReplicas != replicas {
		return false
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		return true
	}
	c := condition(d.Status, appsv1.DeploymentProgressing)
	return c != nil && c.Status == corev1.ConditionTrue && c.Reason == reasonNewRSAvailable
}

// waitForComplete waits until the rollout of the Deployment's current template is
// complete and returns the Deployment with its new ReplicaSet.
func (e *testEnv) waitForComplete(name string) (*appsv1.Deployment, *appsv1.ReplicaSet) {
	e.t.Helper()
	d := e.deployments().WaitFor(e.t, name, "rollout to complete", complete)
	rs := newReplicaSetAmong(d, e.mustReplicaSetsOf(d))
	if rs == nil {
		e.t.Fatalf("Deployment %s is complete but no ReplicaSet it controls has its template", name)
	}
	if avail := condition(d.Status, appsv1.DeploymentAvailable); avail == nil || avail.Status != corev1.ConditionTrue ||
		avail.Reason != reasonMinimumAvailable || avail.Message != messageMinimumAvailable {
		e.t.Errorf("complete Deployment %s: Available condition = %+v, want True/%s %q", name, avail, reasonMinimumAvailable, messageMinimumAvailable)
	}
	return d, rs
}

// waitForRevisionAndImage waits until the Deployment has the revision annotation and the
// image, and a ReplicaSet it controls with its template carries the same revision; it
// returns both.
func (e *testEnv) waitForRevisionAndImage(name, revision, image string) (*appsv1.Deployment, *appsv1.ReplicaSet) {
	e.t.Helper()
	var d *appsv1.Deployment
	var rs *appsv1.ReplicaSet
	e.Await(e.t, fmt.Sprintf("Deployment %s: revision %s with image %s", name, revision, image), func(ctx context.Context) (bool, error) {
		var err error
		d, err = e.Client.AppsV1().Deployments(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Annotations[revisionAnnotation] != revision || d.Spec.Template.Spec.Containers[0].Image != image {
			return false, nil
		}
		rses, err := e.replicaSetsOf(ctx, d.UID)
		if err != nil {
			return false, err
		}
		rs = newReplicaSetAmong(d, rses)
		return rs != nil && rs.Annotations[revisionAnnotation] == revision && rs.Spec.Template.Spec.Containers[0].Image == image, nil
	}, func() string {
		rses, _ := e.allReplicaSets(e.Ctx)
		return fmt.Sprintf("Deployment annotations %v\nReplicaSets:\n%s", annotationsOf(d), describeReplicaSets(rses))
	})
	return d, rs
}

// describeReplicaSets renders ReplicaSets for failure messages.
func describeReplicaSets(rses []*appsv1.ReplicaSet) string {
	var b strings.Builder
	for _, rs := range rses {
		owner := "<none>"
		if ref := metav1.GetControllerOf(rs); ref != nil {
			owner = ref.Kind + "/" + ref.Name
		}
		fmt.Fprintf(&b, "  %s owner %s spec %s status (replicas %d ready %d available %d terminating %s) image %s annotations %v\n",
			rs.Name, owner, int32PtrString(rs.Spec.Replicas), rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas,
			int32PtrString(rs.Status.TerminatingReplicas), rs.Spec.Template.Spec.Containers[0].Image, rs.Annotations)
	}
	return b.String()
}

// waitForReplicaSets polls the ReplicaSets the Deployment controls until cond holds.
func (e *testEnv) waitForReplicaSets(d *appsv1.Deployment, what string, cond func([]*appsv1.ReplicaSet) bool) []*appsv1.ReplicaSet {
	e.t.Helper()
	var last []*appsv1.ReplicaSet
	e.Await(e.t, fmt.Sprintf("ReplicaSets of %s: %s", d.Name, what), func(ctx context.Context) (bool, error) {
		rses, err := e.replicaSetsOf(ctx, d.UID)
		if err != nil {
			return false, err
		}
		last = rses
		return cond(rses), nil
	}, func() string { return "ReplicaSets:\n" + describeReplicaSets(last) })
	return last
}

// settled reports whether every ReplicaSet's controller has caught up with its spec:
// the generation observed and as many pods as asked for.
func settled(rses []*appsv1.ReplicaSet) bool {
	for _, rs := range rses {
		if rs.Status.ObservedGeneration < rs.Generation || rs.Status.Replicas != *rs.Spec.Replicas {
			return false
		}
	}
	return true
}

func condition(status appsv1.DeploymentStatus, conditionType appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == conditionType {
			return &status.Conditions[i]
		}
	}
	return nil
}

// hasCondition reports whether the Deployment has the condition with that status and
// reason, and that message unless message is empty.
func hasCondition(d *appsv1.Deployment, conditionType appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) bool {
	c := condition(d.Status, conditionType)
	return c != nil && c.Status == status && c.Reason == reason && (message == "" || c.Message == message)
}

// expectCondition fails the test unless the Deployment has exactly that condition.
func (e *testEnv) expectCondition(d *appsv1.Deployment, conditionType appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) {
	e.t.Helper()
	if !hasCondition(d, conditionType, status, reason, message) {
		e.t.Errorf("Deployment %s: want condition %s=%s/%s %q; status %s", d.Name, conditionType, status, reason, message, statusString(d))
	}
}

// rollingLimits returns replicas + maxSurge and replicas − maxUnavailable of a
// RollingUpdate Deployment, with percentages rounded as upstream rounds them.
func rollingLimits(t *testing.T, d *appsv1.Deployment) (maxTotal, minAvailable int) {
	t.Helper()
	replicas := int(*d.Spec.Replicas)
	ru := d.Spec.Strategy.RollingUpdate
	surge, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, replicas, true)
	if err != nil {
		t.Fatal(err)
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, replicas, false)
	if err != nil {
		t.Fatal(err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return replicas + surge, replicas - min(unavailable, replicas)
}

func podImage(pod *corev1.Pod) string {
	return pod.Spec.Containers[0].Image
}

// markPodsReady marks every active, not ready pod accepted by accept (nil: all) Running and
// Ready now, as a kubelet would, and returns how many it marked.
func (e *testEnv) markPodsReady(accept func(*corev1.Pod) bool) int {
	e.t.Helper()
	pods := e.GetPods(e.t, nil)
	var todo []string
	for i := range pods {
		if podutil.IsPodActive(&pods[i]) && !podutil.IsPodReady(&pods[i]) && (accept == nil || accept(&pods[i])) {
			todo = append(todo, pods[i].Name)
		}
	}
	errs := forEachParallel(todo, func(name string) error {
		_, err := framework.SetPodRunning(e.Ctx, e.Client, e.Namespace, name, true, time.Time{})
		if apierrors.IsNotFound(err) || errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	})
	if errs != nil {
		e.t.Fatal(errs)
	}
	return len(todo)
}

// forEachParallel runs do for every name with a few workers and joins the errors.
func forEachParallel(names []string, do func(name string) error) error {
	const workers = 8
	work := make(chan string)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				if err := do(name); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// releasePods removes holdFinalizer from the named pods.
func (e *testEnv) releasePods(ctx context.Context, names []string) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, holdFinalizer))
	return forEachParallel(names, func(name string) error {
		_, err := e.Client.CoreV1().Pods(e.Namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// waitForEvent waits for an event on the Deployment from the deployment controller with
// exactly that type, reason and message.
func (e *testEnv) waitForEvent(deploymentName, eventType, reason, message string) {
	e.t.Helper()
	e.waitForEventMatching(deploymentName, eventType, reason, fmt.Sprintf("%q", message), func(m string) bool { return m == message })
}

// waitForEventMatching waits for an event on the Deployment from the deployment controller
// with that type and reason and a message for which match is true (described by what).
func (e *testEnv) waitForEventMatching(deploymentName, eventType, reason, what string, match func(message string) bool) {
	e.t.Helper()
	e.WaitForEvent(e.t, e.Namespace, "Deployment", deploymentName, fmt.Sprintf("%s event %s %s", eventType, reason, what), func(ev *corev1.Event) bool {
		return ev.Type == eventType && ev.Reason == reason && match(ev.Message) && framework.EventSource(ev) == deploymentControllerName
	})
}

// mustKubectl runs kubectl and fails the test unless it exits 0.
func (e *testEnv) mustKubectl(args ...string) string {
	e.t.Helper()
	out, err := e.Kubectl(e.t, args...)
	if err != nil {
		e.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// tracker follows every change of one resource of the namespace through a watch, so that
// a test sees each state the API server stored in turn, not just the ones a poll happens
// to catch. After every change it runs the test's invariant over all current objects and
// records violations; it also keeps every object version it saw.
type tracker[T metav1.Object] struct {
	t      *testing.T
	what   string
	check  func(map[string]T) string
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	objects    map[string]T
	history    []T
	initial    []T
	log        []change[T]
	changes    int
	violations []string
	relists    int
}

// change is one watch event: the object as stored by it, or as it was when deleted.
type change[T metav1.Object] struct {
	deleted bool
	obj     T
}

// listWatch lists and watches one resource of the namespace.
type listWatch[T metav1.Object] struct {
	list  func(ctx context.Context) ([]T, string, error)
	watch func(ctx context.Context, resourceVersion string) (watch.Interface, error)
}

func podsListWatch(e *testEnv) listWatch[*corev1.Pod] {
	return listWatch[*corev1.Pod]{
		list: func(ctx context.Context) ([]*corev1.Pod, string, error) {
			l, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		},
	}
}

func replicaSetsListWatch(e *testEnv) listWatch[*appsv1.ReplicaSet] {
	return listWatch[*appsv1.ReplicaSet]{
		list: func(ctx context.Context) ([]*appsv1.ReplicaSet, string, error) {
			l, err := e.Client.AppsV1().ReplicaSets(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return e.Client.AppsV1().ReplicaSets(e.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		},
	}
}

func deploymentsListWatch(e *testEnv) listWatch[*appsv1.Deployment] {
	return listWatch[*appsv1.Deployment]{
		list: func(ctx context.Context) ([]*appsv1.Deployment, string, error) {
			l, err := e.Client.AppsV1().Deployments(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return e.Client.AppsV1().Deployments(e.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		},
	}
}

func pointers[T any](items []T) []*T {
	ps := make([]*T, len(items))
	for i := range items {
		ps[i] = &items[i]
	}
	return ps
}

// startTracker lists the resource, then follows it until the test ends or Stop. check
// (nil: none) returns a description of a violated invariant, or "".
func startTracker[T metav1.Object](e *testEnv, what string, lw listWatch[T], check func(map[string]T) string) *tracker[T] {
	e.t.Helper()
	items, rv, err := lw.list(e.Ctx)
	if err != nil {
		e.t.Fatalf("listing %s to track them: %v", what, err)
	}
	ctx, cancel := context.WithCancel(e.Ctx)
	tr := &tracker[T]{t: e.t, what: what, check: check, cancel: cancel, done: make(chan struct{}), objects: map[string]T{}}
	tr.reset(items)
	tr.initial = items
	go tr.run(ctx, lw, rv)
	e.t.Cleanup(tr.Stop)
	return tr
}

// reset replaces the tracked objects by a fresh list.
func (tr *tracker[T]) reset(items []T) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.objects = make(map[string]T, len(items))
	for _, obj := range items {
		tr.objects[obj.GetName()] = obj
		tr.history = append(tr.history, obj)
	}
	tr.checkLocked()
}

func (tr *tracker[T]) run(ctx context.Context, lw listWatch[T], rv string) {
	defer close(tr.done)
	for ctx.Err() == nil {
		if rv == "" {
			// The watch fell too far behind (410 Gone): start over from a list. The states
			// in between are lost, which the test is told about.
			items, listRV, err := lw.list(ctx)
			if err != nil {
				time.Sleep(framework.PollInterval)
				continue
			}
			tr.reset(items)
			tr.mu.Lock()
			tr.relists++
			tr.mu.Unlock()
			rv = listRV
		}
		w, err := lw.watch(ctx, rv)
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
			} else if ctx.Err() == nil {
				time.Sleep(framework.PollInterval)
			}
			continue
		}
		rv = tr.consume(ctx, w, rv)
		w.Stop()
	}
}

// consume applies the watch's events until it closes and returns the resourceVersion to
// resume from ("" to relist).
func (tr *tracker[T]) consume(ctx context.Context, w watch.Interface, rv string) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				if status, isStatus := ev.Object.(*metav1.Status); isStatus && (status.Code == 410 || status.Reason == metav1.StatusReasonExpired || status.Reason == metav1.StatusReasonGone) {
					return ""
				}
				return rv
			}
			obj, isT := ev.Object.(T)
			if !isT {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type == watch.Bookmark {
				continue
			}
			tr.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(tr.objects, obj.GetName())
			} else {
				tr.objects[obj.GetName()] = obj
			}
			tr.history = append(tr.history, obj)
			tr.log = append(tr.log, change[T]{deleted: ev.Type == watch.Deleted, obj: obj})
			tr.changes++
			tr.checkLocked()
			tr.mu.Unlock()
		}
	}
}

func (tr *tracker[T]) checkLocked() {
	if tr.check == nil {
		return
	}
	if v := tr.check(tr.objects); v != "" {
		tr.violations = append(tr.violations, v)
	}
}

// Stop stops following; calling it again does nothing.
func (tr *tracker[T]) Stop() {
	tr.cancel()
	<-tr.done
}

// Changes returns how many changes the tracker has seen.
func (tr *tracker[T]) Changes() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.changes
}

// Saw reports whether any object version seen so far satisfies match.
func (tr *tracker[T]) Saw(match func(T) bool) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, obj := range tr.history {
		if match(obj) {
			return true
		}
	}
	return false
}

// WaitSaw waits until some object version seen satisfies match.
func (tr *tracker[T]) WaitSaw(ctx context.Context, what string, match func(T) bool) {
	tr.t.Helper()
	err := framework.WaitFor(ctx, waitTimeout, what, func(context.Context) (bool, error) { return tr.Saw(match), nil })
	if err != nil {
		tr.t.Fatal(err)
	}
}

// ExpectNoViolations stops the tracker and fails the test for every recorded violation
// (the first ten are shown). It also fails when the tracker saw fewer than minChanges
// changes: a check over nothing proves nothing.
func (tr *tracker[T]) ExpectNoViolations(minChanges int) {
	tr.t.Helper()
	tr.Stop()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.relists > 0 {
		tr.t.Logf("the %s watch was restarted from a list %d times; states in between were not checked", tr.what, tr.relists)
	}
	tr.t.Logf("checked %d observed changes of %s", tr.changes, tr.what)
	if tr.changes < minChanges {
		tr.t.Errorf("only %d changes of %s observed, want at least %d", tr.changes, tr.what, minChanges)
	}
	if n := len(tr.violations); n > 0 {
		shown := tr.violations[:min(n, 10)]
		tr.t.Errorf("%d of %d observed states of %s violate the invariant; first ones:\n  %s", n, tr.changes, tr.what, strings.Join(shown, "\n  "))
	}
}

// rolloutMonitor checks the surge and availability limits of a rolling update at every state the API server
// stored, for a Deployment that owns every pod and ReplicaSet of the namespace. It watches
// pods and ReplicaSets and, at Check, replays both in the order of their etcd revisions, so
// that each pod state is judged against the ReplicaSets of the same moment.
//
// Checked at every step, once the rollout has been seen healthy where it matters:
//   - the ReplicaSets ask for at most replicas + maxSurge pods in all;
//   - at least replicas − maxUnavailable pods are available (ready, not terminating);
//   - no ReplicaSet ever has more pods than it was ever asked for;
//   - at most replicas + maxSurge pods exist, terminating ones included, not counting the
//     pods a ReplicaSet has already been scaled down from and whose deletion its
//     controller has not issued yet. Those are counted and logged: the controller computes the surge
//     from spec.replicas, as upstream does, so how long they linger only measures how
//     quickly the ReplicaSet controller runs, which a test must not assert on.
type rolloutMonitor struct {
	e                      *testEnv
	maxTotal, minAvailable int
	pods                   *tracker[*corev1.Pod]
	rses                   *tracker[*appsv1.ReplicaSet]
}

func startRolloutMonitor(e *testEnv, maxTotal, minAvailable int) *rolloutMonitor {
	e.t.Helper()
	return &rolloutMonitor{
		e: e, maxTotal: maxTotal, minAvailable: minAvailable,
		pods: startTracker(e, "pods", podsListWatch(e), nil),
		rses: startTracker(e, "ReplicaSets", replicaSetsListWatch(e), nil),
	}
}

// replayStep is one stored change of a pod or a ReplicaSet.
type replayStep struct {
	revision int64
	deleted  bool
	pod      *corev1.Pod
	rs       *appsv1.ReplicaSet
}

// Check stops watching and fails the test for every step that breaks a limit (the first
// ten are shown), or when fewer than minPodChanges pod changes were seen.
func (m *rolloutMonitor) Check(minPodChanges int) {
	t := m.e.t
	t.Helper()
	m.pods.Stop()
	m.rses.Stop()
	if m.pods.relists > 0 || m.rses.relists > 0 {
		t.Errorf("a watch was restarted from a list (pods %d, ReplicaSets %d times); the history is incomplete", m.pods.relists, m.rses.relists)
		return
	}
	if len(m.pods.log) < minPodChanges {
		t.Errorf("only %d pod changes observed, want at least %d", len(m.pods.log), minPodChanges)
	}

	var steps []replayStep
	revision := func(obj metav1.Object) int64 {
		n, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
		if err != nil {
			t.Fatalf("resourceVersion %q of %s is not an etcd revision: %v", obj.GetResourceVersion(), obj.GetName(), err)
		}
		return n
	}
	for _, c := range m.pods.log {
		steps = append(steps, replayStep{revision: revision(c.obj), deleted: c.deleted, pod: c.obj})
	}
	for _, c := range m.rses.log {
		steps = append(steps, replayStep{revision: revision(c.obj), deleted: c.deleted, rs: c.obj})
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].revision < steps[j].revision })

	pods := map[string]*corev1.Pod{}
	for _, pod := range m.pods.initial {
		pods[pod.Name] = pod
	}
	rses := map[types.UID]*appsv1.ReplicaSet{}
	maxSpec := map[types.UID]int32{}
	for _, rs := range m.rses.initial {
		rses[rs.UID] = rs
		maxSpec[rs.UID] = *rs.Spec.Replicas
	}
	healthy := false
	var violations []string
	lingering, mostLingering := 0, 0
	for _, step := range steps {
		switch {
		case step.pod != nil && step.deleted:
			delete(pods, step.pod.Name)
		case step.pod != nil:
			pods[step.pod.Name] = step.pod
		case step.deleted:
			delete(rses, step.rs.UID)
		default:
			rses[step.rs.UID] = step.rs
			maxSpec[step.rs.UID] = max(maxSpec[step.rs.UID], *step.rs.Spec.Replicas)
		}

		total, available := 0, 0
		perRS := map[types.UID]int{}
		for _, pod := range pods {
			if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			total++
			if podutil.IsPodActive(pod) && podutil.IsPodReady(pod) {
				available++
			}
			if ref := metav1.GetControllerOf(pod); ref != nil {
				perRS[ref.UID]++
			}
		}
		var problems []string
		specSum, awaitingDeletion := 0, 0
		for uid, rs := range rses {
			spec := int(*rs.Spec.Replicas)
			specSum += spec
			if n := perRS[uid]; n > int(maxSpec[uid]) {
				problems = append(problems, fmt.Sprintf("ReplicaSet %s has %d pods but was never asked for more than %d", rs.Name, n, maxSpec[uid]))
			} else if n > spec {
				awaitingDeletion += n - spec
			}
		}
		if specSum > m.maxTotal {
			problems = append(problems, fmt.Sprintf("the ReplicaSets ask for %d pods, more than replicas + maxSurge = %d", specSum, m.maxTotal))
		}
		if total > m.maxTotal {
			if total-awaitingDeletion > m.maxTotal {
				problems = append(problems, fmt.Sprintf("%d pods exist (%d of them scaled away but not deleted yet), more than replicas + maxSurge = %d", total, awaitingDeletion, m.maxTotal))
			} else {
				lingering++
				mostLingering = max(mostLingering, total-m.maxTotal)
			}
		}
		if available >= m.minAvailable {
			healthy = true
		} else if healthy {
			problems = append(problems, fmt.Sprintf("%d pods available, fewer than replicas - maxUnavailable = %d", available, m.minAvailable))
		}
		if len(problems) > 0 {
			violations = append(violations, fmt.Sprintf("at revision %d: %s", step.revision, strings.Join(problems, "; ")))
		}
	}
	t.Logf("replayed %d pod and %d ReplicaSet changes against replicas + maxSurge = %d, replicas - maxUnavailable = %d",
		len(m.pods.log), len(m.rses.log), m.maxTotal, m.minAvailable)
	if lingering > 0 {
		t.Logf("in %d states more than %d pods existed (up to %d more), all of them pods of scaled-down ReplicaSets whose deletion had not been issued yet",
			lingering, m.maxTotal, mostLingering)
	}
	if n := len(violations); n > 0 {
		t.Errorf("%d of %d replayed states break the rolling-update limits; first ones:\n  %s", n, len(steps), strings.Join(violations[:min(n, 10)], "\n  "))
	}
}

// sumSpec and sumAvailable add up spec.replicas and status.availableReplicas.
func sumSpec(rses []*appsv1.ReplicaSet) int {
	sum := 0
	for _, rs := range rses {
		sum += int(*rs.Spec.Replicas)
	}
	return sum
}

func sumAvailable(rses []*appsv1.ReplicaSet) int {
	sum := 0
	for _, rs := range rses {
		sum += int(rs.Status.AvailableReplicas)
	}
	return sum
}

// waitForStuckRollout waits for the steady state of a rolling update whose new pods never
// become ready: all maxTotal pods asked for and created, and exactly minAvailable of them
// available, so that no further step is allowed.
func (e *testEnv) waitForStuckRollout(d *appsv1.Deployment, maxTotal, minAvailable int) []*appsv1.ReplicaSet {
	e.t.Helper()
	return e.waitForReplicaSets(d, fmt.Sprintf("the blocked rollout to settle at %d pods, %d available", maxTotal, minAvailable), func(rses []*appsv1.ReplicaSet) bool {
		return settled(rses) && sumSpec(rses) == maxTotal && sumAvailable(rses) == minAvailable
	})
}
