package nodeimage

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// responseTimeout shortens the manager's ten minutes of waiting for an agent's report.
const responseTimeout = 10 * time.Second

// createJob creates an ImagePullJob no controller acts on, to own tags, and returns a
// reference to it as the job controller writes one (apps.kruise.io/v1beta1).
func (e *testEnv) createJob(t *testing.T, name string) *corev1.ObjectReference {
	t.Helper()
	job := &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace},
		Spec:       appsv1alpha1.ImagePullJobSpec{Image: "nginx:1.25"},
	}
	created, err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Create(e.Ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ImagePullJob %s: %v", name, err)
	}
	return &corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob",
		Namespace: e.Namespace, Name: name, UID: created.UID}
}

// inV1alpha1 is ref as an older bosun, or OpenKruise before 1.9, wrote it.
func inV1alpha1(ref *corev1.ObjectReference) *corev1.ObjectReference {
	old := *ref
	old.APIVersion = appsv1alpha1.SchemeGroupVersion.String()
	return &old
}

// TestUnresponsiveNode: with no agent on the node, a tag is marked Failed "node has not
// responded for a long time" the response timeout after its createdAt, with a
// PullImageFailed warning on the NodeImage and on the job that asked for it; a tag the
// agent reported Pulling but that outlived its activeDeadlineSeconds (plus the response
// timeout) is marked Failed "pulling exceeds the activeDeadlineSeconds".
func TestUnresponsiveNode(t *testing.T) {
	e := setup(t)
	node := e.createNode(t, "silent", nil, time.Now().Add(-time.Hour))
	e.startManager(t, managerOptions(responseTimeoutFlag+"="+responseTimeout.String()))
	e.nodeImages().WaitFor(t, node, "created", func(*nodeImage) bool { return true })
	owner := e.createJob(t, "pull-nginx")

	ni := e.addTag(t, node, "nginx", newTag("1.25", 600, owner))
	createdAt := tagSpec(ni, "nginx", "1.25").CreatedAt
	ni = e.nodeImages().WaitFor(t, node, "nginx:1.25 to fail", func(ni *nodeImage) bool {
		s := tagStatus(ni, "nginx", "1.25")
		return s != nil && s.Phase == appsv1alpha1.ImagePhaseFailed
	})
	status := tagStatus(ni, "nginx", "1.25")
	if status.Message != messageNotResponded || status.CompletionTime == nil || status.Version != 0 {
		t.Errorf("nginx:1.25 status = %+v, want Failed %q with a completionTime and version 0", status, messageNotResponded)
	} else if waited := status.CompletionTime.Sub(createdAt.Time); waited < responseTimeout {
		t.Errorf("nginx:1.25 was failed %v after its createdAt, want at least %v", waited, responseTimeout)
	}
	if ni.Status.Desired != 1 || ni.Status.Failed != 1 || ni.Status.Succeeded != 0 || ni.Status.Pulling != 0 {
		t.Errorf("counts = desired %d, failed %d, succeeded %d, pulling %d; want 1, 1, 0, 0",
			ni.Status.Desired, ni.Status.Failed, ni.Status.Succeeded, ni.Status.Pulling)
	}
	e.waitForEvent(t, "", "NodeImage", node, eventPullImageFailed)
	ev := e.waitForEvent(t, e.Namespace, "ImagePullJob", owner.Name, eventPullImageFailed)
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.UID != owner.UID {
		t.Errorf("event on the job = %s on %+v, want a Warning on UID %s", ev.Type, ev.InvolvedObject, owner.UID)
	}

	// The agent answered (Pulling, version 1 of the tag) but never finished.
	deadline := newTag("1.26", 600, owner)
	deadline.PullPolicy.ActiveDeadlineSeconds = ptr.To[int64](3)
	deadline.Version = 1
	ni = e.addTag(t, node, "nginx", deadline)
	createdAt = tagSpec(ni, "nginx", "1.26").CreatedAt
	e.patchNodeImageStatus(t, node, []byte(fmt.Sprintf(
		`{"status":{"imageStatuses":{"nginx":{"tags":[%s,{"tag":"1.26","phase":"Pulling","version":1,"startTime":%q}]}}}}`,
		mustJSON(t, *status), time.Now().UTC().Format(time.RFC3339))))
	ni = e.nodeImages().WaitFor(t, node, "nginx:1.26 to fail", func(ni *nodeImage) bool {
		s := tagStatus(ni, "nginx", "1.26")
		return s != nil && s.Phase == appsv1alpha1.ImagePhaseFailed
	})
	status = tagStatus(ni, "nginx", "1.26")
	if status.Message != messageDeadlineExceeded || status.Version != 1 || status.StartTime == nil {
		t.Errorf("nginx:1.26 status = %+v, want Failed %q, version 1, the agent's startTime kept", status, messageDeadlineExceeded)
	} else if waited := status.CompletionTime.Sub(createdAt.Time); waited < responseTimeout+3*time.Second {
		t.Errorf("nginx:1.26 was failed %v after its createdAt, want at least %v", waited, responseTimeout+3*time.Second)
	}
	if ni.Status.Desired != 2 || ni.Status.Failed != 2 {
		t.Errorf("counts = desired %d, failed %d; want 2, 2", ni.Status.Desired, ni.Status.Failed)
	}
}

// TestSpecCleanup: a tag whose pull completed leaves the spec ttlSecondsAfterFinished
// later, with its status; deleting the ImagePullJob that owns tags removes its references
// and the tags it alone owned, while other owners keep theirs; an image left without tags
// goes too. Owner references of both versions name their jobs: one written in v1alpha1
// keeps its tag, as written, while its job lives, and goes with the job.
func TestSpecCleanup(t *testing.T) {
	e := setup(t)
	node := e.createNode(t, "clean", nil, time.Now().Add(-time.Hour))
	e.startManager(t, managerOptions())
	e.nodeImages().WaitFor(t, node, "created", func(*nodeImage) bool { return true })
	job := e.createJob(t, "pull")
	legacy := inV1alpha1(e.createJob(t, "legacy"))
	other := &corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "Puller", Namespace: e.Namespace, Name: "p", UID: "other-uid"}

	shared := newTag("shared", 600, job)
	shared.OwnerReferences = append(shared.OwnerReferences, *other)
	e.addTag(t, node, "app", newTag("only-job", 600, job))
	e.addTag(t, node, "app", shared)
	e.addTag(t, node, "busybox", newTag("1", 600, job))
	e.addTag(t, node, "legacy", newTag("1", 600, legacy))
	e.addTag(t, node, "done", newTag("1", 2, nil))
	e.patchNodeImageStatus(t, node, []byte(fmt.Sprintf(
		`{"status":{"imageStatuses":{"done":{"tags":[{"tag":"1","phase":"Succeeded","version":0,"completionTime":%q}]}}}}`,
		time.Now().UTC().Format(time.RFC3339))))
	e.nodeImages().WaitFor(t, node, "the completed tag and its status gone after its TTL", func(ni *nodeImage) bool {
		_, spec := ni.Spec.Images["done"]
		_, status := ni.Status.ImageStatuses["done"]
		return !spec && !status
	})

	if err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Delete(e.Ctx, job.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ni := e.nodeImages().WaitFor(t, node, "the job's references gone", func(ni *nodeImage) bool {
		return len(ni.Spec.Images) == 2 && len(ni.Spec.Images["app"].Tags) == 1
	})
	if tag := tagSpec(ni, "app", "shared"); tag == nil || len(tag.OwnerReferences) != 1 || tag.OwnerReferences[0].UID != other.UID {
		t.Errorf("app:shared = %+v, want it kept with only the other owner", tag)
	}
	if tag := tagSpec(ni, "legacy", "1"); tag == nil || !slices.Equal(tag.OwnerReferences, []corev1.ObjectReference{*legacy}) {
		t.Errorf("legacy:1 = %+v, want it kept with its v1alpha1 reference as written: its job lives", tag)
	}

	if err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Delete(e.Ctx, legacy.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.nodeImages().WaitFor(t, node, "the tag of the job named in v1alpha1 gone with its job", func(ni *nodeImage) bool {
		_, has := ni.Spec.Images["legacy"]
		return len(ni.Spec.Images) == 1 && !has
	})
}
