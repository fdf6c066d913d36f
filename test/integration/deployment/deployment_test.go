package deployment

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/hash"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Scenario 1: a new Deployment gets one ReplicaSet named and labelled after its template
// hash, with the copied and the controller's own annotations, and completes.
func TestNewDeployment(t *testing.T) {
	e := setup(t, "")
	const name = "test-new-deployment"
	deployments := startTracker(e, "Deployments", deploymentsListWatch(e), nil)

	d := newDeployment(e.Namespace, name, 20)
	d.Spec.MinReadySeconds = 4
	d.Annotations = map[string]string{
		"test":                "should-copy-to-replica-set",
		lastAppliedAnnotation: "should-not-copy-to-replica-set",
	}
	d = e.deployments().Create(e.t, d)

	rs := e.waitForReplicaSets(d, "one ReplicaSet with 20 pods", func(rses []*appsv1.ReplicaSet) bool {
		return len(rses) == 1 && rses[0].Status.Replicas == 20
	})[0]
	podHash := rs.Labels[podTemplateHashLabel]
	if podHash == "" {
		t.Fatalf("ReplicaSet %s has no %s label: %v", rs.Name, podTemplateHashLabel, rs.Labels)
	}
	if want := hash.ComputeHash(&d.Spec.Template, d.Status.CollisionCount); podHash != want {
		t.Errorf("%s = %q, want ComputeHash(template, nil) = %q", podTemplateHashLabel, podHash, want)
	}
	if want := name + "-" + podHash; rs.Name != want {
		t.Errorf("ReplicaSet name = %q, want %q", rs.Name, want)
	}
	if got := rs.Spec.Selector.MatchLabels[podTemplateHashLabel]; got != podHash {
		t.Errorf("ReplicaSet selector %s = %q, want %q", podTemplateHashLabel, got, podHash)
	}
	if got := rs.Spec.Template.Labels[podTemplateHashLabel]; got != podHash {
		t.Errorf("ReplicaSet template label %s = %q, want %q", podTemplateHashLabel, got, podHash)
	}
	if rs.Spec.MinReadySeconds != 4 {
		t.Errorf("ReplicaSet minReadySeconds = %d, want 4", rs.Spec.MinReadySeconds)
	}
	ref := metav1.GetControllerOf(rs)
	if ref == nil || ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != name || ref.UID != d.UID ||
		!ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("ReplicaSet controller ref = %+v, want apps/v1 Deployment %s %s with blockOwnerDeletion", ref, name, d.UID)
	}
	for key, want := range map[string]string{
		revisionAnnotation:        "1",
		desiredReplicasAnnotation: "20",
		maxReplicasAnnotation:     "25",
		"test":                    "should-copy-to-replica-set",
	} {
		if got, ok := rs.Annotations[key]; !ok || got != want {
			t.Errorf("ReplicaSet annotation %s = %q (present %v), want %q", key, got, ok, want)
		}
	}
	if _, ok := rs.Annotations[lastAppliedAnnotation]; ok {
		t.Errorf("ReplicaSet has the %s annotation; it must not be copied", lastAppliedAnnotation)
	}
	e.deployments().WaitFor(e.t, name, `revision annotation "1"`, func(d *appsv1.Deployment) bool {
		return d.Annotations[revisionAnnotation] == "1"
	})

	pods := e.GetPods(e.t, nil)
	if len(pods) != 20 {
		t.Errorf("%d pods, want 20", len(pods))
	}
	for _, pod := range pods {
		if got := pod.Labels[podTemplateHashLabel]; got != podHash {
			t.Errorf("pod %s has %s=%q, want %q", pod.Name, podTemplateHashLabel, got, podHash)
		}
		if ref := metav1.GetControllerOf(&pod); ref == nil || ref.UID != rs.UID {
			t.Errorf("pod %s is not controlled by ReplicaSet %s: %v", pod.Name, rs.Name, pod.OwnerReferences)
		}
	}

	e.startPodReadier(nil)
	d, _ = e.waitForComplete(name)
	e.expectCondition(d, appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSAvailable,
		fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name))
	e.expectCondition(d, appsv1.DeploymentAvailable, corev1.ConditionTrue, reasonMinimumAvailable, messageMinimumAvailable)
	created := fmt.Sprintf("Created new replica set %q", rs.Name)
	if !deployments.Saw(func(d *appsv1.Deployment) bool {
		return hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSCreated, created)
	}) {
		t.Errorf("no Deployment status with Progressing=True/%s %q was observed", reasonNewRSCreated, created)
	}
	e.waitForEvent(name, corev1.EventTypeNormal, eventScalingReplicaSet, fmt.Sprintf("Scaled up replica set %s from 0 to 20", rs.Name))
}

// Scenario 2: rolling updates never exceed replicas + maxSurge pods nor drop below
// replicas − maxUnavailable available ones; a rollout replaced before it finished (rollover)
// leaves every older ReplicaSet at 0.
func TestDeploymentRollingUpdate(t *testing.T) {
	e := setup(t, "")
	const name = "test-rolling-update-deployment"
	e.startPodReadier(exceptImages("dont-finish"))

	d := newDeployment(e.Namespace, name, 20)
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge:       ptr.To(intstr.FromString("25%")),
			MaxUnavailable: ptr.To(intstr.FromString("25%")),
		},
	}
	e.deployments().Create(e.t, d)
	e.waitForRevisionAndImage(name, "1", fakeImage)
	d, firstRS := e.waitForComplete(name)
	maxTotal, minAvailable := rollingLimits(t, d)
	if maxTotal != 25 || minAvailable != 15 {
		t.Fatalf("limits for 20 replicas at 25%%/25%% = (%d, %d), want (25, 15)", maxTotal, minAvailable)
	}

	// From the healthy state on, every stored state of pods and ReplicaSets is checked.
	monitor := startRolloutMonitor(e, maxTotal, minAvailable)
	deployments := startTracker(e, "Deployments", deploymentsListWatch(e), nil)

	e.setImage(name, "new-image")
	_, secondRS := e.waitForRevisionAndImage(name, "2", "new-image")
	e.waitForComplete(name)
	progressing := fmt.Sprintf("ReplicaSet %q is progressing.", secondRS.Name)
	if !deployments.Saw(func(d *appsv1.Deployment) bool {
		return hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonRSUpdated, progressing)
	}) {
		t.Errorf("no Deployment status with Progressing=True/%s %q was observed during the rollout", reasonRSUpdated, progressing)
	}
	// How far each step goes depends on how quickly pods become ready; the first steps'
	// messages follow from the rolling-update arithmetic: the new ReplicaSet starts at maxSurge, the old one goes
	// down from 20.
	e.waitForEvent(name, corev1.EventTypeNormal, eventScalingReplicaSet, fmt.Sprintf("Scaled up replica set %s from 0 to 5", secondRS.Name))
	scaledDownFrom20 := regexp.MustCompile("^Scaled down replica set " + regexp.QuoteMeta(firstRS.Name) + " from 20 to [0-9]+$")
	e.waitForEventMatching(name, corev1.EventTypeNormal, eventScalingReplicaSet, scaledDownFrom20.String(), scaledDownFrom20.MatchString)

	// A rollout whose pods never become ready, replaced right away by another one.
	e.setImage(name, "dont-finish")
	e.waitForRevisionAndImage(name, "3", "dont-finish")
	e.setImage(name, "rollover")
	e.waitForRevisionAndImage(name, "4", "rollover")
	d, newRS := e.waitForComplete(name)

	monitor.Check(60)

	all := e.mustReplicaSetsOf(d)
	if len(all) != 4 {
		t.Errorf("%d ReplicaSets, want 4 (one per revision):\n%s", len(all), describeReplicaSets(all))
	}
	for _, rs := range all {
		if rs.UID != newRS.UID && *rs.Spec.Replicas != 0 {
			t.Errorf("old ReplicaSet %s (image %s) has %d replicas after the rollover, want 0",
				rs.Name, rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas)
		}
	}
}

// Scenario 3: the apps/v1 API server refuses to change a Deployment's selector.
func TestDeploymentSelectorImmutability(t *testing.T) {
	e := setupWithoutControllers(t)
	const name = "test-deployment-selector"
	d := e.deployments().Create(e.t, newDeployment(e.Namespace, name, 1))

	changed := d.DeepCopy()
	changed.Spec.Selector.MatchLabels["version"] = "2"
	changed.Spec.Template.Labels["version"] = "2"
	_, err := e.Client.AppsV1().Deployments(e.Namespace).Update(e.Ctx, changed, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("changing the selector: err = %v, want Invalid", err)
	}
	var onSelector bool
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			onSelector = onSelector || (cause.Field == "spec.selector" && strings.Contains(cause.Message, "field is immutable"))
		}
	}
	if !onSelector {
		t.Errorf("the error does not say spec.selector is immutable: %v", err)
	}

	live := e.deployments().Get(e.t, name)
	if live.Generation != d.Generation || len(live.Spec.Selector.MatchLabels) != 1 || live.Spec.Selector.MatchLabels["name"] != name {
		t.Errorf("the stored Deployment changed: generation %d -> %d, selector %v", d.Generation, live.Generation, live.Spec.Selector)
	}
}

// Scenario 4: a paused Deployment creates nothing; resumed it rolls out; a template edit
// while paused waits for the resume.
func TestPausedDeployment(t *testing.T) {
	e := setup(t, "")
	const name = "test-paused-deployment"
	e.startPodReadier(nil)
	deployments := startTracker(e, "Deployments", deploymentsListWatch(e), nil)
	pausedObserved := func(d *appsv1.Deployment) bool {
		return d.Spec.Paused && observed(d) &&
			hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, messagePaused)
	}

	d := newDeployment(e.Namespace, name, 1)
	d.Spec.Paused = true
	e.deployments().Create(e.t, d)
	e.deployments().WaitFor(e.t, name, "Progressing=Unknown/DeploymentPaused", pausedObserved)
	if rses, err := e.allReplicaSets(e.Ctx); err != nil || len(rses) != 0 {
		t.Fatalf("a Deployment paused at creation made ReplicaSets (err %v):\n%s", err, describeReplicaSets(rses))
	}

	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.Paused = false })
	deployments.WaitSaw(e.Ctx, "Progressing=Unknown/DeploymentResumed after resume", func(d *appsv1.Deployment) bool {
		return hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonResumed, messageResumed)
	})
	e.waitForRevisionAndImage(name, "1", fakeImage)
	_, firstRS := e.waitForComplete(name)

	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	e.deployments().WaitFor(e.t, name, "paused again", pausedObserved)
	e.setImage(name, "new-image")
	d = e.deployments().WaitFor(e.t, name, "the template edit observed while paused", pausedObserved)
	if rses := e.mustReplicaSetsOf(d); len(rses) != 1 || rses[0].UID != firstRS.UID {
		t.Fatalf("a template edit of a paused Deployment changed its ReplicaSets:\n%s", describeReplicaSets(rses))
	}
	if got := d.Annotations[revisionAnnotation]; got != "1" {
		t.Errorf("revision while paused = %q, want 1", got)
	}

	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.Paused = false })
	_, secondRS := e.waitForRevisionAndImage(name, "2", "new-image")
	d, _ = e.waitForComplete(name)
	if secondRS.UID == firstRS.UID {
		t.Errorf("the resumed rollout reused ReplicaSet %s", firstRS.Name)
	}
	if old := e.ReplicaSets().Get(e.t, firstRS.Name); *old.Spec.Replicas != 0 {
		t.Errorf("old ReplicaSet %s has %d replicas after the rollout, want 0", old.Name, *old.Spec.Replicas)
	}
}

// Scenario 5: scaling a paused Deployment scales its ReplicaSet and creates none.
func TestScalePausedDeployment(t *testing.T) {
	e := setup(t, "")
	const name = "test-scale-paused-deployment"
	e.startPodReadier(nil)
	e.deployments().Create(e.t, newDeployment(e.Namespace, name, 2))
	_, rs := e.waitForComplete(name)

	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.Paused = true })
	e.deployments().WaitFor(e.t, name, "paused", func(d *appsv1.Deployment) bool {
		return observed(d) && hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, messagePaused)
	})
	e.scaleDeployment(name, 3)
	d := e.deployments().WaitFor(e.t, name, "3 available replicas while paused", func(d *appsv1.Deployment) bool {
		s := d.Status
		return observed(d) && s.Replicas == 3 && s.UpdatedReplicas == 3 && s.AvailableReplicas == 3
	})
	rses := e.mustReplicaSetsOf(d)
	if len(rses) != 1 || rses[0].UID != rs.UID {
		t.Fatalf("scaling a paused Deployment changed its ReplicaSets:\n%s", describeReplicaSets(rses))
	}
	got := rses[0]
	if *got.Spec.Replicas != 3 || got.Annotations[desiredReplicasAnnotation] != "3" || got.Annotations[maxReplicasAnnotation] != "4" {
		t.Errorf("ReplicaSet after scaling to 3: replicas %d, annotations %v; want 3, desired-replicas 3, max-replicas 4",
			*got.Spec.Replicas, got.Annotations)
	}
	e.expectCondition(d, appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, messagePaused)
}

// Scenario 6: when the ReplicaSet named after the template hash no longer has the
// template, the controller counts a collision and uses the next hash.
func TestDeploymentHashCollision(t *testing.T) {
	e := setup(t, "")
	const name = "test-hash-collision"
	e.startPodReadier(nil)
	e.deployments().Create(e.t, newDeployment(e.Namespace, name, 1))
	_, oldRS := e.waitForComplete(name)
	oldHash := oldRS.Labels[podTemplateHashLabel]

	// The ReplicaSet keeps its name, which the Deployment's template hash still gives, but
	// no longer has the Deployment's template.
	e.ReplicaSets().Update(e.t, oldRS.Name, func(rs *appsv1.ReplicaSet) {
		rs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	})
	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations["bosun.dev/touched"] = "after-the-replicaset-edit"
	})

	d := e.deployments().WaitFor(e.t, name, "collisionCount 1", func(d *appsv1.Deployment) bool {
		return d.Status.CollisionCount != nil && *d.Status.CollisionCount == 1
	})
	_, newRS := e.waitForRevisionAndImage(name, "2", fakeImage)
	newHash := newRS.Labels[podTemplateHashLabel]
	if newHash == oldHash {
		t.Errorf("the new ReplicaSet has the colliding hash %q", newHash)
	}
	if want := hash.ComputeHash(&d.Spec.Template, ptr.To[int32](1)); newHash != want {
		t.Errorf("new hash = %q, want ComputeHash(template, 1) = %q", newHash, want)
	}
	if want := name + "-" + newHash; newRS.Name != want {
		t.Errorf("new ReplicaSet name = %q, want %q", newRS.Name, want)
	}
	d, _ = e.waitForComplete(name)
	if got := d.Status.CollisionCount; got == nil || *got != 1 {
		t.Errorf("collisionCount after the rollout = %s, want 1", int32PtrString(got))
	}
	if got := e.ReplicaSets().Get(e.t, oldRS.Name).Annotations[revisionAnnotation]; got != "1" {
		t.Errorf("edited ReplicaSet revision = %q, want 1", got)
	}
}

// Scenario 7: a rollout that makes no progress within progressDeadlineSeconds is marked
// failed, and complete once its pods become ready.
func TestFailedDeployment(t *testing.T) {
	e := setup(t, "")
	const name = "test-failed-deployment"
	d := newDeployment(e.Namespace, name, 1)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
	e.deployments().Create(e.t, d)
	_, rs := e.waitForRevisionAndImage(name, "1", fakeImage)

	timedOut := fmt.Sprintf("ReplicaSet %q has timed out progressing.", rs.Name)
	e.deployments().WaitFor(e.t, name, "Progressing=False/ProgressDeadlineExceeded", func(d *appsv1.Deployment) bool {
		return hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonProgressDeadline, timedOut)
	})
	out, err := e.Kubectl(e.t, "rollout", "status", "deployment/"+name, "--timeout=60s")
	if err == nil || !strings.Contains(out, fmt.Sprintf("deployment %q exceeded its progress deadline", name)) {
		t.Errorf("kubectl rollout status of a failed rollout: err %v, output:\n%s", err, out)
	}

	e.startPodReadier(nil)
	d, _ = e.waitForComplete(name)
	e.expectCondition(d, appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSAvailable,
		fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name))
}

// Scenario 8: Deployments with overlapping selectors each own only their ReplicaSet.
func TestOverlappingDeployments(t *testing.T) {
	e := setup(t, "")
	e.startPodReadier(nil)
	shared := map[string]string{"app": "overlapping"}
	names := []string{"first-deployment", "second-deployment"}
	deployments := map[string]*appsv1.Deployment{}
	for _, name := range names {
		d := newDeployment(e.Namespace, name, 1)
		d.Spec.Selector.MatchLabels = copyLabels(shared)
		d.Spec.Template.Labels = copyLabels(shared)
		deployments[name] = e.deployments().Create(e.t, d)
	}

	owned := map[string]*appsv1.ReplicaSet{}
	for _, name := range names {
		_, rs := e.waitForComplete(name)
		owned[name] = rs
	}
	checkOwnership := func(stage string) {
		t.Helper()
		all, err := e.allReplicaSets(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(names) {
			t.Errorf("%s: %d ReplicaSets, want one per Deployment:\n%s", stage, len(all), describeReplicaSets(all))
		}
		for _, name := range names {
			rses := e.mustReplicaSetsOf(deployments[name])
			if len(rses) != 1 || rses[0].UID != owned[name].UID {
				t.Errorf("%s: Deployment %s controls:\n%s want only %s", stage, name, describeReplicaSets(rses), owned[name].Name)
			}
		}
		for _, pod := range e.GetPods(e.t, nil) {
			ref := metav1.GetControllerOf(&pod)
			if ref == nil || (ref.UID != owned[names[0]].UID && ref.UID != owned[names[1]].UID) {
				t.Errorf("%s: pod %s is not controlled by either ReplicaSet: %v", stage, pod.Name, pod.OwnerReferences)
			}
		}
	}
	checkOwnership("after creation")

	e.scaleDeployment(names[0], 2)
	e.waitForComplete(names[0])
	checkOwnership("after scaling the first")
	if got := *e.ReplicaSets().Get(e.t, owned[names[0]].Name).Spec.Replicas; got != 2 {
		t.Errorf("first ReplicaSet has %d replicas, want 2", got)
	}
	if got := *e.ReplicaSets().Get(e.t, owned[names[1]].Name).Spec.Replicas; got != 1 {
		t.Errorf("second ReplicaSet has %d replicas, want 1 (only the first Deployment was scaled)", got)
	}
}

// Scenario 9: rollouts interleaved with scaling up and down keep minimum availability,
// and every ReplicaSet scaled along ends with the final replicas in desired-replicas.
func TestScaledRolloutDeployment(t *testing.T) {
	e := setup(t, "")
	const name = "test-scaled-rollout-deployment"
	// Pods of the blocked rollouts are never ready.
	e.startPodReadier(exceptImages("fakeimage2", "fakeimage4"))

	d := newDeployment(e.Namespace, name, 10)
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
		MaxSurge:       ptr.To(intstr.FromInt32(3)),
		MaxUnavailable: ptr.To(intstr.FromInt32(2)),
	}
	e.deployments().Create(e.t, d)
	e.waitForRevisionAndImage(name, "1", fakeImage)
	d, firstRS := e.waitForComplete(name)

	// A blocked rollout at 10 replicas: at most 13 pods, at least 8 available.
	maxTotal, minAvailable := rollingLimits(t, d)
	monitor := startRolloutMonitor(e, maxTotal, minAvailable)
	e.setImage(name, "fakeimage2")
	_, secondRS := e.waitForRevisionAndImage(name, "2", "fakeimage2")
	e.waitForStuckRollout(d, maxTotal, minAvailable)
	monitor.Check(5)
	if d = e.waitForObserved(name); d.Status.AvailableReplicas < int32(minAvailable) {
		t.Errorf("blocked rollout: %d available replicas, want at least %d", d.Status.AvailableReplicas, minAvailable)
	}
	if got := e.ReplicaSets().Get(e.t, firstRS.Name).Annotations[desiredReplicasAnnotation]; got != "10" {
		t.Errorf("first ReplicaSet desired-replicas = %q during the blocked rollout, want 10", got)
	}

	// Scale up and roll out at once; this rollout completes.
	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](20)
		d.Spec.Template.Spec.Containers[0].Image = "fakeimage3"
	})
	e.waitForRevisionAndImage(name, "3", "fakeimage3")
	d, thirdRS := e.waitForComplete(name)
	e.expectDesiredReplicas("20", firstRS, secondRS, thirdRS)

	// A blocked rollout at 20 replicas: at most 23 pods, at least 18 available.
	maxTotal, minAvailable = rollingLimits(t, d)
	monitor = startRolloutMonitor(e, maxTotal, minAvailable)
	e.setImage(name, "fakeimage4")
	_, fourthRS := e.waitForRevisionAndImage(name, "4", "fakeimage4")
	e.waitForStuckRollout(d, maxTotal, minAvailable)
	monitor.Check(5)
	if d = e.waitForObserved(name); d.Status.AvailableReplicas < int32(minAvailable) {
		t.Errorf("blocked rollout: %d available replicas, want at least %d", d.Status.AvailableReplicas, minAvailable)
	}

	// Scale down and roll out at once.
	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](5)
		d.Spec.Template.Spec.Containers[0].Image = "fakeimage5"
	})
	e.waitForRevisionAndImage(name, "5", "fakeimage5")
	d, fifthRS := e.waitForComplete(name)
	e.expectDesiredReplicas("5", thirdRS, fourthRS, fifthRS)
	for _, rs := range e.mustReplicaSetsOf(d) {
		if rs.UID != fifthRS.UID && *rs.Spec.Replicas != 0 {
			t.Errorf("old ReplicaSet %s has %d replicas after the last rollout, want 0", rs.Name, *rs.Spec.Replicas)
		}
	}
}

// expectDesiredReplicas checks the desired-replicas annotation of the live ReplicaSets.
func (e *testEnv) expectDesiredReplicas(want string, rses ...*appsv1.ReplicaSet) {
	e.t.Helper()
	for _, rs := range rses {
		live := e.ReplicaSets().Get(e.t, rs.Name)
		if got := live.Annotations[desiredReplicasAnnotation]; got != want {
			e.t.Errorf("ReplicaSet %s (image %s) desired-replicas = %q, want %q",
				live.Name, live.Spec.Template.Spec.Containers[0].Image, got, want)
		}
	}
}

// Scenario 10: replicas changes, annotation changes and other spec changes are all
// reflected in observedGeneration.
func TestSpecReplicasChange(t *testing.T) {
	e := setup(t, "")
	const name = "test-spec-replicas-change"
	e.startPodReadier(nil)
	e.deployments().Create(e.t, newDeployment(e.Namespace, name, 1))
	_, rs := e.waitForComplete(name)

	for _, replicas := range []int32{2, 1} {
		updated := e.scaleDeployment(name, replicas)
		d, _ := e.waitForComplete(name)
		if d.Status.ObservedGeneration < updated.Generation {
			t.Errorf("after scaling to %d: observedGeneration %d < generation %d", replicas, d.Status.ObservedGeneration, updated.Generation)
		}
	}

	// An annotation-only change: the API server bumps generation for Deployment
	// annotations too (they are copied onto ReplicaSets); the controller copies the
	// annotation onto its ReplicaSet and observes the new generation.
	before := e.deployments().Get(e.t, name)
	annotated := e.deployments().Update(e.t, name, func(d *appsv1.Deployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations["test-annotation"] = "changed"
	})
	if annotated.Generation <= before.Generation {
		t.Fatalf("an annotation change did not move generation (%d)", annotated.Generation)
	}
	e.waitForReplicaSets(annotated, "the annotation copied onto the ReplicaSet", func(rses []*appsv1.ReplicaSet) bool {
		return len(rses) == 1 && rses[0].UID == rs.UID && rses[0].Annotations["test-annotation"] == "changed"
	})
	if d := e.waitForObserved(name); d.Status.ObservedGeneration != annotated.Generation {
		t.Errorf("observedGeneration = %d, want %d", d.Status.ObservedGeneration, annotated.Generation)
	}

	// A spec change that is neither replicas nor template.
	limited := e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To[int32](4) })
	if limited.Generation <= annotated.Generation {
		t.Fatalf("changing revisionHistoryLimit did not move generation (%d)", limited.Generation)
	}
	if d := e.waitForObserved(name); d.Status.ObservedGeneration != limited.Generation {
		t.Errorf("observedGeneration = %d, want %d", d.Status.ObservedGeneration, limited.Generation)
	}
}

// replicaCounts is the (replicas, updated, ready, available, unavailable) tuple of a status.
type replicaCounts struct{ replicas, updated, ready, available, unavailable int32 }

func countsOf(d *appsv1.Deployment) replicaCounts {
	s := d.Status
	return replicaCounts{s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas}
}

// Scenario 11: Available follows minReadySeconds: ready pods are not available until they
// have been ready that long.
func TestDeploymentAvailableCondition(t *testing.T) {
	e := setup(t, "")
	const name = "test-available-condition"
	d := newDeployment(e.Namespace, name, 10)
	d.Spec.MinReadySeconds = 3600
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](7200) // must exceed minReadySeconds
	e.deployments().Create(e.t, d)

	steps := []struct {
		what   string
		act    func()
		want   replicaCounts
		status corev1.ConditionStatus
		reason string
		msg    string
	}{{
		what:   "pods not ready",
		act:    func() {},
		want:   replicaCounts{10, 10, 0, 0, 10},
		status: corev1.ConditionFalse, reason: reasonMinimumUnavailable, msg: messageMinimumUnavailable,
	}, {
		what:   "pods ready for less than minReadySeconds",
		act:    func() { e.markPodsReady(nil) },
		want:   replicaCounts{10, 10, 10, 0, 10},
		status: corev1.ConditionFalse, reason: reasonMinimumUnavailable, msg: messageMinimumUnavailable,
	}, {
		what:   "minReadySeconds lowered to 1",
		act:    func() { e.deployments().Update(e.t, name, func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 1 }) },
		want:   replicaCounts{10, 10, 10, 10, 0},
		status: corev1.ConditionTrue, reason: reasonMinimumAvailable, msg: messageMinimumAvailable,
	}}
	for _, step := range steps {
		step.act()
		d = e.deployments().WaitFor(e.t, name, fmt.Sprintf("%s: counts %+v", step.what, step.want), func(d *appsv1.Deployment) bool {
			return observed(d) && countsOf(d) == step.want
		})
		e.expectCondition(d, appsv1.DeploymentAvailable, step.status, step.reason, step.msg)
	}
	if got := d.Status.TerminatingReplicas; got == nil || *got != 0 {
		t.Errorf("terminatingReplicas = %s, want 0 (feature gate on by default)", int32PtrString(got))
	}
}

// Scenario 12: a ReplicaSet whose only references to the Deployment (or to anything) are
// not controller references is adopted as a controlled child.
func TestGeneralReplicaSetAdoption(t *testing.T) {
	e := setup(t, "")
	const name = "test-adopt-deployment"
	d := e.deployments().Create(e.t, newDeployment(e.Namespace, name, 1))
	rs := e.waitForReplicaSets(d, "one ReplicaSet", func(rses []*appsv1.ReplicaSet) bool { return len(rses) == 1 })[0]

	cm, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Create(e.Ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	toDeployment := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID}
	toConfigMap := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}
	notController := toDeployment
	notController.Controller = ptr.To(false)

	cases := []struct {
		what string
		refs []metav1.OwnerReference
		keep *metav1.OwnerReference
	}{
		{what: "a reference to the Deployment without controller", refs: []metav1.OwnerReference{toDeployment}},
		{what: "a reference to the Deployment with controller false", refs: []metav1.OwnerReference{notController}},
		{what: "a reference to a ConfigMap", refs: []metav1.OwnerReference{toConfigMap}, keep: &toConfigMap},
	}
	for _, c := range cases {
		e.ReplicaSets().Update(e.t, rs.Name, func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = c.refs })
		var last *appsv1.ReplicaSet
		err := framework.WaitFor(e.Ctx, waitTimeout, "adoption of a ReplicaSet with "+c.what, func(ctx context.Context) (bool, error) {
			got, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = got
			ref := metav1.GetControllerOf(got)
			return ref != nil && ref.UID == d.UID, nil
		})
		if err != nil {
			t.Fatalf("%v: ownerReferences %+v", err, last.OwnerReferences)
		}
		var toD int
		var kept bool
		for _, ref := range last.OwnerReferences {
			if ref.UID == d.UID {
				toD++
				if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != name ||
					!ptr.Deref(ref.Controller, false) || !ptr.Deref(ref.BlockOwnerDeletion, false) {
					t.Errorf("%s: adopted reference %+v, want apps/v1 Deployment %s, controller and blockOwnerDeletion", c.what, ref, name)
				}
			}
			if c.keep != nil && ref.UID == c.keep.UID {
				kept = true
			}
		}
		if toD != 1 {
			t.Errorf("%s: %d references to the Deployment, want 1: %+v", c.what, toD, last.OwnerReferences)
		}
		if c.keep != nil && !kept {
			t.Errorf("%s: adoption dropped the other owner: %+v", c.what, last.OwnerReferences)
		}
	}

	d = e.waitForObserved(name)
	if all, err := e.allReplicaSets(e.Ctx); err != nil || len(all) != 1 {
		t.Errorf("want the one adopted ReplicaSet, got (err %v):\n%s", err, describeReplicaSets(all))
	}
	if d.Status.CollisionCount != nil {
		t.Errorf("collisionCount = %d after adoptions, want none", *d.Status.CollisionCount)
	}
}

// Scenario 13: the /scale subresource reads and writes replicas, and the ReplicaSet follows.
func TestDeploymentScaleSubresource(t *testing.T) {
	e := setup(t, "")
	const name = "test-scale-subresource"
	e.startPodReadier(nil)
	e.deployments().Create(e.t, newDeployment(e.Namespace, name, 2))
	d, _ := e.waitForComplete(name)
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}

	scale, err := e.Client.AppsV1().Deployments(e.Namespace).GetScale(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting /scale: %v", err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != selector.String() {
		t.Errorf("/scale = spec %d, status %d, selector %q; want 2, 2, %q", scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, selector.String())
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := e.Client.AppsV1().Deployments(e.Namespace).GetScale(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 3
		_, err = e.Client.AppsV1().Deployments(e.Namespace).UpdateScale(e.Ctx, name, scale, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing /scale: %v", err)
	}
	d, rs := e.waitForComplete(name)
	if *d.Spec.Replicas != 3 || *rs.Spec.Replicas != 3 {
		t.Errorf("after /scale to 3: Deployment replicas %d, ReplicaSet replicas %d", *d.Spec.Replicas, *rs.Spec.Replicas)
	}
	scale, err = e.Client.AppsV1().Deployments(e.Namespace).GetScale(e.Ctx, name, metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 {
		t.Errorf("/scale after scaling: %+v, err %v; want spec and status 3", scale, err)
	}
}

// Scenario 14: a ReplicaSet relabelled out of the selector is released; the replacement
// collides with its name and takes the next hash; relabelled back it is adopted again.
func TestReplicaSetOrphaningAndAdoptionWhenLabelsChange(t *testing.T) {
	e := setup(t, "")
	const name = "test-orphan-adopt"
	e.startPodReadier(nil)
	e.deployments().Create(e.t, newDeployment(e.Namespace, name, 1))
	d, rs := e.waitForComplete(name)
	originalLabels := copyLabels(rs.Labels)

	e.ReplicaSets().Update(e.t, rs.Name, func(rs *appsv1.ReplicaSet) { rs.Labels = map[string]string{"new-name": "new-test"} })
	err := framework.WaitFor(e.Ctx, waitTimeout, "the relabelled ReplicaSet to be released", func(ctx context.Context) (bool, error) {
		got, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(got) == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}

	rses := e.waitForReplicaSets(d, "a replacement ReplicaSet", func(rses []*appsv1.ReplicaSet) bool {
		n := newReplicaSetAmong(d, rses)
		return n != nil && n.UID != rs.UID
	})
	newRS := newReplicaSetAmong(d, rses)
	d = e.deployments().WaitFor(e.t, name, "collisionCount 1", func(d *appsv1.Deployment) bool {
		return d.Status.CollisionCount != nil && *d.Status.CollisionCount == 1
	})
	newHash := newRS.Labels[podTemplateHashLabel]
	if newHash == originalLabels[podTemplateHashLabel] {
		t.Errorf("the replacement ReplicaSet has the released one's hash %q", newHash)
	}
	if want := hash.ComputeHash(&d.Spec.Template, ptr.To[int32](1)); newHash != want {
		t.Errorf("replacement hash = %q, want ComputeHash(template, 1) = %q", newHash, want)
	}
	if want := name + "-" + newHash; newRS.Name != want {
		t.Errorf("replacement name = %q, want %q", newRS.Name, want)
	}

	e.ReplicaSets().Update(e.t, rs.Name, func(rs *appsv1.ReplicaSet) { rs.Labels = copyLabels(originalLabels) })
	err = framework.WaitFor(e.Ctx, waitTimeout, "the relabelled-back ReplicaSet to be adopted", func(ctx context.Context) (bool, error) {
		got, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		return err == nil && metav1.IsControlledBy(got, d), err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.waitForComplete(name)
}
