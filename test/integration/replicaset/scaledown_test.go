package replicaset

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// podDeletionCostAnnotation ranks pods for scale-down: lower cost goes first.
	podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

	// preparedLabel is a template label that a test removes from pods as the last write
	// of their preparation. fullyLabeledReplicas falling to 0 then proves that the
	// controller's pod cache holds the prepared pods before the test scales down: a watch
	// delivers each pod's updates in order, but pods and ReplicaSets come through
	// different watches.
	preparedLabel = "bosun.dev/unprepared"
)

// Scenario 5: pod-deletion-cost ranks before restart counts, unless its gate is off.
func TestPodDeletionCost(t *testing.T) {
	cases := []struct {
		name  string
		gates string
		// costs are the annotations of the pod with 5 restarts and of the one with none
		// ("" for none).
		costs [2]string
		// keep is the index of the pod that must survive the scale-down to 1.
		keep int
	}{
		{name: "higher cost is kept", costs: [2]string{"1000", "100"}, keep: 0},
		{name: "equal costs: more restarts go first", costs: [2]string{"100", "100"}, keep: 1},
		{name: "no costs: more restarts go first", keep: 1},
		{name: "gate off: costs are ignored", gates: "PodDeletionCost=false", costs: [2]string{"1000", "100"}, keep: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			e.startController(t, tc.gates)
			rs := newReplicaSet("rs", 2)
			rs.Spec.Template.Labels[preparedLabel] = "true"
			rs = e.replicaSets().Create(t, rs)
			pods := e.waitForReplicas(t, rs.Name, 2)

			restarts := [2]int32{5, 0}
			for i, pod := range pods {
				// Unscheduled and not ready, as in upstream's test: only the cost and the
				// restart count tell the two apart.
				e.Pods().UpdateStatus(t, pod.Name, func(p *corev1.Pod) {
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{
						Name: "main", Image: "registry.example/app:1.0", RestartCount: restarts[i],
						State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					}}
				})
				e.Pods().Update(t, pod.Name, func(p *corev1.Pod) {
					if tc.costs[i] != "" {
						p.Annotations = map[string]string{podDeletionCostAnnotation: tc.costs[i]}
					}
					delete(p.Labels, preparedLabel)
				})
			}
			e.replicaSets().WaitFor(t, rs.Name, "the controller to see the prepared pods", func(rs *appsv1.ReplicaSet) bool {
				return rs.Status.Replicas == 2 && rs.Status.FullyLabeledReplicas == 0
			})

			e.scaleRS(t, rs.Name, 1)
			kept := e.waitForReplicas(t, rs.Name, 1)[0]
			if want := pods[tc.keep].Name; kept.Name != want {
				t.Errorf("kept pod %s (%d restarts), want %s (%d restarts)", kept.Name, restarts[1-tc.keep], want, restarts[tc.keep])
			}
		})
	}
}

// Scenario 18: on scale-down, a pod on the node crowded with pods of sibling ReplicaSets
// (same controller owner) goes first.
func TestRankBasedScaleDown(t *testing.T) {
	e := setup(t)
	e.startController(t, "")

	// Any controller owner will do; no Deployment controller runs.
	owner, err := e.Client.AppsV1().Deployments(e.Namespace).Create(e.Ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ranked"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ranked"}},
				Spec:       podSpec(),
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the owning Deployment: %v", err)
	}
	ownerRef := *metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	sibling := func(name, tier string, replicas int32) *appsv1.ReplicaSet {
		rs := replicaSetSelecting(name, replicas, map[string]string{"app": "ranked", "tier": tier})
		rs.OwnerReferences = []metav1.OwnerReference{ownerRef}
		return e.replicaSets().Create(t, rs)
	}
	rsA := sibling("rs-a", "a", 4)
	rsB := sibling("rs-b", "b", 2)
	podsA := e.waitForReplicas(t, rsA.Name, 4)
	podsB := e.waitForReplicas(t, rsB.Name, 2)

	n1, n2 := e.createNode(t, "n1"), e.createNode(t, "n2")
	placement := map[string]string{ // pod → node: n1 holds 3 of A and 2 of B, n2 one of A
		podsA[0].Name: n1, podsA[1].Name: n1, podsA[2].Name: n1, podsA[3].Name: n2,
		podsB[0].Name: n1, podsB[1].Name: n1,
	}
	for pod, node := range placement {
		e.bind(t, pod, node)
		// The lone pod on n2 became ready most recently, so that rank alone (not toolkit
		// the ranking rule that deletes the most recently ready first) can spare it.
		readySince := time.Now().Add(-time.Hour)
		if node == n2 {
			readySince = time.Now()
		}
		e.SetPodRunning(t, pod, true, readySince)
	}
	e.replicaSets().WaitFor(t, rsA.Name, "4 ready replicas", func(rs *appsv1.ReplicaSet) bool { return rs.Status.ReadyReplicas == 4 })
	e.replicaSets().WaitFor(t, rsB.Name, "2 ready replicas", func(rs *appsv1.ReplicaSet) bool { return rs.Status.ReadyReplicas == 2 })

	e.scaleRS(t, rsA.Name, 3)
	e.waitForReplicas(t, rsA.Name, 3)
	e.WaitForNoWrites(t, idlePeriod)

	var deleted []string
	for _, pod := range e.GetPods(t, rsA.Spec.Selector.MatchLabels) {
		if pod.DeletionTimestamp != nil {
			deleted = append(deleted, fmt.Sprintf("%s on %s", pod.Name, pod.Spec.NodeName))
			if pod.Spec.NodeName != n1 {
				t.Errorf("deleted pod %s is on %s; want a pod on %s, which holds 5 pods of the owner", pod.Name, pod.Spec.NodeName, n1)
			}
		}
	}
	if len(deleted) != 1 {
		t.Errorf("deleted pods of %s: %v, want exactly one", rsA.Name, deleted)
	}
	if got := len(activeControlledBy(e.GetPods(t, rsB.Spec.Selector.MatchLabels), rsB.UID)); got != 2 {
		t.Errorf("%s has %d active pods, want its 2 untouched", rsB.Name, got)
	}
}

// createNode creates a Node named after the test namespace and suffix (Nodes are
// cluster-scoped and the control plane is shared) and deletes it when the test ends. No
// kubelet backs it; pods bound to it only look scheduled.
func (e *testEnv) createNode(t *testing.T, suffix string) string {
	t.Helper()
	node, err := e.Client.CoreV1().Nodes().Create(e.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace + "-" + suffix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Client.CoreV1().Nodes().Delete(e.Ctx, node.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting node %s: %v", node.Name, err)
		}
	})
	return node.Name
}

// bind schedules a pod onto a node through the binding subresource, as kube-scheduler does.
func (e *testEnv) bind(t *testing.T, pod, node string) {
	t.Helper()
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := e.Client.CoreV1().Pods(e.Namespace).Bind(e.Ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding pod %s to %s: %v", pod, node, err)
	}
}
