package deployment

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// progressingCondition returns a Progressing condition last updated at updated.
func progressingCondition(status corev1.ConditionStatus, reason string, updated time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, Message: "before",
		LastUpdateTime: metav1.NewTime(updated), LastTransitionTime: metav1.NewTime(updated.Add(-time.Hour)),
	}
}

func TestWriteRolloutStatusProgressing(t *testing.T) {
	base := newDeployment("web", 3)
	newRS := newReplicaSet(base, base.Spec.Template, "1", testNow, 3, 1)
	longAgo := testNow.Add(-20 * time.Minute)
	recently := testNow.Add(-time.Minute)

	tests := []struct {
		name string
		// status is the Deployment's current status (before this sync).
		status     appsv1.DeploymentStatus
		noDeadline bool
		noNewRS    bool
		rsReady    int32 // new RS status replicas = ready = available
		want       *appsv1.DeploymentCondition
	}{
		{
			name:    "complete",
			status:  appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, recently)}},
			rsReady: 3,
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: deploymentutil.ReasonNewReplicaSetAvailable,
				Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name), LastUpdateTime: metav1.NewTime(testNow)},
		},
		{
			name: "progress refreshes lastUpdateTime and keeps a True transition time",
			status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, longAgo)}},
			rsReady: 2,
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: deploymentutil.ReasonReplicaSetUpdated,
				Message:        fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name),
				LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(longAgo.Add(-time.Hour))},
		},
		{
			name: "no progress past the deadline times out",
			status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, longAgo)}},
			rsReady: 1,
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionFalse, Reason: deploymentutil.ReasonProgressDeadlineExceeded,
				Message: fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name), LastUpdateTime: metav1.NewTime(testNow)},
		},
		{
			name: "timing out without a new RS names the Deployment",
			status: appsv1.DeploymentStatus{
				Conditions: []appsv1.DeploymentCondition{progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, longAgo)}},
			noNewRS: true,
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionFalse, Reason: deploymentutil.ReasonProgressDeadlineExceeded,
				Message: `Deployment "web" has timed out progressing.`, LastUpdateTime: metav1.NewTime(testNow)},
		},
		{
			name: "no progress within the deadline leaves the condition alone",
			status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, recently)}},
			rsReady: 1,
			want: &appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: deploymentutil.ReasonReplicaSetUpdated,
				Message: "before", LastUpdateTime: metav1.NewTime(recently)},
		},
		{
			name: "without a deadline Progressing is removed",
			status: appsv1.DeploymentStatus{
				Conditions: []appsv1.DeploymentCondition{progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, recently)}},
			noDeadline: true,
			rsReady:    1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := base.DeepCopy()
			d.Status = tc.status
			if tc.noDeadline {
				d.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32)
			}
			rs := newRS.DeepCopy()
			rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = tc.rsReady, tc.rsReady, tc.rsReady
			revs := revisionSet{current: rs}
			if tc.noNewRS {
				revs = revisionSet{}
			}
			f := newFixture(t, d)

			if err := f.c.writeRolloutStatus(f.ctx, d, revs); err != nil {
				t.Fatalf("writeRolloutStatus: %v", err)
			}
			got := conditions.Deployment.Get(f.lastStatusWrite().Status.Conditions, appsv1.DeploymentProgressing)
			if tc.want == nil {
				if got != nil {
					t.Errorf("Progressing = %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no Progressing condition")
			}
			if got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message {
				t.Errorf("Progressing = %s/%s %q, want %s/%s %q", got.Status, got.Reason, got.Message, tc.want.Status, tc.want.Reason, tc.want.Message)
			}
			if !got.LastUpdateTime.Equal(&tc.want.LastUpdateTime) {
				t.Errorf("lastUpdateTime = %v, want %v", got.LastUpdateTime, tc.want.LastUpdateTime)
			}
			if !tc.want.LastTransitionTime.IsZero() && !got.LastTransitionTime.Equal(&tc.want.LastTransitionTime) {
				t.Errorf("lastTransitionTime = %v, want %v", got.LastTransitionTime, tc.want.LastTransitionTime)
			}
		})
	}
}

func TestSyncRolloutStatusReplicaFailure(t *testing.T) {
	d := newDeployment("web", 2)
	failure := func(message string, at time.Time) []appsv1.ReplicaSetCondition {
		return []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: message, LastTransitionTime: metav1.NewTime(at)}}
	}
	oldRS := newReplicaSet(d, withImage(d, "image:0").Spec.Template, "1", testNow.Add(-time.Hour), 1, 1)
	newRS := newReplicaSet(d, d.Spec.Template, "2", testNow, 1, 0)

	t.Run("the new RS's failure wins", func(t *testing.T) {
		old, cur := oldRS.DeepCopy(), newRS.DeepCopy()
		old.Status.Conditions = failure("old quota", testNow.Add(-time.Hour))
		cur.Status.Conditions = failure("new quota", testNow.Add(-time.Minute))
		f := newFixture(t, d)
		if err := f.c.writeRolloutStatus(f.ctx, d.DeepCopy(), revisionSet{current: cur, old: []*appsv1.ReplicaSet{old}}); err != nil {
			t.Fatal(err)
		}
		got := conditions.Deployment.Get(f.lastStatusWrite().Status.Conditions, appsv1.DeploymentReplicaFailure)
		if got == nil || got.Message != "new quota" || !got.LastUpdateTime.Time.Equal(testNow.Add(-time.Minute)) {
			t.Errorf("ReplicaFailure = %+v, want the new RS's, timed at its transition", got)
		}
	})
	t.Run("an old RS's failure is copied otherwise", func(t *testing.T) {
		old := oldRS.DeepCopy()
		old.Status.Conditions = failure("old quota", testNow.Add(-time.Hour))
		f := newFixture(t, d)
		if err := f.c.writeRolloutStatus(f.ctx, d.DeepCopy(), revisionSet{current: newRS, old: []*appsv1.ReplicaSet{old}}); err != nil {
			t.Fatal(err)
		}
		if got := conditions.Deployment.Get(f.lastStatusWrite().Status.Conditions, appsv1.DeploymentReplicaFailure); got == nil || got.Message != "old quota" {
			t.Errorf("ReplicaFailure = %+v, want the old RS's", got)
		}
	})
	t.Run("a resolved failure is removed", func(t *testing.T) {
		stale := d.DeepCopy()
		stale.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue}}
		f := newFixture(t, stale)
		if err := f.c.writeRolloutStatus(f.ctx, stale, revisionSet{current: newRS, old: []*appsv1.ReplicaSet{oldRS}}); err != nil {
			t.Fatal(err)
		}
		if got := conditions.Deployment.Get(f.lastStatusWrite().Status.Conditions, appsv1.DeploymentReplicaFailure); got != nil {
			t.Errorf("ReplicaFailure = %+v, want none", got)
		}
	})
}

func TestDeadlineCheck(t *testing.T) {
	stuck := appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1}
	tests := []struct {
		name      string
		deadline  int32
		cond      *appsv1.DeploymentCondition
		newStatus appsv1.DeploymentStatus
		// wantLeft is the time left before the deadline; wantWatch false means no check.
		wantLeft   time.Duration
		wantWatch  bool
		wantNowish bool // rate-limited requeue
		wantAfter  []time.Duration
	}{
		{name: "no deadline", deadline: math.MaxInt32,
			cond: ptr.To(progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, testNow)), newStatus: stuck},
		{name: "no Progressing condition", deadline: 600, newStatus: stuck},
		{name: "complete", deadline: 600, cond: ptr.To(progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, testNow)),
			newStatus: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}},
		{name: "already timed out", deadline: 600,
			cond: ptr.To(progressingCondition(corev1.ConditionFalse, deploymentutil.ReasonProgressDeadlineExceeded, testNow)), newStatus: stuck},
		{name: "deadline ahead", deadline: 600,
			cond:      ptr.To(progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, testNow.Add(-100*time.Second))),
			newStatus: stuck, wantLeft: 500 * time.Second, wantWatch: true, wantAfter: []time.Duration{501 * time.Second}},
		{name: "deadline due", deadline: 600,
			cond:      ptr.To(progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, testNow.Add(-600*time.Second+500*time.Millisecond))),
			newStatus: stuck, wantLeft: 500 * time.Millisecond, wantWatch: true, wantNowish: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDeployment("web", 3)
			d.Spec.ProgressDeadlineSeconds = ptr.To(tc.deadline)
			if tc.cond != nil {
				d.Status.Conditions = []appsv1.DeploymentCondition{*tc.cond}
			}
			left, watch := timeToDeadline(d, &tc.newStatus, testNow)
			if watch != tc.wantWatch || (watch && left != tc.wantLeft) {
				t.Errorf("timeToDeadline = %v, %v; want %v, %v", left, watch, tc.wantLeft, tc.wantWatch)
			}

			q := &recordingQueue{}
			f := newFixtureWithQueue(t, func(_ *clocktesting.FakeClock, inner workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string] {
				q.TypedRateLimitingInterface = inner
				return q
			}, d)
			f.c.scheduleDeadlineCheck(f.ctx, d, tc.newStatus)
			if got := f.c.queue.NumRequeues("ns/web"); (got == 1) != tc.wantNowish {
				t.Errorf("rate-limited requeues = %d, want rate-limited: %v", got, tc.wantNowish)
			}
			if !slices.Equal(q.afters, tc.wantAfter) {
				t.Errorf("AddAfter delays = %v, want %v", q.afters, tc.wantAfter)
			}
		})
	}
}

// TestStuckRolloutIsCheckedAtItsDeadline drives a whole sync of a rollout that makes no
// progress and checks that its key comes back once the deadline (plus a second) has passed
// on the queue's clock, not before.
func TestStuckRolloutIsCheckedAtItsDeadline(t *testing.T) {
	d := newDeployment("web", 3)
	d.Annotations = map[string]string{deploymentutil.RevisionAnnotation: "1"}
	rs := newReplicaSet(d, d.Spec.Template, "1", testNow, 3, 1)
	rs.Annotations[deploymentutil.DesiredReplicasAnnotation] = "3"
	rs.Annotations[deploymentutil.MaxReplicasAnnotation] = "4"
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UnavailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: deploymentutil.ReasonMinimumReplicasUnavailable,
				Message: deploymentutil.MessageMinimumReplicasUnavailable, LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow)},
			progressingCondition(corev1.ConditionTrue, deploymentutil.ReasonReplicaSetUpdated, testNow.Add(-100*time.Second)),
		}}
	// A queue on the fake clock, so that the test can move time instead of sleeping, that
	// records the delays it is asked for. It takes the place of the controller's own queue,
	// which is never used and so is shut down at once.
	var q *recordingQueue
	f := newFixtureWithQueue(t, func(clk *clocktesting.FakeClock, inner workqueue.TypedRateLimitingInterface[string]) workqueue.TypedRateLimitingInterface[string] {
		inner.ShutDown()
		q = &recordingQueue{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(queue.DefaultRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Clock: clk})}
		return q
	}, d, rs)
	t.Cleanup(q.ShutDown)

	if err := f.sync(d); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("a stuck rollout within its deadline wrote %s", describe(w))
	}
	// 600 s deadline − 100 s since the last progress, plus the 1 s margin.
	if want := []time.Duration{501 * time.Second}; !slices.Equal(q.afters, want) {
		t.Fatalf("AddAfter delays = %v, want %v", q.afters, want)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("key queued %d times at once", n)
	}
	f.clock.Step(501 * time.Second)
	err := wait.PollUntilContextTimeout(f.ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return q.Len() == 1, nil
	})
	if err != nil {
		t.Fatal("key not queued after the deadline passed")
	}
}

// recordingQueue records the delays passed to AddAfter.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	afters []time.Duration
}

func (q *recordingQueue) AddAfter(key string, after time.Duration) {
	q.afters = append(q.afters, after)
	q.TypedRateLimitingInterface.AddAfter(key, after)
}
