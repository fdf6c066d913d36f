package imagepulljob

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

	// agentPeriod is how often the fake agent looks at the NodeImages.
	agentPeriod = 200 * time.Millisecond

	testTimeout = 6 * time.Minute
	waitTimeout = 2 * time.Minute
)

type (
	job       = appsv1alpha1.ImagePullJob
	nodeImage = appsv1alpha1.NodeImage
)

// testEnv is what every test works with: the framework's environment (see envOptions).
type testEnv struct{ *framework.Env }

// envOptions give every test a context bounded by testTimeout; when it ends (after its
// manager and agent stopped) the webhook configurations, the test's jobs (finalizers
// dropped) and pods, its Nodes and NodeImages are deleted. NodeImages carry their Node's
// labels, so the tests also select their own NodeImages by framework.OwnerNamespaceLabel.
var envOptions = framework.EnvOptions{
	Timeout: testTimeout, WaitTimeout: waitTimeout, RemoveWebhookConfigurations: true,
	Remove:         []string{"imagepulljobs.apps.kruise.io", "pods"},
	RemoveLabelled: []string{"nodeimages.apps.kruise.io"},
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{framework.NewTestEnv(t, framework.SharedControlPlane(t), envOptions)}
}

// startManager runs bosun-controller-manager with the job and NodeImage controllers and
// their webhooks until the test ends, and returns once the API server calls both of the
// job's webhooks.
func (e *testEnv) startManager(t *testing.T) {
	t.Helper()
	probe := newJob("admission-probe", "nginx", nil)
	send := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().ImagePullJobs(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}
	framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP, framework.ControllerManagerOptions{
		Controllers: controllers,
		ExtraArgs:   []string{creationDelayFlag},
	}, framework.WebhookProbe{Webhook: webhookJobMutation, Send: send}, framework.WebhookProbe{Webhook: webhookJobValidation, Send: send})
}

// createNodes creates the test's Ready Nodes called short (prefixed with the namespace),
// each with labels (see framework.Env.CreateNode), and waits for the manager to create their
// NodeImages. It returns the full names.
func (e *testEnv) createNodes(t *testing.T, labels map[string]string, shorts ...string) []string {
	t.Helper()
	var names []string
	for _, short := range shorts {
		names = append(names, e.CreateNode(t, e.NewNode(short, labels, time.Now().Add(-time.Minute))).Name)
	}
	for _, name := range names {
		e.NodeImages().WaitFor(t, name, "to exist", func(*nodeImage) bool { return true })
	}
	return names
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
	ctx, cancel := context.WithCancel(e.Ctx)
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
	list, err := a.e.Bosun.AppsV1alpha1().NodeImages().List(ctx, metav1.ListOptions{LabelSelector: framework.OwnerNamespaceLabel + "=" + a.e.Namespace})
	if err != nil {
		return
	}
	for i := range list.Items {
		ni := &list.Items[i]
		if next, changed := nextStatus(ni, finishing); changed {
			ni.Status = next
			// A conflict with the NodeImage controller's own status write is retried on the
			// next pass, as the real agent would.
			_, _ = a.e.Bosun.AppsV1alpha1().NodeImages().UpdateStatus(ctx, ni, metav1.UpdateOptions{})
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
