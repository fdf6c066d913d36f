package containerrecreaterequest

import (
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestManagerTimeouts: with no node agent running, the manager completes requests on its
// own: one never picked up after 60 s with "daemon has not responded for a long time", one
// with activeDeadlineSeconds 5 with the deadline message, one whose pod was deleted with
// "pod has gone"; a completed request loses its active label, and one with
// ttlSecondsAfterFinished 5 is deleted 5 s after its completionTime. The four run side by
// side, so the test takes the 60 s of the longest.
func TestManagerTimeouts(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	node := e.createNode(t, "a", nil)
	for _, name := range []string{"unpicked", "deadline", "deleted", "ttl"} {
		e.createRunningPod(t, newPod(name, node, "app"))
	}
	unpicked := e.requests().Create(t, newCRR("unpicked", "unpicked", "app"))
	e.requests().Create(t, withCRR(newCRR("deadline", "deadline", "app"), activeDeadline(5)))
	e.requests().Create(t, newCRR("deleted", "deleted", "app"))
	e.requests().Create(t, withCRR(newCRR("ttl", "ttl", "app"), activeDeadline(3), ttlAfterFinished(5)))

	t.Run("pod deleted", func(t *testing.T) {
		now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
		if err := e.Client.CoreV1().Pods(e.Namespace).Delete(e.Ctx, "deleted", now); err != nil {
			t.Fatalf("deleting pod deleted: %v", err)
		}
		e.expectCompletedWith(t, "deleted", messagePodGone)
	})
	t.Run("activeDeadlineSeconds", func(t *testing.T) {
		r := e.expectCompletedWith(t, "deadline", messageDeadlineExceeds)
		if elapsed := r.Status.CompletionTime.Sub(r.CreationTimestamp.Time); elapsed < 4*time.Second {
			t.Errorf("completed %v after creation, before its 5 s deadline", elapsed)
		}
	})
	t.Run("ttlSecondsAfterFinished", func(t *testing.T) {
		r := e.waitForCompleted(t, "ttl")
		if r.Status.Message != messageDeadlineExceeds {
			t.Errorf("completed with message %q, want %q", r.Status.Message, messageDeadlineExceeds)
		}
		e.requests().WaitForEvenAbsent(t, "ttl", "the request to be deleted after its ttlSecondsAfterFinished", func(r *crr) bool { return r == nil })
		// completionTime has second precision: the deletion may come up to a second
		// earlier than it seems to.
		if earliest := r.Status.CompletionTime.Add(4 * time.Second); time.Now().Before(earliest) {
			t.Errorf("deleted before %v, 5 s after its completionTime %v", earliest, r.Status.CompletionTime)
		}
	})
	t.Run("never picked up", func(t *testing.T) {
		r := e.expectCompletedWith(t, "unpicked", messageNoResponse)
		if elapsed := r.Status.CompletionTime.Sub(unpicked.CreationTimestamp.Time); elapsed < 59*time.Second {
			t.Errorf("completed %v after creation, before the 60 s response timeout", elapsed)
		}
		if r.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted || len(r.Status.ContainerRecreateStates) != 0 {
			t.Errorf("status = %+v, want Completed with no container states", r.Status)
		}
	})
}

// expectCompletedWith waits until the request is Completed with message and has lost its
// active label, and returns it.
func (e *testEnv) expectCompletedWith(t *testing.T, name, message string) *crr {
	t.Helper()
	r := e.waitForCompleted(t, name)
	if r.Status.Message != message {
		t.Fatalf("request %s completed with message %q, want %q", name, r.Status.Message, message)
	}
	return e.requests().WaitForEvenAbsent(t, name, "the active label to be removed", func(r *crr) bool {
		if r == nil {
			return false
		}
		_, active := r.Labels[activeLabel]
		return !active
	})
}
