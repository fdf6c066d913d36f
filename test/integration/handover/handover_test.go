package handover

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/hash"
	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The workloads of the no-churn tests and what rolling them makes.
const (
	richName     = "rich"
	recreateName = "recreate"
	historyName  = "history"

	// replicaSetsCreated and podsCreated are what the outgoing manager creates while
	// rollWorkloads runs: rich 2 ReplicaSets of 3 pods, recreate 2 of 2, history 4 (its
	// first one comes back once) and 5 rollouts of 2 pods.
	replicaSetsCreated = 2 + 2 + 4
	podsCreated        = 2*3 + 2*2 + 5*2
)

// finalRevisions is where rollWorkloads leaves each Deployment.
var finalRevisions = map[string]string{richName: "2", recreateName: "2", historyName: "5"}

// rollWorkloads creates the no-churn workloads, rolls each at least once and waits until
// every rollout is finished for good. It returns the final state.
func (e *env) rollWorkloads() *state {
	e.t.Helper()
	e.Deployments().Create(e.t, richDeployment(richName))
	e.Deployments().Create(e.t, recreateDeployment(recreateName))
	e.Deployments().Create(e.t, historyDeployment(historyName))
	e.waitSettled("every Deployment at revision 1", map[string]string{richName: "1", recreateName: "1", historyName: "1"})

	// A new template that is not a new image, and a new image.
	e.Deployments().Update(e.t, richName, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[0].Value = "2" })
	e.Deployments().Update(e.t, recreateName, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "registry.example/batch:2" })
	// history goes to api:2 and api:3, back to api:1 (its first ReplicaSet comes back as
	// revision 4 and records 1 in its revision-history), then to api:4 (revision 5), which
	// leaves one old ReplicaSet more than revisionHistoryLimit keeps: revision 2's is
	// deleted.
	for i, image := range []string{"api:2", "api:3", "api:1", "api:4"} {
		e.Deployments().Update(e.t, historyName, func(d *appsv1.Deployment) {
			d.Annotations[changeCauseAnnotation] = "set image " + image
			d.Spec.Template.Spec.Containers[0].Image = "registry.example/" + image
		})
		rev := strconv.Itoa(i + 2)
		e.waitSettled(historyName+" at revision "+rev, map[string]string{historyName: rev})
	}
	s := e.waitSettled("every rollout to finish", finalRevisions)

	// What the handover must keep, checked here so that the test cannot pass on a
	// rollout history poorer than it claims.
	type rsWant struct{ image, revision, history, changeCause string }
	want := map[string][]rsWant{
		richName:     {{"registry.example/web:1", "1", "", ""}, {"registry.example/web:1", "2", "", ""}},
		recreateName: {{"registry.example/batch:1", "1", "", ""}, {"registry.example/batch:2", "2", "", ""}},
		historyName: {
			{"registry.example/api:3", "3", "", "set image api:3"},
			{"registry.example/api:1", "4", "1", "set image api:1"},
			{"registry.example/api:4", "5", "", "set image api:4"},
		},
	}
	for name, wants := range want {
		rses := s.replicaSetsOf(s.deployments[name])
		var got []rsWant
		for _, rs := range rses {
			got = append(got, rsWant{rs.Spec.Template.Spec.Containers[0].Image, rs.Annotations[revisionAnnotation],
				rs.Annotations[revisionHistoryAnnotation], rs.Annotations[changeCauseAnnotation]})
		}
		if fmt.Sprint(got) != fmt.Sprint(wants) {
			e.t.Errorf("ReplicaSets of %s (image, revision, revision-history, change-cause) = %v, want %v", name, got, wants)
		}
	}
	return s
}

// testNoChurn rolls the workloads with first, hands over to second, and checks that
// second changes nothing. It returns the state at the handover.
func testNoChurn(t *testing.T, first, second side) (*env, *state) {
	e := setup(t)
	e.startPodReadier(nil)
	out := first.start(e)
	e.rollWorkloads()
	// Stopping first while it still had work queued would leave legitimate work to
	// second.
	e.waitIdle(out.workloads, first.name)
	handover := e.stop(out)
	before := e.mustRead()
	t.Logf("handing over %d Deployments, %d ReplicaSets and %d pods from %s to %s",
		len(before.deployments), len(before.replicaSets), len(before.pods), first.name, second.name)

	in := second.start(e)
	// A manager that never goes idle keeps changing something; the checks below say what.
	if err := e.idle(in.workloads, second.name); err != nil {
		t.Error(err)
	}
	after := e.mustRead()

	e.expectUnchanged(before, after, second.name)
	e.expectNoWritesSince(handover, second.name)

	// The audit log tells the managers apart by User-Agent: first created everything...
	if n := creates(e.writes(fromClient(first.agent, deploymentClient)), "replicasets"); n != replicaSetsCreated {
		t.Errorf("audit log: %s%s created %d ReplicaSets, want %d", first.agent, deploymentClient, n, replicaSetsCreated)
	}
	if n := creates(e.writes(fromClient(first.agent, replicaSetClient)), "pods"); n != podsCreated {
		t.Errorf("audit log: %s%s created %d pods, want %d", first.agent, replicaSetClient, n, podsCreated)
	}
	// ...and second, whose controllers never ran before in this namespace, wrote nothing.
	for _, client := range []string{deploymentClient, replicaSetClient} {
		var lines []string
		for _, ev := range e.writes(fromClient(second.agent, client)) {
			lines = append(lines, describeEvent(&ev))
		}
		if len(lines) > 0 {
			t.Errorf("audit log: %s%s made %d writes after taking over; first ones:\n  %v", second.agent, client, len(lines), joinErrors(lines))
		}
	}
	return e, before
}

// A cluster moves from upstream's workload controllers to bosun's.
func TestUpstreamToBosunNoChurn(t *testing.T) {
	e, handedOver := testNoChurn(t, upstreamSide(t), bosunSide(t))

	// bosun would name every ReplicaSet as upstream did: the same pod-template-hash for
	// the same template. The templates are read as protobuf, as both managers read them.
	proto, err := e.read(e.Ctx, e.proto)
	if err != nil {
		t.Fatal(err)
	}
	for uid, rs := range proto.replicaSets {
		if _, ok := handedOver.replicaSets[uid]; !ok {
			continue
		}
		ref := metav1.GetControllerOf(rs)
		if ref == nil {
			t.Errorf("ReplicaSet %s has no controller", rs.Name)
			continue
		}
		var collisionCount *int32
		for _, d := range proto.deployments {
			if d.UID == ref.UID {
				collisionCount = d.Status.CollisionCount
			}
		}
		template := rs.Spec.Template.DeepCopy()
		delete(template.Labels, podTemplateHashLabel)
		if got, want := hash.ComputeHash(template, collisionCount), rs.Labels[podTemplateHashLabel]; got != want {
			t.Errorf("ReplicaSet %s (revision %s of %s): bosun hashes its template to %q, upstream's pod-template-hash is %q",
				rs.Name, rs.Annotations[revisionAnnotation], ref.Name, got, want)
		}
	}
}

// A cluster moves back from bosun's workload controllers to upstream's.
func TestBosunToUpstreamNoChurn(t *testing.T) {
	testNoChurn(t, bosunSide(t), upstreamSide(t))
}

// A rolling update begun by one manager is finished by the other.
func TestRolloutBegunByUpstreamFinishedByBosun(t *testing.T) {
	testRolloutHandover(t, upstreamSide(t), bosunSide(t))
}

func TestRolloutBegunByBosunFinishedByUpstream(t *testing.T) {
	testRolloutHandover(t, bosunSide(t), upstreamSide(t))
}

// testRolloutHandover starts a rolling update with first, blocks it half-way by keeping
// new pods unready, hands over to second, lets the pods become ready and checks that
// second finishes the rollout with first's new ReplicaSet, within the rolling-update
// limits at every stored state.
func testRolloutHandover(t *testing.T, first, second side) {
	const (
		name     = "web"
		replicas = 6
		// maxSurge 1 and maxUnavailable 1.
		maxTotal     = replicas + 1
		minAvailable = replicas - 1
		oldImage     = "registry.example/web:1"
		newImage     = "registry.example/web:2"
		// With 2 new pods ready and every later one not, the rollout stops where no step
		// is allowed: 7 pods asked for (the surge used up) and 5 available (the
		// unavailability used up), that is 3 old and 4 new.
		readyNew = 2
		blockOld = 3
		blockNew = 4
	)
	e := setup(t)
	gate := newReadyGate(newImage, readyNew)
	e.startPodReadier(gate.accept)
	out := first.start(e)

	d := simpleDeployment(name, replicas, oldImage)
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
		MaxSurge:       ptr.To(intstr.FromInt32(1)),
		MaxUnavailable: ptr.To(intstr.FromInt32(1)),
	}
	e.Deployments().Create(e.t, d)
	s := e.waitSettled("revision 1 of "+name, map[string]string{name: "1"})
	oldRS := s.newReplicaSet(s.deployments[name])

	h := e.startHistory()
	// checkLimits replays every state the API server stored, in order, and checks that it
	// kept within the limits and knew only the old ReplicaSet and newUID (if set) with
	// their revisions.
	checkLimits := func(newUID types.UID) {
		t.Helper()
		revisions := map[types.UID]string{oldRS.UID: "1"}
		if newUID != "" {
			revisions[newUID] = "2"
		}
		var violations []string
		healthy := false
		steps := h.replay(func(s step, pods map[types.UID]*corev1.Pod, rses map[types.UID]*appsv1.ReplicaSet) {
			var problems []string
			if s.rs != nil && !s.deleted {
				want, ok := revisions[s.rs.UID]
				if !ok && newUID == "" && s.rs.UID != oldRS.UID {
					// Before the handover the new ReplicaSet is not known yet: the first
					// one to appear is it.
					newUID, want, ok = s.rs.UID, "2", true
					revisions[newUID] = want
				}
				if !ok {
					problems = append(problems, fmt.Sprintf("a third ReplicaSet %s (uid %s, revision %q) appeared", s.rs.Name, s.rs.UID, s.rs.Annotations[revisionAnnotation]))
				} else if got := s.rs.Annotations[revisionAnnotation]; got != want {
					problems = append(problems, fmt.Sprintf("ReplicaSet %s has revision %q, want %q", s.rs.Name, got, want))
				}
			}
			asked := 0
			var sizes []string
			for _, rs := range rses {
				asked += int(*rs.Spec.Replicas)
				sizes = append(sizes, fmt.Sprintf("%s spec %d status available %d", rs.Name, *rs.Spec.Replicas, rs.Status.AvailableReplicas))
			}
			if asked > maxTotal {
				problems = append(problems, fmt.Sprintf("the ReplicaSets ask for %d pods, more than replicas + maxSurge = %d", asked, maxTotal))
			}
			available := 0
			for _, pod := range pods {
				if podutil.IsPodActive(pod) && podutil.IsPodReady(pod) {
					available++
				}
			}
			// Pods become ready one by one after the Deployment is created; the limit holds
			// from the first moment it is met.
			if available >= minAvailable {
				healthy = true
			} else if healthy {
				problems = append(problems, fmt.Sprintf("%d pods available, fewer than replicas - maxUnavailable = %d", available, minAvailable))
			}
			if len(problems) > 0 {
				sort.Strings(sizes)
				violations = append(violations, fmt.Sprintf("at revision %d: %v (ReplicaSets: %v)", s.revision, problems, sizes))
			}
		})
		t.Logf("replayed %d stored changes of pods and ReplicaSets", steps)
		if steps < 2*replicas {
			t.Errorf("only %d changes of pods and ReplicaSets were recorded; the replay proves nothing", steps)
		}
		if err := joinErrors(violations); err != nil {
			t.Errorf("%d stored states break the rolling update; first ones:\n  %v", len(violations), err)
		}
	}

	e.Deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = newImage })
	if err := e.waitBlocked(name, oldRS.UID, blockOld, blockNew, minAvailable); err != nil {
		// The first manager went past the point where the limits stop the rollout; the
		// replay shows the states that broke them.
		t.Errorf("%s: %v", first.name, err)
		checkLimits("")
		t.FailNow()
	}
	e.waitIdle(out.workloads, first.name)
	handover := e.stop(out)

	before := e.mustRead()
	dep := before.deployments[name]
	newRS := before.newReplicaSet(dep)
	if newRS == nil || newRS.UID == oldRS.UID || len(before.replicaSetsOf(dep)) != 2 ||
		*before.replicaSets[oldRS.UID].Spec.Replicas != blockOld || *newRS.Spec.Replicas != blockNew {
		t.Fatalf("%s did not leave the rollout blocked at %d old and %d new replicas:\n%s", first.name, blockOld, blockNew, before.describe())
	}
	t.Logf("%s stopped with ReplicaSets %s (revision %s, %d replicas) and %s (revision %s, %d replicas)", first.name,
		oldRS.Name, oldRS.Annotations[revisionAnnotation], blockOld, newRS.Name, newRS.Annotations[revisionAnnotation], blockNew)

	in := second.start(e)
	if err := e.idle(in.workloads, second.name); err != nil {
		t.Error(err)
	}
	// Taking over changes nothing while the limits allow no step.
	e.expectUnchanged(before, e.mustRead(), second.name)
	e.expectNoWritesSince(handover, second.name)

	gate.release()
	t.Logf("marked %d held-back pods ready", e.markAllReady())
	final := e.waitSettled("the rollout to finish", map[string]string{name: "2"})

	dep = final.deployments[name]
	rses := final.replicaSetsOf(dep)
	if got := final.newReplicaSet(dep); got == nil || got.UID != newRS.UID || len(rses) != 2 {
		t.Errorf("after the handover the rollout did not finish with %s's ReplicaSet %s (uid %s):\n%s", first.name, newRS.Name, newRS.UID, final.describe())
	}
	for _, rs := range rses {
		want := map[types.UID]string{oldRS.UID: "1", newRS.UID: "2"}[rs.UID]
		if got := rs.Annotations[revisionAnnotation]; got != want {
			t.Errorf("ReplicaSet %s: revision %q, want %q", rs.Name, got, want)
		}
	}

	checkLimits(newRS.UID)

	// The audit log: first created both ReplicaSets, nobody created a third, and second
	// did the rest of the scaling.
	rsCreates := e.writes(func(ev *auditv1.Event) bool {
		return ev.Verb == "create" && ev.ObjectRef.Resource == "replicasets" && succeeded(ev)
	})
	for _, ev := range rsCreates {
		if !fromClient(first.agent, deploymentClient)(&ev) {
			t.Errorf("a ReplicaSet was created by someone else than %s: %s", first.name, describeEvent(&ev))
		}
	}
	if len(rsCreates) != 2 {
		t.Errorf("audit log: %d ReplicaSet creates, want 2", len(rsCreates))
	}
	scaled := e.writes(func(ev *auditv1.Event) bool {
		return fromClient(second.agent, deploymentClient)(ev) && ev.ObjectRef.Resource == "replicasets" &&
			ev.ObjectRef.Subresource == "" && (ev.Verb == "update" || ev.Verb == "patch") && succeeded(ev)
	})
	if len(scaled) == 0 {
		t.Errorf("audit log: %s%s never scaled a ReplicaSet; did %s finish the rollout at all?", second.agent, deploymentClient, second.name)
	}
}

// waitBlocked waits until the rolling update of the Deployment has stopped with the old
// ReplicaSet at oldReplicas and one new one at newReplicas, both with as many pods, and
// `available` pods available. It gives up at once when the old ReplicaSet is asked for
// fewer than oldReplicas: the limits cannot allow that before more new pods are ready.
func (e *env) waitBlocked(name string, oldUID types.UID, oldReplicas, newReplicas int32, available int) error {
	e.t.Helper()
	var s *state
	var last string
	what := fmt.Sprintf("the rollout of %s to stop at %d old and %d new replicas with %d available", name, oldReplicas, newReplicas, available)
	err := framework.WaitFor(e.Ctx, waitTimeout, what, func(ctx context.Context) (bool, error) {
		var err error
		if s, err = e.read(ctx, e.Client); err != nil {
			return false, err
		}
		d := s.deployments[name]
		if d.Status.ObservedGeneration != d.Generation {
			last = "generation not observed"
			return false, nil
		}
		rses := s.replicaSetsOf(d)
		for _, rs := range rses {
			if rs.UID == oldUID && *rs.Spec.Replicas < oldReplicas {
				return false, fmt.Errorf("the old ReplicaSet %s was scaled to %d, below %d", rs.Name, *rs.Spec.Replicas, oldReplicas)
			}
		}
		if len(rses) != 2 {
			last = fmt.Sprintf("%d ReplicaSets", len(rses))
			return false, nil
		}
		for _, rs := range rses {
			want := newReplicas
			if rs.UID == oldUID {
				want = oldReplicas
			}
			if *rs.Spec.Replicas != want || rs.Status.Replicas != want || len(s.podsOf(rs)) != int(want) || rs.Status.ObservedGeneration != rs.Generation {
				last = fmt.Sprintf("ReplicaSet %s: spec %d, status %d, %d pods", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas, len(s.podsOf(rs)))
				return false, nil
			}
		}
		ready := 0
		for _, pod := range s.pods {
			if podutil.IsPodActive(pod) && podutil.IsPodReady(pod) {
				ready++
			}
		}
		last = fmt.Sprintf("%d pods available", ready)
		return ready == available, nil
	})
	if err != nil {
		return fmt.Errorf("%w\nlast: %s\n%s", err, last, s.describe())
	}
	return nil
}
