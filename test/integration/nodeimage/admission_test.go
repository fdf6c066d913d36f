package nodeimage

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// fakeNodeImage is a NodeImage the controller leaves alone although no node has its name.
func (e *testEnv) fakeNodeImage(short string, images map[string]appsv1alpha1.ImageSpec) *nodeImage {
	return &nodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: e.NodeName(short),
			Labels: map[string]string{framework.OwnerNamespaceLabel: e.Namespace, appsv1alpha1.FakeNodeImageLabelKey: "true"}},
		Spec: appsv1alpha1.NodeImageSpec{Images: images},
	}
}

// TestAdmission: omitted createdAt, timeout and backoff limit are defaulted; a tag
// without ttlSecondsAfterFinished, a duplicate or empty tag, an unknown imagePullPolicy, a
// negative version and more than 256 images are refused, on creation as on update.
func TestAdmission(t *testing.T) {
	e := setup(t)
	e.startManager(t, managerOptions())
	client := e.Bosun.AppsV1alpha1().NodeImages()

	before := time.Now().Add(-time.Second).Truncate(time.Second)
	ni := e.nodeImages().Create(t, e.fakeNodeImage("defaults", map[string]appsv1alpha1.ImageSpec{
		"nginx":           {Tags: []appsv1alpha1.ImageTagSpec{newTag("1.25", 300, nil)}},
		"reg.io/team/app": {Tags: []appsv1alpha1.ImageTagSpec{newTag("v1", 60, nil), newTag("v2", 60, nil)}},
	}))
	for image, spec := range ni.Spec.Images {
		for _, tag := range spec.Tags {
			what := image + ":" + tag.Tag
			if tag.CreatedAt == nil || tag.CreatedAt.Time.Before(before) || tag.CreatedAt.Time.After(time.Now().Add(time.Second)) {
				t.Errorf("%s: createdAt = %v, want the admission time (after %v)", what, tag.CreatedAt, before)
			}
			if p := tag.PullPolicy; p == nil || ptr.Deref(p.TimeoutSeconds, 0) != 600 || ptr.Deref(p.BackoffLimit, 0) != 3 {
				t.Errorf("%s: pullPolicy = %+v, want timeoutSeconds 600 and backoffLimit 3", what, p)
			}
			if tag.ImagePullPolicy != "" {
				t.Errorf("%s: imagePullPolicy defaulted to %q, want it left empty", what, tag.ImagePullPolicy)
			}
		}
	}
	// What a user set is kept.
	createdAt := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	kept := newTag("1.0", 60, nil)
	kept.CreatedAt = &createdAt
	kept.PullPolicy.TimeoutSeconds, kept.PullPolicy.BackoffLimit = ptr.To[int32](30), ptr.To[int32](0)
	ni = e.addTag(t, ni.Name, "busybox", kept)
	if got := tagSpec(ni, "busybox", "1.0"); !got.CreatedAt.Equal(&createdAt) || *got.PullPolicy.TimeoutSeconds != 30 || *got.PullPolicy.BackoffLimit != 0 {
		t.Errorf("busybox:1.0 after admission = %+v, want the user's createdAt, timeout 30 and backoff 0", got)
	}

	tooMany := map[string]appsv1alpha1.ImageSpec{}
	for i := range 257 {
		tooMany[fmt.Sprintf("img%d", i)] = appsv1alpha1.ImageSpec{Tags: []appsv1alpha1.ImageTagSpec{newTag("1", 60, nil)}}
	}
	noTTL := newTag("1", 60, nil)
	noTTL.PullPolicy.TTLSecondsAfterFinished = nil
	negative := newTag("1", 60, nil)
	negative.Version = -1
	never := newTag("1", 60, nil)
	never.ImagePullPolicy = "Never"
	for _, tc := range []struct {
		name   string
		images map[string]appsv1alpha1.ImageSpec
		// codes are the acceptable answers: the webhook's 400, or the 422 of the
		// CRD's own schema, which the API server checks before the validating webhook.
		codes []int32
		field string
	}{
		{"no ttlSecondsAfterFinished", map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{noTTL}}},
			[]int32{http.StatusBadRequest}, "spec.images[nginx].tags[0].pullPolicy.ttlSecondsAfterFinished"},
		{"duplicate tag", map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{newTag("1", 60, nil), newTag("1", 60, nil)}}},
			[]int32{http.StatusBadRequest}, "spec.images[nginx].tags[1].tag"},
		{"unknown imagePullPolicy", map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{never}}},
			[]int32{http.StatusBadRequest, http.StatusUnprocessableEntity}, "imagePullPolicy"},
		{"version -1", map[string]appsv1alpha1.ImageSpec{"nginx": {Tags: []appsv1alpha1.ImageTagSpec{negative}}},
			[]int32{http.StatusBadRequest, http.StatusUnprocessableEntity}, "version"},
		{"257 images", tooMany, []int32{http.StatusBadRequest, http.StatusUnprocessableEntity}, "spec.images"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Create(e.Ctx, e.fakeNodeImage("invalid", tc.images), metav1.CreateOptions{})
			expectDenied(t, "creating a NodeImage with "+tc.name, err, tc.codes, tc.field)
			_, err = e.nodeImages().TryUpdate(ni.Name, func(ni *nodeImage) { ni.Spec.Images = tc.images })
			expectDenied(t, "updating a NodeImage to "+tc.name, err, tc.codes, tc.field)
		})
	}
}

// TestAdmissionWithTheDaemonOff: with feature gate KruiseDaemon off, new NodeImages are
// refused with 403.
func TestAdmissionWithTheDaemonOff(t *testing.T) {
	e := setup(t)
	opts := managerOptions()
	opts.FeatureGates = "KruiseDaemon=false"
	e.startManager(t, opts)
	_, err := e.Bosun.AppsV1alpha1().NodeImages().Create(e.Ctx, e.fakeNodeImage("off", nil), metav1.CreateOptions{})
	framework.ExpectRefused(t, "creating a NodeImage with KruiseDaemon off", err, http.StatusForbidden, "KruiseDaemon")
}

// expectDenied fails the test unless err is an API error with one of codes whose message
// names field.
func expectDenied(t *testing.T, what string, err error, codes []int32, field string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s was allowed, want it refused", what)
		return
	}
	code := framework.StatusCode(err)
	for _, want := range codes {
		if code == want {
			framework.ExpectRefused(t, what, err, code, field)
			return
		}
	}
	t.Errorf("%s: HTTP %d (%v), want one of %v", what, code, err, codes)
}
