package deployment

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// historyRevisions parses `kubectl rollout history` output into revision → CHANGE-CAUSE.
func historyRevisions(out string) map[int]string {
	revisions := map[int]string{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		revisions[n] = strings.Join(fields[1:], " ")
	}
	return revisions
}

// Scenario 18: the real kubectl's rollout status, undo, history, pause and resume work
// against what the controller writes.
func TestKubectlRolloutStatusUndoHistoryPause(t *testing.T) {
	e := setup(t, "")
	const name = "test-kubectl-rollout"
	e.startPodReadier(nil)
	deployments := startTracker(e, "Deployments", deploymentsListWatch(e), nil)
	rolledOut := fmt.Sprintf("deployment %q successfully rolled out", name)
	expectRolledOut := func(stage string) {
		t.Helper()
		out := e.mustKubectl("rollout", "status", "deployment/"+name, "--timeout=2m")
		if !strings.Contains(out, rolledOut) {
			t.Errorf("%s: kubectl rollout status printed:\n%s\nwant %q", stage, out, rolledOut)
		}
	}

	d := newDeployment(e.Namespace, name, 2)
	d.Annotations = map[string]string{changeCauseAnnotation: "create v1"}
	e.deployments().Create(e.t, d)
	expectRolledOut("revision 1")
	_, rs1 := e.waitForRevisionAndImage(name, "1", fakeImage)

	e.deployments().Update(e.t, name, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "image-v2"
		d.Annotations[changeCauseAnnotation] = "set image v2"
	})
	expectRolledOut("revision 2")
	_, rs2 := e.waitForRevisionAndImage(name, "2", "image-v2")

	// Undo: back to revision 1's template, by reusing its ReplicaSet as revision 3.
	e.mustKubectl("rollout", "undo", "deployment/"+name)
	expectRolledOut("undo")
	d, rs := e.waitForRevisionAndImage(name, "3", fakeImage)
	if rs.UID != rs1.UID {
		t.Errorf("undo made ReplicaSet %s instead of reusing %s", rs.Name, rs1.Name)
	}
	if got := rs.Annotations[revisionHistoryAnnotation]; got != "1" {
		t.Errorf("reused ReplicaSet revision-history = %q, want 1", got)
	}
	if !sameTemplateIgnoringHash(&d.Spec.Template, &rs1.Spec.Template) {
		t.Errorf("the Deployment's template after undo is not revision 1's:\n%+v\nwant\n%+v", d.Spec.Template, rs1.Spec.Template)
	}
	if got := d.Annotations[changeCauseAnnotation]; got != "create v1" {
		t.Errorf("change-cause after undo = %q, want revision 1's %q", got, "create v1")
	}
	if rses := e.mustReplicaSetsOf(d); len(rses) != 2 {
		t.Errorf("%d ReplicaSets after undo, want 2:\n%s", len(rses), describeReplicaSets(rses))
	}
	if got := *e.ReplicaSets().Get(e.t, rs2.Name).Spec.Replicas; got != 0 {
		t.Errorf("revision 2's ReplicaSet has %d replicas after undo, want 0", got)
	}

	history := historyRevisions(e.mustKubectl("rollout", "history", "deployment/"+name))
	want := map[int]string{2: "set image v2", 3: "create v1"}
	if len(history) != len(want) || history[2] != want[2] || history[3] != want[3] {
		t.Errorf("kubectl rollout history = %v, want %v", history, want)
	}

	// Pause: the condition says so, undo refuses, a template edit waits.
	e.mustKubectl("rollout", "pause", "deployment/"+name)
	d = e.deployments().WaitFor(e.t, name, "paused by kubectl", func(d *appsv1.Deployment) bool {
		return d.Spec.Paused && observed(d) &&
			hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, messagePaused)
	})
	if out, err := e.Kubectl(e.t, "rollout", "undo", "deployment/"+name); err == nil || !strings.Contains(out, "paused") {
		t.Errorf("kubectl rollout undo of a paused Deployment: err %v, output:\n%s\nwant a refusal", err, out)
	}
	e.setImage(name, "image-v4")
	d = e.waitForObserved(name)
	if rses := e.mustReplicaSetsOf(d); len(rses) != 2 {
		t.Errorf("a template edit while paused made a ReplicaSet:\n%s", describeReplicaSets(rses))
	}

	e.mustKubectl("rollout", "resume", "deployment/"+name)
	deployments.WaitSaw(e.Ctx, "Progressing=Unknown/DeploymentResumed", func(d *appsv1.Deployment) bool {
		return hasCondition(d, appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonResumed, messageResumed)
	})
	expectRolledOut("resume")
	d, _ = e.waitForRevisionAndImage(name, "4", "image-v4")
	if d.Spec.Paused {
		t.Errorf("the Deployment is still paused after kubectl rollout resume")
	}
	if rses := e.mustReplicaSetsOf(d); len(rses) != 3 {
		t.Errorf("%d ReplicaSets after the resumed rollout, want 3:\n%s", len(rses), describeReplicaSets(rses))
	}
}
