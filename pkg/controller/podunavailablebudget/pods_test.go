package podunavailablebudget

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
)

// resolve runs resolveCoverage on the cached budget name and returns the pod names
// (sorted) and the expected count.
func (f *fixture) resolve(name string) ([]string, int32) {
	f.t.Helper()
	pub := f.server.Budget(testNamespace, name)
	override, err := totalReplicasOverride(pub)
	if err != nil {
		f.t.Fatal(err)
	}
	cov, err := f.c.resolveCoverage(f.ctx, pub, override)
	if err != nil {
		f.t.Fatalf("resolveCoverage: %v", err)
	}
	var names []string
	for _, pod := range cov.pods {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	return names, cov.expected
}

func TestTargetCoverage(t *testing.T) {
	web := newDeployment("web", 3)
	webRef := controllerRef(deploymentGVK, web.Name, web.UID)
	current := newReplicaSet("web-new", 3, &webRef)
	old := newReplicaSet("web-old", 0, &webRef)
	retired := newReplicaSet("web-retired", 0, &webRef)
	retired.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	ref := func(rs *appsv1.ReplicaSet) *metav1.OwnerReference {
		r := controllerRef(replicaSetGVK, rs.Name, rs.UID)
		return &r
	}
	finished := newPod("new-done", nil, ref(current))
	finished.Status.Phase = corev1.PodFailed
	// A pod whose controller reference is to an earlier ReplicaSet of the same name.
	stale := newPod("stale", nil, ref(current))
	stale.OwnerReferences[0].UID = "uid-earlier"

	empty := newDeployment("empty", 2)
	emptyRef := controllerRef(deploymentGVK, empty.Name, empty.UID)
	zero := newDeployment("zero", 0)
	zeroRef := controllerRef(deploymentGVK, zero.Name, zero.UID)
	leaving := newDeployment("leaving", 2)
	leaving.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	leavingRef := controllerRef(deploymentGVK, leaving.Name, leaving.UID)
	db := newStatefulSet("db", 2)
	dbRef := controllerRef(statefulSetGVK, db.Name, db.UID)
	widgetRef := controllerRef(widgetKind, "w", "uid-w")
	// A pod owned, but not controlled, by the Widget.
	adopted := newPod("w-owned", nil, nil)
	adopted.OwnerReferences = []metav1.OwnerReference{{APIVersion: widgetRef.APIVersion, Kind: widgetRef.Kind, Name: "w", UID: "uid-w"}}
	// A pod of the Deployment's ReplicaSet that also names the Deployment as a plain
	// owner: covered once.
	alsoOwned := newPod("new-also-owned", nil, ref(current))
	alsoOwned.OwnerReferences = append(alsoOwned.OwnerReferences,
		metav1.OwnerReference{APIVersion: webRef.APIVersion, Kind: webRef.Kind, Name: web.Name, UID: web.UID})
	// Pods of other namespaces with the same owner references, whose namespace name
	// starts like the budget's: never covered.
	var elsewhere []runtime.Object
	for _, namespace := range []string{testNamespace + "2", testNamespace + "-b"} {
		for _, pod := range []*corev1.Pod{newPod("new-0", nil, ref(current)), newPod("db-0", nil, &dbRef), adopted.DeepCopy()} {
			pod.Namespace, pod.UID = namespace, pod.UID+types.UID(namespace)
			elsewhere = append(elsewhere, pod)
		}
	}

	objects := []runtime.Object{
		web, current, old, retired, empty, zero, leaving, db,
		newPod("new-0", nil, ref(current)), newPod("new-1", nil, ref(current)), finished, stale,
		newPod("old-0", nil, ref(old)), newPod("retired-0", nil, ref(retired)),
		newPod("direct", nil, &emptyRef), newPod("zero-0", nil, &zeroRef), newPod("leaving-0", nil, &leavingRef),
		newPod("db-0", nil, &dbRef), newPod("db-1", nil, &dbRef),
		newPod("sel-0", map[string]string{"app": "sel"}, nil), newPod("sel-1", map[string]string{"app": "sel"}, nil),
		adopted, alsoOwned,
		targetBudget("web", deploymentGVK, "web", intstr.FromInt32(1)),
		targetBudget("web-v1beta1", appsv1beta1Deployment, "web", intstr.FromInt32(1)),
		targetBudget("rs", replicaSetGVK, "web-new", intstr.FromInt32(1)),
		targetBudget("empty", deploymentGVK, "empty", intstr.FromInt32(1)),
		targetBudget("zero", deploymentGVK, "zero", intstr.FromInt32(1)),
		targetBudget("leaving", deploymentGVK, "leaving", intstr.FromInt32(1)),
		targetBudget("missing", deploymentGVK, "missing", intstr.FromInt32(1)),
		withAnnotation(targetBudget("missing-with-total", deploymentGVK, "missing", intstr.FromInt32(1)),
			policyv1beta1.PubProtectTotalReplicasAnnotation, "4"),
		targetBudget("db", statefulSetGVK, "db", intstr.FromInt32(1)),
		targetBudget("widget", widgetKind, "w", intstr.FromInt32(1)),
		targetBudget("selecting-widget", widgetKind, "sw", intstr.FromInt32(1)),
	}
	f := newFixture(t, fixtureOption{
		live:   []*metav1.PartialObjectMetadata{liveWidget("w"), liveWidget("sw")},
		scales: map[string]*autoscalingv1.Scale{"w": scaleOf(5, "app=sel"), "sw": scaleOf(2, "app=sel")},
	}, append(objects, elsewhere...)...)

	for _, tc := range []struct {
		budget   string
		pods     []string
		expected int32
	}{
		// Pods of the Deployment's ReplicaSets that are not being deleted, scaled to zero
		// or not; whatever apiVersion the budget names the Deployment with.
		{"web", []string{"new-0", "new-1", "new-also-owned", "old-0"}, 3},
		{"web-v1beta1", []string{"new-0", "new-1", "new-also-owned", "old-0"}, 3},
		{"rs", []string{"new-0", "new-1", "new-also-owned"}, 3},
		// A Deployment without ReplicaSets covers the pods it controls itself.
		{"empty", []string{"direct"}, 2},
		{"zero", nil, 0},
		{"leaving", nil, 0},
		{"missing", nil, 0},
		{"missing-with-total", nil, 4},
		{"db", []string{"db-0", "db-1"}, 2},
		// A workload of another kind covers the pods it owns; only when it owns none, those
		// its scale selector matches.
		{"widget", []string{"w-owned"}, 5},
		{"selecting-widget", []string{"sel-0", "sel-1"}, 2},
	} {
		pods, expected := f.resolve(tc.budget)
		if !slices.Equal(pods, tc.pods) || expected != tc.expected {
			t.Errorf("%s: pods %v expected %d, want %v and %d", tc.budget, pods, expected, tc.pods, tc.expected)
		}
	}
}

var appsv1beta1Deployment = deploymentGVK.GroupKind().WithVersion("v1beta1")

func TestSelectorCoverage(t *testing.T) {
	web := newDeployment("web", 4)
	webRef := controllerRef(deploymentGVK, web.Name, web.UID)
	rsNew, rsOld := newReplicaSet("web-new", 3, &webRef), newReplicaSet("web-old", 1, &webRef)
	newRef, oldRef := controllerRef(replicaSetGVK, rsNew.Name, rsNew.UID), controllerRef(replicaSetGVK, rsOld.Name, rsOld.UID)
	loose := newReplicaSet("loose", 2, nil)
	looseRef := controllerRef(replicaSetGVK, loose.Name, loose.UID)
	db := newStatefulSet("db", 2)
	dbRef := controllerRef(statefulSetGVK, db.Name, db.UID)
	agent := newDaemonSet("agent", 3)
	agentRef := controllerRef(daemonSetGVK, agent.Name, agent.UID)
	leaving := newStatefulSet("leaving", 5)
	leaving.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	leavingRef := controllerRef(statefulSetGVK, leaving.Name, leaving.UID)
	widgetRef := controllerRef(widgetKind, "w", "uid-w")
	bareRef := controllerRef(widgetKind, "bare", "uid-bare")
	goneRef := controllerRef(statefulSetGVK, "gone", "uid-gone")

	app := func(name string, owner *metav1.OwnerReference) *corev1.Pod {
		return newPod(name, map[string]string{"app": "mix", "pod": name}, owner)
	}
	objects := []runtime.Object{web, rsNew, rsOld, loose, db, agent, leaving}
	for _, pod := range []*corev1.Pod{
		app("web-0", &newRef), app("web-1", &newRef), app("web-2", &oldRef), // the Deployment: 4, once
		app("loose-0", &looseRef),                              // a ReplicaSet of its own: 2
		app("db-0", &dbRef),                                    // 2
		app("orphan", nil),                                     // nothing
		app("leaving-0", &leavingRef), app("gone-0", &goneRef), // nothing
		app("w-0", &widgetRef),    // scale: 5
		app("bare-0", &bareRef),   // no scale: -1
		app("agent-0", &agentRef), // no count: -1
	} {
		objects = append(objects, pod)
	}
	objects = append(objects,
		selectorBudget("mix", "mix", intstr.FromInt32(1)),
		withAnnotation(selectorBudget("mix-with-total", "mix", intstr.FromInt32(1)), policyv1beta1.PubProtectTotalReplicasAnnotation, "20"),
		selectorBudget("web-only", "mix", intstr.FromInt32(1)),
	)
	f := newFixture(t, fixtureOption{
		live:   []*metav1.PartialObjectMetadata{liveWidget("w"), liveWidget("bare")},
		scales: map[string]*autoscalingv1.Scale{"w": scaleOf(5, "")},
	}, objects...)

	pods, expected := f.resolve("mix")
	if len(pods) != 11 || expected != 4+2+2+5-1-1 {
		t.Errorf("mix: %d pods, expected %d; want 11 pods and 11", len(pods), expected)
	}

	// With the annotation the owners are not looked up.
	f.metadata.ClearActions()
	if _, expected := f.resolve("mix-with-total"); expected != 20 {
		t.Errorf("mix-with-total: expected %d, want 20", expected)
	}
	if reads := f.metadata.Actions(); len(reads) != 0 {
		t.Errorf("%d live reads with the count given", len(reads))
	}

	// Two pods of different ReplicaSets of one Deployment count it once.
	narrowed := f.server.Budget(testNamespace, "web-only")
	narrowed.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mix"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pod", Operator: metav1.LabelSelectorOpIn, Values: []string{"web-0", "web-2"}}}}
	f.add(narrowed)
	if pods, expected := f.resolve("web-only"); !slices.Equal(pods, []string{"web-0", "web-2"}) || expected != 4 {
		t.Errorf("web-only: pods %v expected %d, want the two pods and their Deployment's 4", pods, expected)
	}
}

func TestSelectorCoverageRejectsBadSelectors(t *testing.T) {
	invalid := selectorBudget("invalid", "x", intstr.FromInt32(1))
	invalid.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}
	none := selectorBudget("none", "x", intstr.FromInt32(1))
	none.Spec.Selector = nil
	f := newFixture(t, fixtureOption{}, invalid, none)
	for _, name := range []string{"invalid", "none"} {
		pub := f.server.Budget(testNamespace, name)
		if _, err := f.c.resolveCoverage(f.ctx, pub, nil); err == nil || !strings.Contains(err.Error(), "selector") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}
