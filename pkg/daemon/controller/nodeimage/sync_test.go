package nodeimage

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

func TestPullReportsPullingThenSucceeded(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	release := f.runtime.BlockPulls()
	nodeImage := newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3))
	nodeImage.Spec.Images["nginx"] = appsv1beta1.ImageSpec{
		Tags:          nodeImage.Spec.Images["nginx"].Tags,
		SandboxConfig: &appsv1beta1.SandboxConfig{Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "b"}},
	}
	f.create(nodeImage)

	f.sync()
	status := f.tagStatus("nginx", "1.25")
	if status == nil || (status.Phase != appsv1beta1.ImagePhaseWaiting && status.Phase != appsv1beta1.ImagePhasePulling) || status.Version != 0 {
		t.Fatalf("first status %+v", status)
	}

	// Pulling is reported, with its start time, while the runtime pulls.
	f.eventually("the pull to reach the runtime", func() bool { return len(f.runtime.Pulls()) == 1 })
	f.sync()
	status = f.tagStatus("nginx", "1.25")
	if status.Phase != appsv1beta1.ImagePhasePulling || status.StartTime == nil || status.Progress != 0 || status.CompletionTime != nil {
		t.Fatalf("status while pulling %+v", status)
	}
	if s := f.current().Status; s.Desired != 1 || s.Pulling != 1 || s.Waiting != 0 || s.Succeeded != 0 {
		t.Errorf("counts while pulling %+v", s)
	}
	// Still unfinished: looked at again in 3–5 s.
	if d := f.queue.Delayed(); len(d) == 0 || d[len(d)-1].Delay < 3*time.Second || d[len(d)-1].Delay > 5*time.Second {
		t.Errorf("requeue while pulling %+v", d)
	}

	release()
	f.waitForResult("nginx", "1.25")
	id, ok := f.runtime.ImageID("nginx:1.25")
	if !ok {
		t.Fatal("the runtime does not have the image")
	}
	status = f.tagStatus("nginx", "1.25")
	if status.Phase != appsv1beta1.ImagePhaseSucceeded || status.CompletionTime == nil || status.Progress != 100 || status.ImageID != "nginx@"+id || status.Message != "" {
		t.Errorf("final status %+v", status)
	}
	if s := f.current().Status; s.Desired != 1 || s.Succeeded != 1 || s.Pulling != 0 || s.Failed != 0 {
		t.Errorf("final counts %+v", s)
	}

	pull := f.runtime.Pulls()[0]
	if pull.Image != "nginx:1.25" || pull.Auth != nil {
		t.Errorf("pull %+v", pull)
	}
	if a := pull.SandboxConfig.GetAnnotations(); a[appsv1beta1.PullingImageByAnnotationKey] != "kruise-daemon" || a["a"] != "b" || pull.SandboxConfig.GetLabels()["l"] != "v" {
		t.Errorf("sandbox config %+v", pull.SandboxConfig)
	}
	events := f.recorder.take()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Normal PullImageSucceed NodeImage /node-1 node-1-uid: Image nginx:1.25 pulled") {
		t.Errorf("events %q", events)
	}

	// Once the result is observed the worker goes; nothing is pulled or written again and
	// the next look is in 20–30 min.
	writes := f.statusWrites()
	f.observe()
	f.queue.Reset()
	f.sync()
	if len(f.c.pools["nginx"].workers) != 0 || len(f.runtime.Pulls()) != 1 || f.statusWrites() != writes {
		t.Errorf("after the result was observed: workers %v, pulls %d, writes %d (was %d)", f.c.pools["nginx"].workers, len(f.runtime.Pulls()), f.statusWrites(), writes)
	}
	if d := f.queue.Delayed(); len(d) != 1 || d[0].Delay < 20*time.Minute || d[0].Delay > 30*time.Minute {
		t.Errorf("requeue when finished %+v", d)
	}
}

func TestParallelPullLimitKeepsTagsWaiting(t *testing.T) {
	f := newFixture(t, fixtureOptions{maxParallelPulls: 1})
	release := f.runtime.BlockPulls()
	f.create(newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3), newTag("1.26", appsv1beta1.PullAlways, 3)))

	f.sync()
	f.eventually("one pull to reach the runtime", func() bool { return len(f.runtime.Pulls()) == 1 })
	f.sync()
	s := f.current().Status
	if s.Desired != 2 || s.Pulling != 1 || s.Waiting != 1 {
		t.Fatalf("counts with one slot %+v", s)
	}
	var phases []string
	for _, tag := range s.ImageStatuses["nginx"].Tags {
		phases = append(phases, tag.Tag+"="+string(tag.Phase))
	}
	if len(phases) != 2 || phases[0][:4] != "1.25" {
		t.Errorf("tags not sorted: %v", phases)
	}
	if len(f.runtime.Pulls()) != 1 {
		t.Errorf("%d pulls with one slot", len(f.runtime.Pulls()))
	}

	release()
	f.waitForResult("nginx", "1.25")
	f.waitForResult("nginx", "1.26")
	if s := f.current().Status; s.Succeeded != 2 || s.Waiting != 0 {
		t.Errorf("final counts %+v", s)
	}
}

func TestIfNotPresentSkipsThePullOfAPresentImage(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	id := f.runtime.AddImage("docker.io/library/nginx:1.25")
	f.create(newNodeImage("nginx",
		newTag("1.25", appsv1beta1.PullIfNotPresent, 3),
		newTag("1.26", appsv1beta1.PullIfNotPresent, 3)))

	f.sync()
	f.waitForResult("nginx", "1.25")
	f.waitForResult("nginx", "1.26")
	if status := f.tagStatus("nginx", "1.25"); status.Phase != appsv1beta1.ImagePhaseSucceeded || status.ImageID != "nginx@"+id || status.Progress != 100 {
		t.Errorf("present image: %+v", status)
	}
	pulls := f.runtime.Pulls()
	if len(pulls) != 1 || pulls[0].Image != "nginx:1.26" {
		t.Errorf("pulls %+v, want only nginx:1.26", pulls)
	}
	if f.runtime.ImageCallCount(crifake.ListImagesCall) < 2 {
		t.Errorf("ListImages called %d times", f.runtime.ImageCallCount(crifake.ListImagesCall))
	}
}

func TestAlwaysPullsAPresentImage(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.runtime.AddImage("nginx:1.25")
	f.create(newNodeImage("nginx", newTag("1.25", "", 3)))

	f.sync()
	f.waitForResult("nginx", "1.25")
	if len(f.runtime.Pulls()) != 1 || f.tagStatus("nginx", "1.25").Phase != appsv1beta1.ImagePhaseSucceeded {
		t.Errorf("pulls %+v, status %+v", f.runtime.Pulls(), f.tagStatus("nginx", "1.25"))
	}
}

func TestFailedAttemptsAreRetriedUpToTheBackoffLimit(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.runtime.FailPulls(errors.New("registry is down"))
	f.create(newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 1)))

	f.sync()
	f.waitForResult("nginx", "1.25")
	if n := len(f.runtime.Pulls()); n != 2 {
		t.Errorf("%d attempts with backoffLimit 1, want 2", n)
	}
	status := f.tagStatus("nginx", "1.25")
	if status.Phase != appsv1beta1.ImagePhaseFailed || status.CompletionTime == nil || !strings.Contains(status.Message, "registry is down") {
		t.Errorf("status %+v", status)
	}
	if s := f.current().Status; s.Failed != 1 || s.Pulling != 0 {
		t.Errorf("counts %+v", s)
	}
	events := f.recorder.take()
	if len(events) != 2 ||
		!strings.HasPrefix(events[0], "Warning PullImageFailed ImagePullJob default/job job-uid: Image nginx:1.25 failed") ||
		!strings.HasPrefix(events[1], "Warning PullImageFailed NodeImage /node-1 node-1-uid: Image nginx:1.25 failed") ||
		!strings.Contains(events[1], "registry is down") {
		t.Errorf("events %q", events)
	}
}

func TestAttemptTimeout(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.runtime.BlockPulls()
	tag := newTag("1.25", appsv1beta1.PullAlways, 0)
	tag.PullPolicy.TimeoutSeconds = ptr.To[int32](5)
	f.create(newNodeImage("nginx", tag))

	f.sync()
	f.eventually("the pull to reach the runtime", func() bool { return len(f.runtime.Pulls()) == 1 })
	f.clock.Step(5 * time.Second)
	f.waitForResult("nginx", "1.25")
	status := f.tagStatus("nginx", "1.25")
	if status.Phase != appsv1beta1.ImagePhaseFailed || status.Message != "the pull did not finish within 5s" {
		t.Errorf("status %+v", status)
	}
}

func TestActiveDeadlineEndsThePull(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.runtime.BlockPulls()
	tag := newTag("1.25", appsv1beta1.PullAlways, 3)
	tag.PullPolicy.ActiveDeadlineSeconds = ptr.To[int64](3)
	f.create(newNodeImage("nginx", tag))

	f.sync()
	f.eventually("the pull to reach the runtime", func() bool { return len(f.runtime.Pulls()) == 1 })
	// The attempt's 3600 s timeout is clipped to the 3 s left of the deadline.
	f.clock.Step(3 * time.Second)
	f.eventually("the pull to fail", func() bool { return f.workerFinished("nginx", "1.25") })
	f.sync()
	status := f.tagStatus("nginx", "1.25")
	if status.Phase != appsv1beta1.ImagePhaseFailed || status.Message != "pulling exceeds the activeDeadlineSeconds" {
		t.Errorf("status %+v", status)
	}
	if n := len(f.runtime.Pulls()); n != 1 {
		t.Errorf("%d attempts after the deadline", n)
	}
}

func TestVersionBumpPullsAgain(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.create(newNodeImage("nginx", newTag("1.25", appsv1beta1.PullIfNotPresent, 3)))
	f.sync()
	f.waitForResult("nginx", "1.25")
	f.observe()
	f.sync()

	f.updateSpec(func(spec *appsv1beta1.NodeImageSpec) {
		image := spec.Images["nginx"]
		image.Tags[0].Version = 1
		image.Tags[0].ImagePullPolicy = appsv1beta1.PullAlways
		spec.Images["nginx"] = image
	})
	f.sync()
	if status := f.tagStatus("nginx", "1.25"); status.Version != 1 {
		t.Errorf("status right after the bump %+v", status)
	}
	f.waitForResult("nginx", "1.25")
	if status := f.tagStatus("nginx", "1.25"); status.Version != 1 || status.Phase != appsv1beta1.ImagePhaseSucceeded {
		t.Errorf("status after the new pull %+v", status)
	}
	if n := len(f.runtime.Pulls()); n != 2 {
		t.Errorf("%d pulls, want 2", n)
	}
}

func TestRemovedImageStopsItsPull(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.runtime.BlockPulls()
	nodeImage := newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3))
	nodeImage.Spec.Images["redis"] = appsv1beta1.ImageSpec{Tags: []appsv1beta1.ImageTagSpec{newTag("7", appsv1beta1.PullAlways, 3)}}
	f.create(nodeImage)
	f.sync()
	f.eventually("both pulls to reach the runtime", func() bool { return len(f.runtime.Pulls()) == 2 })
	pool := f.c.pools["nginx"]
	worker := pool.workers["1.25"]

	f.updateSpec(func(spec *appsv1beta1.NodeImageSpec) { delete(spec.Images, "nginx") })
	f.sync()
	if _, ok := f.c.pools["nginx"]; ok {
		t.Error("the pool of a removed image is kept")
	}
	s := f.current().Status
	if _, ok := s.ImageStatuses["nginx"]; ok || s.Desired != 1 || s.Pulling != 1 {
		t.Errorf("status after removal %+v", s)
	}
	// The stopped worker gives up its pull and reports nothing.
	f.eventually("the stopped pull to end", func() bool {
		return worker.currentStatus().Phase == appsv1beta1.ImagePhasePulling && f.runtime.ImageCallCount(crifake.PullImageCall) == 2
	})
	if worker.finished() {
		t.Error("a stopped worker reported a result")
	}
}

func TestPullCredentialsComeFromSecretsOfTheSecretsNamespace(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testSecretsNamespace, Name: "reg-abc123"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"reg.io":{"auth":"` + auth + `"},"other.io":{"username":"x","password":"y"}}}`)},
	}
	elsewhere := secret.DeepCopy()
	elsewhere.Namespace = "default"
	f := newFixture(t, fixtureOptions{secrets: []*corev1.Secret{secret, elsewhere}})
	f.runtime.RequireCredentials("reg.io/team/app", "alice", "s3cret")
	nodeImage := newNodeImage("reg.io/team/app", newTag("v1", appsv1beta1.PullAlways, 0))
	image := nodeImage.Spec.Images["reg.io/team/app"]
	image.PullSecrets = []appsv1beta1.ReferenceObject{{Namespace: "default", Name: "reg-abc123"}, {Namespace: testSecretsNamespace, Name: "reg-abc123"}, {Namespace: testSecretsNamespace, Name: "missing"}}
	nodeImage.Spec.Images["reg.io/team/app"] = image
	f.create(nodeImage)

	f.sync()
	f.waitForResult("reg.io/team/app", "v1")
	if status := f.tagStatus("reg.io/team/app", "v1"); status.Phase != appsv1beta1.ImagePhaseSucceeded {
		t.Fatalf("status %+v", status)
	}
	pulls := f.runtime.Pulls()
	if len(pulls) != 1 || pulls[0].Auth.GetUsername() != "alice" || pulls[0].Auth.GetPassword() != "s3cret" || pulls[0].Auth.GetServerAddress() != "" {
		t.Errorf("pulls %+v", pulls)
	}
	// Secrets are read one by one, from the secrets namespace only, and reused.
	want := []string{"get kruise-daemon-config/reg-abc123", "get kruise-daemon-config/missing", "get kruise-daemon-config/missing"}
	if got := f.secretActions(); !slices.Equal(got, want) {
		t.Errorf("secret requests %q, want %q", got, want)
	}
}

func TestSecretCredentialsFailingMeansNoAnonymousPull(t *testing.T) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testSecretsNamespace, Name: "reg"},
		Type:       corev1.SecretTypeDockercfg,
		Data:       map[string][]byte{corev1.DockerConfigKey: []byte(`{"reg.io":{"username":"alice","password":"wrong"}}`)},
	}
	f := newFixture(t, fixtureOptions{secrets: []*corev1.Secret{secret}})
	f.runtime.RequireCredentials("reg.io/app", "alice", "right")
	nodeImage := newNodeImage("reg.io/app", newTag("v1", appsv1beta1.PullAlways, 0))
	image := nodeImage.Spec.Images["reg.io/app"]
	image.PullSecrets = []appsv1beta1.ReferenceObject{{Namespace: testSecretsNamespace, Name: "reg"}}
	nodeImage.Spec.Images["reg.io/app"] = image
	f.create(nodeImage)

	f.sync()
	f.waitForResult("reg.io/app", "v1")
	if status := f.tagStatus("reg.io/app", "v1"); status.Phase != appsv1beta1.ImagePhaseFailed || !strings.Contains(status.Message, "authorization failed") {
		t.Errorf("status %+v", status)
	}
	if pulls := f.runtime.Pulls(); len(pulls) != 1 || pulls[0].Auth == nil {
		t.Errorf("pulls %+v", pulls)
	}
}

func TestDeletedNodeImageStopsEveryPull(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.runtime.BlockPulls()
	f.create(newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3)))
	f.sync()
	if err := f.indexer.Delete(f.current()); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if len(f.c.pools) != 0 {
		t.Errorf("pools %v after deletion", f.c.pools)
	}
}

func TestPullsWaitForTheRuntime(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	rt := f.source.Runtime()
	f.source.set(nil)
	f.create(newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3)))

	if err := f.c.syncHandler(f.ctx, testNode); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("sync without a runtime: %v", err)
	}
	if len(f.c.pools["nginx"].workers) != 0 {
		t.Error("a pull started without a runtime")
	}
	if s := f.current().Status; s.Desired != 1 || len(s.ImageStatuses) != 0 {
		t.Errorf("status without a runtime %+v", s)
	}

	f.source.set(rt)
	f.sync()
	f.waitForResult("nginx", "1.25")
	if status := f.tagStatus("nginx", "1.25"); status.Phase != appsv1beta1.ImagePhaseSucceeded {
		t.Errorf("status %+v", status)
	}
}

// progressPuller reports half the pull done, then waits to be released.
type progressPuller struct{ release chan struct{} }

func (p *progressPuller) PullImage(ctx context.Context, req PullRequest, progress ProgressFunc) (string, error) {
	progress(50)
	select {
	case <-p.release:
		return "sha256:feed", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func TestAPullerWithProgressReportsIt(t *testing.T) {
	puller := &progressPuller{release: make(chan struct{})}
	f := newFixture(t, fixtureOptions{puller: puller})
	f.create(newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3)))
	f.sync()
	f.eventually("progress 50", func() bool {
		return f.c.pools["nginx"].workers["1.25"].currentStatus().Progress == 50
	})
	f.sync()
	if status := f.tagStatus("nginx", "1.25"); status.Phase != appsv1beta1.ImagePhasePulling || status.Progress != 50 {
		t.Errorf("status mid-pull %+v", status)
	}
	close(puller.release)
	f.waitForResult("nginx", "1.25")
	if status := f.tagStatus("nginx", "1.25"); status.Progress != 100 || status.ImageID != "nginx@sha256:feed" {
		t.Errorf("final status %+v", status)
	}
}
