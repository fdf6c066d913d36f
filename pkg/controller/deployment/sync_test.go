package deployment

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/conditions"
	"github.com/bosun-dev/bosun/pkg/controller/deployment/deploymentutil"
	"github.com/bosun-dev/bosun/pkg/controller/hash"
)

const changeCause = "kubernetes.io/change-cause"

func TestSyncNewDeploymentCreatesReplicaSet(t *testing.T) {
	d := newDeployment("web", 20)
	d.Spec.MinReadySeconds = 4
	d.Annotations = map[string]string{
		"test": "should-copy-to-replica-set",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
	}
	f := newFixture(t, d)

	if err := f.sync(d); err != nil {
		t.Fatalf("sync: %v", err)
	}

	created := f.createdReplicaSets()
	if len(created) != 1 {
		t.Fatalf("created %d replica sets, want 1; writes: %s", len(created), describe(f.writes()))
	}
	rs := created[0]
	h := hash.ComputeHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+h {
		t.Errorf("name = %q, want %q", rs.Name, "web-"+h)
	}
	wantLabels := map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: h}
	if !maps.Equal(rs.Labels, wantLabels) || !maps.Equal(rs.Spec.Template.Labels, wantLabels) || !maps.Equal(rs.Spec.Selector.MatchLabels, wantLabels) {
		t.Errorf("labels %v, template labels %v, selector %v; want %v everywhere", rs.Labels, rs.Spec.Template.Labels, rs.Spec.Selector.MatchLabels, wantLabels)
	}
	if d.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" || d.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != "" {
		t.Error("the Deployment's own template or selector was modified")
	}
	wantAnnotations := map[string]string{
		deploymentutil.RevisionAnnotation:        "1",
		deploymentutil.DesiredReplicasAnnotation: "20",
		deploymentutil.MaxReplicasAnnotation:     "25",
		"test":                                   "should-copy-to-replica-set",
	}
	if !maps.Equal(rs.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v, want %v", rs.Annotations, wantAnnotations)
	}
	if *rs.Spec.Replicas != 20 || rs.Spec.MinReadySeconds != 4 {
		t.Errorf("replicas %d minReadySeconds %d, want 20 and 4", *rs.Spec.Replicas, rs.Spec.MinReadySeconds)
	}
	ref := metav1.GetControllerOf(rs)
	if ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller ref = %+v", ref)
	}

	statusWrites := f.statusWrites()
	if len(statusWrites) == 0 {
		t.Fatal("no status write")
	}
	first := statusWrites[0]
	if got := first.Annotations[deploymentutil.RevisionAnnotation]; got != "1" {
		t.Errorf("deployment revision = %q, want 1", got)
	}
	cond := progressing(t, first.Status)
	wantMsg := fmt.Sprintf("Created new replica set %q", rs.Name)
	if cond.Status != corev1.ConditionTrue || cond.Reason != deploymentutil.ReasonNewReplicaSetCreated || cond.Message != wantMsg {
		t.Errorf("Progressing = %s/%s %q, want True/NewReplicaSetCreated %q", cond.Status, cond.Reason, cond.Message, wantMsg)
	}
	last := f.lastStatusWrite()
	if last.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration = %d, want 1", last.Status.ObservedGeneration)
	}
	if avail := conditions.Deployment.Get(last.Status.Conditions, appsv1.DeploymentAvailable); avail == nil || avail.Reason != deploymentutil.ReasonMinimumReplicasUnavailable {
		t.Errorf("Available = %+v, want MinimumReplicasUnavailable", avail)
	}
	if updates := f.writesTo("update", "deployments", ""); len(updates) != 0 {
		t.Errorf("the Deployment was updated (bumping its generation) instead of written through status: %s", describe(updates))
	}
	wantEvents := []string{fmt.Sprintf("Normal ScalingReplicaSet Scaled up replica set %s from 0 to 20", rs.Name)}
	if got := f.events(); !slices.Equal(got, wantEvents) {
		t.Errorf("events = %q, want %q", got, wantEvents)
	}
}

func TestSyncExistingNewReplicaSet(t *testing.T) {
	d := withImage(newDeployment("web", 3), "image:2")
	d.Annotations = map[string]string{changeCause: "v2"}
	d.Spec.MinReadySeconds = 5
	v1Template := newDeployment("web", 3).Spec.Template

	tests := []struct {
		name string
		// newRS returns the existing new ReplicaSet; oldRevision is the old ReplicaSet's.
		newRS       func() *appsv1.ReplicaSet
		oldRevision string
		// wantRSUpdate is the annotations the RS update must carry, nil for no update.
		wantRSUpdate map[string]string
		// wantRevision is the Deployment revision the first status write must carry.
		wantRevision string
	}{
		{
			name:         "missing annotations and revision are written to the RS",
			newRS:        func() *appsv1.ReplicaSet { return newReplicaSet(d, d.Spec.Template, "", testNow, 3, 3) },
			oldRevision:  "1",
			wantRSUpdate: map[string]string{deploymentutil.RevisionAnnotation: "2", changeCause: "v2"},
		},
		{
			name: "a reused RS records its previous revision",
			newRS: func() *appsv1.ReplicaSet {
				rs := newReplicaSet(d, d.Spec.Template, "1", testNow, 3, 3)
				rs.Annotations[changeCause] = "v2"
				return rs
			},
			oldRevision: "2",
			wantRSUpdate: map[string]string{
				deploymentutil.RevisionAnnotation: "3", deploymentutil.RevisionHistoryAnnotation: "1", changeCause: "v2",
			},
		},
		{
			name: "a changed minReadySeconds is copied to the RS",
			newRS: func() *appsv1.ReplicaSet {
				rs := newReplicaSet(d, d.Spec.Template, "2", testNow, 3, 3)
				rs.Annotations[changeCause] = "v2"
				rs.Spec.MinReadySeconds = 30
				return rs
			},
			oldRevision:  "1",
			wantRSUpdate: map[string]string{deploymentutil.RevisionAnnotation: "2", changeCause: "v2"},
		},
		{
			name: "an up-to-date RS gives the Deployment its revision through a status write",
			newRS: func() *appsv1.ReplicaSet {
				rs := newReplicaSet(d, d.Spec.Template, "2", testNow, 3, 3)
				rs.Annotations[changeCause] = "v2"
				return rs
			},
			oldRevision:  "1",
			wantRevision: "2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newRS := tc.newRS()
			oldRS := newReplicaSet(d, v1Template, tc.oldRevision, testNow.Add(-time.Minute), 0, 0)
			f := newFixture(t, d, oldRS, newRS)

			if err := f.sync(d); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if created := f.createdReplicaSets(); len(created) != 0 {
				t.Errorf("created %d replica sets, want none", len(created))
			}
			updated := f.updatedReplicaSets()
			if tc.wantRSUpdate == nil {
				if len(updated) != 0 {
					t.Errorf("updated replica sets %v, want none", updated)
				}
			} else {
				if len(updated) != 1 || updated[0].Name != newRS.Name {
					t.Fatalf("updated %d replica sets, want the new one; writes: %s", len(updated), describe(f.writes()))
				}
				if !maps.Equal(updated[0].Annotations, tc.wantRSUpdate) {
					t.Errorf("RS annotations = %v, want %v", updated[0].Annotations, tc.wantRSUpdate)
				}
				if updated[0].Spec.MinReadySeconds != d.Spec.MinReadySeconds {
					t.Errorf("RS minReadySeconds = %d, want the Deployment's %d", updated[0].Spec.MinReadySeconds, d.Spec.MinReadySeconds)
				}
			}
			if tc.wantRevision != "" {
				first := f.statusWrites()[0]
				if got := first.Annotations[deploymentutil.RevisionAnnotation]; got != tc.wantRevision {
					t.Errorf("deployment revision = %q, want %q", got, tc.wantRevision)
				}
				cond := progressing(t, first.Status)
				wantMsg := fmt.Sprintf("Found new replica set %q", newRS.Name)
				if cond.Reason != deploymentutil.ReasonFoundNewReplicaSet || cond.Message != wantMsg {
					t.Errorf("Progressing = %s %q, want FoundNewReplicaSet %q", cond.Reason, cond.Message, wantMsg)
				}
			}
			if updates := f.writesTo("update", "deployments", ""); len(updates) != 0 {
				t.Errorf("the Deployment was updated instead of written through status: %s", describe(updates))
			}
		})
	}
}

func TestSyncHashCollisionBumpsCollisionCount(t *testing.T) {
	d := newDeployment("web", 3)
	// An RS carrying the name the Deployment's template hashes to, but another template
	// (kubernetes issue #29735: someone edited it).
	clash := newReplicaSet(d, d.Spec.Template, "1", testNow, 0, 0)
	clash.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	f := newFixture(t, d, clash)

	err := f.sync(d)
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("sync error = %v, want AlreadyExists", err)
	}
	last := f.lastStatusWrite()
	if last.Status.CollisionCount == nil || *last.Status.CollisionCount != 1 {
		t.Errorf("collisionCount = %v, want 1", last.Status.CollisionCount)
	}
	if got := f.events(); len(got) != 0 {
		t.Errorf("events = %q, want none", got)
	}

	// The next pass hashes with the count and gets a name of its own.
	f.client.ClearActions()
	bumped, err := f.client.AppsV1().Deployments("ns").Get(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.cache(bumped)
	if err := f.sync(bumped); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	created := f.createdReplicaSets()
	if len(created) != 1 || created[0].Name != "web-"+hash.ComputeHash(&d.Spec.Template, ptr.To[int32](1)) || created[0].Name == clash.Name {
		t.Errorf("second sync created %v, want one RS named after the bumped hash", created)
	}
}

func TestSyncPauseAndResume(t *testing.T) {
	t.Run("paused deployment creates no RS", func(t *testing.T) {
		d := newDeployment("web", 2)
		d.Spec.Paused = true
		f := newFixture(t, d)
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if created := f.createdReplicaSets(); len(created) != 0 {
			t.Errorf("created %d replica sets while paused", len(created))
		}
		cond := progressing(t, f.statusWrites()[0].Status)
		if cond.Status != corev1.ConditionUnknown || cond.Reason != deploymentutil.ReasonDeploymentPaused || cond.Message != "Deployment is paused" {
			t.Errorf("Progressing = %s/%s %q, want Unknown/DeploymentPaused", cond.Status, cond.Reason, cond.Message)
		}
	})

	t.Run("paused deployment with a changed template keeps its RS", func(t *testing.T) {
		old := newDeployment("web", 2)
		d := withImage(old, "image:2")
		d.Spec.Paused = true
		rs := newReplicaSet(old, old.Spec.Template, "1", testNow, 2, 2)
		f := newFixture(t, d, rs)
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if created := f.createdReplicaSets(); len(created) != 0 {
			t.Errorf("created %d replica sets while paused", len(created))
		}
		if updated := f.updatedReplicaSets(); len(updated) != 0 {
			t.Errorf("scaled replica sets while paused without a scaling event: %v", updated)
		}
	})

	t.Run("paused deployment still cleans up old replica sets", func(t *testing.T) {
		d := newDeployment("web", 2)
		d.Spec.Paused = true
		d.Spec.RevisionHistoryLimit = ptr.To[int32](0)
		rs := newReplicaSet(d, d.Spec.Template, "2", testNow, 2, 2)
		drained := newReplicaSet(d, withImage(d, "image:0").Spec.Template, "1", testNow.Add(-time.Hour), 0, 0)
		f := newFixture(t, d, rs, drained)
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		deletes := f.writesTo("delete", "replicasets", "")
		if len(deletes) != 1 || deletes[0].(core.DeleteAction).GetName() != drained.Name {
			t.Errorf("deletes %s, want %s", describe(deletes), drained.Name)
		}
	})

	t.Run("resumed deployment says so", func(t *testing.T) {
		d := newDeployment("web", 2)
		d.Status.Conditions = []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: deploymentutil.ReasonDeploymentPaused,
		}}
		f := newFixture(t, d)
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		cond := progressing(t, f.statusWrites()[0].Status)
		if cond.Status != corev1.ConditionUnknown || cond.Reason != deploymentutil.ReasonDeploymentResumed || cond.Message != "Deployment is resumed" {
			t.Errorf("Progressing = %s/%s %q, want Unknown/DeploymentResumed", cond.Status, cond.Reason, cond.Message)
		}
		if !cond.LastUpdateTime.Time.Equal(testNow) {
			t.Errorf("lastUpdateTime = %v, want the fake clock's %v (the deadline restarts)", cond.LastUpdateTime, testNow)
		}
		if created := f.createdReplicaSets(); len(created) != 1 {
			t.Errorf("resumed deployment created %d replica sets, want 1", len(created))
		}
	})
}

func TestSyncRecreate(t *testing.T) {
	oldD := newDeployment("web", 2)
	oldD.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	d := withImage(oldD, "image:2")

	terminating := func(rs *appsv1.ReplicaSet) *corev1.Pod {
		p := newPod("terminating", rs, corev1.PodRunning)
		p.DeletionTimestamp = &metav1.Time{Time: testNow}
		return p
	}
	tests := []struct {
		name        string
		oldSpec     int32
		oldStatus   int32
		pod         func(rs *appsv1.ReplicaSet) *corev1.Pod
		wantScaled  []int32 // sizes of RS updates
		wantCreated bool
	}{
		{name: "scales old replica sets down first", oldSpec: 2, oldStatus: 2, wantScaled: []int32{0}},
		{name: "waits while the old RS status counts pods", oldSpec: 0, oldStatus: 1},
		{name: "waits for a running old pod", oldSpec: 0, pod: func(rs *appsv1.ReplicaSet) *corev1.Pod { return newPod("p", rs, corev1.PodRunning) }},
		{name: "waits for a terminating old pod", oldSpec: 0, pod: terminating},
		{name: "waits for an old pod in phase Unknown", oldSpec: 0, pod: func(rs *appsv1.ReplicaSet) *corev1.Pod { return newPod("p", rs, corev1.PodUnknown) }},
		{name: "creates the new RS once old pods finished", oldSpec: 0,
			pod: func(rs *appsv1.ReplicaSet) *corev1.Pod { return newPod("p", rs, corev1.PodSucceeded) }, wantCreated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldRS := newReplicaSet(oldD, oldD.Spec.Template, "1", testNow, tc.oldSpec, tc.oldStatus)
			f := newFixture(t, d, oldRS)
			if tc.pod != nil {
				f.cache(tc.pod(oldRS))
			}
			if err := f.sync(d); err != nil {
				t.Fatalf("sync: %v", err)
			}
			var scaled []int32
			for _, rs := range f.updatedReplicaSets() {
				scaled = append(scaled, *rs.Spec.Replicas)
			}
			if !slices.Equal(scaled, tc.wantScaled) {
				t.Errorf("RS updates to sizes %v, want %v", scaled, tc.wantScaled)
			}
			created := f.createdReplicaSets()
			if tc.wantCreated != (len(created) == 1) || len(created) > 1 {
				t.Fatalf("created %d replica sets, want created=%v", len(created), tc.wantCreated)
			}
			if tc.wantCreated {
				if *created[0].Spec.Replicas != 2 || created[0].Annotations[deploymentutil.RevisionAnnotation] != "2" {
					t.Errorf("new RS replicas %d revision %q, want 2 and 2", *created[0].Spec.Replicas, created[0].Annotations[deploymentutil.RevisionAnnotation])
				}
			}
		})
	}
}

func TestSyncRollbackAnnotation(t *testing.T) {
	v1 := newDeployment("web", 2)
	current := withImage(v1, "image:2")
	current.Annotations = map[string]string{changeCause: "v2"}

	tests := []struct {
		name       string
		rollbackTo string
		withOldRS  bool
		wantEvent  string
		wantImage  string
		wantCause  string
	}{
		{name: "to revision 1", rollbackTo: "1", withOldRS: true,
			wantEvent: `Normal DeploymentRollback Rolled back deployment "web" to revision 1`, wantImage: "image:1", wantCause: "v1"},
		{name: "to the previous revision", rollbackTo: "0", withOldRS: true,
			wantEvent: `Normal DeploymentRollback Rolled back deployment "web" to revision 1`, wantImage: "image:1", wantCause: "v1"},
		{name: "no previous revision", rollbackTo: "0",
			wantEvent: "Warning DeploymentRollbackRevisionNotFound Unable to find last revision.", wantImage: "image:2", wantCause: "v2"},
		{name: "unknown revision", rollbackTo: "7", withOldRS: true,
			wantEvent: "Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to.", wantImage: "image:2", wantCause: "v2"},
		{name: "revision with the current template", rollbackTo: "2", withOldRS: true,
			wantEvent: `Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same template as current deployment "web"`,
			wantImage: "image:2", wantCause: "v2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := current.DeepCopy()
			d.Annotations[deploymentutil.RollbackToAnnotation] = tc.rollbackTo
			newRS := newReplicaSet(d, d.Spec.Template, "2", testNow, 2, 2)
			newRS.Annotations[changeCause] = "v2"
			objs := []runtime.Object{d, newRS}
			if tc.withOldRS {
				oldRS := newReplicaSet(v1, v1.Spec.Template, "1", testNow.Add(-time.Minute), 0, 0)
				oldRS.Annotations[changeCause] = "v1"
				objs = append(objs, oldRS)
			}
			f := newFixture(t, objs...)

			if err := f.sync(d); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := f.events(); !slices.Contains(got, tc.wantEvent) {
				t.Errorf("events = %q, want %q", got, tc.wantEvent)
			}
			updates := f.writesTo("update", "deployments", "")
			if len(updates) != 1 {
				t.Fatalf("deployment updates: %s, want exactly one", describe(updates))
			}
			written := updates[0].(core.UpdateAction).GetObject().(*appsv1.Deployment)
			if _, ok := written.Annotations[deploymentutil.RollbackToAnnotation]; ok {
				t.Error("rollback annotation not removed")
			}
			if got := written.Spec.Template.Spec.Containers[0].Image; got != tc.wantImage {
				t.Errorf("template image = %q, want %q", got, tc.wantImage)
			}
			if !maps.Equal(written.Spec.Template.Labels, podLabels) {
				t.Errorf("template labels = %v, want %v (no hash label)", written.Spec.Template.Labels, podLabels)
			}
			if got := written.Annotations[changeCause]; got != tc.wantCause {
				t.Errorf("change-cause = %q, want %q", got, tc.wantCause)
			}
		})
	}
}

func TestSyncCleanupDeletesOnlyEligibleReplicaSets(t *testing.T) {
	d := withImage(newDeployment("web", 2), "image:9")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	// A completed rollout, so that cleanup runs.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	newRS := newReplicaSet(d, d.Spec.Template, "4", testNow, 2, 2)

	old := func(image, revision string, mutate func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		src := withImage(d, image)
		rs := newReplicaSet(src, src.Spec.Template, revision, testNow.Add(-time.Hour), 0, 0)
		if mutate != nil {
			mutate(rs)
		}
		return rs
	}
	drained := old("image:1", "1", nil)
	stillHasPods := old("image:2", "2", func(rs *appsv1.ReplicaSet) { rs.Status.Replicas = 1 })
	staleStatus := old("image:0", "0", func(rs *appsv1.ReplicaSet) { rs.Generation = 2 })
	beingDeleted := old("image:5", "5", func(rs *appsv1.ReplicaSet) {
		rs.DeletionTimestamp = &metav1.Time{Time: testNow}
		rs.Finalizers = []string{"example.com/hold"}
	})
	kept := old("image:3", "3", nil)
	f := newFixture(t, d, newRS, drained, stillHasPods, staleStatus, beingDeleted, kept)

	if err := f.sync(d); err != nil {
		t.Fatalf("sync: %v", err)
	}
	var deleted []string
	for _, a := range f.writesTo("delete", "replicasets", "") {
		deleted = append(deleted, a.(core.DeleteAction).GetName())
	}
	// Four old RSes count (the one being deleted does not); the limit keeps one, so the
	// three oldest by revision are candidates, of which only the drained one is deletable.
	if want := []string{drained.Name}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
}

func TestSyncSelectingAll(t *testing.T) {
	d := newDeployment("web", 2)
	d.Spec.Selector = &metav1.LabelSelector{}
	d.Generation = 3
	d.Status.ObservedGeneration = 2
	f := newFixture(t, d)

	if err := f.sync(d); err != nil {
		t.Fatalf("sync: %v", err)
	}
	want := "Warning SelectingAll This deployment is selecting all pods. A non-empty selector is required."
	if got := f.events(); !slices.Equal(got, []string{want}) {
		t.Errorf("events = %q, want %q", got, want)
	}
	writes := f.writes()
	if len(writes) != 1 || f.lastStatusWrite().Status.ObservedGeneration != 3 {
		t.Errorf("writes %s, want one status write with observedGeneration 3", describe(writes))
	}
}

// TestSyncScalingEventScalesProportionally is a mid-rollout scale:
// 100 old + 20 new (maxSurge 20, maxUnavailable 0) scaled from 100 to 120 replicas.
func TestSyncScalingEventScalesProportionally(t *testing.T) {
	oldD := newDeployment("web", 100)
	surge, unavailable := intstr.FromInt32(20), intstr.FromInt32(0)
	oldD.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	d := withImage(oldD, "image:2")
	d.Spec.Replicas = ptr.To[int32](120)
	d.Status.Replicas = 120

	sized := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.Annotations[deploymentutil.DesiredReplicasAnnotation] = "100"
		rs.Annotations[deploymentutil.MaxReplicasAnnotation] = "120"
		return rs
	}
	oldRS := sized(newReplicaSet(oldD, oldD.Spec.Template, "1", testNow.Add(-time.Hour), 100, 100))
	newRS := sized(newReplicaSet(d, d.Spec.Template, "2", testNow, 20, 20))
	newRS.Status.AvailableReplicas = 0
	f := newFixture(t, d, oldRS, newRS)

	if err := f.sync(d); err != nil {
		t.Fatalf("sync: %v", err)
	}
	got := map[string]int32{}
	for _, rs := range f.updatedReplicaSets() {
		got[rs.Name] = *rs.Spec.Replicas
		if rs.Annotations[deploymentutil.DesiredReplicasAnnotation] != "120" || rs.Annotations[deploymentutil.MaxReplicasAnnotation] != "140" {
			t.Errorf("%s annotations = %v, want desired 120 and max 140", rs.Name, rs.Annotations)
		}
	}
	want := map[string]int32{oldRS.Name: 117, newRS.Name: 23}
	if !maps.Equal(got, want) {
		t.Errorf("scaled to %v, want %v", got, want)
	}
	if created := f.createdReplicaSets(); len(created) != 0 {
		t.Errorf("a scaling event created %d replica sets", len(created))
	}
}

// TestSyncScalingEventRefreshesUnchangedReplicaSets checks that proportional scaling rewrites
// the replica annotations of a ReplicaSet whose size does not change, so that it no longer
// signals a scaling event.
func TestSyncScalingEventRefreshesUnchangedReplicaSets(t *testing.T) {
	oldD := newDeployment("web", 10) // max 13
	d := withImage(oldD, "image:2")
	d.Spec.Replicas = ptr.To[int32](11) // max 14: one more pod to hand out
	d.Status.Replicas = 13
	sized := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.Annotations[deploymentutil.DesiredReplicasAnnotation] = "10"
		rs.Annotations[deploymentutil.MaxReplicasAnnotation] = "13"
		return rs
	}
	oldRS := sized(newReplicaSet(oldD, oldD.Spec.Template, "1", testNow.Add(-time.Hour), 10, 10))
	newRS := sized(newReplicaSet(d, d.Spec.Template, "2", testNow, 3, 0))
	f := newFixture(t, d, oldRS, newRS)

	if err := f.sync(d); err != nil {
		t.Fatalf("sync: %v", err)
	}
	got := map[string]string{}
	for _, rs := range f.updatedReplicaSets() {
		got[rs.Name] = fmt.Sprintf("%d %s/%s", *rs.Spec.Replicas,
			rs.Annotations[deploymentutil.DesiredReplicasAnnotation], rs.Annotations[deploymentutil.MaxReplicasAnnotation])
	}
	// The larger old RS takes the one extra pod; the new RS keeps 3 but is re-annotated.
	want := map[string]string{oldRS.Name: "11 11/14", newRS.Name: "3 11/14"}
	if !maps.Equal(got, want) {
		t.Errorf("updates %v, want %v", got, want)
	}
	if got, want := f.events(), []string{"Normal ScalingReplicaSet Scaled up replica set " + oldRS.Name + " from 10 to 11"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// TestSyncRollingUpdateStep checks one rolling step each way with the default 25 %/25 %.
func TestSyncRollingUpdateStep(t *testing.T) {
	oldD := newDeployment("web", 10) // surge 3, unavailable 2
	d := withImage(oldD, "image:2")
	d.Annotations = map[string]string{deploymentutil.RevisionAnnotation: "2"}
	sized := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.Annotations[deploymentutil.DesiredReplicasAnnotation] = "10"
		rs.Annotations[deploymentutil.MaxReplicasAnnotation] = "13"
		return rs
	}

	t.Run("new RS scales up within the surge", func(t *testing.T) {
		oldRS := sized(newReplicaSet(oldD, oldD.Spec.Template, "1", testNow.Add(-time.Hour), 10, 10))
		newRS := sized(newReplicaSet(d, d.Spec.Template, "2", testNow, 1, 0))
		f := newFixture(t, d, oldRS, newRS)
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		updated := f.updatedReplicaSets()
		if len(updated) != 1 || updated[0].Name != newRS.Name || *updated[0].Spec.Replicas != 3 {
			t.Errorf("updates %v, want the new RS scaled to 3 (10 + 3 - 11 more)", updated)
		}
		if got, want := f.events(), []string{"Normal ScalingReplicaSet Scaled up replica set " + newRS.Name + " from 1 to 3"}; !slices.Equal(got, want) {
			t.Errorf("events = %q, want %q", got, want)
		}
	})

	t.Run("old RS scales down within maxUnavailable", func(t *testing.T) {
		oldRS := sized(newReplicaSet(oldD, oldD.Spec.Template, "1", testNow.Add(-time.Hour), 10, 10))
		newRS := sized(newReplicaSet(d, d.Spec.Template, "2", testNow, 3, 0))
		f := newFixture(t, d, oldRS, newRS)
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		updated := f.updatedReplicaSets()
		// maxScaledDown = 13 - 8 - 3 (new, none available) = 2.
		if len(updated) != 1 || updated[0].Name != oldRS.Name || *updated[0].Spec.Replicas != 8 {
			t.Errorf("updates %v, want the old RS scaled to 8", updated)
		}
	})
}

func TestSyncCreateFailures(t *testing.T) {
	t.Run("an error is reported in Progressing and as an event", func(t *testing.T) {
		d := newDeployment("web", 2)
		f := newFixture(t, d)
		f.client.PrependReactor("create", "replicasets", func(core.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("quota check failed")
		})
		err := f.sync(d)
		if !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("sync error = %v, want the create error", err)
		}
		name := "web-" + hash.ComputeHash(&d.Spec.Template, nil)
		wantMsg := fmt.Sprintf("Failed to create new replica set %q: quota check failed", name)
		cond := progressing(t, f.lastStatusWrite().Status)
		if cond.Status != corev1.ConditionFalse || cond.Reason != deploymentutil.ReasonReplicaSetCreateError || cond.Message != wantMsg {
			t.Errorf("Progressing = %s/%s %q, want False/ReplicaSetCreateError %q", cond.Status, cond.Reason, cond.Message, wantMsg)
		}
		if got, want := f.events(), []string{"Warning ReplicaSetCreateError " + wantMsg}; !slices.Equal(got, want) {
			t.Errorf("events = %q, want %q", got, want)
		}
	})

	t.Run("our own RS that the cache had not shown yet is used", func(t *testing.T) {
		d := newDeployment("web", 2)
		ours := newReplicaSet(d, d.Spec.Template, "1", testNow, 2, 0)
		f := newFixture(t, d)
		f.client.PrependReactor("create", "replicasets", func(core.Action) (bool, runtime.Object, error) {
			// The cache catches up between the list and the create.
			f.cache(ours)
			return true, nil, apierrors.NewAlreadyExists(appsv1.Resource("replicasets"), ours.Name)
		})
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		first := f.statusWrites()[0]
		if first.Status.CollisionCount != nil {
			t.Errorf("collisionCount = %d, want none", *first.Status.CollisionCount)
		}
		if got := first.Annotations[deploymentutil.RevisionAnnotation]; got != "1" {
			t.Errorf("deployment revision = %q, want 1", got)
		}
		if cond := conditions.Deployment.Get(first.Status.Conditions, appsv1.DeploymentProgressing); cond != nil && cond.Reason == deploymentutil.ReasonNewReplicaSetCreated {
			t.Errorf("Progressing = %+v, want no NewReplicaSetCreated for an RS we did not create", cond)
		}
		if got := f.events(); len(got) != 0 {
			t.Errorf("events = %q, want none", got)
		}
	})
}

func TestSyncDeletedOrUnknown(t *testing.T) {
	t.Run("a Deployment being deleted only gets its status refreshed", func(t *testing.T) {
		d := withImage(newDeployment("web", 2), "image:2")
		d.DeletionTimestamp = &metav1.Time{Time: testNow}
		d.Finalizers = []string{"foregroundDeletion"}
		oldRS := newReplicaSet(d, newDeployment("web", 2).Spec.Template, "1", testNow, 2, 2)
		f := newFixture(t, d, oldRS)
		if err := f.sync(d); err != nil {
			t.Fatalf("sync: %v", err)
		}
		for _, w := range f.writes() {
			if w.GetResource().Resource != "deployments" || w.GetSubresource() != "status" {
				t.Errorf("unexpected write %s", describe([]core.Action{w}))
			}
		}
		if got := f.lastStatusWrite().Status.Replicas; got != 2 {
			t.Errorf("status.replicas = %d, want 2", got)
		}
	})
	t.Run("a Deployment that is gone is done", func(t *testing.T) {
		f := newFixture(t)
		if err := f.sync(newDeployment("web", 1)); err != nil {
			t.Errorf("sync of a missing deployment: %v", err)
		}
	})
	t.Run("an unknown strategy is an error", func(t *testing.T) {
		d := newDeployment("web", 2)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: "BlueGreen"}
		f := newFixture(t, d)
		err := f.sync(d)
		if err == nil || err.Error() != `deployment ns/web has unknown strategy type "BlueGreen"` {
			t.Errorf("sync error = %v", err)
		}
	})
}
