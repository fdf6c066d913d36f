package nodeimage

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestStatusWriteSkipsUnchangedStatusUntilRefresh(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	nodeImage := newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3))
	f.create(nodeImage)
	f.c.writer.observe(nodeImage.Status.DeepCopy())

	status := &appsv1beta1.NodeImageStatus{Desired: 1, Succeeded: 1}
	for range 3 {
		if limited, err := f.c.writeStatus(f.ctx, nodeImage, status.DeepCopy()); err != nil || limited {
			t.Fatalf("write: limited %v, %v", limited, err)
		}
	}
	if n := f.statusWrites(); n != 1 {
		t.Errorf("%d writes of one status", n)
	}
	// Unchanged, it is written again after 12 h plus up to 1 h.
	f.clock.Step(12 * time.Hour)
	if _, err := f.c.writeStatus(f.ctx, nodeImage, status.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if n := f.statusWrites(); n != 1 {
		t.Errorf("rewritten after 12 h: %d writes", n)
	}
	f.clock.Step(time.Hour)
	if _, err := f.c.writeStatus(f.ctx, nodeImage, status.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if n := f.statusWrites(); n != 2 {
		t.Errorf("not rewritten after 13 h: %d writes", n)
	}
	if got := f.current().Status; got.Succeeded != 1 || got.Desired != 1 {
		t.Errorf("written status %+v", got)
	}
}

func TestStatusWritesAreRateLimited(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	nodeImage := newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3))
	f.create(nodeImage)

	// A burst of 5, then one every 2 s.
	for i := range 5 {
		if limited, err := f.c.writeStatus(f.ctx, nodeImage, &appsv1beta1.NodeImageStatus{Desired: int32(i + 1)}); err != nil || limited {
			t.Fatalf("write %d: limited %v, %v", i, limited, err)
		}
	}
	if limited, _ := f.c.writeStatus(f.ctx, nodeImage, &appsv1beta1.NodeImageStatus{Desired: 10}); !limited {
		t.Error("the sixth write at once was not limited")
	}
	f.clock.Step(2 * time.Second)
	if limited, _ := f.c.writeStatus(f.ctx, nodeImage, &appsv1beta1.NodeImageStatus{Desired: 10}); limited {
		t.Error("a write 2 s later was limited")
	}
	if n := f.statusWrites(); n != 6 {
		t.Errorf("%d writes", n)
	}
}

func TestStatusDropsTagsGoneFromSpecAndKeepsDoneOnes(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	done := metav1.NewTime(t0)
	nodeImage := newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3))
	nodeImage.Spec.Images["nginx"].Tags[0].Version = 2
	nodeImage.Status = appsv1beta1.NodeImageStatus{
		Desired: 2, Succeeded: 2,
		ImageStatuses: map[string]appsv1beta1.ImageStatus{
			"nginx": {Tags: []appsv1beta1.ImageTagStatus{
				{Tag: "1.24", Phase: appsv1beta1.ImagePhaseSucceeded, Version: 0, CompletionTime: &done},
				{Tag: "1.25", Phase: appsv1beta1.ImagePhaseFailed, Version: 2, CompletionTime: &done, Message: "boom"},
			}},
			"redis": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "7", Phase: appsv1beta1.ImagePhaseSucceeded, CompletionTime: &done}}},
		},
	}
	f.create(nodeImage)
	f.sync()

	s := f.current().Status
	if _, ok := s.ImageStatuses["redis"]; ok || len(s.ImageStatuses["nginx"].Tags) != 1 {
		t.Fatalf("statuses %+v", s.ImageStatuses)
	}
	if tag := s.ImageStatuses["nginx"].Tags[0]; tag.Tag != "1.25" || tag.Message != "boom" || tag.Version != 2 {
		t.Errorf("done tag not kept as is: %+v", tag)
	}
	if s.Desired != 1 || s.Failed != 1 || s.Succeeded != 0 {
		t.Errorf("counts %+v", s)
	}
	if len(f.runtime.Pulls()) != 0 || len(f.c.pools["nginx"].workers) != 0 {
		t.Error("a done tag was pulled again")
	}
}
