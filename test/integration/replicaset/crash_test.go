package replicaset

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Scenario 17: a controller killed in the middle of a large scale-up loses its
// expectations; the restarted one must rebuild its view from the API server and create
// exactly the missing pods.
func TestExpectationsAcrossACrash(t *testing.T) {
	const (
		replicas = 2000
		// killAt lies inside the second sync's last batch (pods 756 to 1,000), when the
		// most creates are in flight.
		killAt = 800
	)
	e := setup(t)
	manager := e.startController(t, "")
	rs := e.replicaSets().Create(t, newReplicaSet("rs", replicas))

	// The audit log, not a watch: a watch that falls behind a burst of creates on this
	// small machine is closed by the API server and stops counting.
	err := framework.WaitFor(e.Ctx, waitTimeout, fmt.Sprintf("the scale-up to pass pod %d", killAt), func(context.Context) (bool, error) {
		return countCodes(e.podWrites(t, "create"), http.StatusCreated) >= killAt, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now() // before the kill: the API server may cut requests off at once
	manager.Kill()
	// Creates in flight at the kill may still land; count once the number holds still.
	atRestart := e.waitForStablePodCount(t)
	if atRestart >= replicas {
		t.Fatalf("all %d pods existed when the controller was killed; the scenario needs a crash mid-way", atRestart)
	}
	restartedAt := time.Now()
	manager.Restart()

	e.waitForReplicas(t, rs.Name, replicas)
	e.WaitForNoWrites(t, idlePeriod)
	if pods := e.GetPods(t, nil); len(pods) != replicas {
		t.Errorf("%d pods exist after the restart, want exactly %d", len(pods), replicas)
	}
	if deletes := e.podWrites(t, "delete", "deletecollection"); len(deletes) != 0 {
		t.Errorf("%d pod delete requests were sent, want none (an over-creating controller deletes its surplus)", len(deletes))
	}

	// Every pod comes from exactly one create that took effect. Creates in flight at the
	// kill are answered 504 (their client is gone) although most of them still create
	// their pod, so the audit codes cannot tell how many of those took effect; the pod
	// count at the restart can. (The API server may even receive some of them after the
	// kill, from its socket buffers; it received them all before the restart.)
	var acceptedBefore, inFlight, acceptedAfter int
	for _, c := range e.podWrites(t, "create") {
		switch {
		case c.Received.After(restartedAt) && c.Code == http.StatusCreated:
			acceptedAfter++
		case c.Received.After(restartedAt):
			t.Errorf("a create by the restarted controller answered %d: %s", c.Code, c.Message)
		case c.Code == http.StatusCreated:
			acceptedBefore++
		case c.Completed.After(killedAt):
			inFlight++
		default:
			t.Errorf("a create before the kill answered %d: %s", c.Code, c.Message)
		}
	}
	t.Logf("before the kill: %d creates accepted, %d cut off by it; %d pods at the restart; %d creates after it",
		acceptedBefore, inFlight, atRestart, acceptedAfter)
	if landed := atRestart - acceptedBefore; landed < 0 || landed > inFlight {
		t.Errorf("%d pods at the restart, but %d creates were accepted and %d cut off by the kill", atRestart, acceptedBefore, inFlight)
	}
	if want := replicas - atRestart; acceptedAfter != want {
		t.Errorf("the restarted controller created %d pods, want exactly the %d missing", acceptedAfter, want)
	}
}

// waitForStablePodCount waits until the namespace's pod count has not changed for
// idlePeriod and returns it.
func (e *testEnv) waitForStablePodCount(t *testing.T) int {
	t.Helper()
	count, since := -1, time.Now()
	err := framework.WaitFor(e.Ctx, waitTimeout, "the pod count to hold still", func(ctx context.Context) (bool, error) {
		pods, err := e.ListPods(ctx, nil)
		if err != nil {
			return false, nil
		}
		if len(pods) != count {
			count, since = len(pods), time.Now()
		}
		return time.Since(since) >= idlePeriod, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return count
}
