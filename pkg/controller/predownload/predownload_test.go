package predownload

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	appsv1beta1listers "github.com/bosun-dev/client-go/listers/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

const testNamespace = "ns"

var workloadKind = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "CloneSet"}

// workload is a CloneSet-like owner with its type set, as events need it.
func workload(name string) *appsv1beta1.CloneSet {
	return &appsv1beta1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: workloadKind.GroupVersion().String(), Kind: workloadKind.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name)},
	}
}

// template returns a pod template running the images, one container per name=image pair.
func template(images ...string) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	for _, pair := range images {
		name, image, _ := strings.Cut(pair, "=")
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: name, Image: image})
	}
	return t
}

// revision returns the ControllerRevision name recording template.
func revision(t *testing.T, name string, template *corev1.PodTemplateSpec) *appsv1.ControllerRevision {
	t.Helper()
	data, err := kruisepod.RevisionData(template)
	if err != nil {
		t.Fatal(err)
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: map[string]string{}},
		Data:       runtime.RawExtension{Raw: data},
	}
}

type fixture struct {
	ctx         context.Context
	kubeClient  *fake.Clientset
	bosunClient *bosunfake.Clientset
	recorder    *record.FakeRecorder
	jobs        cache.Indexer
	control     *Control
}

// newFixture returns a Control over fake clients; revisions go to the kube clientset,
// jobs to the bosun clientset and the job cache.
func newFixture(t *testing.T, revisions []*appsv1.ControllerRevision, jobs ...*appsv1beta1.ImagePullJob) *fixture {
	_, ctx := ktesting.NewTestContext(t)
	var kubeObjects, bosunObjects []runtime.Object
	for _, r := range revisions {
		kubeObjects = append(kubeObjects, r)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, job := range jobs {
		bosunObjects = append(bosunObjects, job)
		if err := indexer.Add(job); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{
		ctx:         ctx,
		kubeClient:  fake.NewClientset(kubeObjects...),
		bosunClient: bosunfake.NewSimpleClientset(bosunObjects...),
		recorder:    record.NewFakeRecorder(100),
		jobs:        indexer,
	}
	f.control = NewControl(f.kubeClient, f.bosunClient, f.recorder, appsv1beta1listers.NewImagePullJobLister(indexer))
	return f
}

func (f *fixture) events() []string {
	var events []string
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

func (f *fixture) labels(t *testing.T, name string) map[string]string {
	t.Helper()
	live, err := f.kubeClient.AppsV1().ControllerRevisions(testNamespace).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return live.Labels
}

func (f *fixture) createdJobs() []*appsv1beta1.ImagePullJob {
	var jobs []*appsv1beta1.ImagePullJob
	for _, a := range f.bosunClient.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "imagepulljobs" {
			jobs = append(jobs, a.(clienttesting.CreateAction).GetObject().(*appsv1beta1.ImagePullJob))
		}
	}
	return jobs
}

func rollout(owner *appsv1beta1.CloneSet, tmpl *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision) Rollout {
	return Rollout{
		Owner: owner, Kind: workloadKind,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: tmpl, Revision: rev, Hash: "abc12", HashLabel: "example.com/hash",
		Settings: Settings{Parallelism: 3, TimeoutSeconds: 60},
	}
}

func TestNewImages(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	old := []*appsv1.ControllerRevision{
		revision(t, "v1", template("app=img:v1", "side=side:v1")),
		revision(t, "v2", template("app=img:v2", "side=side:v1")),
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Data: runtime.RawExtension{Raw: []byte("{")}},
	}
	// img:v2 ran in app before; side:v1 is new to container extra; img:v3 to app.
	got := NewImages(ctx, template("extra=side:v1", "app=img:v3", "side=side:v1", "again=img:v2"), old)
	want := []ContainerImage{{"extra", "side:v1"}, {"app", "img:v3"}, {"again", "img:v2"}}
	if !slices.Equal(got, want) {
		t.Errorf("NewImages = %v, want %v", got, want)
	}
	if got := NewImages(ctx, template("app=img:v1"), nil); !slices.Equal(got, []ContainerImage{{"app", "img:v1"}}) {
		t.Errorf("without old revisions: %v, want every container", got)
	}
}

func TestCreateJobs(t *testing.T) {
	tmpl := template("app=img:v2", "side=side:v2")
	tmpl.Annotations = map[string]string{"a": "1"}
	tmpl.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}}
	rev := revision(t, "web-abc12", tmpl)
	owner := workload("web")
	f := newFixture(t, []*appsv1.ControllerRevision{rev})
	images := []ContainerImage{{"app", "img:v2"}, {"side", "side:v2"}}
	if err := f.control.CreateJobs(f.ctx, rollout(owner, tmpl, rev), images); err != nil {
		t.Fatal(err)
	}
	jobs := f.createdJobs()
	if len(jobs) != 2 || jobs[0].Name != "web-abc12-app" || jobs[1].Name != "web-abc12-side" || jobs[1].Spec.Image != "side:v2" {
		t.Fatalf("created %v, want web-abc12-app and web-abc12-side", jobs)
	}
	job := jobs[0]
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != owner.UID || ref.Kind != "CloneSet" || ref.APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("controller ref %+v, want the workload", ref)
	}
	wantLabels := map[string]string{"app": "web", "example.com/hash": "abc12"}
	if !maps.Equal(job.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", job.Labels, wantLabels)
	}
	sel := job.Spec.PodSelector.LabelSelector
	if sel.MatchLabels["app"] != "web" || len(sel.MatchExpressions) != 1 ||
		!slices.Equal(sel.MatchExpressions[0].Values, []string{"web-abc12", "abc12"}) ||
		sel.MatchExpressions[0].Key != appsv1beta1.ControllerRevisionHashLabelKey || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn {
		t.Errorf("podSelector %+v", sel)
	}
	if *job.Spec.Parallelism != intstr.FromInt32(3) || *job.Spec.PullPolicy.TimeoutSeconds != 60 || *job.Spec.PullPolicy.BackoffLimit != 1 ||
		job.Spec.CompletionPolicy.Type != appsv1beta1.Always || ptr.Deref(job.Spec.CompletionPolicy.TTLSecondsAfterFinished, 0) != 600 ||
		!slices.Equal(job.Spec.PullSecrets, []string{"reg"}) {
		t.Errorf("spec %+v", job.Spec)
	}
	if sc := job.Spec.SandboxConfig; sc == nil || !maps.Equal(sc.Labels, wantLabels) || !maps.Equal(sc.Annotations, tmpl.Annotations) {
		t.Errorf("sandboxConfig %+v", sc)
	}
	// The job must not share maps with the template it was made from.
	job.Labels["x"], job.Spec.SandboxConfig.Annotations["x"] = "y", "y"
	if _, leaked := tmpl.Labels["x"]; leaked {
		t.Error("the job's labels are the template's map")
	}
	if _, leaked := tmpl.Annotations["x"]; leaked {
		t.Error("the sandbox annotations are the template's map")
	}
	if got := f.labels(t, rev.Name); got[appsv1beta1.ImagePreDownloadCreatedKey] != "true" || !Handled(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Labels: got}}) {
		t.Errorf("revision labels %v, want %s", got, appsv1beta1.ImagePreDownloadCreatedKey)
	}
	want := []string{
		"Normal CreatedImagePullJob created ImagePullJob web-abc12-app for image: img:v2",
		"Normal CreatedImagePullJob created ImagePullJob web-abc12-side for image: side:v2",
	}
	if events := f.events(); !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}

func TestCreateJobsPartialFailureLeavesTheRevisionUnlabelled(t *testing.T) {
	tmpl := template("app=img:v2", "side=side:v2")
	rev := revision(t, "web-abc12", tmpl)
	f := newFixture(t, []*appsv1.ControllerRevision{rev})
	f.bosunClient.PrependReactor("create", "imagepulljobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.CreateAction).GetObject().(*appsv1beta1.ImagePullJob).Name == "web-abc12-app" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "imagepulljobs"}, "web-abc12-app", errors.New("disabled"))
		}
		return false, nil, nil
	})
	err := f.control.CreateJobs(f.ctx, rollout(workload("web"), tmpl, rev), []ContainerImage{{"app", "img:v2"}, {"side", "side:v2"}})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want the refusal", err)
	}
	if _, err := f.bosunClient.AppsV1beta1().ImagePullJobs(testNamespace).Get(f.ctx, "web-abc12-side", metav1.GetOptions{}); err != nil {
		t.Errorf("the other job was not created: %v", err)
	}
	if got := f.labels(t, rev.Name); len(got) != 0 {
		t.Errorf("revision labelled %v although a job is missing", got)
	}
	events := f.events()
	if len(events) != 2 || !strings.HasPrefix(events[0], "Normal FailedCreateImagePullJob failed to create ImagePullJob web-abc12-app: ") {
		t.Errorf("events %q, want the failure and the other job's creation", events)
	}
}

func TestIgnore(t *testing.T) {
	rev := revision(t, "web-abc12", template("app=img:v2"))
	f := newFixture(t, []*appsv1.ControllerRevision{rev})
	if Handled(rev) {
		t.Fatal("a fresh revision counts as handled")
	}
	if err := f.control.Ignore(f.ctx, rev); err != nil {
		t.Fatal(err)
	}
	got := f.labels(t, rev.Name)
	if got[appsv1beta1.ImagePreDownloadIgnoredKey] != "true" || len(got) != 1 {
		t.Errorf("labels %v, want only %s", got, appsv1beta1.ImagePreDownloadIgnoredKey)
	}
	for _, a := range f.kubeClient.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() != types.MergePatchType {
			t.Errorf("patch of type %s, want a merge patch", p.GetPatchType())
		}
	}
	if err := newFixture(t, nil).control.Ignore(f.ctx, rev); !apierrors.IsNotFound(err) {
		t.Errorf("labelling a missing revision: %v, want NotFound", err)
	}
}

func TestDeleteJobs(t *testing.T) {
	owner, other := workload("web"), workload("other")
	job := func(name string, owner *appsv1beta1.CloneSet) *appsv1beta1.ImagePullJob {
		return &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace, UID: types.UID("uid-" + name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, workloadKind)},
		}}
	}
	deleting := job("deleting", owner)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{"example.com/hold"}
	gone := job("gone", owner) // in the cache only
	elsewhere := job("elsewhere", owner)
	elsewhere.Namespace = "other-ns"
	f := newFixture(t, nil, job("mine", owner), job("theirs", other), deleting, elsewhere)
	if err := f.jobs.Add(gone); err != nil {
		t.Fatal(err)
	}
	if err := f.control.DeleteJobs(f.ctx, owner); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range f.bosunClient.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
			if p := d.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID != types.UID("uid-"+d.GetName()) {
				t.Errorf("delete of %s with preconditions %+v, want its UID", d.GetName(), p)
			}
		}
	}
	slices.Sort(deleted)
	if want := []string{"gone", "mine"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v (a job already gone is no error)", deleted, want)
	}

	f = newFixture(t, nil, job("mine", owner))
	f.bosunClient.PrependReactor("delete", "imagepulljobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	if err := f.control.DeleteJobs(f.ctx, owner); err == nil || !strings.Contains(err.Error(), "etcd is down") {
		t.Errorf("error %v, want the failed delete", err)
	}
}
