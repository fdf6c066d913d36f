package framework

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OwnerNamespaceLabel marks cluster-scoped objects a test made (Nodes, NodeImages) with the
// test's namespace, by which its cleanup finds them.
const OwnerNamespaceLabel = "bosun.dev/integration-test-namespace"

// NodeName is the name of the test's Node called suffix. Nodes are cluster-scoped, so the
// name starts with the test's namespace; names sort like their suffixes.
func (e *Env) NodeName(suffix string) string { return e.Namespace + "-" + suffix }

// NewNode is the test's Node called suffix (see NodeName), labelled labels, and Ready since
// readySince, as a kubelet reports it, unless readySince is zero. CreateNode creates it.
func (e *Env) NewNode(suffix string, labels map[string]string, readySince time.Time) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.NodeName(suffix), Labels: maps.Clone(labels)}}
	if !readySince.IsZero() {
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(readySince),
		}}
	}
	return node
}

// CreateNode creates node, labelled OwnerNamespaceLabel=<namespace> so that the end of the
// test deletes it, and returns it as stored. A create ignores the status, and kube-apiserver
// taints every new Node node.kubernetes.io/not-ready:NoSchedule (the node lifecycle
// controller would lift it once the kubelet reports Ready; none runs here): so the taints
// are written again to be exactly node's, then its status when it has conditions.
func (e *Env) CreateNode(t testing.TB, node *corev1.Node) *corev1.Node {
	t.Helper()
	node = node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[OwnerNamespaceLabel] = e.Namespace
	e.mu.Lock()
	e.removeNodes = true
	e.mu.Unlock()
	nodes := e.Nodes()
	stored := nodes.Create(t, node)
	stored = nodes.Update(t, node.Name, func(n *corev1.Node) { n.Spec.Taints = node.Spec.Taints })
	if len(node.Status.Conditions) > 0 {
		stored = nodes.UpdateStatus(t, node.Name, func(n *corev1.Node) { n.Status = node.Status })
	}
	return stored
}
