package replicaset

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Scenario 9: readyReplicas counts ready pods, availableReplicas those ready for
// minReadySeconds.
func TestReadyAndAvailableReplicas(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	rs := newReplicaSet("rs", 3)
	rs.Spec.MinReadySeconds = 3600
	rs = e.replicaSets().Create(t, rs)
	pods := e.waitForReplicas(t, rs.Name, 3)

	now := time.Now()
	e.SetPodRunning(t, pods[0].Name, false, now)
	e.SetPodRunning(t, pods[1].Name, true, now)
	e.SetPodRunning(t, pods[2].Name, true, now.Add(-2*time.Hour))

	e.replicaSets().WaitFor(t, rs.Name, "replicas 3, readyReplicas 2, availableReplicas 1", func(rs *appsv1.ReplicaSet) bool {
		s := rs.Status
		return s.Replicas == 3 && s.ReadyReplicas == 2 && s.AvailableReplicas == 1
	})
}

// Scenario 12: fullyLabeledReplicas counts pods carrying every template label.
func TestFullyLabeledReplicas(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 2))
	pods := e.waitForReplicas(t, rs.Name, 2)

	e.replicaSets().Update(t, rs.Name, func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Labels["extra"] = "yes" })
	e.Pods().Update(t, pods[0].Name, func(p *corev1.Pod) { p.Labels["extra"] = "yes" })

	e.replicaSets().WaitFor(t, rs.Name, "fullyLabeledReplicas 1 of 2 replicas", func(rs *appsv1.ReplicaSet) bool {
		s := rs.Status
		return s.ObservedGeneration == rs.Generation && s.Replicas == 2 && s.FullyLabeledReplicas == 1
	})
}

// Scenario 14: terminating pods are replaced and reported in status.terminatingReplicas,
// which is absent with the gate off.
func TestTerminatingReplicas(t *testing.T) {
	cases := []struct {
		name  string
		gates string
		// reported: whether status.terminatingReplicas is set at all.
		reported bool
	}{
		{name: "gate on", reported: true},
		{name: "gate off", gates: "DeploymentReplicaSetTerminatingReplicas=false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			e.startController(t, tc.gates)
			rs := e.replicaSets().Create(t, newReplicaSet("rs", 5))
			pods := e.waitForReplicas(t, rs.Name, 5)

			held := []string{pods[0].Name, pods[1].Name}
			for _, name := range held {
				e.holdAndDelete(t, name)
			}
			e.WaitForPods(t, "7 pods: 2 terminating, 5 active", func(pods []corev1.Pod) bool {
				return len(pods) == 7 && countActive(pods) == 5
			})
			e.waitForReplicas(t, rs.Name, 5)
			e.checkTerminatingReplicas(t, rs.Name, tc.reported, 2)

			for _, name := range held {
				e.release(t, name)
			}
			e.WaitForPods(t, "the released pods to go", func(pods []corev1.Pod) bool { return len(pods) == 5 })
			e.checkTerminatingReplicas(t, rs.Name, tc.reported, 0)
			e.waitForReplicas(t, rs.Name, 5)
		})
	}
}

// checkTerminatingReplicas waits for status.terminatingReplicas == want when the field
// is reported; otherwise it waits for the controller to go idle and checks that the
// field is absent.
func (e *testEnv) checkTerminatingReplicas(t *testing.T, name string, reported bool, want int32) {
	t.Helper()
	if reported {
		e.replicaSets().WaitFor(t, name, "status.terminatingReplicas to be reported", func(rs *appsv1.ReplicaSet) bool {
			return rs.Status.TerminatingReplicas != nil && *rs.Status.TerminatingReplicas == want
		})
		return
	}
	e.WaitForNoWrites(t, idlePeriod)
	if got := e.replicaSets().Get(t, name).Status.TerminatingReplicas; got != nil {
		t.Errorf("status.terminatingReplicas = %d with the gate off; want it absent", *got)
	}
}

// Scenario 19: a ReplicaSet whose pod became ready is synced again once the pod has been
// ready for minReadySeconds, without any further event.
func TestMinReadySecondsRequeue(t *testing.T) {
	const minReady = 5 * time.Second
	e := setup(t)
	e.startController(t, "")
	rs := newReplicaSet("rs", 1)
	rs.Spec.MinReadySeconds = int32(minReady / time.Second)
	rs = e.replicaSets().Create(t, rs)
	pod := e.waitForReplicas(t, rs.Name, 1)[0]

	// The API server keeps whole seconds; truncating makes readySince exactly what the
	// controller reads back.
	readySince := time.Now().Truncate(time.Second)
	e.SetPodRunning(t, pod.Name, true, readySince)

	var availableAt time.Time
	err := framework.WaitFor(e.Ctx, waitTimeout, "availableReplicas 1", func(ctx context.Context) (bool, error) {
		got, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil || got.Status.AvailableReplicas == 0 {
			return false, nil
		}
		availableAt = time.Now()
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("available %v after the pod became ready", availableAt.Sub(readySince))
	// Nothing but the controller's own requeue can make the pod available: the test
	// writes nothing after marking it ready.
	if after := availableAt.Sub(readySince); after < minReady || after > minReady+2*time.Second {
		t.Errorf("the pod was counted available %v after it became ready; want between %v and %v", after, minReady, minReady+2*time.Second)
	}
}
