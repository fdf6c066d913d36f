package imagepulljob

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/imagepulljob/jobutil"
	"github.com/bosun-dev/bosun/pkg/controller/queue/queuetest"
)

// unfinishedHolders returns the NodeImages holding a tag of the job without a final
// status of its version.
func (f *fixture) unfinishedHolders(uid string, image, tag string, nodes ...string) []string {
	var out []string
	for _, node := range nodes {
		ni := f.nodeImage(node)
		t := findTag(ni.Spec.Images[image].Tags, tag)
		if t == nil || !ownsTag(t, typesUID(uid)) {
			continue
		}
		st := tagStatus(ni, image, tag)
		if st == nil || st.Version != t.Version || (st.Phase != appsv1beta1.ImagePhaseSucceeded && st.Phase != appsv1beta1.ImagePhaseFailed) {
			out = append(out, node)
		}
	}
	return out
}

func TestFanOutRespectsParallelismAndCompletes(t *testing.T) {
	f := newFixture(t, newNodeImage("n1", nil), newNodeImage("n2", nil), newNodeImage("n3", nil),
		newJob("job", "nginx:1.25"))
	nodes := []string{"n1", "n2", "n3"}

	f.sync("job")
	if got := f.unfinishedHolders("uid-job", "nginx", "1.25", nodes...); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("after the first sync the unfinished holders are %v, want [n1]", got)
	}
	tag := f.jobTag("n1", "nginx", "1.25")
	if tag.Version != 0 || tag.CreatedAt == nil || !tag.CreatedAt.Time.Equal(t0) || tag.ImagePullPolicy != appsv1beta1.PullIfNotPresent {
		t.Errorf("tag = %+v, want version 0, createdAt now, IfNotPresent", tag)
	}
	if want := jobutil.OwnerReference(f.job("job")); !slices.Equal(tag.OwnerReferences, []corev1.ObjectReference{want}) {
		t.Errorf("owner references = %v, want [%v]", tag.OwnerReferences, want)
	}
	if p := tag.PullPolicy; p == nil || ptr.Deref(p.TimeoutSeconds, 0) != 600 || ptr.Deref(p.BackoffLimit, 0) != 3 || p.TTLSecondsAfterFinished == nil {
		t.Errorf("pull policy = %+v, want timeout 600, backoff 3 and a ttl", p)
	}
	status := f.job("job").Status
	if status.Desired != 3 || status.Active != 0 || status.Message != "job is running, progress 0.0%" || status.StartTime == nil {
		t.Errorf("status = %+v, want desired 3, active 0, progress 0.0%%, a start time", status)
	}

	// n1 is pulling: no second node.
	f.sync("job")
	if got := f.unfinishedHolders("uid-job", "nginx", "1.25", nodes...); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("while n1 pulls the unfinished holders are %v, want [n1]", got)
	}
	if status := f.job("job").Status; status.Active != 1 {
		t.Errorf("active = %d, want 1", status.Active)
	}

	for i, node := range nodes {
		f.setTagStatus(node, "nginx", "1.25", 0, appsv1beta1.ImagePhaseSucceeded)
		f.sync("job")
		holders := f.unfinishedHolders("uid-job", "nginx", "1.25", nodes...)
		if i < 2 && !slices.Equal(holders, []string{nodes[i+1]}) {
			t.Fatalf("after %s succeeded the unfinished holders are %v, want [%s]", node, holders, nodes[i+1])
		}
		if i == 2 && len(holders) != 0 {
			t.Fatalf("after all succeeded the unfinished holders are %v", holders)
		}
	}
	status = f.job("job").Status
	if status.Succeeded != 3 || status.Failed != 0 || status.Active != 0 || status.CompletionTime == nil || status.Message != "job has completed" {
		t.Errorf("status = %+v, want succeeded 3 and completed", status)
	}
	if got := f.job("job").Status.Message; got != jobutil.MessageCompleted {
		t.Errorf("message %q", got)
	}
}

func TestParallelismZeroPauses(t *testing.T) {
	zero := intstr.FromString("0")
	f := newFixture(t, newNodeImage("n1", nil), newJob("job", "nginx", func(j *appsv1beta1.ImagePullJob) { j.Spec.Parallelism = &zero }))
	f.sync("job")
	if tag := f.jobTag("n1", "nginx", "latest"); tag != nil {
		t.Errorf("a paused job added tag %+v", tag)
	}
}

func TestDeadlineFailsUnfinishedNodes(t *testing.T) {
	f := newFixture(t, newNodeImage("n1", nil), newNodeImage("n2", nil), newNodeImage("n3", nil),
		newJob("job", "nginx:1.25", withTimeout(10), withDeadline(15)))
	f.sync("job")
	if d := f.queue.Delayed(); !slices.Contains(d, queuetest.Delayed{Key: "ns/job", Delay: 15 * time.Second}) {
		t.Errorf("delayed keys = %v, want ns/job after 15s (the deadline)", d)
	}
	f.setTagStatus("n1", "nginx", "1.25", 0, appsv1beta1.ImagePhaseSucceeded)
	f.sync("job") // n2 gets the tag and pulls forever
	f.clock.Step(16 * time.Second)
	f.sync("job")
	status := f.job("job").Status
	if status.CompletionTime == nil || status.Message != "job exceeds activeDeadlineSeconds" {
		t.Fatalf("status = %+v, want completed with the deadline message", status)
	}
	if status.Succeeded != 1 || status.Failed != 2 || status.Active != 0 || !slices.Equal(status.FailedNodes, []string{"n2", "n3"}) {
		t.Errorf("status = %+v, want succeeded 1, failed 2 [n2 n3], active 0", status)
	}
}

func TestTTLDeletesCompletedJob(t *testing.T) {
	job := newJob("job", "nginx", withTTL(5))
	job.Status.CompletionTime = &metav1.Time{Time: t0}
	f := newFixture(t, job)
	f.sync("job")
	if f.jobGone("job") {
		t.Fatal("deleted before its ttl")
	}
	if got := f.job("job").Finalizers; len(got) != 0 {
		t.Errorf("finalizers of a completed job = %v, want none", got)
	}
	if d := f.queue.Delayed(); !slices.Contains(d, queuetest.Delayed{Key: "ns/job", Delay: 5 * time.Second}) {
		t.Errorf("delayed = %v, want ns/job after 5s", d)
	}
	f.clock.Step(5 * time.Second)
	f.sync("job")
	if !f.jobGone("job") {
		t.Error("not deleted after its ttl")
	}
}

// A child of an ImageListPullJob goes with its owner, never by its own time to live: the
// owner would create it again and pull the image once more. The owner may be written in
// either version; an ImageListPullJob of another group is not the owner meant.
func TestTTLLeavesImageListPullJobChildren(t *testing.T) {
	for _, tc := range []struct {
		apiVersion string
		kept       bool
	}{
		{"apps.kruise.io/v1beta1", true},
		{"apps.kruise.io/v1alpha1", true},
		{"example.com/v1", false},
	} {
		t.Run(tc.apiVersion, func(t *testing.T) {
			job := newJob("child", "nginx", withTTL(5))
			job.Status.CompletionTime = &metav1.Time{Time: t0}
			job.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: tc.apiVersion, Kind: "ImageListPullJob", Name: "list", UID: "uid-list",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}
			f := newFixture(t, job)
			f.clock.Step(time.Minute)
			f.sync("child")
			if gone := f.jobGone("child"); gone == tc.kept {
				t.Fatalf("child of %s gone = %v, want %v", tc.apiVersion, gone, !tc.kept)
			}
			if !tc.kept {
				return
			}
			if got := f.job("child").Finalizers; len(got) != 0 {
				t.Errorf("finalizers of a completed child = %v, want none: its secret copies are still released", got)
			}
			if d := f.queue.Delayed(); len(d) != 0 {
				t.Errorf("delayed = %v, want nothing: the child waits for its owner", d)
			}
		})
	}
}

func TestNeverJobWithNoTargets(t *testing.T) {
	f := newFixture(t, newJob("job", "nginx", withNever()))
	f.sync("job")
	status := f.job("job").Status
	if status.CompletionTime != nil || status.Message != "job is running, no progress" {
		t.Errorf("status = %+v, want running with no progress", status)
	}
	// An Always job with no targets completes.
	f.add(newJob("always", "nginx"))
	f.sync("always")
	if status := f.job("always").Status; status.CompletionTime == nil || status.Message != "job has completed" {
		t.Errorf("status = %+v, want completed", status)
	}
}

func TestAddsMissingFinalizer(t *testing.T) {
	job := newJob("job", "nginx")
	job.Finalizers = nil
	f := newFixture(t, job)
	f.sync("job")
	if got := f.job("job").Finalizers; !slices.Equal(got, []string{appsv1beta1.ImagePullJobProtectionFinalizer}) {
		t.Errorf("finalizers = %v", got)
	}
}

func TestSharedTagBumpsVersion(t *testing.T) {
	ni := newNodeImage("n1", nil)
	other := newJob("other", "nginx:1.25")
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{{
		Tag: "1.25", Version: 2, CreatedAt: &metav1.Time{Time: t0.Add(-time.Hour)},
		OwnerReferences: []corev1.ObjectReference{jobutil.OwnerReference(other)},
		PullPolicy:      &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3), TTLSecondsAfterFinished: ptr.To[int32](1000)},
	}}}}
	f := newFixture(t, ni, other, newJob("job", "docker.io/library/nginx:1.25", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.ImagePullPolicy = appsv1beta1.PullAlways
	}))
	f.setTagStatus("n1", "nginx", "1.25", 2, appsv1beta1.ImagePhaseSucceeded)
	f.sync("job")
	tag := f.jobTag("n1", "nginx", "1.25")
	if tag.Version != 3 || len(tag.OwnerReferences) != 2 || !tag.CreatedAt.Time.Equal(t0) || tag.ImagePullPolicy != appsv1beta1.PullAlways {
		t.Fatalf("tag = %+v, want version 3, two owners, createdAt now, Always", tag)
	}
	// Both jobs count the new status.
	f.setTagStatus("n1", "nginx", "1.25", 3, appsv1beta1.ImagePhaseSucceeded)
	f.sync("job")
	f.sync("other")
	for _, name := range []string{"job", "other"} {
		if st := f.job(name).Status; st.Succeeded != 1 || st.CompletionTime == nil {
			t.Errorf("%s status = %+v, want succeeded 1 and completed", name, st)
		}
	}
}

func TestNewTagVersionFollowsLeftoverStatus(t *testing.T) {
	ni := newNodeImage("n1", nil)
	ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{"nginx": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "latest", Version: 4, Phase: appsv1beta1.ImagePhaseSucceeded}}}}
	f := newFixture(t, ni, newJob("job", "nginx"))
	f.sync("job")
	if tag := f.jobTag("n1", "nginx", "latest"); tag == nil || tag.Version != 5 {
		t.Errorf("tag = %+v, want version 5", tag)
	}
}

func TestPolicyChangeReachesOwnedTags(t *testing.T) {
	f := newFixture(t, newNodeImage("n1", nil), newNodeImage("n2", nil), newJob("job", "nginx", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(2))
	}))
	f.sync("job")
	f.setTagStatus("n1", "nginx", "latest", 0, appsv1beta1.ImagePhaseSucceeded)
	f.setTagStatus("n2", "nginx", "latest", 0, appsv1beta1.ImagePhaseFailed)
	ttlBefore := *f.jobTag("n1", "nginx", "latest").PullPolicy.TTLSecondsAfterFinished

	job := f.job("job")
	job.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](1200)
	_, err := f.bosunClient.AppsV1beta1().ImagePullJobs(testNamespace).Update(f.ctx, job, metav1.UpdateOptions{})
	f.must(err)
	f.observe()
	f.sync("job")

	succeededTag, failedTag := f.jobTag("n1", "nginx", "latest"), f.jobTag("n2", "nginx", "latest")
	if *succeededTag.PullPolicy.TimeoutSeconds != 1200 || succeededTag.Version != 0 || *succeededTag.PullPolicy.TTLSecondsAfterFinished != ttlBefore {
		t.Errorf("succeeded tag = %+v, want timeout 1200, version 0 and its ttl kept", succeededTag.PullPolicy)
	}
	if *failedTag.PullPolicy.TimeoutSeconds != 1200 || failedTag.Version != 1 {
		t.Errorf("failed tag = %+v version %d, want timeout 1200 and version 1 (a new pull)", failedTag.PullPolicy, failedTag.Version)
	}
	if st := f.job("job").Status; st.CompletionTime != nil || st.Succeeded != 1 {
		t.Errorf("status = %+v, want running with one success", st)
	}
}

func TestSelectors(t *testing.T) {
	f := newFixture(t,
		newNodeImage("n1", map[string]string{"pool": "a"}), newNodeImage("n2", map[string]string{"pool": "b"}), newNodeImage("n3", nil),
		newJob("names", "nginx", func(j *appsv1beta1.ImagePullJob) {
			j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: []string{"n2", "missing"}}
		}),
		newJob("labels", "nginx", func(j *appsv1beta1.ImagePullJob) {
			j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}
		}),
		newJob("pods", "nginx", func(j *appsv1beta1.ImagePullJob) {
			j.Spec.PodSelector = &appsv1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		}),
		newJob("all", "nginx"),
		newPod("web-1", "n3", map[string]string{"app": "web"}, corev1.PodRunning),
		newPod("web-2", "", map[string]string{"app": "web"}, corev1.PodPending),
		newPod("web-3", "n1", map[string]string{"app": "web"}, corev1.PodSucceeded),
		newPod("db", "n2", map[string]string{"app": "db"}, corev1.PodRunning),
	)
	for name, want := range map[string][]string{"names": {"n2"}, "labels": {"n1"}, "pods": {"n3"}, "all": {"n1", "n2", "n3"}} {
		job := f.job(name)
		targets, err := f.c.targets(job)
		f.must(err)
		var got []string
		for _, ni := range targets {
			got = append(got, ni.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("targets of %s = %v, want %v", name, got, want)
		}
	}
}

func newPod(name, node string, labels map[string]string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func newSecret(namespace, name string, data string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(data)},
	}
}

func TestSecretsAreCopiedReferencedAndReleased(t *testing.T) {
	f := newFixture(t, newNodeImage("n1", nil), newSecret(testNamespace, "reg", `{"auths":{}}`),
		newJob("a", "reg.io/app:1", withPullSecrets("reg", "missing")), newJob("b", "reg.io/app:2", withPullSecrets("reg")))
	f.sync("a")
	copies, err := f.kubeClient.CoreV1().Secrets(secretsNamespace).List(f.ctx, metav1.ListOptions{})
	f.must(err)
	if len(copies.Items) != 1 {
		t.Fatalf("%d copies, want 1", len(copies.Items))
	}
	cp := copies.Items[0]
	if !regexp.MustCompile(`^reg-[0-9a-f]{6}$`).MatchString(cp.Name) {
		t.Errorf("copy name %q, want reg-<6 hex>", cp.Name)
	}
	wantAnnotations := map[string]string{
		"imagepulljobs.kruise.io/source-key": "ns/reg",
		"imagepulljobs.kruise.io/references": "ns/a",
		"imagepulljobs.kruise.io/mode":       "batch",
	}
	for k, v := range wantAnnotations {
		if cp.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, cp.Annotations[k], v)
		}
	}
	if string(cp.Data[corev1.DockerConfigJsonKey]) != `{"auths":{}}` || cp.Type != corev1.SecretTypeDockerConfigJson {
		t.Errorf("copy data/type = %v/%s", cp.Data, cp.Type)
	}
	refs := f.nodeImage("n1").Spec.Images["reg.io/app"].PullSecrets
	if !slices.Equal(refs, []appsv1beta1.ReferenceObject{{Namespace: secretsNamespace, Name: cp.Name}}) {
		t.Errorf("NodeImage pull secrets = %v, want the copy", refs)
	}

	// A second job shares the copy; the source's new data reaches it.
	source, err := f.kubeClient.CoreV1().Secrets(testNamespace).Get(f.ctx, "reg", metav1.GetOptions{})
	f.must(err)
	source.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"reg.io":{}}}`)
	_, err = f.kubeClient.CoreV1().Secrets(testNamespace).Update(f.ctx, source, metav1.UpdateOptions{})
	f.must(err)
	f.observe()
	f.sync("b")
	shared, err := f.kubeClient.CoreV1().Secrets(secretsNamespace).Get(f.ctx, cp.Name, metav1.GetOptions{})
	f.must(err)
	if got := shared.Annotations["imagepulljobs.kruise.io/references"]; got != "ns/a,ns/b" {
		t.Errorf("references = %q, want ns/a,ns/b", got)
	}
	if string(shared.Data[corev1.DockerConfigJsonKey]) != `{"auths":{"reg.io":{}}}` {
		t.Errorf("copy data not updated: %s", shared.Data[corev1.DockerConfigJsonKey])
	}

	// Deleting a releases its reference; deleting b removes the copy.
	for i, name := range []string{"a", "b"} {
		job := f.job(name)
		job.DeletionTimestamp = &metav1.Time{Time: t0}
		_, err := f.bosunClient.AppsV1beta1().ImagePullJobs(testNamespace).Update(f.ctx, job, metav1.UpdateOptions{})
		f.must(err)
		f.observe()
		f.sync(name)
		if got := f.job(name).Finalizers; len(got) != 0 {
			t.Errorf("finalizers of deleted job %s = %v", name, got)
		}
		left, err := f.kubeClient.CoreV1().Secrets(secretsNamespace).List(f.ctx, metav1.ListOptions{})
		f.must(err)
		if i == 0 && (len(left.Items) != 1 || left.Items[0].Annotations["imagepulljobs.kruise.io/references"] != "ns/b") {
			t.Errorf("after deleting a the copies are %v, want one referenced by ns/b", left.Items)
		}
		if i == 1 && len(left.Items) != 0 {
			t.Errorf("after deleting both jobs %d copies are left", len(left.Items))
		}
	}
}

func TestMissingSecretsNamespaceIsAnError(t *testing.T) {
	f := newFixture(t, newNodeImage("n1", nil), newSecret(testNamespace, "reg", "{}"), newJob("job", "nginx", withPullSecrets("reg")))
	f.must(f.kubeClient.CoreV1().Namespaces().Delete(f.ctx, secretsNamespace, metav1.DeleteOptions{}))
	f.observe()
	if err := f.c.syncJob(f.ctx, "ns/job"); err == nil {
		t.Error("sync succeeded without the secrets namespace")
	}
}

func TestWaitsForItsNodeImageWrites(t *testing.T) {
	f := newFixture(t, newNodeImage("n1", nil), newNodeImage("n2", nil), newJob("job", "nginx"))
	// The API server gives every update a new resource version.
	f.bosunClient.PrependReactor("update", "nodeimages", func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(clienttesting.UpdateAction).GetObject().(*appsv1beta1.NodeImage)
		rv, _ := strconv.Atoi(obj.ResourceVersion)
		obj.ResourceVersion = strconv.Itoa(rv + 1)
		return false, nil, nil
	})
	if err := f.c.syncJob(f.ctx, "ns/job"); err != nil {
		t.Fatal(err)
	}
	// The caches still show n1 without the tag: the sync must not hand it to another node.
	f.queue.Reset()
	if err := f.c.syncJob(f.ctx, "ns/job"); err != nil {
		t.Fatal(err)
	}
	if d := f.queue.Delayed(); !slices.Contains(d, queuetest.Delayed{Key: "ns/job", Delay: ExpectationRequeue}) {
		t.Errorf("delayed = %v, want ns/job after %v", d, ExpectationRequeue)
	}
	if tag := f.jobTag("n2", "nginx", "latest"); tag != nil {
		t.Errorf("n2 got a tag while n1's write was not observed")
	}
	f.observe()
	f.queue.Reset()
	f.sync("job")
	if d := f.queue.Delayed(); len(d) != 0 {
		t.Errorf("delayed = %v after the write was observed", d)
	}
}

// ownedInV1alpha1 is the reference an older bosun, or OpenKruise before 1.9, put on the
// tags of job.
func ownedInV1alpha1(job *appsv1beta1.ImagePullJob) corev1.ObjectReference {
	ref := jobutil.OwnerReference(job)
	ref.APIVersion = "apps.kruise.io/v1alpha1"
	return ref
}

// nodeImageWrites returns the writes the controller made to NodeImages.
func (f *fixture) nodeImageWrites() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.bosunClient.Actions() {
		if a.GetResource().Resource == "nodeimages" && (a.GetVerb() == "update" || a.GetVerb() == "patch") {
			out = append(out, a)
		}
	}
	return out
}

// A tag the job owns through a v1alpha1 reference is the job's: the job counts its status
// and leaves the NodeImage alone, reference and all.
func TestTagOwnedThroughV1alpha1ReferenceIsTheJobs(t *testing.T) {
	job := newJob("job", "nginx:1.25")
	ni := newNodeImage("n1", nil)
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{{
		Tag: "1.25", Version: 1, CreatedAt: &metav1.Time{Time: t0.Add(-time.Minute)},
		OwnerReferences: []corev1.ObjectReference{ownedInV1alpha1(job)},
		ImagePullPolicy: jobutil.ImagePullPolicy(job),
		PullPolicy:      jobutil.TagPullPolicy(job, func(int64) int64 { return 0 }),
	}}}}
	f := newFixture(t, ni, job)
	f.setTagStatus("n1", "nginx", "1.25", 1, appsv1beta1.ImagePhaseSucceeded)
	f.bosunClient.ClearActions()

	f.sync("job")
	if writes := f.nodeImageWrites(); len(writes) != 0 {
		t.Errorf("NodeImage writes = %v, want none: the tag is the job's already", writes)
	}
	tag := f.jobTag("n1", "nginx", "1.25")
	if want := []corev1.ObjectReference{ownedInV1alpha1(job)}; !slices.Equal(tag.OwnerReferences, want) || tag.Version != 1 {
		t.Errorf("tag = %+v, want version 1 and owner references %v", tag, want)
	}
	if st := f.job("job").Status; st.Desired != 1 || st.Succeeded != 1 || st.CompletionTime == nil {
		t.Errorf("status = %+v, want the node's success counted and the job completed", st)
	}
}

// A write the job makes for another reason (its policy changed) keeps the v1alpha1
// reference it found: the job is not added a second time, and the version of a reference
// is never rewritten.
func TestPolicyChangeKeepsV1alpha1Reference(t *testing.T) {
	job := newJob("job", "nginx:1.25")
	ni := newNodeImage("n1", nil)
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{{
		Tag: "1.25", Version: 1, CreatedAt: &metav1.Time{Time: t0.Add(-time.Minute)},
		OwnerReferences: []corev1.ObjectReference{ownedInV1alpha1(job)},
		ImagePullPolicy: jobutil.ImagePullPolicy(job),
		PullPolicy:      &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](300), BackoffLimit: ptr.To[int32](3), TTLSecondsAfterFinished: ptr.To[int32](1000)},
	}}}}
	f := newFixture(t, ni, job)
	f.setTagStatus("n1", "nginx", "1.25", 1, appsv1beta1.ImagePhaseFailed)

	f.sync("job")
	tag := f.jobTag("n1", "nginx", "1.25")
	if want := []corev1.ObjectReference{ownedInV1alpha1(job)}; !slices.Equal(tag.OwnerReferences, want) {
		t.Errorf("owner references = %v, want %v", tag.OwnerReferences, want)
	}
	if ptr.Deref(tag.PullPolicy.TimeoutSeconds, 0) != 600 || tag.Version != 2 {
		t.Errorf("tag = %+v (policy %+v), want the job's timeout 600 and version 2 (a new pull after the failure)", tag, tag.PullPolicy)
	}
}

// A job joining a tag another job owns through a v1alpha1 reference adds itself in
// v1beta1 and leaves the other's reference as it is.
func TestJoiningTagKeepsOthersV1alpha1Reference(t *testing.T) {
	other := newJob("other", "nginx:1.25")
	ni := newNodeImage("n1", nil)
	ni.Spec.Images = map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{{
		Tag: "1.25", Version: 2, CreatedAt: &metav1.Time{Time: t0.Add(-time.Hour)},
		OwnerReferences: []corev1.ObjectReference{ownedInV1alpha1(other)},
		PullPolicy:      &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3), TTLSecondsAfterFinished: ptr.To[int32](1000)},
	}}}}
	f := newFixture(t, ni, other, newJob("job", "nginx:1.25"))
	f.setTagStatus("n1", "nginx", "1.25", 2, appsv1beta1.ImagePhaseSucceeded)

	f.sync("job")
	tag := f.jobTag("n1", "nginx", "1.25")
	want := []corev1.ObjectReference{ownedInV1alpha1(other), jobutil.OwnerReference(f.job("job"))}
	if !slices.Equal(tag.OwnerReferences, want) || tag.Version != 3 {
		t.Errorf("tag = %+v, want version 3 and owner references %v", tag, want)
	}
	if want[1].APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("the joining job names itself in %s, want apps.kruise.io/v1beta1", want[1].APIVersion)
	}
}
