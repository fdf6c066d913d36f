package framework

import (
	"errors"
	"fmt"
	"maps"
	"sync"
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
	stored, err := e.createNode(node)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// nodeCreateWorkers is how many Nodes CreateNodes writes at once.
const nodeCreateWorkers = 8

// CreateNodes is CreateNode for many nodes, several at a time, for tests of hundreds of
// nodes. It returns them as stored, in the order given.
func (e *Env) CreateNodes(t testing.TB, nodes []*corev1.Node) []*corev1.Node {
	t.Helper()
	stored := make([]*corev1.Node, len(nodes))
	errs := make([]error, len(nodes))
	next := make(chan int)
	var wg sync.WaitGroup
	for range nodeCreateWorkers {
		wg.Go(func() {
			for i := range next {
				stored[i], errs[i] = e.createNode(nodes[i])
			}
		})
	}
	for i := range nodes {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return stored
}

func (e *Env) createNode(node *corev1.Node) (*corev1.Node, error) {
	node = node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[OwnerNamespaceLabel] = e.Namespace
	e.mu.Lock()
	e.removeNodes = true
	e.mu.Unlock()
	nodes := e.Nodes()
	stored, err := nodes.TryCreate(node)
	if err != nil {
		return nil, fmt.Errorf("creating Node %s: %w", node.Name, err)
	}
	stored, err = nodes.TryUpdate(node.Name, func(n *corev1.Node) { n.Spec.Taints = node.Spec.Taints })
	if err != nil {
		return nil, fmt.Errorf("setting the taints of Node %s: %w", node.Name, err)
	}
	if len(node.Status.Conditions) > 0 {
		stored, err = nodes.TryUpdateStatus(node.Name, func(n *corev1.Node) { n.Status = node.Status })
		if err != nil {
			return nil, fmt.Errorf("writing the status of Node %s: %w", node.Name, err)
		}
	}
	return stored, nil
}
