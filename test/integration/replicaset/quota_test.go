package replicaset

import (
	"context"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Scenario 15: creates go out in slow-start batches (1, 2, 4, ...) that stop at the first
// failure, and a ReplicaSet blocked by quota costs one rejected create per sync.
func TestBurstAndSlowStart(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	e.createPodQuota(t, 3)
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 0))
	e.waitForReplicas(t, rs.Name, 0)

	e.scaleRS(t, rs.Name, 600)
	failed := e.replicaSets().WaitFor(t, rs.Name, "ReplicaFailure=True/FailedCreate", func(rs *appsv1.ReplicaSet) bool {
		c := replicaFailure(rs)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate"
	})
	if msg := replicaFailure(failed).Message; !strings.Contains(msg, "exceeded quota") {
		t.Errorf("ReplicaFailure message %q does not carry the quota rejection", msg)
	}
	e.WaitForPods(t, "the 3 pods the quota allows", func(pods []corev1.Pod) bool {
		return len(activeControlledBy(pods, rs.UID)) == 3
	})

	// The first sync after the scale-up ends with its status write; later syncs each send
	// one create. Wait until three later syncs have happened.
	var firstSync, later []framework.Request
	err := framework.WaitFor(e.Ctx, waitTimeout, "three syncs after the first", func(context.Context) (bool, error) {
		creates := e.podWrites(t, "create")
		if len(creates) == 0 {
			return false, nil
		}
		statusWrites, err := e.Requests(func(ev *auditv1.Event) bool {
			return ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.Namespace && ev.ObjectRef.Resource == "replicasets" &&
				ev.ObjectRef.Subresource == "status" && (ev.Verb == "update" || ev.Verb == "patch")
		})
		if err != nil {
			return false, err
		}
		firstSync, later = splitAtFirstStatusWrite(creates, statusWrites)
		return len(later) >= 3, nil
	})
	if err != nil {
		t.Fatalf("%v (first sync: %d creates, later: %d)", err, len(firstSync), len(later))
	}

	t.Logf("first sync: %d creates (%d accepted); %d single creates in later syncs",
		len(firstSync), countCodes(firstSync, http.StatusCreated), len(later))
	if len(firstSync) != 7 {
		t.Errorf("the first sync sent %d create requests, want 7 (batches of 1, 2 and 4)", len(firstSync))
	} else {
		batches := [][]framework.Request{firstSync[0:1], firstSync[1:3], firstSync[3:7]}
		for i, batch := range batches {
			if i > 0 && !allAfter(batch, batches[i-1]) {
				t.Errorf("batch %d started before the previous batch had completed", i+1)
			}
			want := int32(http.StatusCreated)
			if i == 2 {
				want = http.StatusForbidden // the quota of 3 is used up by batches 1 and 2
			}
			if n := countCodes(batch, want); n != len(batch) {
				t.Errorf("batch %d: %d of %d creates answered %d: %+v", i+1, n, len(batch), want, batch)
			}
		}
	}
	for i, r := range later {
		if r.Code != http.StatusForbidden {
			t.Errorf("create %d after the first sync answered %d, want 403 (quota)", i+1, r.Code)
		}
		// A sync that sent more than one create would have sent them together (a batch),
		// so each later create must start after the previous one completed.
		if i > 0 && !r.Received.After(later[i-1].Completed) {
			t.Errorf("creates %d and %d after the first sync overlap: more than one create in a sync", i, i+1)
		}
	}
	if events := e.failedCreateEvents(t, rs.Name); len(events) == 0 {
		t.Error("no Warning FailedCreate event on the ReplicaSet")
	} else if !strings.Contains(events[0].Message, "exceeded quota") {
		t.Errorf("FailedCreate event message %q does not carry the quota rejection", events[0].Message)
	}

	e.raisePodQuota(t, 1000)
	e.replicaSets().WaitFor(t, rs.Name, "600 replicas and no ReplicaFailure", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == 600 && replicaFailure(rs) == nil
	})
	e.waitForReplicas(t, rs.Name, 600)
}

// splitAtFirstStatusWrite splits creates (ordered by arrival) into those that arrived
// before the first status write that followed the first create, which ends the first
// sync, and the rest. Without such a status write yet, all creates are the first sync's.
func splitAtFirstStatusWrite(creates, statusWrites []framework.Request) (first, rest []framework.Request) {
	for _, w := range statusWrites {
		if !w.Received.After(creates[0].Received) {
			continue
		}
		for i, c := range creates {
			if c.Received.After(w.Received) {
				return creates[:i], creates[i:]
			}
		}
		return creates, nil
	}
	return creates, nil
}

// allAfter reports whether every request of batch arrived after every request of earlier
// had completed.
func allAfter(batch, earlier []framework.Request) bool {
	for _, b := range batch {
		for _, e := range earlier {
			if !b.Received.After(e.Completed) {
				return false
			}
		}
	}
	return true
}

// Scenario 16 (e2e "should surface a failure condition on a common issue like exceeded
// quota").
func TestQuotaFailureCondition(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	e.createPodQuota(t, 2)
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 3))

	e.replicaSets().WaitFor(t, rs.Name, "ReplicaFailure=True/FailedCreate", func(rs *appsv1.ReplicaSet) bool {
		c := replicaFailure(rs)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate"
	})

	e.scaleRS(t, rs.Name, 2)
	e.replicaSets().WaitFor(t, rs.Name, "the ReplicaFailure condition to be removed", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ObservedGeneration == rs.Generation && replicaFailure(rs) == nil
	})
	e.waitForReplicas(t, rs.Name, 2)
}
