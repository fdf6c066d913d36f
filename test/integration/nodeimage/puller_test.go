package nodeimage

import (
	"errors"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// TestAgentPullsAndRepulls: the node agent reports a tag Waiting while another holds the
// node's only pull slot, Pulling with a start time while the runtime pulls, then
// Succeeded with imageID "<name>@<runtime image id>", a PullImageSucceed event on the
// NodeImage and matching counters. Bumping the tag's version pulls it again and reports
// the new version.
func TestAgentPullsAndRepulls(t *testing.T) {
	e := setup(t)
	node, runtime := e.startPullerNode(t, "pull", "--max-parallel-image-pulls=1")
	release := runtime.BlockPulls()

	e.addTag(t, node, "nginx", newTag("1.25", 600, nil))
	e.addTag(t, node, "nginx", newTag("1.26", 600, nil))
	ni := e.nodeImages().WaitFor(t, node, "one tag Pulling and one Waiting", func(ni *nodeImage) bool {
		return ni.Status.Pulling == 1 && ni.Status.Waiting == 1
	})
	phases := map[appsv1alpha1.ImagePullPhase]int{}
	for _, s := range ni.Status.ImageStatuses["nginx"].Tags {
		phases[s.Phase]++
		if s.Phase == appsv1alpha1.ImagePhasePulling && (s.StartTime == nil || s.Progress != 0) {
			t.Errorf("pulling tag status %+v, want a startTime and progress 0", s)
		}
		if s.CompletionTime != nil || s.Version != 0 {
			t.Errorf("unfinished tag status %+v", s)
		}
	}
	if phases[appsv1alpha1.ImagePhasePulling] != 1 || phases[appsv1alpha1.ImagePhaseWaiting] != 1 || ni.Status.Desired != 2 {
		t.Errorf("status %+v, want desired 2, one Pulling, one Waiting", ni.Status)
	}
	if n := len(runtime.Pulls()); n != 1 {
		t.Errorf("%d pulls with one pull slot, want 1", n)
	}

	release()
	ni = e.nodeImages().WaitFor(t, node, "both tags Succeeded", func(ni *nodeImage) bool {
		return ni.Status.Succeeded == 2
	})
	for _, tag := range []string{"1.25", "1.26"} {
		id, ok := runtime.ImageID("nginx:" + tag)
		if !ok {
			t.Fatalf("the runtime has no nginx:%s", tag)
		}
		s := tagStatus(ni, "nginx", tag)
		if s.Phase != appsv1alpha1.ImagePhaseSucceeded || s.ImageID != "nginx@"+id || s.Progress != 100 || s.CompletionTime == nil || s.StartTime == nil {
			t.Errorf("nginx:%s status %+v, want Succeeded with imageID nginx@%s", tag, s, id)
		}
	}
	if ni.Status.Desired != 2 || ni.Status.Pulling != 0 || ni.Status.Waiting != 0 || ni.Status.Failed != 0 {
		t.Errorf("counters %+v", ni.Status)
	}
	ev := e.waitForEvent(t, "", "NodeImage", node, eventPullImageSucceed)
	if ev.Type != corev1.EventTypeNormal || ev.Source.Component != "nodeimage-agent" {
		t.Errorf("event %s from %q, want Normal from nodeimage-agent", ev.Type, ev.Source.Component)
	}
	for _, pull := range runtime.Pulls() {
		if pull.SandboxConfig.GetAnnotations()[appsv1alpha1.PullingImageByAnnotationKey] != appsv1alpha1.PullingImageByAnnotationValue || pull.Auth != nil {
			t.Errorf("pull %+v, want the pulling-image-by annotation and no credential", pull)
		}
	}

	// A new version of a finished tag is pulled again.
	before := runtime.ImageCallCount(crifake.PullImageCall)
	_, err := e.nodeImages().TryUpdate(node, func(ni *nodeImage) {
		tag := tagSpec(ni, "nginx", "1.25")
		tag.Version++
	})
	framework.MustSucceed(t, "bumping the version of nginx:1.25", err)
	ni = e.nodeImages().WaitFor(t, node, "nginx:1.25 pulled again at version 1", func(ni *nodeImage) bool {
		s := tagStatus(ni, "nginx", "1.25")
		return s != nil && s.Version == 1 && s.Phase == appsv1alpha1.ImagePhaseSucceeded
	})
	if after := runtime.ImageCallCount(crifake.PullImageCall); after != before+1 {
		t.Errorf("%d pulls for the new version, want 1", after-before)
	}
	if s := tagStatus(ni, "nginx", "1.26"); s.Version != 0 || s.Phase != appsv1alpha1.ImagePhaseSucceeded {
		t.Errorf("nginx:1.26 status %+v, want it untouched", s)
	}
}

// TestAgentIfNotPresent: an IfNotPresent tag of an image the runtime already has succeeds
// without a pull; an Always tag of an image the runtime has is pulled all the same.
func TestAgentIfNotPresent(t *testing.T) {
	e := setup(t)
	node, runtime := e.startPullerNode(t, "present")
	nginx := runtime.AddImage("docker.io/library/nginx:1.25")
	runtime.AddImage("redis:7")

	present := newTag("1.25", 600, nil)
	present.ImagePullPolicy = appsv1alpha1.PullIfNotPresent
	e.addTag(t, node, "nginx", present)
	ni := e.nodeImages().WaitFor(t, node, "nginx:1.25 Succeeded", func(ni *nodeImage) bool {
		s := tagStatus(ni, "nginx", "1.25")
		return s != nil && s.Phase == appsv1alpha1.ImagePhaseSucceeded
	})
	if s := tagStatus(ni, "nginx", "1.25"); s.ImageID != "nginx@"+nginx {
		t.Errorf("imageID %q, want nginx@%s", s.ImageID, nginx)
	}
	if n := runtime.ImageCallCount(crifake.PullImageCall); n != 0 {
		t.Errorf("%d PullImage calls for an IfNotPresent image the runtime has", n)
	}

	always := newTag("7", 600, nil)
	always.ImagePullPolicy = appsv1alpha1.PullAlways
	e.addTag(t, node, "redis", always)
	e.nodeImages().WaitFor(t, node, "redis:7 Succeeded", func(ni *nodeImage) bool {
		s := tagStatus(ni, "redis", "7")
		return s != nil && s.Phase == appsv1alpha1.ImagePhaseSucceeded
	})
	if pulls := runtime.Pulls(); len(pulls) != 1 || pulls[0].Image != "redis:7" {
		t.Errorf("pulls %+v, want one of redis:7", pulls)
	}
}

// TestAgentRetriesThenFails: with a runtime whose pulls always fail and backoffLimit 1,
// exactly two attempts are made; the tag is Failed with the last error and a
// PullImageFailed warning is recorded on the ImagePullJob that owns it and on the
// NodeImage.
func TestAgentRetriesThenFails(t *testing.T) {
	e := setup(t)
	node, runtime := e.startPullerNode(t, "failing")
	runtime.FailPulls(errors.New("registry is down"))
	owner := e.createJob(t, "pull-nginx")

	tag := newTag("1.25", 600, owner)
	tag.PullPolicy.BackoffLimit = ptr.To[int32](1)
	e.addTag(t, node, "nginx", tag)
	ni := e.nodeImages().WaitFor(t, node, "nginx:1.25 Failed", func(ni *nodeImage) bool {
		s := tagStatus(ni, "nginx", "1.25")
		return s != nil && s.Phase == appsv1alpha1.ImagePhaseFailed
	})
	s := tagStatus(ni, "nginx", "1.25")
	if !strings.Contains(s.Message, "registry is down") || s.CompletionTime == nil || s.StartTime == nil {
		t.Errorf("status %+v, want the runtime's error as message", s)
	}
	if ni.Status.Failed != 1 || ni.Status.Desired != 1 || ni.Status.Pulling != 0 {
		t.Errorf("counters %+v", ni.Status)
	}
	if n := runtime.ImageCallCount(crifake.PullImageCall); n != 2 {
		t.Errorf("%d pull attempts with backoffLimit 1, want 2", n)
	}

	ev := e.waitForEvent(t, e.Namespace, "ImagePullJob", owner.Name, eventPullImageFailed)
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.UID != owner.UID || !strings.Contains(ev.Message, "registry is down") {
		t.Errorf("event on the job: %s %q on %+v", ev.Type, ev.Message, ev.InvolvedObject)
	}
	ev = e.waitForEvent(t, "", "NodeImage", node, eventPullImageFailed)
	if ev.Type != corev1.EventTypeWarning || ev.Source.Component != "nodeimage-agent" {
		t.Errorf("event on the NodeImage: %s from %q", ev.Type, ev.Source.Component)
	}
}
