package podunavailablebudget

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"

	"github.com/bosun-dev/bosun/pkg/features"

	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

func TestBudgetHandlers(t *testing.T) {
	pub := selectorBudget("pub", "web", intstr.FromInt32(1))
	f := newFixture(t, fixtureOption{}, pub)
	cached := f.server.Budget(testNamespace, "pub")

	f.c.addBudget(f.ctx, cached)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/pub"}) {
		t.Errorf("add queued %v", got)
	}

	// Status-only updates queue too: the webhook's records must be scheduled to expire.
	f.queue.Reset()
	spent := cached.DeepCopy()
	spent.ResourceVersion = "999"
	spent.Status.DisruptedPods = map[string]metav1.Time{"p": metav1.NewTime(t0)}
	f.c.updateBudget(f.ctx, cached, spent)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/pub"}) {
		t.Errorf("status update queued %v", got)
	}

	f.queue.Reset()
	f.c.deleteBudget(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/pub", Obj: cached})
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/pub"}) {
		t.Errorf("delete (tombstone) queued %v", got)
	}
}

// TestBudgetRecreatedForgetsCache: a delete and a re-create folded into one update drop the
// old budget's write-through copy.
func TestBudgetRecreatedForgetsCache(t *testing.T) {
	f := newFixture(t, fixtureOption{}, append(deploymentWithPods("web", 2, 2), selectorBudget("pub", "web", intstr.FromInt32(1)))...)
	old := f.server.Budget(testNamespace, "pub")
	f.sync("pub")
	if f.cache.Freshest(old) == old {
		t.Fatal("the write was not cached")
	}
	recreated := old.DeepCopy()
	recreated.UID = "uid-pub-2"
	f.c.updateBudget(f.ctx, old, recreated)
	if f.cache.Freshest(old) != old {
		t.Error("the old budget's copy survived its re-creation")
	}
}

// podFixture has budgets of every matching kind, a Deployment "web" with ReplicaSet
// "web-rs" and a StatefulSet "db".
func podFixture(t *testing.T, gates map[featuregate.Feature]bool) *fixture {
	d := newDeployment("web", 2)
	dRef := controllerRef(deploymentGVK, d.Name, d.UID)
	objects := []runtime.Object{
		d, newReplicaSet("web-rs", 2, &dRef), newStatefulSet("db", 1),
		selectorBudget("by-label", "web", intstr.FromInt32(1)),
		targetBudget("by-deployment", deploymentGVK, "web", intstr.FromInt32(1)),
		targetBudget("by-statefulset", statefulSetGVK, "db", intstr.FromInt32(1)),
		selectorBudget("unrelated", "other", intstr.FromInt32(1)),
		targetBudget("other-deployment", deploymentGVK, "api", intstr.FromInt32(1)),
		selectorBudget("tagged", "nothing", intstr.FromInt32(1)),
	}
	return newFixture(t, fixtureOption{gates: gates, live: []*metav1.PartialObjectMetadata{liveWidget("w")}}, objects...)
}

func webPod(name string) *corev1.Pod {
	rsRef := controllerRef(replicaSetGVK, "web-rs", "uid-web-rs")
	return newPod(name, map[string]string{"app": "web"}, &rsRef)
}

func TestAddPod(t *testing.T) {
	f := podFixture(t, nil)
	for _, tc := range []struct {
		name          string
		pod           *corev1.Pod
		initialList   bool
		want          []string
		metadataReads int
	}{
		{name: "Deployment pod", pod: tagged(webPod("p"), "tagged"),
			want: []string{"ns/by-deployment", "ns/by-label", "ns/tagged"}},
		{name: "Deployment pod from the initial list", pod: tagged(webPod("p"), "tagged"), initialList: true,
			want: []string{"ns/tagged"}},
		{name: "tagged with a budget that does not exist", pod: tagged(newPod("p", nil, nil), "ghost")},
		{name: "StatefulSet pod", pod: func() *corev1.Pod {
			ref := controllerRef(statefulSetGVK, "db", "uid-db")
			return newPod("db-0", map[string]string{"app": "db"}, &ref)
		}(), want: []string{"ns/by-statefulset"}},
		{name: "finished pod", pod: func() *corev1.Pod {
			pod := tagged(webPod("p"), "tagged")
			pod.Status.Phase = corev1.PodSucceeded
			return pod
		}(), want: []string{"ns/tagged"}},
		// Without the owner-chain gate nothing above a Widget can matter: no lookup.
		{name: "Widget pod", pod: func() *corev1.Pod {
			ref := controllerRef(widgetKind, "w", "uid-w")
			return newPod("w-0", nil, &ref)
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			f.metadata.ClearActions()
			f.c.addPod(f.ctx, tc.pod, tc.initialList)
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
			if got := len(f.metadata.Actions()); got != tc.metadataReads {
				t.Errorf("%d live reads, want %d", got, tc.metadataReads)
			}
		})
	}
}

// TestAddPodOwnerChain: with the gate a pod's whole controller chain is matched against
// targetRef budgets.
func TestAddPodOwnerChain(t *testing.T) {
	gates := map[featuregate.Feature]bool{features.PodUnavailableBudgetOwnerChain: true}
	f := podFixture(t, gates)
	widgetRef := controllerRef(widgetKind, "w", "uid-w")
	rs := newReplicaSet("w-rs", 2, &widgetRef)
	f.add(rs)
	f.add(targetBudget("by-widget", widgetKind, "w", intstr.FromInt32(1)))
	rsRef := controllerRef(replicaSetGVK, rs.Name, rs.UID)
	f.c.addPod(f.ctx, newPod("w-0", nil, &rsRef), false)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"ns/by-widget"}) {
		t.Errorf("queued %v, want the budget of the Widget above the pod's ReplicaSet", got)
	}
}

func TestUpdatePod(t *testing.T) {
	f := podFixture(t, nil)
	base := tagged(webPod("p"), "tagged")
	base.ResourceVersion = "1"
	next := func(change func(pod *corev1.Pod)) *corev1.Pod {
		pod := base.DeepCopy()
		pod.ResourceVersion = "2"
		change(pod)
		return pod
	}
	terminating := next(func(pod *corev1.Pod) { pod.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) })
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Pod
		want     []string
		delayed  []queuetest.Delayed
	}{
		{name: "resync", old: base, cur: base.DeepCopy()},
		{name: "irrelevant change", old: base, cur: next(func(pod *corev1.Pod) { pod.Annotations["team"] = "a" })},
		{name: "deletion started", old: base, cur: terminating,
			delayed: []queuetest.Delayed{{Key: "ns/tagged", Delay: PodTerminatingDelay}}},
		{name: "already terminating", old: terminating, cur: func() *corev1.Pod {
			pod := terminating.DeepCopy()
			pod.ResourceVersion = "3"
			notReady(pod)
			return pod
		}()},
		{name: "turned not ready", old: base, cur: next(func(pod *corev1.Pod) { notReady(pod) }),
			want: []string{"ns/tagged"}},
		{name: "labelled unavailable", old: base, cur: next(func(pod *corev1.Pod) {
			pod.Labels = map[string]string{"app": "web", policyv1beta1.PubUnavailablePodLabelPrefix + "drain": "true"}
		}), want: []string{"ns/by-deployment", "ns/by-label", "ns/tagged"}},
		{name: "tagged with another budget", old: base, cur: next(func(pod *corev1.Pod) {
			pod.Annotations[policyv1beta1.PodRelatedPubAnnotationNew] = "by-label"
		}), want: []string{"ns/by-label", "ns/tagged"}},
		{name: "relabelled", old: base, cur: next(func(pod *corev1.Pod) { pod.Labels = map[string]string{"app": "other"} }),
			want: []string{"ns/by-deployment", "ns/by-label", "ns/unrelated"}},
		{name: "released by its ReplicaSet", old: base, cur: next(func(pod *corev1.Pod) { pod.OwnerReferences = nil }),
			want: []string{"ns/by-deployment", "ns/by-label"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			f.c.updatePod(f.ctx, tc.old, tc.cur)
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
			if got := f.queue.Delayed(); !slices.Equal(got, tc.delayed) {
				t.Errorf("queued later %v, want %v", got, tc.delayed)
			}
		})
	}
}

func TestWorkloadHandlers(t *testing.T) {
	f := newFixture(t, fixtureOption{},
		targetBudget("by-deployment", deploymentGVK, "web", intstr.FromInt32(1)),
		selectorBudget("by-label", "web", intstr.FromInt32(1)),
		targetBudget("by-statefulset", statefulSetGVK, "db", intstr.FromInt32(1)),
		targetBudget("by-daemonset", daemonSetGVK, "agent", intstr.FromInt32(1)),
		selectorBudget("agents", "agent", intstr.FromInt32(1)),
		// Same name, other kind: not the Deployment's budget.
		targetBudget("by-replicaset", replicaSetGVK, "web", intstr.FromInt32(1)),
	)
	web := newDeployment("web", 3)
	resized := newDeployment("web", 2)
	resized.ResourceVersion = "2"
	relabelled := newDeployment("web", 3)
	relabelled.Spec.Template.Labels["tier"] = "fe"
	deleting := newDeployment("web", 3)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	recreated := newDeployment("web", 3)
	recreated.UID = "uid-web-2"
	db, dbResized := newStatefulSet("db", 1), newStatefulSet("db", 3)
	agent, agentGrown := newDaemonSet("agent", 2), newDaemonSet("agent", 3)
	agentRelabelled := newDaemonSet("agent", 2)
	agentRelabelled.Spec.Template.Labels["x"] = "y"
	webBudgets := []string{"ns/by-deployment", "ns/by-label"}
	agentBudgets := []string{"ns/agents", "ns/by-daemonset"}

	for _, tc := range []struct {
		name   string
		handle func()
		want   []string
	}{
		{"Deployment created", func() { f.c.addWorkload(f.ctx, web) }, webBudgets},
		{"Deployment resized", func() { f.c.updateWorkload(f.ctx, web, resized) }, webBudgets},
		{"Deployment template changed", func() { f.c.updateWorkload(f.ctx, web, relabelled) }, nil},
		{"Deployment being deleted", func() { f.c.updateWorkload(f.ctx, web, deleting) }, webBudgets},
		{"Deployment re-created", func() { f.c.updateWorkload(f.ctx, web, recreated) }, webBudgets},
		{"Deployment deleted", func() {
			f.c.deleteWorkload(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: web})
		}, webBudgets},
		{"StatefulSet resized", func() { f.c.updateWorkload(f.ctx, db, dbResized) }, []string{"ns/by-statefulset"}},
		{"DaemonSet grown", func() { f.c.updateWorkload(f.ctx, agent, agentGrown) }, agentBudgets},
		{"DaemonSet template changed", func() { f.c.updateWorkload(f.ctx, agent, agentRelabelled) }, nil},
		{"DaemonSet deleted", func() { f.c.deleteWorkload(f.ctx, agent) }, agentBudgets},
		{"not a workload", func() { f.c.addWorkload(f.ctx, &appsv1.ReplicaSet{}) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			tc.handle()
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewControllerWithoutDaemonSets(t *testing.T) {
	f := newFixture(t, fixtureOption{noDaemonSets: true}, append(deploymentWithPods("web", 2, 2), selectorBudget("pub", "web", intstr.FromInt32(1)))...)
	if got := len(f.c.cachesSynced); got != 5 {
		t.Errorf("%d caches waited for, want 5 (no DaemonSets)", got)
	}
	f.sync("pub")
	if got := countsOf(f.status("pub")); got != (counts{2, 1, 2, 1}) {
		t.Errorf("status %+v", got)
	}
}

// TestRun: the workers sync what is queued, once the caches have synced.
func TestRun(t *testing.T) {
	f := newFixture(t, fixtureOption{})
	synced := make(chan string, 1)
	f.c.syncHandler = func(_ context.Context, key string) error {
		synced <- key
		return nil
	}
	f.c.cachesSynced = nil
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		f.c.Run(ctx, 1)
		close(done)
	}()
	f.queue.TypedRateLimitingInterface.Add("ns/pub")
	select {
	case key := <-synced:
		if key != "ns/pub" {
			t.Errorf("synced %q", key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing synced")
	}
	cancel()
	<-done
}

// TestDeletePod: a pod removed while it still counted queues its budgets, whose counts and
// records it leaves; one that was terminating or finished already leaves nothing to redo.
func TestDeletePod(t *testing.T) {
	f := podFixture(t, nil)
	active := tagged(webPod("p"), "tagged")
	terminating := active.DeepCopy()
	terminating.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	finished := active.DeepCopy()
	finished.Status.Phase = corev1.PodFailed
	// The garbage collector deletes the pods of a ReplicaSet that is gone already.
	orphanRef := controllerRef(replicaSetGVK, "gone-rs", "uid-gone-rs")
	orphan := tagged(newPod("o", map[string]string{"app": "web"}, &orphanRef), "by-label")
	dbRef := controllerRef(statefulSetGVK, "db", "uid-db")
	allWeb := []string{"ns/by-deployment", "ns/by-label", "ns/tagged"}

	for _, tc := range []struct {
		name string
		obj  any
		want []string
	}{
		{"active", active, allWeb},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: active}, allWeb},
		{"untagged", newPod("db-0", map[string]string{"app": "db"}, &dbRef), []string{"ns/by-statefulset"}},
		{"ReplicaSet gone", orphan, []string{"ns/by-label"}},
		{"terminating", terminating, nil},
		{"finished", finished, nil},
		{"not a pod", cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: &appsv1.ReplicaSet{}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			f.c.deletePod(f.ctx, tc.obj)
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
			if got := f.queue.Delayed(); len(got) != 0 {
				t.Errorf("queued later %v, want nothing", got)
			}
		})
	}
}

// TestReplicaSetHandlers: changes of a ReplicaSet that move the count or the coverage of its
// pods queue every budget that may cover them, before and after the change.
func TestReplicaSetHandlers(t *testing.T) {
	f := podFixture(t, nil)
	f.add(targetBudget("by-replicaset", replicaSetGVK, "web-rs", intstr.FromInt32(1)))
	dRef := controllerRef(deploymentGVK, "web", "uid-web")
	base := newReplicaSet("web-rs", 2, &dRef)
	base.Spec.Template.Labels = map[string]string{"app": "web"}
	next := func(change func(rs *appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		rs := base.DeepCopy()
		rs.ResourceVersion = "2"
		change(rs)
		return rs
	}
	allWeb := []string{"ns/by-deployment", "ns/by-label", "ns/by-replicaset"}

	for _, tc := range []struct {
		name   string
		handle func()
		want   []string
	}{
		{"resync", func() { f.c.updateReplicaSet(f.ctx, base, base.DeepCopy()) }, nil},
		{"irrelevant change", func() {
			f.c.updateReplicaSet(f.ctx, base, next(func(rs *appsv1.ReplicaSet) { rs.Status.ReadyReplicas = 1 }))
		}, nil},
		{"resized", func() {
			f.c.updateReplicaSet(f.ctx, base, next(func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](3) }))
		}, allWeb},
		{"being deleted", func() {
			f.c.updateReplicaSet(f.ctx, base, next(func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }))
		}, allWeb},
		// The Deployment's budget loses the pods: queued from the version before.
		{"orphaned", func() {
			f.c.updateReplicaSet(f.ctx, base, next(func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil }))
		}, allWeb},
		{"re-created", func() {
			f.c.updateReplicaSet(f.ctx, base, next(func(rs *appsv1.ReplicaSet) { rs.UID = "uid-web-rs-2" }))
		}, allWeb},
		{"deleted", func() { f.c.deleteReplicaSet(f.ctx, base) }, allWeb},
		{"deleted, tombstone", func() {
			f.c.deleteReplicaSet(f.ctx, cache.DeletedFinalStateUnknown{Key: "ns/web-rs", Obj: base})
		}, allWeb},
		{"deleted, not a ReplicaSet", func() { f.c.deleteReplicaSet(f.ctx, &appsv1.Deployment{}) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			tc.handle()
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReplicaSetHandlersOwnerChain: with the gate, a budget targeting a workload above the
// ReplicaSet's Deployment is queued too; without it, as in OpenKruise, no chain leads there.
func TestReplicaSetHandlersOwnerChain(t *testing.T) {
	for _, ownerChain := range []bool{false, true} {
		gates := map[featuregate.Feature]bool{features.PodUnavailableBudgetOwnerChain: ownerChain}
		f := podFixture(t, gates)
		widgetRef := controllerRef(widgetKind, "w", "uid-w")
		managed := newDeployment("managed", 2)
		managed.OwnerReferences = []metav1.OwnerReference{widgetRef}
		f.add(managed)
		f.add(targetBudget("by-widget", widgetKind, "w", intstr.FromInt32(1)))
		mRef := controllerRef(deploymentGVK, managed.Name, managed.UID)
		rs := newReplicaSet("managed-rs", 2, &mRef)

		f.queue.Reset()
		f.c.deleteReplicaSet(f.ctx, rs)
		var want []string
		if ownerChain {
			want = []string{"ns/by-widget"}
		}
		if got := f.queue.AddedKeys(); !slices.Equal(got, want) {
			t.Errorf("ownerChain=%v: queued %v, want %v", ownerChain, got, want)
		}
	}
}

// chainFixture has, with feature PodUnavailableBudgetOwnerChain, a Widget "top" driving a
// Widget "w" driving a ReplicaSet "w-rs", beside the Deployment "web" of podFixture, and a
// budget for each of them.
func chainFixture(t *testing.T) *fixture {
	t.Helper()
	topRef := controllerRef(widgetKind, "top", "uid-top")
	w := liveWidget("w")
	w.OwnerReferences = []metav1.OwnerReference{topRef}
	widgetRef := controllerRef(widgetKind, "w", "uid-w")
	d := newDeployment("web", 2)
	dRef := controllerRef(deploymentGVK, d.Name, d.UID)
	wrs := newReplicaSet("w-rs", 2, &widgetRef)
	wrs.Spec.Template.Labels = map[string]string{"app": "w"}
	return newFixture(t, fixtureOption{
		gates: map[featuregate.Feature]bool{features.PodUnavailableBudgetOwnerChain: true},
		live:  []*metav1.PartialObjectMetadata{w, liveWidget("top")},
	},
		d, newReplicaSet("web-rs", 2, &dRef), wrs,
		selectorBudget("by-label", "w", intstr.FromInt32(1)),
		targetBudget("by-deployment", deploymentGVK, "web", intstr.FromInt32(1)),
		targetBudget("by-widget", widgetKind, "w", intstr.FromInt32(1)),
		targetBudget("by-top", widgetKind, "top", intstr.FromInt32(1)),
		targetBudget("other-widget", widgetKind, "elsewhere", intstr.FromInt32(1)),
	)
}

// apiCalls returns every call made through the fixture's clients.
func (f *fixture) apiCalls() []clienttesting.Action {
	var calls []clienttesting.Action
	calls = append(calls, f.kubeClient.Actions()...)
	calls = append(calls, f.server.Actions()...)
	calls = append(calls, f.metadata.Actions()...)
	return append(calls, f.scales.Actions()...)
}

// takeChainLookups empties the chain lookup queue and returns what it held.
func (f *fixture) takeChainLookups() []chainLookup {
	var lookups []chainLookup
	for f.c.chains.Len() > 0 {
		lookup, _ := f.c.chains.Get()
		f.c.chains.Done(lookup)
		f.c.chains.Forget(lookup)
		lookups = append(lookups, lookup)
	}
	return lookups
}

// TestPodHandlersMakeNoAPICallsWithOwnerChain: with the owner-chain gate the handlers read
// the caches only. The budgets they can decide from the caches are queued at once (the
// Widget named by the ReplicaSet's reference counts as read); the chain above the Widget
// is left to a lookup, queued once however many events lead to it.
func TestPodHandlersMakeNoAPICallsWithOwnerChain(t *testing.T) {
	f := chainFixture(t)
	wrs := f.indexers["replicaset"].List()
	var rs *appsv1.ReplicaSet
	for _, obj := range wrs {
		if obj.(*appsv1.ReplicaSet).Name == "w-rs" {
			rs = obj.(*appsv1.ReplicaSet)
		}
	}
	rsRef := controllerRef(replicaSetGVK, rs.Name, rs.UID)
	pod := newPod("w-0", map[string]string{"app": "w"}, &rsRef)
	pod.ResourceVersion = "1"
	relabelled := pod.DeepCopy()
	relabelled.ResourceVersion = "2"
	relabelled.Labels = map[string]string{"app": "x"}
	resized := rs.DeepCopy()
	resized.ResourceVersion = "2"
	resized.Spec.Replicas = ptr.To[int32](3)
	directRef := controllerRef(widgetKind, "w", "uid-w")
	direct := newPod("w-direct", nil, &directRef)
	wantChain := []chainLookup{{namespace: testNamespace, apiVersion: "example.com/v1", kind: "Widget", name: "w", uid: "uid-w"}}

	for _, tc := range []struct {
		name   string
		handle func()
		want   []string
	}{
		{"pod created", func() { f.c.addPod(f.ctx, pod, false) }, []string{"ns/by-label", "ns/by-widget"}},
		{"pod relabelled", func() { f.c.updatePod(f.ctx, pod, relabelled) }, []string{"ns/by-label", "ns/by-widget"}},
		{"pod deleted", func() { f.c.deletePod(f.ctx, pod) }, []string{"ns/by-label", "ns/by-widget"}},
		{"pod of the Widget itself created", func() { f.c.addPod(f.ctx, direct, false) }, []string{"ns/by-widget"}},
		{"ReplicaSet resized", func() { f.c.updateReplicaSet(f.ctx, rs, resized) }, []string{"ns/by-label", "ns/by-widget"}},
		{"ReplicaSet deleted", func() { f.c.deleteReplicaSet(f.ctx, rs) }, []string{"ns/by-label", "ns/by-widget"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.queue.Reset()
			tc.handle()
			if calls := f.apiCalls(); len(calls) != 0 {
				t.Errorf("the handler made API calls: %v", calls)
			}
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
			if got := f.takeChainLookups(); !slices.Equal(got, wantChain) {
				t.Errorf("chain lookups %v, want %v", got, wantChain)
			}
		})
	}

	// The pods of one workload share one lookup until it is synced.
	f.c.addPod(f.ctx, pod, false)
	other := newPod("w-1", map[string]string{"app": "w"}, &rsRef)
	f.c.addPod(f.ctx, other, false)
	if got := f.takeChainLookups(); !slices.Equal(got, wantChain) {
		t.Errorf("two pods of one ReplicaSet: chain lookups %v, want %v", got, wantChain)
	}
	if calls := f.apiCalls(); len(calls) != 0 {
		t.Errorf("the handlers made API calls: %v", calls)
	}
}

// TestPodHandlersQueueNoChainLookupWhenTheCachesDecide: without the gate, or when no budget
// is left that only the live chain could decide, nothing is looked up.
func TestPodHandlersQueueNoChainLookupWhenTheCachesDecide(t *testing.T) {
	f := podFixture(t, map[featuregate.Feature]bool{features.PodUnavailableBudgetOwnerChain: true})
	f.c.addPod(f.ctx, tagged(webPod("p"), "tagged"), false)
	if got := f.takeChainLookups(); len(got) != 0 {
		t.Errorf("a chain the caches hold queued lookups %v", got)
	}

	f = podFixture(t, nil)
	widgetRef := controllerRef(widgetKind, "w", "uid-w")
	f.add(newReplicaSet("w-rs", 2, &widgetRef))
	rsRef := controllerRef(replicaSetGVK, "w-rs", "uid-w-rs")
	f.c.addPod(f.ctx, newPod("w-0", nil, &rsRef), false)
	if got := f.takeChainLookups(); len(got) != 0 {
		t.Errorf("without the gate: chain lookups %v", got)
	}
	if calls := f.apiCalls(); len(calls) != 0 {
		t.Errorf("without the gate: API calls %v", calls)
	}
}
