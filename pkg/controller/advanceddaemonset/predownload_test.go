package advanceddaemonset

import (
	"errors"
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

var preDownloadOn = map[featuregate.Feature]bool{features.PreDownloadImageForDaemonSetUpdate: true}

// preDownloadScenario is a DaemonSet with an app container "c" and a sidecar "side" whose
// template changed from img:v1 to img:v2 in "c" only, after its status reported all three
// nodes updated to the old revision: the state of the first sync after the change.
type preDownloadScenario struct {
	ds              *appsv1beta1.DaemonSet
	oldRev, current *appsv1.ControllerRevision
	objects         []runtime.Object
}

func newPreDownloadScenario(t *testing.T, mutate ...func(*appsv1beta1.DaemonSet)) *preDownloadScenario {
	t.Helper()
	old := newDS()
	old.Spec.Template.Spec.Containers = append(old.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "side:v1"})
	oldRev := revisionOf(t, old, 1)

	ds := old.DeepCopy()
	ds.Spec.Template.Spec.Containers[0].Image = "img:v2"
	ds.Generation = 2
	ds.Status = appsv1beta1.DaemonSetStatus{
		DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 3,
		NumberAvailable: 3, ObservedGeneration: 1, UpdateRevision: hashOf(old),
	}
	for _, m := range mutate {
		m(ds)
	}
	s := &preDownloadScenario{ds: ds, oldRev: oldRev, current: revisionOf(t, ds, 2)}
	s.objects = []runtime.Object{ds, oldRev, s.current}
	for _, node := range []string{"n1", "n2", "n3"} {
		s.objects = append(s.objects, newNode(node), newPod("p-"+node, ds, hashOf(old), node))
	}
	return s
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

func TestPreDownloadCreatesOneJobPerChangedContainer(t *testing.T) {
	s := newPreDownloadScenario(t, func(ds *appsv1beta1.DaemonSet) {
		ds.Annotations = map[string]string{
			appsv1beta1.ImagePreDownloadParallelismKey:    "2",
			appsv1beta1.ImagePreDownloadTimeoutSecondsKey: "120",
		}
		ds.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg-a"}, {Name: "reg-b"}}
	})
	f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, s.objects...)
	f.sync(s.ds)

	jobs := f.createdJobs()
	if len(jobs) != 1 {
		t.Fatalf("created %d ImagePullJobs, want 1 (only container c changed)", len(jobs))
	}
	job := jobs[0]
	hash := hashOf(s.ds)
	if job.Name != s.current.Name+"-c" || job.Namespace != testNamespace || job.Spec.Image != "img:v2" {
		t.Errorf("job %s/%s pulls %q, want %s/%s-c pulling img:v2", job.Namespace, job.Name, job.Spec.Image, testNamespace, s.current.Name)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != s.ds.UID || ref.Kind != "DaemonSet" || ref.APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("controller ref = %+v, want the DaemonSet", ref)
	}
	wantSelector := metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "ds"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: appsv1beta1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn,
			Values: []string{s.current.Name, hash},
		}},
	}
	if job.Spec.PodSelector == nil || !reflect.DeepEqual(job.Spec.PodSelector.LabelSelector, wantSelector) {
		t.Errorf("podSelector = %+v, want %+v", job.Spec.PodSelector, wantSelector)
	}
	if job.Spec.Selector != nil {
		t.Errorf("node selector = %+v, want none", job.Spec.Selector)
	}
	if job.Spec.Parallelism == nil || *job.Spec.Parallelism != intstr.FromInt32(2) {
		t.Errorf("parallelism = %v, want 2 from the annotation", job.Spec.Parallelism)
	}
	if p := job.Spec.PullPolicy; p == nil || ptr.Deref(p.TimeoutSeconds, 0) != 120 || ptr.Deref(p.BackoffLimit, 0) != 1 {
		t.Errorf("pullPolicy = %+v, want timeout 120 and backoffLimit 1", p)
	}
	if cp := job.Spec.CompletionPolicy; cp.Type != appsv1beta1.Always || ptr.Deref(cp.TTLSecondsAfterFinished, 0) != 600 || cp.ActiveDeadlineSeconds != nil {
		t.Errorf("completionPolicy = %+v, want Always with ttl 600", cp)
	}
	if !slices.Equal(job.Spec.PullSecrets, []string{"reg-a", "reg-b"}) {
		t.Errorf("pullSecrets = %v, want [reg-a reg-b]", job.Spec.PullSecrets)
	}
	if job.Labels["app"] != "ds" || job.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != hash {
		t.Errorf("job labels = %v, want the template's and the revision hash", job.Labels)
	}
	if got := f.revisionLabels(s.current)[appsv1beta1.ImagePreDownloadCreatedKey]; got != "true" {
		t.Errorf("revision label %s = %q, want \"true\"", appsv1beta1.ImagePreDownloadCreatedKey, got)
	}
	if _, ok := f.revisionLabels(s.oldRev)[appsv1beta1.ImagePreDownloadCreatedKey]; ok {
		t.Error("the old revision was labelled too")
	}
	want := "Normal CreatedImagePullJob created ImagePullJob " + job.Name + " for image: img:v2"
	if events := f.events(); !slices.Contains(events, want) {
		t.Errorf("events = %q, want %q", events, want)
	}
}

func TestPreDownloadDefaults(t *testing.T) {
	s := newPreDownloadScenario(t, func(ds *appsv1beta1.DaemonSet) {
		// Unparsable values fall back to the defaults rather than failing the job.
		ds.Annotations = map[string]string{appsv1beta1.ImagePreDownloadTimeoutSecondsKey: "soon"}
	})
	f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, s.objects...)
	f.sync(s.ds)
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
	s := newPreDownloadScenario(t, func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.Template.Spec.Containers = append(ds.Spec.Template.Spec.Containers, corev1.Container{Name: "extra", Image: "side:v1"})
	})
	f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, s.objects...)
	f.sync(s.ds)
	var got []string
	for _, job := range f.createdJobs() {
		got = append(got, strings.TrimPrefix(job.Name, s.current.Name+"-")+"="+job.Spec.Image)
	}
	// "extra" is new by name even though "side" ran its image: pods are matched by container.
	if want := []string{"c=img:v2", "extra=side:v1"}; !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
}

func TestPreDownloadIgnoredWhenEveryPodRollsAtOnce(t *testing.T) {
	tests := []struct {
		name           string
		maxUnavailable intstr.IntOrString
		partition      *intstr.IntOrString
		wantJobs       int
		wantLabel      string
	}{
		{name: "maxUnavailable covers every node", maxUnavailable: intstr.FromInt32(3), wantLabel: appsv1beta1.ImagePreDownloadIgnoredKey},
		{name: "maxUnavailable 100%", maxUnavailable: intstr.FromString("100%"), wantLabel: appsv1beta1.ImagePreDownloadIgnoredKey},
		{name: "a partition holds pods back", maxUnavailable: intstr.FromInt32(3), partition: ptr.To(intstr.FromInt32(1)), wantJobs: 1, wantLabel: appsv1beta1.ImagePreDownloadCreatedKey},
		{name: "batches smaller than the DaemonSet", maxUnavailable: intstr.FromInt32(2), wantJobs: 1, wantLabel: appsv1beta1.ImagePreDownloadCreatedKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newPreDownloadScenario(t, func(ds *appsv1beta1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &tc.maxUnavailable
				ds.Spec.UpdateStrategy.RollingUpdate.Partition = tc.partition
			})
			f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, s.objects...)
			f.sync(s.ds)
			if got := len(f.createdJobs()); got != tc.wantJobs {
				t.Errorf("created %d ImagePullJobs, want %d", got, tc.wantJobs)
			}
			labels := f.revisionLabels(s.current)
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

func TestPreDownloadIgnoresTheFirstRevision(t *testing.T) {
	ds := newDS()
	ds.Spec.Template.Spec.Containers[0].Image = "img:v2"
	current := revisionOf(t, ds, 1)
	f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, ds, current, newNode("n1"), newNode("n2"))
	f.sync(ds)
	if jobs := f.createdJobs(); len(jobs) != 0 {
		t.Errorf("created %d ImagePullJobs for a DaemonSet's first pods, want none", len(jobs))
	}
	if labels := f.revisionLabels(current); labels[appsv1beta1.ImagePreDownloadIgnoredKey] != "true" {
		t.Errorf("revision labels %v, want %s", labels, appsv1beta1.ImagePreDownloadIgnoredKey)
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
			s := newPreDownloadScenario(t)
			f := newFixture(t, tc.opt, s.objects...)
			f.sync(s.ds)
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
			s := newPreDownloadScenario(t)
			s.current.Labels[label] = "true"
			f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, s.objects...)
			f.sync(s.ds)
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
	s := newPreDownloadScenario(t)
	// An earlier sync created the job, then stopped before labelling the revision; the
	// cache has not seen the job yet, so only the API server knows it.
	existing := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: s.current.Name + "-c", Namespace: testNamespace}}
	f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, s.objects...)
	if _, err := f.bosunClient.AppsV1beta1().ImagePullJobs(testNamespace).Create(f.ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync(s.ds)
	if got := len(f.createdJobs()); got != 2 {
		t.Fatalf("%d ImagePullJob creates, want the test's and the controller's", got)
	}
	if labels := f.revisionLabels(s.current); labels[appsv1beta1.ImagePreDownloadCreatedKey] != "true" {
		t.Errorf("revision labels %v, want %s", labels, appsv1beta1.ImagePreDownloadCreatedKey)
	}
	for _, e := range f.events() {
		if strings.Contains(e, "ImagePullJob") {
			t.Errorf("event %q for a job that existed", e)
		}
	}
}

func TestPreDownloadCreateFailureIsRetried(t *testing.T) {
	s := newPreDownloadScenario(t)
	f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, s.objects...)
	f.bosunClient.PrependReactor("create", "imagepulljobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	err := f.c.syncDaemonSet(f.ctx, key(s.ds))
	if err == nil || !strings.Contains(err.Error(), "pre-downloading images") {
		t.Fatalf("sync error = %v, want the failed create", err)
	}
	if _, ok := f.revisionLabels(s.current)[appsv1beta1.ImagePreDownloadCreatedKey]; ok {
		t.Error("revision labelled created although its job is missing")
	}
	if !hasEvent(f.events(), "Normal FailedCreateImagePullJob failed to create ImagePullJob "+s.current.Name+"-c: ") {
		t.Error("no FailedCreateImagePullJob event")
	}
	// The failure did not hold the rollout back.
	if len(f.deletedPods()) == 0 {
		t.Error("no old pod was replaced")
	}
}

func TestPreDownloadJobsDeletedOnceFullyUpdated(t *testing.T) {
	s := newPreDownloadScenario(t)
	ds := s.ds
	ds.Status.UpdateRevision = hashOf(ds)
	var objects []runtime.Object
	for _, obj := range s.objects {
		if pod, ok := obj.(*corev1.Pod); ok {
			obj = newPod(pod.Name, ds, hashOf(ds), pod.Spec.NodeName)
		}
		objects = append(objects, obj)
	}
	other := newDS()
	other.Name, other.UID = "other", "uid-other"
	job := func(name string, owner *appsv1beta1.DaemonSet) *appsv1beta1.ImagePullJob {
		return &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace, UID: types.UID("uid-job-" + name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, controllerKind)},
		}}
	}
	// A job an older bosun made names the DaemonSet in v1alpha1; it is the DaemonSet's all the same.
	olderJob := job(s.oldRev.Name+"-c", ds)
	withAlphaOwner(olderJob)
	objects = append(objects, job(s.current.Name+"-c", ds), job("other-job", other), olderJob)

	// While pods still wait for the update, the jobs stay.
	waiting := ds.DeepCopy()
	waiting.Status.UpdatedNumberScheduled = 2
	f := newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, slices.Concat(objects[1:], []runtime.Object{waiting})...)
	f.sync(waiting)
	if got := f.actions("delete", "imagepulljobs"); len(got) != 0 {
		t.Errorf("jobs deleted mid-rollout: %v", got)
	}

	f = newFixture(t, fixtureOption{gates: preDownloadOn, imagePullJobs: true}, objects...)
	f.sync(ds)
	var deleted []string
	for _, a := range f.actions("delete", "imagepulljobs") {
		deleted = append(deleted, a.(clienttesting.DeleteAction).GetName())
	}
	slices.Sort(deleted)
	if want := slices.Sorted(slices.Values([]string{s.current.Name + "-c", s.oldRev.Name + "-c"})); !slices.Equal(deleted, want) {
		t.Errorf("deleted ImagePullJobs %v, want %v (only the DaemonSet's own)", deleted, want)
	}
	if got := len(f.createdJobs()); got != 0 {
		t.Errorf("created %d ImagePullJobs after the rollout, want none", got)
	}
}
