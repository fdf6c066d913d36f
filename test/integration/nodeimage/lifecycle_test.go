package nodeimage

import (
	"maps"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// TestNodeImageFollowsItsNode: a node Ready for longer than the creation delay gets a
// NodeImage of its name with its labels at once; one that has just turned Ready gets it
// only once the delay has passed; one that is not Ready gets none. Relabelling a node
// relabels its NodeImage, deleting the node deletes it, and a NodeImage without a node is
// deleted unless it is marked fake.
func TestNodeImageFollowsItsNode(t *testing.T) {
	e := setup(t)
	const delay = 8 * time.Second

	// Made before the manager starts: its start-up sync sees them all at once.
	orphan := e.nodeImages().Create(t, &nodeImage{ObjectMeta: metav1.ObjectMeta{Name: e.NodeName("orphan"), Labels: map[string]string{framework.OwnerNamespaceLabel: e.Namespace}}})
	fake := e.nodeImages().Create(t, &nodeImage{ObjectMeta: metav1.ObjectMeta{Name: e.NodeName("fake"),
		Labels: map[string]string{framework.OwnerNamespaceLabel: e.Namespace, appsv1alpha1.FakeNodeImageLabelKey: "true"}}})
	notReady := e.createNode(t, "not-ready", nil, time.Time{})
	e.setNodeReady(t, notReady, corev1.ConditionFalse, time.Now().Add(-time.Hour))
	old := e.createNode(t, "old", map[string]string{"zone": "a", "pool": "web"}, time.Now().Add(-time.Hour))

	e.startManager(t, managerOptions(creationDelayFlag+"="+delay.String()))

	// A node Ready for an hour: its NodeImage is created at once, with its labels.
	ni := e.nodeImages().WaitFor(t, old, "created with the node's labels", func(ni *nodeImage) bool {
		return maps.Equal(ni.Labels, map[string]string{framework.OwnerNamespaceLabel: e.Namespace, "zone": "a", "pool": "web"})
	})
	if len(ni.Spec.Images) != 0 {
		t.Errorf("a new NodeImage lists images: %v", ni.Spec.Images)
	}
	e.nodeImages().WaitForGone(t, orphan.Name)

	// A node that turns Ready now gets its NodeImage only after the delay. Times are
	// stored with second precision, so the Ready time is whole seconds.
	readySince := time.Now().Truncate(time.Second)
	fresh := e.createNode(t, "fresh", map[string]string{"zone": "b"}, readySince)
	created := e.nodeImages().WaitFor(t, fresh, "created", func(*nodeImage) bool { return true })
	if waited := created.CreationTimestamp.Sub(readySince); waited < delay {
		t.Errorf("the NodeImage of a node Ready since %v was created %v later, want at least %v", readySince, waited, delay)
	}

	// By then the controller has long looked at the other nodes and NodeImages.
	if ni := e.getNodeImage(t, notReady); ni != nil {
		t.Errorf("a node that is not Ready got a NodeImage: %s", describe(ni))
	}
	if e.getNodeImage(t, fake.Name) == nil {
		t.Errorf("the NodeImage labelled %s was deleted although it has no node", appsv1alpha1.FakeNodeImageLabelKey)
	}

	// Relabelling: added, changed and removed labels all follow.
	e.Nodes().Update(t, old, func(n *corev1.Node) {
		n.Labels["zone"] = "c"
		delete(n.Labels, "pool")
		n.Labels["gpu"] = "true"
	})
	e.nodeImages().WaitFor(t, old, "relabelled like the node", func(ni *nodeImage) bool {
		return maps.Equal(ni.Labels, map[string]string{framework.OwnerNamespaceLabel: e.Namespace, "zone": "c", "gpu": "true"})
	})
	// A label written on the NodeImage itself is put right.
	_, err := e.nodeImages().TryUpdate(old, func(ni *nodeImage) { ni.Labels["stray"] = "x" })
	framework.MustSucceed(t, "labelling the NodeImage", err)
	e.nodeImages().WaitFor(t, old, "back to the node's labels", func(ni *nodeImage) bool {
		_, stray := ni.Labels["stray"]
		return !stray
	})

	e.Nodes().Delete(t, old)
	e.nodeImages().WaitForGone(t, old)
}
