package imagepulljob

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Strings users, tools and OpenKruise read, checked verbatim.
const (
	webhookJobMutation   = "mimagepulljob.kb.io"
	webhookJobValidation = "vimagepulljob.kb.io"

	messageCompleted        = "job has completed"
	messageDeadlineExceeded = "job exceeds activeDeadlineSeconds"

	protectionFinalizer  = "apps.kruise.io/deletion-protection"
	secretsNamespace     = "kruise-daemon-config"
	sourceKeyAnnotation  = "imagepulljobs.kruise.io/source-key"
	referencesAnnotation = "imagepulljobs.kruise.io/references"
	modeAnnotation       = "imagepulljobs.kruise.io/mode"
)

const (
	// controllers are the --controllers of every test's manager.
	controllers = "imagepulljob-controller,nodeimage-controller"
	// creationDelayFlag set to 0 makes the manager create a Ready Node's NodeImage at once.
	creationDelayFlag = "--nodeimage-creation-delay=0s"

	// nodeOwnerLabel marks the Nodes a test made with its namespace: Nodes are cluster
	// scoped, and the cleanup deletes them (and their NodeImages) by it. NodeImages carry
	// their Node's labels, so the tests also select their own NodeImages by it.
	nodeOwnerLabel = "bosun.dev/integration-test-namespace"

	// agentPeriod is how often the fake agent looks at the NodeImages.
	agentPeriod = 200 * time.Millisecond

	testTimeout = 6 * time.Minute
	waitTimeout = 2 * time.Minute
)

type (
	job       = appsv1alpha1.ImagePullJob
	nodeImage = appsv1alpha1.NodeImage
)

type testEnv struct {
	ctx    context.Context
	cp     *framework.ControlPlane
	client kubernetes.Interface
	bosun  bosunclientset.Interface
	ns     string
}

// setup prepares a test; when it ends (after its manager and agent stopped) the webhook
// configurations, the test's jobs (finalizers dropped), Nodes and NodeImages are deleted.
func setup(t *testing.T) *testEnv {
	t.Helper()
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	bosun, err := bosunclientset.NewForConfig(cp.Config())
	if err != nil {
		t.Fatalf("creating bosun's clientset: %v", err)
	}
	ns := framework.CreateTestNamespace(t, client).Name
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	e := &testEnv{ctx: ctx, cp: cp, client: client, bosun: bosun, ns: ns}
	t.Cleanup(func() { e.removeEverything(t) })
	return e
}

func (e *testEnv) removeEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := framework.DeleteWebhookConfigurations(ctx, e.client); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	jobs := e.bosun.AppsV1alpha1().ImagePullJobs(e.ns)
	if list, err := jobs.List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range list.Items {
			if len(j.Finalizers) > 0 {
				_, _ = jobs.Patch(ctx, j.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
		}
	}
	if err := jobs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting ImagePullJobs: %v", err)
	}
	mine := metav1.ListOptions{LabelSelector: nodeOwnerLabel + "=" + e.ns}
	if err := e.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, mine); err != nil {
		t.Errorf("cleanup: deleting Nodes: %v", err)
	}
	if err := e.bosun.AppsV1alpha1().NodeImages().DeleteCollection(ctx, metav1.DeleteOptions{}, mine); err != nil {
		t.Errorf("cleanup: deleting NodeImages: %v", err)
	}
	if err := e.client.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting pods: %v", err)
	}
}

// startManager runs bosun-controller-manager with the job and NodeImage controllers and
// their webhooks until the test ends, and returns once the API server calls both of the
// job's webhooks.
func (e *testEnv) startManager(t *testing.T) {
	t.Helper()
	probe := newJob("admission-probe", "nginx", nil)
	send := func(ctx context.Context) {
		_, _ = e.bosun.AppsV1alpha1().ImagePullJobs(e.ns).Create(ctx, probe, framework.DryRunCreate)
	}
	framework.StartBosunControllerManagerWithWebhooks(e.ctx, t, e.cp, framework.ControllerManagerOptions{
		Controllers: controllers,
		ExtraArgs:   []string{creationDelayFlag},
	}, framework.WebhookProbe{Webhook: webhookJobMutation, Send: send}, framework.WebhookProbe{Webhook: webhookJobValidation, Send: send})
}

// createNodes creates the test's Ready Nodes called short (prefixed with the namespace),
// each with labels plus nodeOwnerLabel, and waits for the manager to create their
// NodeImages. It returns the full names.
func (e *testEnv) createNodes(t *testing.T, labels map[string]string, shorts ...string) []string {
	t.Helper()
	var names []string
	for _, short := range shorts {
		name := e.ns + "-" + short
		all := map[string]string{nodeOwnerLabel: e.ns}
		for k, v := range labels {
			all[k] = v
		}
		if _, err := e.client.CoreV1().Nodes().Create(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Node %s: %v", name, err)
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			node.Status.Conditions = []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute)),
			}}
			_, err = e.client.CoreV1().Nodes().UpdateStatus(e.ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("reporting Node %s Ready: %v", name, err)
		}
		names = append(names, name)
	}
	for _, name := range names {
		e.waitForNodeImage(t, name, "to exist", func(*nodeImage) bool { return true })
	}
	return names
}

// waitForNodeImage waits until the NodeImage exists and satisfies cond.
func (e *testEnv) waitForNodeImage(t *testing.T, name, what string, cond func(*nodeImage) bool) *nodeImage {
	t.Helper()
	var last *nodeImage
	err := framework.WaitFor(e.ctx, waitTimeout, "NodeImage "+name+" "+what, func(ctx context.Context) (bool, error) {
		ni, err := e.bosun.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		last = ni
		return cond(ni), nil
	})
	if err != nil {
		t.Fatalf("%v; last seen: %+v", err, last)
	}
	return last
}

// waitForJob waits until the job satisfies cond and returns it.
func (e *testEnv) waitForJob(t *testing.T, name, what string, cond func(*job) bool) *job {
	t.Helper()
	var last *job
	err := framework.WaitFor(e.ctx, waitTimeout, "ImagePullJob "+name+" "+what, func(ctx context.Context) (bool, error) {
		j, err := e.bosun.AppsV1alpha1().ImagePullJobs(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = j
		return cond(j), nil
	})
	if err != nil {
		t.Fatalf("%v; last status: %+v", err, last.Status)
	}
	return last
}

func (e *testEnv) createJob(t *testing.T, j *job) *job {
	t.Helper()
	created, err := e.bosun.AppsV1alpha1().ImagePullJobs(e.ns).Create(e.ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ImagePullJob %s: %v", j.Name, err)
	}
	return created
}

// newJob is a job pulling image on the NodeImages carrying labels (every NodeImage of the
// test when labels is nil), as a user would write it.
func newJob(name, image string, labels map[string]string) *job {
	return &job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
			Selector: &appsv1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: labels}},
		}},
	}
}

// completed reports whether a job has completed.
func completed(j *job) bool { return j.Status.CompletionTime != nil }

// ownedTag returns the tag entry of image:tag on ni if the job named jobName owns it.
func ownedTag(ni *nodeImage, image, tag, jobName string) *appsv1alpha1.ImageTagSpec {
	for i, t := range ni.Spec.Images[image].Tags {
		if t.Tag != tag {
			continue
		}
		for _, ref := range t.OwnerReferences {
			if ref.Name == jobName {
				return &ni.Spec.Images[image].Tags[i]
			}
		}
	}
	return nil
}

// tagStatus returns the status of image:tag on ni, nil when there is none.
func tagStatus(ni *nodeImage, image, tag string) *appsv1alpha1.ImageTagStatus {
	for i, st := range ni.Status.ImageStatuses[image].Tags {
		if st.Tag == tag {
			return &ni.Status.ImageStatuses[image].Tags[i]
		}
	}
	return nil
}

// unfinished reports whether ni holds image:tag for the job without a final status of the
// tag's version.
func unfinished(ni *nodeImage, image, tag, jobName string) bool {
	t := ownedTag(ni, image, tag, jobName)
	if t == nil {
		return false
	}
	st := tagStatus(ni, image, tag)
	return st == nil || st.Version != t.Version ||
		(st.Phase != appsv1alpha1.ImagePhaseSucceeded && st.Phase != appsv1alpha1.ImagePhaseFailed)
}

// fakeAgent plays the node agents of the test's NodeImages: every tag without a status of
// its version is reported Pulling, and, once finishing is on, every Pulling tag is then
// reported Succeeded on the agent's next look.
type fakeAgent struct {
	e  *testEnv
	mu sync.Mutex
	// finishing says whether pulls finish.
	finishing bool
}

// startAgent runs a fake agent until the test ends.
func (e *testEnv) startAgent(t *testing.T, finishing bool) *fakeAgent {
	a := &fakeAgent{e: e, finishing: finishing}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		ticker := time.NewTicker(agentPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				a.pass(ctx)
			}
		}
	}()
	return a
}

// finish lets every pull finish.
func (a *fakeAgent) finish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.finishing = true
}

func (a *fakeAgent) pass(ctx context.Context) {
	a.mu.Lock()
	finishing := a.finishing
	a.mu.Unlock()
	list, err := a.e.bosun.AppsV1alpha1().NodeImages().List(ctx, metav1.ListOptions{LabelSelector: nodeOwnerLabel + "=" + a.e.ns})
	if err != nil {
		return
	}
	for i := range list.Items {
		ni := &list.Items[i]
		if next, changed := nextStatus(ni, finishing); changed {
			ni.Status = next
			// A conflict with the NodeImage controller's own status write is retried on the
			// next pass, as the real agent would.
			_, _ = a.e.bosun.AppsV1alpha1().NodeImages().UpdateStatus(ctx, ni, metav1.UpdateOptions{})
		}
	}
}

// nextStatus is the status an agent would report for ni's spec.
func nextStatus(ni *nodeImage, finishing bool) (appsv1alpha1.NodeImageStatus, bool) {
	now := metav1.Now()
	next := appsv1alpha1.NodeImageStatus{ImageStatuses: map[string]appsv1alpha1.ImageStatus{}}
	changed := false
	for image, spec := range ni.Spec.Images {
		var tags []appsv1alpha1.ImageTagStatus
		for _, t := range spec.Tags {
			next.Desired++
			st := tagStatus(ni, image, t.Tag)
			switch {
			case st == nil || st.Version != t.Version:
				st = &appsv1alpha1.ImageTagStatus{Tag: t.Tag, Version: t.Version, Phase: appsv1alpha1.ImagePhasePulling, StartTime: &now}
				changed = true
			case st.Phase == appsv1alpha1.ImagePhasePulling && finishing:
				st = st.DeepCopy()
				st.Phase, st.Progress, st.CompletionTime = appsv1alpha1.ImagePhaseSucceeded, 100, &now
				st.ImageID = fmt.Sprintf("%s@sha256:%064d", image, 1)
				changed = true
			}
			switch st.Phase {
			case appsv1alpha1.ImagePhaseSucceeded:
				next.Succeeded++
			case appsv1alpha1.ImagePhaseFailed:
				next.Failed++
			default:
				next.Pulling++
			}
			tags = append(tags, *st)
		}
		next.ImageStatuses[image] = appsv1alpha1.ImageStatus{Tags: tags}
	}
	return next, changed
}
