package deployment

import (
	"fmt"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
)

// The scenarios of this file keep deleted pods terminating (holdFinalizer), as a kubelet
// does while containers shut down, and check how that shows in status and rollouts.

// countPods returns the active and the terminating pods of the namespace.
func (e *testEnv) countPods() (active, terminating []corev1.Pod) {
	e.t.Helper()
	for _, pod := range e.GetPods(e.t, nil) {
		switch {
		case podutil.IsPodActive(&pod):
			active = append(active, pod)
		case podutil.IsPodTerminating(&pod):
			terminating = append(terminating, pod)
		}
	}
	return active, terminating
}

// Scenario 15: scaling down leaves the removed pods terminating; terminatingReplicas counts
// them with the feature gate on and is absent with it off.
func TestTerminatingReplicasDeploymentStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gates  string
		gateOn bool
	}{
		{name: "gate on", gates: "", gateOn: true},
		{name: "gate off", gates: terminatingReplicasGate + "=false", gateOn: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, tc.gates)
			const name = "test-terminating-replicas"
			e.startPodReadier(nil)
			var rsTracker *tracker[*appsv1.ReplicaSet]
			var dTracker *tracker[*appsv1.Deployment]
			if !tc.gateOn {
				// With the gate off the field must never appear, at any step.
				rsTracker = startTracker(e, "ReplicaSets", replicaSetsListWatch(e), func(rses map[string]*appsv1.ReplicaSet) string {
					for _, rs := range rses {
						if rs.Status.TerminatingReplicas != nil {
							return fmt.Sprintf("ReplicaSet %s has terminatingReplicas %d with the gate off", rs.Name, *rs.Status.TerminatingReplicas)
						}
					}
					return ""
				})
				dTracker = startTracker(e, "Deployments", deploymentsListWatch(e), func(ds map[string]*appsv1.Deployment) string {
					for _, d := range ds {
						if d.Status.TerminatingReplicas != nil {
							return fmt.Sprintf("Deployment %s has terminatingReplicas %d with the gate off", d.Name, *d.Status.TerminatingReplicas)
						}
					}
					return ""
				})
			}

			d := newDeployment(e.Namespace, name, 6)
			d.Spec.Template.Finalizers = []string{holdFinalizer}
			e.deployments().Create(e.t, d)
			d, rs := e.waitForComplete(name)

			for _, step := range []struct{ replicas, terminating int32 }{{4, 2}, {3, 3}, {2, 4}} {
				e.scaleDeployment(name, step.replicas)
				d = e.deployments().WaitFor(e.t, name, fmt.Sprintf("%d replicas with %d terminating", step.replicas, step.terminating), func(d *appsv1.Deployment) bool {
					if !complete(d) {
						return false
					}
					if !tc.gateOn {
						return true
					}
					return d.Status.TerminatingReplicas != nil && *d.Status.TerminatingReplicas == step.terminating
				})
				active, terminating := e.countPods()
				if len(active) != int(step.replicas) || len(terminating) != int(step.terminating) {
					t.Errorf("scaled to %d: %d active and %d terminating pods, want %d and %d",
						step.replicas, len(active), len(terminating), step.replicas, step.terminating)
				}
				got := e.ReplicaSets().Get(e.t, rs.Name).Status.TerminatingReplicas
				if tc.gateOn && (got == nil || *got != step.terminating) {
					t.Errorf("scaled to %d: ReplicaSet terminatingReplicas = %s, want %d", step.replicas, int32PtrString(got), step.terminating)
				}
				if !tc.gateOn && (got != nil || d.Status.TerminatingReplicas != nil) {
					t.Errorf("scaled to %d with the gate off: terminatingReplicas ReplicaSet %s, Deployment %s; want both absent",
						step.replicas, int32PtrString(got), int32PtrString(d.Status.TerminatingReplicas))
				}
			}
			if !tc.gateOn {
				rsTracker.ExpectNoViolations(5)
				dTracker.ExpectNoViolations(5)
			}
		})
	}
}

// Scenario 16: a Recreate rollout never has pods of the old and the new template at the
// same time, terminating ones included, and a scale during the rollout is honoured.
func TestRecreateDeploymentForPodReplacement(t *testing.T) {
	e := setup(t, "")
	const name = "test-recreate-deployment"
	e.startPodReadier(nil)
	d := newDeployment(e.Namespace, name, 3)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	d.Spec.Template.Finalizers = []string{holdFinalizer}
	e.deployments().Create(e.t, d)
	d, oldRS := e.waitForComplete(name)

	pods := startTracker(e, "pods", podsListWatch(e), func(pods map[string]*corev1.Pod) string {
		old, updated := 0, 0
		for _, pod := range pods {
			if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			if podImage(pod) == fakeImage {
				old++
			} else {
				updated++
			}
		}
		if old > 0 && updated > 0 {
			return fmt.Sprintf("%d old and %d new pods exist at once", old, updated)
		}
		return ""
	})

	e.setImage(name, "new-image")
	e.waitForReplicaSets(d, "the old ReplicaSet scaled to 0", func(rses []*appsv1.ReplicaSet) bool {
		for _, rs := range rses {
			if rs.UID == oldRS.UID {
				return *rs.Spec.Replicas == 0 && rs.Status.Replicas == 0
			}
		}
		return false
	})
	active, terminating := e.countPods()
	if len(active) != 0 || len(terminating) != 3 {
		t.Fatalf("after the old ReplicaSet went to 0: %d active and %d terminating pods, want 0 and 3", len(active), len(terminating))
	}

	// Scale while the old pods are still terminating.
	e.scaleDeployment(name, 5)
	d = e.waitForObserved(name)
	if rses := e.mustReplicaSetsOf(d); len(rses) != 1 {
		t.Errorf("a new ReplicaSet exists while old pods are terminating:\n%s", describeReplicaSets(rses))
	}

	var names []string
	for _, pod := range terminating {
		names = append(names, pod.Name)
	}
	if err := e.releasePods(e.Ctx, names); err != nil {
		t.Fatal(err)
	}
	e.waitForRevisionAndImage(name, "2", "new-image")
	d, newRS := e.waitForComplete(name)
	pods.ExpectNoViolations(10)

	if *d.Spec.Replicas != 5 || *newRS.Spec.Replicas != 5 || d.Status.UpdatedReplicas != 5 {
		t.Errorf("after the rollout: Deployment replicas %d, new ReplicaSet replicas %d, updated %d; want 5",
			*d.Spec.Replicas, *newRS.Spec.Replicas, d.Status.UpdatedReplicas)
	}
	if got := *e.ReplicaSets().Get(e.t, oldRS.Name).Spec.Replicas; got != 0 {
		t.Errorf("old ReplicaSet has %d replicas, want 0", got)
	}
	active, _ = e.countPods()
	for _, pod := range active {
		if podImage(&pod) != "new-image" {
			t.Errorf("pod %s of image %s is still active", pod.Name, podImage(&pod))
		}
	}
	if len(active) != 5 {
		t.Errorf("%d active pods, want 5", len(active))
	}
}

// Scenario 17: proportional scaling in the middle of a rollout whose new pods are not
// ready, and terminating old pods that do not hold the rollout back.
func TestRollingUpdateAndProportionalScalingForDeploymentPodReplacement(t *testing.T) {
	e := setup(t, "")
	const name = "test-proportional-scaling"
	var newReady atomic.Bool
	e.startPodReadier(func(pod *corev1.Pod) bool { return podImage(pod) == fakeImage || newReady.Load() })

	d := newDeployment(e.Namespace, name, 100)
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
		MaxSurge:       ptr.To(intstr.FromInt32(20)),
		MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}
	d.Spec.Template.Finalizers = []string{holdFinalizer}
	e.deployments().Create(e.t, d)
	d, oldRS := e.waitForComplete(name)

	e.setImage(name, "new-image")
	_, newRS := e.waitForRevisionAndImage(name, "2", "new-image")
	sizes := func(oldWant, newWant int32) func([]*appsv1.ReplicaSet) bool {
		return func(rses []*appsv1.ReplicaSet) bool {
			if len(rses) != 2 || !settled(rses) {
				return false
			}
			for _, rs := range rses {
				want := oldWant
				if rs.UID == newRS.UID {
					want = newWant
				}
				if *rs.Spec.Replicas != want {
					return false
				}
			}
			return true
		}
	}
	e.waitForReplicaSets(d, "old 100 / new 20", sizes(100, 20))

	e.scaleDeployment(name, 120)
	rses := e.waitForReplicaSets(d, "old 117 / new 23", sizes(117, 23))
	for _, rs := range rses {
		wantRevision := "1"
		if rs.UID == newRS.UID {
			wantRevision = "2"
		}
		for key, want := range map[string]string{
			desiredReplicasAnnotation: "120",
			maxReplicasAnnotation:     "140",
			revisionAnnotation:        wantRevision,
		} {
			if got := rs.Annotations[key]; got != want {
				t.Errorf("ReplicaSet %s: annotation %s = %q, want %q", rs.Name, key, got, want)
			}
		}
	}

	// The new pods become ready; the old ones removed stay terminating meanwhile.
	newReady.Store(true)
	e.markPodsReady(func(pod *corev1.Pod) bool { return podImage(pod) == "new-image" })
	d, _ = e.waitForComplete(name)
	if got := *e.ReplicaSets().Get(e.t, oldRS.Name).Spec.Replicas; got != 0 {
		t.Errorf("old ReplicaSet has %d replicas after the rollout, want 0", got)
	}
	active, terminating := e.countPods()
	if len(active) != 120 || len(terminating) != 117 {
		t.Errorf("after the rollout: %d active and %d terminating pods, want 120 and 117 (the old pods are held)", len(active), len(terminating))
	}
	e.deployments().WaitFor(e.t, name, "117 terminating replicas", func(d *appsv1.Deployment) bool {
		return complete(d) && d.Status.TerminatingReplicas != nil && *d.Status.TerminatingReplicas == 117
	})
}
