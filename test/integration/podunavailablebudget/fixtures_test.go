package podunavailablebudget

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Strings users, tools and OpenKruise read, checked verbatim.
const (
	relatedPubAnnotation      = "kruise.io/related-pub"
	relatedPubAnnotationNew   = "pub.kruise.io/related-pub"
	noProtectAnnotation       = "pub.kruise.io/no-protect"
	protectOperationsKey      = "kruise.io/pub-protect-operations"
	protectTotalReplicasKey   = "pub.kruise.io/protect-total-replicas"
	unavailableLabelPrefix    = "unavailable-pod.kruise.io/"
	retryDeniedEvictionsKey   = "pub.bosun.dev/retry-denied-evictions"
	protectNotReadyKey        = "pub.bosun.dev/protect-not-ready"
	budgetDeniedMessage       = "pub unavailable allowed is negative"
	eventPubPreventDeletion   = "PubPreventPodDeletion"
	eventNotDeleted           = "NotDeleted"
	eventNoPods               = "NoPods"
	webhookPubValidation      = "vpodunavailablebudget.kb.io"
	webhookPodMutation        = "mpod.kb.io"
	webhookPodValidation      = "vpod.kb.io"
	webhookEvictionValidation = "vpodeviction.kb.io"
	mutatingConfiguration     = "bosun-mutating-webhook-configuration"
	validatingConfiguration   = "bosun-validating-webhook-configuration"
)

const (
	// pubController is the --controllers name of the budget's controller.
	pubController = "podunavailablebudget-controller"
	// workloadControllers run real ReplicaSets and Deployments.
	workloadControllers = "replicaset,deployment"

	updateGate            = "PodUnavailableBudgetUpdateGate"
	daemonSetReplicasGate = "PodUnavailableBudgetDaemonSetReplicas"
	ownerChainGate        = "PodUnavailableBudgetOwnerChain"

	// resyncFlag set to 0 turns the periodic resync of every budget off, so that a test
	// checks that the controller reacts to the event it is about, not to the clock.
	resyncFlag = "--pod-unavailable-budget-resync-period"

	// deletionTimeout and updatedDelay are how long the budget keeps a record of an
	// admitted deletion or update that it has not seen happen.
	deletionTimeout = 20 * time.Second
	updatedDelay    = 10 * time.Second
	// clockSlack covers the record's times being written with second precision.
	clockSlack = time.Second

	image1 = "registry.example/web:1.0"
	image2 = "registry.example/web:2.0"

	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker.
	testTimeout = 6 * time.Minute
	waitTimeout = 2 * time.Minute
)

type pub = policyv1alpha1.PodUnavailableBudget

// testEnv is what every test works with: the framework's environment (see envOptions).
type testEnv struct{ *framework.Env }

// envOptions give every test a context bounded by testTimeout. When it ends — after its
// managers have stopped, since they start later — the webhook configurations are deleted
// (their validating webhooks fail closed and nothing answers them any more), then the
// budgets, workloads and pods of the test's namespaces and the test's Nodes, so that the
// managers of later tests, which watch the whole cluster, do not work on them: without a
// namespace controller or garbage collector they would stay.
var envOptions = framework.EnvOptions{
	Timeout: testTimeout, WaitTimeout: waitTimeout, RemoveWebhookConfigurations: true, Audit: true,
	Remove: []string{
		"podunavailablebudgets.policy.kruise.io", "deployments.apps", "replicasets.apps",
		"daemonsets.apps.kruise.io", "poddisruptionbudgets.policy", "pods",
	},
	PodDetails: func(pod *corev1.Pod) string {
		return fmt.Sprintf("related-pub %q/%q", pod.Annotations[relatedPubAnnotation], pod.Annotations[relatedPubAnnotationNew])
	},
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{framework.NewTestEnv(t, framework.SharedControlPlane(t), envOptions)}
}

// budgets are the namespace's PodUnavailableBudgets, shown by describeBudget when a wait
// fails.
func (e *testEnv) budgets() *framework.Objects[*pub] {
	return e.PodUnavailableBudgets().DescribedBy(describeBudget)
}

// managerOptions are the options of the usual manager: the budget's controller and its
// webhooks, with the given feature gates.
func managerOptions(featureGates string, extraArgs ...string) framework.ControllerManagerOptions {
	return framework.ControllerManagerOptions{
		Controllers:  pubController,
		Webhooks:     true,
		FeatureGates: featureGates,
		ExtraArgs:    extraArgs,
	}
}

// startManager runs bosun-controller-manager until the test ends and returns once the API
// server calls its webhooks (see waitForAdmission).
func (e *testEnv) startManager(t *testing.T, opts framework.ControllerManagerOptions) *framework.ControllerManager {
	t.Helper()
	cm := framework.StartBosunControllerManager(t, e.CP, opts)
	if opts.Webhooks {
		e.waitForAdmission(t, cm)
	}
	return cm
}

// waitForAdmission waits until the API server calls the budget and pod webhooks of one of
// managers (see framework.WaitForWebhooksCalled).
func (e *testEnv) waitForAdmission(t *testing.T, managers ...*framework.ControllerManager) {
	t.Helper()
	probe := newBudget("admission-probe", withSelector(map[string]string{"bosun.dev/admission-probe": e.Namespace}), withMaxUnavailable(intstr.FromInt32(1)))
	pod := newPod("admission-probe", map[string]string{"bosun.dev/admission-probe": e.Namespace}, nil)
	framework.WaitForWebhooksCalled(e.Ctx, t, e.CP, []framework.WebhookProbe{
		{Webhook: webhookPubValidation, Send: func(ctx context.Context) {
			_, _ = e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
		}},
		{Webhook: webhookPodMutation, Send: func(ctx context.Context) {
			_, _ = e.Client.CoreV1().Pods(e.Namespace).Create(ctx, pod, framework.DryRunCreate)
		}},
	}, managers...)
}

// ---- Builders ----

type budgetOption func(*pub)

// newBudget is a budget with nothing set but what opts set.
func newBudget(name string, opts ...budgetOption) *pub {
	b := &pub{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, opt := range opts {
		opt(b)
	}
	return b
}

func withSelector(labels map[string]string) budgetOption {
	return func(b *pub) { b.Spec.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(labels)} }
}

func withLabelSelector(selector *metav1.LabelSelector) budgetOption {
	return func(b *pub) { b.Spec.Selector = selector }
}

func withTarget(apiVersion, kind, name string) budgetOption {
	return func(b *pub) { b.Spec.TargetReference = withTargetRef(apiVersion, kind, name) }
}

func withTargetRef(apiVersion, kind, name string) *policyv1alpha1.TargetReference {
	return &policyv1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
}

func withMaxUnavailable(v intstr.IntOrString) budgetOption {
	return func(b *pub) { b.Spec.MaxUnavailable = &v }
}

func withMinAvailable(v intstr.IntOrString) budgetOption {
	return func(b *pub) { b.Spec.MinAvailable = &v }
}

func withAnnotation(key, value string) budgetOption {
	return func(b *pub) {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[key] = value
	}
}

// newPod is a pod with one container and the given labels, controlled by owner if it is
// not nil.
func newPod(name string, labels map[string]string, owner *appsv1.ReplicaSet) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image1}}},
	}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	}
	return pod
}

// newReplicaSet is a ReplicaSet of replicas pods labelled labels.
func newReplicaSet(name string, replicas int32, labels map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image1}}},
			},
		},
	}
}

// newDeployment is a Deployment of replicas pods labelled app=<name>.
func newDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image1}}},
			},
		},
	}
}

// ---- API actions ----

// updatePod applies mutate to the live pod and updates it, retrying on conflicts, and
// returns the outcome.
func (e *testEnv) updatePod(name string, mutate func(*corev1.Pod)) error {
	_, err := e.Pods().TryUpdate(name, mutate)
	return err
}

func (e *testEnv) deletePod(name string) error {
	return e.Client.CoreV1().Pods(e.Namespace).Delete(e.Ctx, name, metav1.DeleteOptions{})
}

// evictPod asks the API server to evict the pod, once: client-go's typed Evict would
// repeat a 429 carrying Retry-After (as a PodDisruptionBudget's does) up to ten times, each
// time through admission again.
func (e *testEnv) evictPod(name string, dryRun bool) error {
	eviction := &policyv1.Eviction{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace},
	}
	if dryRun {
		eviction.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return e.Client.CoreV1().RESTClient().Post().Namespace(e.Namespace).Resource("pods").Name(name).SubResource("eviction").
		MaxRetries(0).Body(eviction).Do(e.Ctx).Error()
}

// expectBudgetDenial checks that a pod DELETE or eviction was denied by the budget: HTTP
// 403 (for evictions too, unlike a PodDisruptionBudget's 429) with the budget's reason.
func expectBudgetDenial(t *testing.T, what string, err error) {
	t.Helper()
	framework.ExpectRefused(t, what, err, http.StatusForbidden, budgetDeniedMessage)
	if apierrors.IsTooManyRequests(err) {
		t.Errorf("%s: answered TooManyRequests, want Forbidden", what)
	}
}

// ---- Waiting ----

// counts are the numbers of a budget's status.
type counts struct {
	total, desired, current, allowed int32
}

func (c counts) String() string {
	return fmt.Sprintf("total %d, desired %d, current %d, allowed %d", c.total, c.desired, c.current, c.allowed)
}

func statusCounts(b *pub) counts {
	s := b.Status
	return counts{total: s.TotalReplicas, desired: s.DesiredAvailable, current: s.CurrentAvailable, allowed: s.UnavailableAllowed}
}

// settledAt reports whether the controller has written the budget's status for its
// current spec, with these counts and nothing recorded.
func settledAt(want counts) func(*pub) bool {
	return func(b *pub) bool {
		return b.Status.ObservedGeneration == b.Generation && statusCounts(b) == want &&
			len(b.Status.DisruptedPods) == 0 && len(b.Status.UnavailablePods) == 0
	}
}

// waitForSettled waits until the budget's status shows want for its current spec.
func (e *testEnv) waitForSettled(t *testing.T, name string, want counts) *pub {
	t.Helper()
	return e.budgets().WaitFor(t, name, "status "+want.String()+" for the current generation", settledAt(want))
}

func describeBudget(b *pub) string {
	if b == nil {
		return "<none>"
	}
	s := b.Status
	return fmt.Sprintf("generation %d observedGeneration %d, %s, disruptedPods %v, unavailablePods %v, annotations %v",
		b.Generation, s.ObservedGeneration, statusCounts(b), slices.Sorted(maps.Keys(s.DisruptedPods)),
		slices.Sorted(maps.Keys(s.UnavailablePods)), b.Annotations)
}

// waitForTagged waits until each named pod carries both related-pub annotations naming
// budget.
func (e *testEnv) waitForTagged(t *testing.T, budget string, names ...string) {
	t.Helper()
	e.WaitForPods(t, fmt.Sprintf("pods %v to be tagged with budget %s", names, budget), func(pods []corev1.Pod) bool {
		for _, name := range names {
			i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name == name })
			if i < 0 || !taggedWith(&pods[i], budget) {
				return false
			}
		}
		return true
	})
}

// taggedWith reports whether the pod carries both related-pub annotations naming budget.
func taggedWith(pod *corev1.Pod, budget string) bool {
	return pod.Annotations[relatedPubAnnotation] == budget && pod.Annotations[relatedPubAnnotationNew] == budget
}

func untagged(pod *corev1.Pod) bool {
	_, old := pod.Annotations[relatedPubAnnotation]
	_, newer := pod.Annotations[relatedPubAnnotationNew]
	return !old && !newer
}

// waitForEvent waits for an event of reason and type on the named object of kind, and
// returns it.
func (e *testEnv) waitForEvent(t *testing.T, kind, name, eventType, reason string) corev1.Event {
	t.Helper()
	return e.WaitForEvent(t, e.Namespace, kind, name, fmt.Sprintf("a %s event %s", eventType, reason), func(ev *corev1.Event) bool {
		return ev.Type == eventType && ev.Reason == reason
	})
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isActiveReady reports whether the pod counts as up: not terminal, not being deleted, and
// Ready.
func isActiveReady(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && isReady(pod)
}

// ---- The usual arrangement: a budget over pods of an owner nothing acts on ----

// fixture is a ReplicaSet no controller acts on, which gives its pods an owner with a
// replica count and replaces none of them, its Ready pods <name>-0, <name>-1, ..., and a
// selector budget named <name> over them.
type fixture struct {
	owner  *appsv1.ReplicaSet
	pods   []string
	budget string
}

// fixtureSpec describes a fixture.
type fixtureSpec struct {
	// name names the ReplicaSet, the budget and (with a suffix) the pods, all labelled
	// app=<name>, which the budget selects.
	name string
	// pods is how many pods there are; also the ReplicaSet's replicas.
	pods int
	// budget are further options of the budget (its limit, annotations).
	budget []budgetOption
	// pod, when set, changes pod i before it is created.
	pod func(i int, pod *corev1.Pod)
	// want is the status the budget settles at.
	want counts
}

// newFixture creates the ReplicaSet, the pods, Running and Ready, and the budget, and waits
// until the controller has tagged every pod and the budget's status shows spec.want. Only
// the budget's controller runs, so nothing replaces a deleted pod unless the test does.
func (e *testEnv) newFixture(t *testing.T, spec fixtureSpec) *fixture {
	t.Helper()
	labels := map[string]string{"app": spec.name}
	f := &fixture{owner: e.ReplicaSets().Create(t, newReplicaSet(spec.name, int32(spec.pods), labels)), budget: spec.name}
	for i := range spec.pods {
		pod := newPod(fmt.Sprintf("%s-%d", spec.name, i), labels, f.owner)
		if spec.pod != nil {
			spec.pod(i, pod)
		}
		e.Pods().Create(t, pod)
		e.SetPodRunning(t, pod.Name, true, time.Time{})
		f.pods = append(f.pods, pod.Name)
	}
	e.budgets().Create(t, newBudget(spec.name, append([]budgetOption{withSelector(labels)}, spec.budget...)...))
	e.waitForTagged(t, spec.name, f.pods...)
	e.waitForSettled(t, spec.name, spec.want)
	return f
}

// onNode binds every pod of a fixture to a node at creation, so that deleting one is
// graceful: without a kubelet it then stays terminating.
func onNode(node string) func(int, *corev1.Pod) {
	return func(_ int, pod *corev1.Pod) { pod.Spec.NodeName = node }
}

// ---- Recording every version of a budget ----

// budgetVersion is one version of a budget as a watch delivered it, with when it arrived.
type budgetVersion struct {
	budget *pub
	seen   time.Time
}

// budgetRecorder keeps every version of one budget, in the order the API server wrote them,
// so that a test sees the webhook's short-lived records, which the controller may remove
// again within milliseconds.
type budgetRecorder struct {
	mu       sync.Mutex
	versions []budgetVersion
}

// recordBudget starts recording the named budget until the test ends; it returns once the
// current version (if any) has been recorded.
func (e *testEnv) recordBudget(t *testing.T, name string) *budgetRecorder {
	t.Helper()
	r := &budgetRecorder{}
	field := "metadata.name=" + name
	budgets := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace)
	list, err := budgets.List(e.Ctx, metav1.ListOptions{FieldSelector: field})
	if err != nil {
		t.Fatalf("listing budget %s: %v", name, err)
	}
	for i := range list.Items {
		r.add(&list.Items[i])
	}
	startRetryWatch(t, e.Ctx, list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = field
		return budgets.Watch(ctx, opts)
	}, func(ev watch.Event) {
		if b, ok := ev.Object.(*pub); ok && ev.Type != watch.Deleted {
			r.add(b)
		}
	})
	return r
}

func (r *budgetRecorder) add(b *pub) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, budgetVersion{budget: b.DeepCopy(), seen: time.Now()})
}

func (r *budgetRecorder) all() []budgetVersion {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.versions)
}

// first returns the first version for which cond holds.
func (r *budgetRecorder) first(cond func(*pub) bool) (budgetVersion, bool) {
	for _, v := range r.all() {
		if cond(v.budget) {
			return v, true
		}
	}
	return budgetVersion{}, false
}

// waitFor waits until a version recorded since index from satisfies cond and returns it.
func (r *budgetRecorder) waitFor(t *testing.T, ctx context.Context, from int, what string, cond func(*pub) bool) budgetVersion {
	t.Helper()
	var found budgetVersion
	err := framework.WaitFor(ctx, waitTimeout, what, func(context.Context) (bool, error) {
		versions := r.all()
		for _, v := range versions[min(from, len(versions)):] {
			if cond(v.budget) {
				found = v
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v; versions seen:\n%s", err, r.describe())
	}
	return found
}

func (r *budgetRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.versions)
}

func (r *budgetRecorder) describe() string {
	var b strings.Builder
	for _, v := range r.all() {
		fmt.Fprintf(&b, "  rv %s at %s: %s\n", v.budget.ResourceVersion, v.seen.Format("15:04:05.000"), describeBudget(v.budget))
	}
	return b.String()
}

func disrupted(pod string) func(*pub) bool {
	return func(b *pub) bool { _, ok := b.Status.DisruptedPods[pod]; return ok }
}

func unavailable(pod string) func(*pub) bool {
	return func(b *pub) bool { _, ok := b.Status.UnavailablePods[pod]; return ok }
}

func not(cond func(*pub) bool) func(*pub) bool {
	return func(b *pub) bool { return !cond(b) }
}

// startRetryWatch delivers every event of a watch from resourceVersion to handle, in order,
// restarting the watch where it stopped if the API server closes it, until the test ends.
// An expired resource version (the watch fell too far behind) fails the test: events
// would have been lost.
func startRetryWatch(t *testing.T, ctx context.Context, resourceVersion string,
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error), handle func(watch.Event)) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rv := resourceVersion
		for ctx.Err() == nil {
			w, err := watchFunc(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if ctx.Err() == nil {
					time.Sleep(framework.PollInterval)
				}
				continue
			}
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Error:
					if status, ok := ev.Object.(*metav1.Status); ok && status.Code == http.StatusGone {
						t.Errorf("the watch from resourceVersion %s expired: events were lost", rv)
						w.Stop()
						return
					}
					continue
				case watch.Bookmark:
				default:
					handle(ev)
				}
				if obj, err := meta.Accessor(ev.Object); err == nil && obj.GetResourceVersion() != "" {
					rv = obj.GetResourceVersion()
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// ---- Nodes ----

// createNode creates a Ready, schedulable Node named <namespace>-<suffix> with labels (see
// framework.Env.CreateNode) and returns its name.
func (e *testEnv) createNode(t *testing.T, suffix string, labels map[string]string) string {
	t.Helper()
	return e.CreateNode(t, e.NewNode(suffix, labels, time.Now())).Name
}
