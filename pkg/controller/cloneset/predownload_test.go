package cloneset

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/features"
)

var preDownloadOn = map[featuregate.Feature]bool{features.PreDownloadImageForInPlaceUpdate: true}

// withPreDownload is the fixture of a controller that pre-downloads images.
var withPreDownload = fixtureOption{gates: preDownloadOn, imagePullJobs: true}

// newPreDownloadRollout is a CloneSet of five ready pods with an app container "c" and a
// sidecar "side", updated in place (maxUnavailable 20%, partition 0), whose template
// changed from img:v1 to img:v2 in "c" only: the state of the first sync after the
// change, when the status still names the old revision as the update revision.
func newPreDownloadRollout(t *testing.T, mutate ...func(*appsv1beta1.CloneSet)) *rollout {
	t.Helper()
	return newRollout(t, 5, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
		cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "side:v1"})
		for _, m := range mutate {
			m(cs)
		}
	})
}

// createdJobs returns the ImagePullJobs the controller sent to the API server.
func (f *fixture) createdJobs() []*appsv1beta1.ImagePullJob {
	var jobs []*appsv1beta1.ImagePullJob
	for _, a := range f.actions("create", "imagepulljobs") {
		jobs = append(jobs, a.(clienttesting.CreateAction).GetObject().(*appsv1beta1.ImagePullJob))
	}
	return jobs
}

// revisionLabels reads revision's labels back from the API server.
func (f *fixture) revisionLabels(revision *appsv1.ControllerRevision) map[string]string {
	f.t.Helper()
	live, err := f.kubeClient.AppsV1().ControllerRevisions(revision.Namespace).Get(f.ctx, revision.Name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return live.Labels
}

// podWrites counts the writes sent for pods so far, status included.
func (f *fixture) podWrites() int {
	n := 0
	for _, a := range f.kubeClient.Actions() {
		if a.GetResource().Resource == "pods" && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}

func TestPreDownloadCreatesJobsBeforeTheFirstInPlaceUpdate(t *testing.T) {
	r := newPreDownloadRollout(t, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{
			ImagePreDownloadParallelism: ptr.To(intstr.FromString("2")),
		}
		// The v1alpha1 carrier counts where the field is unset.
		cs.Annotations = map[string]string{appsv1beta1.ImagePreDownloadTimeoutSecondsKey: "120"}
		cs.Spec.Template.Annotations = map[string]string{"example.com/snapshotter": "lazy"}
		cs.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg-a"}, {Name: "reg-b"}}
	})
	f := newFixture(t, withPreDownload, r.objects()...)
	podWritesBeforeJob := -1
	f.bosunClient.PrependReactor("create", "imagepulljobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		podWritesBeforeJob = f.podWrites()
		return false, nil, nil
	})
	f.sync(r.cs)

	jobs := f.createdJobs()
	if len(jobs) != 1 {
		t.Fatalf("created %d ImagePullJobs, want 1 (only container c changed)", len(jobs))
	}
	job := jobs[0]
	hash := strings.TrimPrefix(r.update.Name, "cs-")
	if job.Name != r.update.Name+"-c" || job.Namespace != testNamespace || job.Spec.Image != "img:v2" {
		t.Errorf("job %s/%s pulls %q, want %s/%s-c pulling img:v2", job.Namespace, job.Name, job.Spec.Image, testNamespace, r.update.Name)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != r.cs.UID || ref.Kind != "CloneSet" || ref.Name != "cs" ||
		ref.APIVersion != "apps.kruise.io/v1beta1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller ref = %+v, want the CloneSet", ref)
	}
	wantSelector := metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "cs"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: appsv1beta1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn,
			Values: []string{r.update.Name, hash},
		}},
	}
	if job.Spec.PodSelector == nil || !reflect.DeepEqual(job.Spec.PodSelector.LabelSelector, wantSelector) {
		t.Errorf("podSelector = %+v, want %+v", job.Spec.PodSelector, wantSelector)
	}
	if job.Spec.Selector != nil {
		t.Errorf("node selector = %+v, want none", job.Spec.Selector)
	}
	wantLabels := map[string]string{"app": "cs", "controller.kubernetes.io/hash": hash}
	if !maps.Equal(job.Labels, wantLabels) || len(job.Annotations) != 0 {
		t.Errorf("job labels %v, annotations %v; want labels %v and no annotations", job.Labels, job.Annotations, wantLabels)
	}
	if sc := job.Spec.SandboxConfig; sc == nil || !maps.Equal(sc.Labels, wantLabels) ||
		!maps.Equal(sc.Annotations, map[string]string{"example.com/snapshotter": "lazy"}) {
		t.Errorf("sandboxConfig = %+v, want the job's labels and the template's annotations", sc)
	}
	if job.Spec.Parallelism == nil || *job.Spec.Parallelism != intstr.FromInt32(2) {
		t.Errorf("parallelism = %v, want 2 from the field", job.Spec.Parallelism)
	}
	if p := job.Spec.PullPolicy; p == nil || ptr.Deref(p.TimeoutSeconds, 0) != 120 || ptr.Deref(p.BackoffLimit, 0) != 1 {
		t.Errorf("pullPolicy = %+v, want timeout 120 from the annotation and backoffLimit 1", p)
	}
	if cp := job.Spec.CompletionPolicy; cp.Type != appsv1beta1.Always || ptr.Deref(cp.TTLSecondsAfterFinished, 0) != 600 || cp.ActiveDeadlineSeconds != nil {
		t.Errorf("completionPolicy = %+v, want Always with ttl 600", cp)
	}
	if !slices.Equal(job.Spec.PullSecrets, []string{"reg-a", "reg-b"}) {
		t.Errorf("pullSecrets = %v, want [reg-a reg-b]", job.Spec.PullSecrets)
	}
	if got := f.revisionLabels(r.update)[appsv1beta1.ImagePreDownloadCreatedKey]; got != "true" {
		t.Errorf("revision label %s = %q, want \"true\"", appsv1beta1.ImagePreDownloadCreatedKey, got)
	}
	if labels := f.revisionLabels(r.current); predownloadLabelled(labels) {
		t.Errorf("the current revision was labelled too: %v", labels)
	}
	events := f.events()
	if want := "Normal CreatedImagePullJob created ImagePullJob " + job.Name + " for image: img:v2"; !slices.Contains(events, want) {
		t.Errorf("events = %q, want %q", events, want)
	}
	// The rollout goes on in the same sync, after the job exists.
	if podWritesBeforeJob != 0 {
		t.Errorf("%d pod writes before the job was created, want none", podWritesBeforeJob)
	}
	if len(f.actions("update", "pods")) == 0 {
		t.Error("no pod was updated in place")
	}
}

func TestPreDownloadDefaults(t *testing.T) {
	r := newPreDownloadRollout(t)
	f := newFixture(t, withPreDownload, r.objects()...)
	f.sync(r.cs)
	jobs := f.createdJobs()
	if len(jobs) != 1 {
		t.Fatalf("created %d ImagePullJobs, want 1", len(jobs))
	}
	spec := jobs[0].Spec
	if *spec.Parallelism != intstr.FromInt32(1) || *spec.PullPolicy.TimeoutSeconds != 300 || spec.PullSecrets != nil {
		t.Errorf("parallelism %v, timeout %d, secrets %v; want 1, 300, none", spec.Parallelism, *spec.PullPolicy.TimeoutSeconds, spec.PullSecrets)
	}
}

func TestPreDownloadEveryNewContainer(t *testing.T) {
	r := newPreDownloadRollout(t)
	r.cs.Spec.Template.Spec.Containers[1].Image = "side:v2"
	r.update = revisionOf(t, r.cs, 2)
	f := newFixture(t, withPreDownload, r.objects()...)
	f.sync(r.cs)
	var got []string
	for _, job := range f.createdJobs() {
		got = append(got, strings.TrimPrefix(job.Name, r.update.Name+"-")+"="+job.Spec.Image)
	}
	if want := []string{"c=img:v2", "side=side:v2"}; !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
}

// predownloadLabelled reports whether labels carry either bookkeeping label.
func predownloadLabelled(labels map[string]string) bool {
	_, created := labels[appsv1beta1.ImagePreDownloadCreatedKey]
	_, ignored := labels[appsv1beta1.ImagePreDownloadIgnoredKey]
	return created || ignored
}

func TestPreDownloadIgnoredWhenNothingIsGained(t *testing.T) {
	tests := []struct {
		name      string
		replicas  int32
		mutate    func(*appsv1beta1.CloneSet)
		wantJobs  int
		wantLabel string
	}{
		{name: "pods are recreated", replicas: 5, mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreateCloneSetPodUpdateStrategyType
		}, wantLabel: appsv1beta1.ImagePreDownloadIgnoredKey},
		{name: "three replicas", replicas: 3, wantLabel: appsv1beta1.ImagePreDownloadIgnoredKey},
		{name: "four replicas", replicas: 4, wantJobs: 1, wantLabel: appsv1beta1.ImagePreDownloadCreatedKey},
		{name: "maxUnavailable covers every pod", replicas: 5, mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		}, wantLabel: appsv1beta1.ImagePreDownloadIgnoredKey},
		// 90% of 5 rounds down to 4 here, although the rollout itself rounds it up to 5.
		{name: "maxUnavailable rounded down", replicas: 5, mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("90%"))
		}, wantJobs: 1, wantLabel: appsv1beta1.ImagePreDownloadCreatedKey},
		{name: "a partition holds pods back", replicas: 5, mutate: func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(5))
			cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(1))
		}, wantJobs: 1, wantLabel: appsv1beta1.ImagePreDownloadCreatedKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRollout(t, tc.replicas, func(cs *appsv1beta1.CloneSet) {
				cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
				if tc.mutate != nil {
					tc.mutate(cs)
				}
			})
			f := newFixture(t, withPreDownload, r.objects()...)
			f.sync(r.cs)
			if got := len(f.createdJobs()); got != tc.wantJobs {
				t.Errorf("created %d ImagePullJobs, want %d", got, tc.wantJobs)
			}
			labels := f.revisionLabels(r.update)
			if labels[tc.wantLabel] != "true" {
				t.Errorf("revision labels %v, want %s", labels, tc.wantLabel)
			}
			for _, other := range []string{appsv1beta1.ImagePreDownloadIgnoredKey, appsv1beta1.ImagePreDownloadCreatedKey} {
				if _, ok := labels[other]; ok && other != tc.wantLabel {
					t.Errorf("revision labels %v also carry %s", labels, other)
				}
			}
		})
	}
}

// A change the pods cannot take in place (here their env) recreates them, so there is no
// node to pull ahead on.
func TestPreDownloadIgnoredForChangesNotInPlace(t *testing.T) {
	r := newPreDownloadRollout(t)
	r.cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	r.update = revisionOf(t, r.cs, 2)
	f := newFixture(t, withPreDownload, r.objects()...)
	f.sync(r.cs)
	if got := len(f.createdJobs()); got != 0 {
		t.Errorf("created %d ImagePullJobs, want none", got)
	}
	if labels := f.revisionLabels(r.update); labels[appsv1beta1.ImagePreDownloadIgnoredKey] != "true" {
		t.Errorf("revision labels %v, want %s", labels, appsv1beta1.ImagePreDownloadIgnoredKey)
	}
}

func TestPreDownloadWaitsForUpdatedReadyPods(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*rollout)
		want   bool
	}{
		{name: "too few ready", mutate: func(r *rollout) {
			r.cs.Status.UpdateRevision, r.cs.Status.UpdatedReadyReplicas = r.update.Name, 1
		}},
		{name: "enough ready", mutate: func(r *rollout) {
			r.cs.Status.UpdateRevision, r.cs.Status.UpdatedReadyReplicas = r.update.Name, 2
		}, want: true},
		// The counts of a status naming another update revision are not this revision's.
		{name: "ready pods of another revision", mutate: func(r *rollout) {
			r.cs.Status.UpdateRevision, r.cs.Status.UpdatedReadyReplicas = r.current.Name, 5
		}},
	}
	for _, form := range []struct {
		name string
		set  func(*appsv1beta1.CloneSet)
	}{
		{"field", func(cs *appsv1beta1.CloneSet) {
			cs.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy = &appsv1beta1.InPlaceUpdateStrategy{ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](2)}
		}},
		{"annotation", func(cs *appsv1beta1.CloneSet) {
			cs.Annotations = map[string]string{appsv1beta1.ImagePreDownloadMinUpdatedReadyPods: "2"}
		}},
	} {
		for _, tc := range tests {
			t.Run(form.name+"/"+tc.name, func(t *testing.T) {
				r := newPreDownloadRollout(t, form.set)
				tc.mutate(r)
				f := newFixture(t, withPreDownload, r.objects()...)
				f.sync(r.cs)
				if got := len(f.createdJobs()) == 1; got != tc.want {
					t.Errorf("job created = %v, want %v", got, tc.want)
				}
				if got := predownloadLabelled(f.revisionLabels(r.update)); got != tc.want {
					t.Errorf("revision labelled = %v, want %v", got, tc.want)
				}
			})
		}
	}
}

func TestPreDownloadOff(t *testing.T) {
	tests := []struct {
		name string
		opt  fixtureOption
	}{
		{name: "gate off", opt: fixtureOption{imagePullJobs: true}},
		{name: "ImagePullJobs not served", opt: fixtureOption{gates: preDownloadOn}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newPreDownloadRollout(t)
			f := newFixture(t, tc.opt, r.objects()...)
			f.sync(r.cs)
			if got := len(f.actions("create", "imagepulljobs")) + len(f.actions("list", "imagepulljobs")); got != 0 {
				t.Errorf("%d ImagePullJob requests, want none", got)
			}
			if got := f.actions("patch", "controllerrevisions"); len(got) != 0 {
				t.Errorf("revisions patched: %v", got)
			}
		})
	}
}

func TestPreDownloadLeavesLabelledRevisionsAlone(t *testing.T) {
	for _, label := range []string{appsv1beta1.ImagePreDownloadCreatedKey, appsv1beta1.ImagePreDownloadIgnoredKey} {
		t.Run(label, func(t *testing.T) {
			r := newPreDownloadRollout(t)
			r.update.Labels[label] = "true"
			f := newFixture(t, withPreDownload, r.objects()...)
			f.sync(r.cs)
			if got := len(f.createdJobs()); got != 0 {
				t.Errorf("created %d ImagePullJobs, want none", got)
			}
			if got := f.actions("patch", "controllerrevisions"); len(got) != 0 {
				t.Errorf("revisions patched: %v", got)
			}
		})
	}
}

func TestPreDownloadExistingJobCountsAsCreated(t *testing.T) {
	r := newPreDownloadRollout(t)
	// An earlier sync created the job, then stopped before labelling the revision; the
	// cache has not seen the job yet, so only the API server knows it.
	existing := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: r.update.Name + "-c", Namespace: testNamespace}}
	f := newFixture(t, withPreDownload, r.objects()...)
	if _, err := f.bosunClient.AppsV1beta1().ImagePullJobs(testNamespace).Create(f.ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync(r.cs)
	if got := len(f.createdJobs()); got != 2 {
		t.Fatalf("%d ImagePullJob creates, want the test's and the controller's", got)
	}
	if labels := f.revisionLabels(r.update); labels[appsv1beta1.ImagePreDownloadCreatedKey] != "true" {
		t.Errorf("revision labels %v, want %s", labels, appsv1beta1.ImagePreDownloadCreatedKey)
	}
	for _, e := range f.events() {
		if strings.Contains(e, "ImagePullJob") {
			t.Errorf("event %q for a job that existed", e)
		}
	}
}

func TestPreDownloadCreateFailureIsRetried(t *testing.T) {
	r := newPreDownloadRollout(t)
	f := newFixture(t, withPreDownload, r.objects()...)
	f.bosunClient.PrependReactor("create", "imagepulljobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	err := f.c.syncCloneSet(f.ctx, key(r.cs))
	if err == nil || !strings.Contains(err.Error(), "pre-downloading images") {
		t.Fatalf("sync error = %v, want the failed create", err)
	}
	if predownloadLabelled(f.revisionLabels(r.update)) {
		t.Error("revision labelled although its job is missing")
	}
	if n := countEvents(f.events(), "Normal FailedCreateImagePullJob failed to create ImagePullJob "+r.update.Name+"-c: "); n != 1 {
		t.Errorf("%d FailedCreateImagePullJob events, want 1", n)
	}
	// The failure did not hold the rollout back, nor count as a failed update.
	if len(f.actions("update", "pods")) == 0 {
		t.Error("no pod was updated in place")
	}
	if status := f.lastStatus(); status == nil || slices.ContainsFunc(status.Conditions, func(c appsv1beta1.CloneSetCondition) bool {
		return c.Type == appsv1beta1.CloneSetConditionFailedUpdate || c.Type == appsv1beta1.CloneSetConditionFailedScale
	}) {
		t.Errorf("status = %+v, want one without FailedUpdate or FailedScale", status)
	}
}

func TestPreDownloadJobsDeletedOnceCurrent(t *testing.T) {
	r := newPreDownloadRollout(t)
	other := newCS(5)
	other.Name, other.UID = "other", "uid-other"
	job := func(name string, owner *appsv1beta1.CloneSet) *appsv1beta1.ImagePullJob {
		return &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace, UID: types.UID("uid-job-" + name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, controllerKind)},
		}}
	}
	// A job OpenKruise made names the CloneSet in v1alpha1; it is the CloneSet's all the same.
	olderJob := job(r.current.Name+"-c", r.cs)
	olderJob.OwnerReferences[0].APIVersion = "apps.kruise.io/v1alpha1"
	jobs := []runtime.Object{job(r.update.Name+"-c", r.cs), job("other-job", other), olderJob}

	// While the current revision is not the update revision, the jobs stay.
	r.update.Labels[appsv1beta1.ImagePreDownloadCreatedKey] = "true"
	f := newFixture(t, withPreDownload, r.objects(jobs...)...)
	f.sync(r.cs)
	if got := f.actions("delete", "imagepulljobs"); len(got) != 0 {
		t.Errorf("jobs deleted mid-rollout: %v", got)
	}

	// Every pod updated: the status names the update revision current.
	r.cs.Status.CurrentRevision = r.update.Name
	for i, pod := range r.pods {
		r.pods[i] = newPod(r.cs, pod.Labels[appsv1beta1.CloneSetInstanceID], r.update)
	}
	f = newFixture(t, withPreDownload, r.objects(jobs...)...)
	f.sync(r.cs)
	if got, want := f.deleted("imagepulljobs"), slices.Sorted(slices.Values([]string{r.update.Name + "-c", r.current.Name + "-c"})); !slices.Equal(got, want) {
		t.Errorf("deleted ImagePullJobs %v, want %v (only the CloneSet's own)", got, want)
	}
	for _, a := range f.actions("delete", "imagepulljobs") {
		if p := a.(clienttesting.DeleteAction).GetDeleteOptions().Preconditions; p == nil || p.UID == nil {
			t.Errorf("delete of %s without a UID precondition", a.(clienttesting.DeleteAction).GetName())
		}
	}
	if got := len(f.createdJobs()); got != 0 {
		t.Errorf("created %d ImagePullJobs after the rollout, want none", got)
	}
}
