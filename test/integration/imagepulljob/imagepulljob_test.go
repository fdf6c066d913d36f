package imagepulljob

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// holdersWatch follows the test's NodeImages through one watch and records the most that
// held an unfinished tag of a job at the same time. One watch delivers the events of all
// NodeImages in the order the API server wrote them, so the count is never that of a
// state that did not exist.
type holdersWatch struct {
	mu         sync.Mutex
	unfinished map[string]bool
	most       int
}

func (e *testEnv) watchHolders(t *testing.T, image, tag, jobName string) *holdersWatch {
	t.Helper()
	w, err := e.Bosun.AppsV1alpha1().NodeImages().Watch(e.Ctx, metav1.ListOptions{LabelSelector: framework.OwnerNamespaceLabel + "=" + e.Namespace})
	if err != nil {
		t.Fatalf("watching NodeImages: %v", err)
	}
	h := &holdersWatch{unfinished: map[string]bool{}}
	done := make(chan struct{})
	t.Cleanup(func() { w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			ni, ok := ev.Object.(*nodeImage)
			if !ok {
				continue
			}
			h.mu.Lock()
			h.unfinished[ni.Name] = ev.Type != watch.Deleted && unfinished(ni, image, tag, jobName)
			n := 0
			for _, u := range h.unfinished {
				if u {
					n++
				}
			}
			h.most = max(h.most, n)
			h.mu.Unlock()
		}
	}()
	return h
}

func (h *holdersWatch) max() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most
}

// Scenario: fan-out under parallelism 1, completion, time to live and the pruning of the
// job's tags after it is gone.
func TestFanOutWithParallelismOne(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	nodes := e.createNodes(t, nil, "n1", "n2", "n3")
	holders := e.watchHolders(t, "nginx", "1.25", "fanout")
	e.startAgent(t, true)

	j := newJob("fanout", "nginx:1.25", map[string]string{framework.OwnerNamespaceLabel: e.Namespace})
	j.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
	j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](5)
	created := e.ImagePullJobs().Create(t, j)
	if !slices.Contains(created.Finalizers, protectionFinalizer) || created.Spec.CompletionPolicy.Type != appsv1alpha1.Always ||
		ptr.Deref(created.Spec.PullPolicy.TimeoutSeconds, 0) != 600 || created.Spec.ImagePullPolicy != appsv1alpha1.PullIfNotPresent {
		t.Errorf("admitted job = %+v, want the finalizer and defaults", created)
	}

	done := e.ImagePullJobs().WaitFor(t, "fanout", "to complete", completed)
	if st := done.Status; st.Desired != 3 || st.Succeeded != 3 || st.Failed != 0 || st.Active != 0 || st.Message != messageCompleted {
		t.Errorf("status = %+v, want desired 3, succeeded 3, %q", st, messageCompleted)
	}
	if most := holders.max(); most != 1 {
		t.Errorf("at most %d NodeImages held an unfinished tag of the job at once, want 1", most)
	}
	for _, node := range nodes {
		ni := e.NodeImages().WaitFor(t, node, "to hold the job's tag", func(ni *nodeImage) bool { return ownedTag(ni, "nginx", "1.25", "fanout") != nil })
		if tag := ownedTag(ni, "nginx", "1.25", "fanout"); tag.OwnerReferences[0].UID != created.UID || tag.OwnerReferences[0].APIVersion != "apps.kruise.io/v1beta1" {
			t.Errorf("owner reference on %s = %+v", node, tag.OwnerReferences[0])
		}
	}

	// ttlSecondsAfterFinished: 5 deletes the job, then the NodeImage controller prunes its tags.
	err := framework.WaitFor(e.Ctx, waitTimeout, "the job to be deleted after its ttl", func(ctx context.Context) (bool, error) {
		_, err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Get(ctx, "fanout", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if gone := time.Since(done.Status.CompletionTime.Time); gone < 5*time.Second {
		t.Errorf("deleted %v after completion, before its ttl of 5s", gone)
	}
	for _, node := range nodes {
		e.NodeImages().WaitFor(t, node, "to lose the job's tag", func(ni *nodeImage) bool {
			_, has := ni.Spec.Images["nginx"]
			return !has
		})
	}
}

// Scenario: selector.names, a label selector and podSelector choose the targets; selector
// and podSelector together are refused.
func TestSelectors(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	n1 := e.createNodes(t, map[string]string{"pool": "a"}, "n1")[0]
	n2 := e.createNodes(t, map[string]string{"pool": "b"}, "n2")[0]
	n3 := e.createNodes(t, map[string]string{"pool": "b"}, "n3")[0]
	e.startAgent(t, true)

	byName := newJob("by-name", "busybox:1", nil)
	byName.Spec.Selector = &appsv1alpha1.ImagePullJobNodeSelector{Names: []string{n1}}
	byLabel := newJob("by-label", "busybox:2", map[string]string{"pool": "b", framework.OwnerNamespaceLabel: e.Namespace})
	byPod := newJob("by-pod", "busybox:3", nil)
	byPod.Spec.Selector = nil
	byPod.Spec.PodSelector = &appsv1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	for _, pod := range []*corev1.Pod{newPod("web", n3, "web"), newPod("db", n2, "db")} {
		if _, err := e.Client.CoreV1().Pods(e.Namespace).Create(e.Ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
	}

	for _, tc := range []struct {
		job  *job
		tag  string
		want []string
	}{
		{byName, "1", []string{n1}},
		{byLabel, "2", []string{n2, n3}},
		{byPod, "3", []string{n3}},
	} {
		e.ImagePullJobs().Create(t, tc.job)
		done := e.ImagePullJobs().WaitFor(t, tc.job.Name, "to complete", completed)
		if done.Status.Desired != int32(len(tc.want)) || done.Status.Succeeded != int32(len(tc.want)) {
			t.Errorf("%s: status %+v, want %d nodes succeeded", tc.job.Name, done.Status, len(tc.want))
		}
		var got []string
		for _, node := range []string{n1, n2, n3} {
			ni, err := e.Bosun.AppsV1alpha1().NodeImages().Get(e.Ctx, node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ownedTag(ni, "busybox", tc.tag, tc.job.Name) != nil {
				got = append(got, node)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s pulled on %v, want %v", tc.job.Name, got, tc.want)
		}
	}

	both := newJob("both", "busybox", map[string]string{"pool": "a"})
	both.Spec.PodSelector = &appsv1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	_, err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Create(e.Ctx, both, metav1.CreateOptions{})
	if !isDenial(err, http.StatusBadRequest, webhookJobValidation, "spec.podSelector") &&
		!isDenial(err, http.StatusUnprocessableEntity, "", "mutually exclusive") {
		t.Errorf("creating a job with selector and podSelector: %v, want a denial", err)
	}
}

func newPod(name, node, app string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// isDenial reports whether err is a refusal with code whose message mentions each of
// parts.
func isDenial(err error, code int32, parts ...string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != code {
		return false
	}
	for _, part := range parts {
		if !strings.Contains(err.Error(), part) {
			return false
		}
	}
	return true
}

// Scenario: activeDeadlineSeconds ends a job whose pulls never finish; a deadline below the
// pull timeout is refused.
func TestDeadline(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	nodes := e.createNodes(t, nil, "n1", "n2", "n3")
	e.startAgent(t, false)

	short := newJob("short", "nginx:1", map[string]string{framework.OwnerNamespaceLabel: e.Namespace})
	short.Spec.PullPolicy = &appsv1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](10)}
	short.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](5)
	_, err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Create(e.Ctx, short, metav1.CreateOptions{})
	if !isDenial(err, http.StatusBadRequest, webhookJobValidation, "spec.completionPolicy.activeDeadlineSeconds") {
		t.Errorf("creating a job whose deadline is below its timeout: %v, want a 400 naming the field", err)
	}

	j := newJob("deadline", "nginx:1", map[string]string{framework.OwnerNamespaceLabel: e.Namespace})
	j.Spec.PullPolicy = &appsv1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](10)}
	j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](15)
	e.ImagePullJobs().Create(t, j)
	done := e.ImagePullJobs().WaitFor(t, "deadline", "to complete", completed)
	st := done.Status
	if took := st.CompletionTime.Sub(st.StartTime.Time); took < 14*time.Second || took > 30*time.Second {
		t.Errorf("completed %v after its start, want about 15s", took)
	}
	if st.Message != messageDeadlineExceeded || st.Failed != 3 || st.Succeeded != 0 || st.Active != 0 || !slices.Equal(st.FailedNodes, nodes) {
		t.Errorf("status = %+v, want %q with every node failed", st, messageDeadlineExceeded)
	}
}

// Scenario: pull secrets are copied into the secrets namespace, referenced from the
// NodeImages, and removed with the job. (That the agent hands the credentials to the
// runtime is the end-to-end test's.)
func TestPullSecrets(t *testing.T) {
	e := setup(t)
	if _, err := e.Client.CoreV1().Namespaces().Create(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretsNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", secretsNamespace, err)
	}
	e.startManager(t)
	node := e.createNodes(t, nil, "n1")[0]
	e.startAgent(t, false)
	auth := []byte(`{"auths":{"reg.example":{"auth":"dXNlcjpwYXNz"}}}`)
	source := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "reg"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: auth},
	}
	if _, err := e.Client.CoreV1().Secrets(e.Namespace).Create(e.Ctx, source, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	j := newJob("secrets", "reg.example/team/app:1", map[string]string{framework.OwnerNamespaceLabel: e.Namespace})
	j.Spec.PullSecrets = []string{"reg"}
	e.ImagePullJobs().Create(t, j)
	sourceKey := e.Namespace + "/reg"
	var copyName string
	err := framework.WaitFor(e.Ctx, waitTimeout, "the copy of secret reg", func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Secrets(secretsNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range list.Items {
			if s.Annotations[sourceKeyAnnotation] != sourceKey {
				continue
			}
			copyName = s.Name
			if !regexp.MustCompile(`^reg-[0-9a-f]{6}$`).MatchString(s.Name) {
				t.Errorf("copy name %q, want reg-<6 hex digits>", s.Name)
			}
			if s.Annotations[referencesAnnotation] != e.Namespace+"/secrets" || s.Annotations[modeAnnotation] != "batch" {
				t.Errorf("copy annotations = %v", s.Annotations)
			}
			if string(s.Data[corev1.DockerConfigJsonKey]) != string(auth) || s.Type != corev1.SecretTypeDockerConfigJson {
				t.Errorf("copy holds %s (%s), want the source's data and type", s.Data, s.Type)
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := appsv1alpha1.ReferenceObject{Namespace: secretsNamespace, Name: copyName}
	e.NodeImages().WaitFor(t, node, "to reference the copy", func(ni *nodeImage) bool {
		return slices.Contains(ni.Spec.Images["reg.example/team/app"].PullSecrets, want)
	})

	if err := e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Delete(e.Ctx, "secrets", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = framework.WaitFor(e.Ctx, waitTimeout, "the copy to be deleted with the job", func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().Secrets(secretsNamespace).Get(ctx, copyName, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		_, err = e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Get(ctx, "secrets", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Scenario: a second job pulling the same image and tag raises the tag's version and adds
// its owner reference; both jobs finish from the one status.
func TestSharedTag(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	node := e.createNodes(t, nil, "n1")[0]
	agent := e.startAgent(t, false)
	selector := map[string]string{framework.OwnerNamespaceLabel: e.Namespace}

	first := e.ImagePullJobs().Create(t, newJob("first", "nginx:1.25", selector))
	e.NodeImages().WaitFor(t, node, "to hold the first job's tag", func(ni *nodeImage) bool {
		st := tagStatus(ni, "nginx", "1.25")
		return ownedTag(ni, "nginx", "1.25", "first") != nil && st != nil && st.Phase == appsv1alpha1.ImagePhasePulling
	})
	second := e.ImagePullJobs().Create(t, newJob("second", "docker.io/library/nginx:1.25", selector))
	ni := e.NodeImages().WaitFor(t, node, "to hold the tag for both jobs", func(ni *nodeImage) bool {
		return ownedTag(ni, "nginx", "1.25", "second") != nil
	})
	tag := ownedTag(ni, "nginx", "1.25", "first")
	if tag.Version != 1 || len(tag.OwnerReferences) != 2 || tag.OwnerReferences[0].UID != first.UID || tag.OwnerReferences[1].UID != second.UID {
		t.Errorf("shared tag = %+v, want version 1 owned by both jobs", tag)
	}

	agent.finish()
	for _, name := range []string{"first", "second"} {
		done := e.ImagePullJobs().WaitFor(t, name, "to complete", completed)
		if st := done.Status; st.Succeeded != 1 || st.Failed != 0 || st.Message != messageCompleted {
			t.Errorf("%s status = %+v, want one success", name, st)
		}
	}
	if st := tagStatus(e.NodeImages().WaitFor(t, node, "", func(*nodeImage) bool { return true }), "nginx", "1.25"); st.Version != 1 {
		t.Errorf("final status %+v, want version 1", st)
	}
}

// Scenario: a tag an older bosun or OpenKruise before 1.9 gave the job through a v1alpha1
// owner reference is the job's: the job counts that node's pull as its own and never
// rewrites the tag just to name itself in v1beta1, while the tags it adds itself name it
// in v1beta1.
func TestTagOwnedThroughV1alpha1Reference(t *testing.T) {
	e := setup(t)
	e.startManager(t)
	nodes := e.createNodes(t, nil, "n1", "n2")
	agent := e.startAgent(t, false)

	j := newJob("legacy", "nginx:1.25", map[string]string{framework.OwnerNamespaceLabel: e.Namespace})
	j.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
	created := e.ImagePullJobs().Create(t, j)
	// While the first node pulls, parallelism 1 keeps the job away from the second.
	e.NodeImages().WaitFor(t, nodes[0], "to pull the job's tag", func(ni *nodeImage) bool {
		st := tagStatus(ni, "nginx", "1.25")
		return ownedTag(ni, "nginx", "1.25", "legacy") != nil && st != nil && st.Phase == appsv1alpha1.ImagePhasePulling
	})

	legacy := corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Namespace: e.Namespace, Name: "legacy", UID: created.UID}
	written := e.NodeImages().Update(t, nodes[1], func(ni *nodeImage) {
		ni.Spec.Images = map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{{
			Tag: "1.25", CreatedAt: ptr.To(metav1.Now()), OwnerReferences: []corev1.ObjectReference{legacy},
			ImagePullPolicy: appsv1alpha1.PullIfNotPresent,
			PullPolicy: &appsv1alpha1.ImageTagPullPolicy{
				TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3), TTLSecondsAfterFinished: ptr.To[int32](3600),
			},
		}}}}
	})

	agent.finish()
	done := e.ImagePullJobs().WaitFor(t, "legacy", "to complete", completed)
	if st := done.Status; st.Desired != 2 || st.Succeeded != 2 || st.Failed != 0 || st.Message != messageCompleted {
		t.Errorf("status = %+v, want both nodes succeeded: the v1alpha1-owned tag counts as the job's", st)
	}
	ni := e.NodeImages().Get(t, nodes[1])
	tag := ownedTag(ni, "nginx", "1.25", "legacy")
	if tag == nil || !slices.Equal(tag.OwnerReferences, []corev1.ObjectReference{legacy}) || tag.Version != 0 {
		t.Errorf("tag on %s = %+v, want version 0 and the v1alpha1 reference alone, as written", nodes[1], tag)
	}
	if ni.Generation != written.Generation {
		t.Errorf("the spec of %s went from generation %d to %d, want it left as written", nodes[1], written.Generation, ni.Generation)
	}
	first := ownedTag(e.NodeImages().Get(t, nodes[0]), "nginx", "1.25", "legacy")
	if first == nil || len(first.OwnerReferences) != 1 || first.OwnerReferences[0].APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("tag the job added on %s = %+v, want it owned through an apps.kruise.io/v1beta1 reference", nodes[0], first)
	}
}
