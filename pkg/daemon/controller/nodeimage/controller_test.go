package nodeimage

import (
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestOnlySpecChangesQueue(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	old := newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3))

	statusOnly := old.DeepCopy()
	statusOnly.ResourceVersion = "2"
	statusOnly.Status.Desired = 1
	f.c.updateNodeImage(f.ctx, old, statusOnly)
	if keys := f.queue.AddedKeys(); len(keys) != 0 {
		t.Errorf("a status change queued %v", keys)
	}

	specChange := old.DeepCopy()
	specChange.Generation++
	specChange.Spec.Images["nginx"].Tags[0].Version = 1
	f.c.updateNodeImage(f.ctx, old, specChange)
	if keys := f.queue.AddedKeys(); !slices.Equal(keys, []string{testNode}) {
		t.Errorf("a spec change queued %v", keys)
	}

	f.queue.Reset()
	f.c.addNodeImage(f.ctx, old)
	f.c.deleteNodeImage(f.ctx, cache.DeletedFinalStateUnknown{Key: testNode, Obj: old})
	if keys := f.queue.AddedKeys(); !slices.Equal(keys, []string{testNode}) {
		t.Errorf("add and delete queued %v", keys)
	}

	f.queue.Reset()
	other := old.DeepCopy()
	other.Name = "node-2"
	f.c.addNodeImage(f.ctx, other)
	if keys := f.queue.AddedKeys(); len(keys) != 0 {
		t.Errorf("another node's NodeImage queued %v", keys)
	}
}

func TestNewControllerNeedsTheNodeName(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	if _, err := NewController(f.ctx, nil, nil, nil, nil, nil, Config{}); err == nil {
		t.Error("built without a node name")
	}
}

// The agent names its NodeImage in events as this release writes every reference: in
// apps.kruise.io/v1beta1.
func TestNodeImageReference(t *testing.T) {
	ni := newNodeImage("nginx", newTag("1.25", appsv1beta1.PullAlways, 3))
	ref := nodeImageReference(ni)
	if ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "NodeImage" || ref.Name != ni.Name || ref.UID != ni.UID {
		t.Errorf("reference = %+v, want apps.kruise.io/v1beta1 NodeImage %s (%s)", ref, ni.Name, ni.UID)
	}
}
