package nodeimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Strings users, tools and OpenKruise read, checked verbatim.
const (
	webhookNodeImageMutation   = "mnodeimage.kb.io"
	webhookNodeImageValidation = "vnodeimage.kb.io"

	eventPullImageFailed  = "PullImageFailed"
	eventPullImageSucceed = "PullImageSucceed"

	messageNotResponded     = "node has not responded for a long time"
	messageDeadlineExceeded = "pulling exceeds the activeDeadlineSeconds"
)

const (
	// nodeImageController is the --controllers name of the manager-side NodeImage controller.
	nodeImageController = "nodeimage-controller"
	// creationDelayFlag and responseTimeoutFlag shorten the manager's 30 s wait before
	// it creates a NodeImage and its 10 min wait for an agent's first report.
	creationDelayFlag   = "--nodeimage-creation-delay"
	responseTimeoutFlag = "--nodeimage-response-timeout"

	// nodeOwnerLabel marks the Nodes a test made with its namespace: Nodes are cluster
	// scoped, and the cleanup deletes them (and their NodeImages) by it.
	nodeOwnerLabel = "bosun.dev/integration-test-namespace"

	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker.
	testTimeout = 6 * time.Minute
	waitTimeout = 2 * time.Minute
)

type nodeImage = appsv1alpha1.NodeImage

// testEnv is what every test works with: a context bounded by testTimeout, the shared
// control plane, admin clients and a fresh namespace (whose name also prefixes the test's
// Nodes).
type testEnv struct {
	ctx    context.Context
	cp     *framework.ControlPlane
	client kubernetes.Interface
	bosun  bosunclientset.Interface
	ns     string
}

// setup prepares a test. When it ends — after its manager and agents have stopped, since
// they start later — the webhook configurations are deleted (nothing answers them any
// more), then the test's Nodes and NodeImages, so that the managers of later tests, which
// watch every Node, do not work on them.
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
	mine := metav1.ListOptions{LabelSelector: nodeOwnerLabel + "=" + e.ns}
	if err := e.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, mine); err != nil {
		t.Errorf("cleanup: deleting Nodes: %v", err)
	}
	// NodeImages carry their node's labels; the ones a test made by hand carry the label
	// too, and names prefixed with the namespace catch the rest.
	if err := e.bosun.AppsV1alpha1().NodeImages().DeleteCollection(ctx, metav1.DeleteOptions{}, mine); err != nil {
		t.Errorf("cleanup: deleting NodeImages: %v", err)
	}
	if list, err := e.bosun.AppsV1alpha1().NodeImages().List(ctx, metav1.ListOptions{}); err == nil {
		for _, ni := range list.Items {
			if strings.HasPrefix(ni.Name, e.ns) {
				_ = e.bosun.AppsV1alpha1().NodeImages().Delete(ctx, ni.Name, metav1.DeleteOptions{})
			}
		}
	}
}

// nodeName returns the name of the test's Node called short: Nodes are cluster scoped, so
// it is prefixed with the test's namespace.
func (e *testEnv) nodeName(short string) string { return e.ns + "-" + short }

// managerOptions are the options of the usual manager: the NodeImage controller and its
// webhooks, with the given extra flags (for example creationDelayFlag+"=0s").
func managerOptions(extraArgs ...string) framework.ControllerManagerOptions {
	return framework.ControllerManagerOptions{
		Controllers: nodeImageController,
		Webhooks:    true,
		ExtraArgs:   extraArgs,
	}
}

// startManager runs bosun-controller-manager until the test ends and, when it serves
// webhooks, returns once the API server calls both NodeImage webhooks.
func (e *testEnv) startManager(t *testing.T, opts framework.ControllerManagerOptions) *framework.ControllerManager {
	t.Helper()
	if !opts.Webhooks {
		return framework.StartBosunControllerManager(t, e.cp, opts)
	}
	probe := &nodeImage{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-admission-probe"}}
	send := func(ctx context.Context) {
		_, _ = e.bosun.AppsV1alpha1().NodeImages().Create(ctx, probe, framework.DryRunCreate)
	}
	return framework.StartBosunControllerManagerWithWebhooks(e.ctx, t, e.cp, opts,
		framework.WebhookProbe{Webhook: webhookNodeImageMutation, Send: send},
		framework.WebhookProbe{Webhook: webhookNodeImageValidation, Send: send})
}

// ---- Nodes ----

// createNode creates the test's Node called short (see nodeName) with labels (plus
// nodeOwnerLabel) and, when readySince is not zero, a Ready condition that turned True at
// readySince, as a kubelet would report it. It returns the Node's full name.
func (e *testEnv) createNode(t *testing.T, short string, labels map[string]string, readySince time.Time) string {
	t.Helper()
	name := e.nodeName(short)
	all := map[string]string{nodeOwnerLabel: e.ns}
	for k, v := range labels {
		all[k] = v
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all}}
	created, err := e.client.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	if !readySince.IsZero() {
		e.setNodeReady(t, created.Name, corev1.ConditionTrue, readySince)
	}
	return name
}

// setNodeReady writes the Node's Ready condition with the given status, last transitioned
// at since, keeping the other conditions.
func (e *testEnv) setNodeReady(t *testing.T, name string, status corev1.ConditionStatus, since time.Time) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := corev1.NodeCondition{
			Type:               corev1.NodeReady,
			Status:             status,
			Reason:             "KubeletReady",
			LastHeartbeatTime:  metav1.Now(),
			LastTransitionTime: metav1.NewTime(since),
		}
		conditions := []corev1.NodeCondition{ready}
		for _, c := range node.Status.Conditions {
			if c.Type != corev1.NodeReady {
				conditions = append(conditions, c)
			}
		}
		node.Status.Conditions = conditions
		_, err = e.client.CoreV1().Nodes().UpdateStatus(e.ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting Node %s Ready=%s: %v", name, status, err)
	}
}

// updateNode applies mutate to the Node with conflict retry.
func (e *testEnv) updateNode(t *testing.T, name string, mutate func(*corev1.Node)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(node)
		_, err = e.client.CoreV1().Nodes().Update(e.ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating Node %s: %v", name, err)
	}
}

// deleteNode deletes the Node.
func (e *testEnv) deleteNode(t *testing.T, name string) {
	t.Helper()
	if err := e.client.CoreV1().Nodes().Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Node %s: %v", name, err)
	}
}

// ---- NodeImages ----

// createNodeImage creates ni as given (through the webhooks, when a manager serves them).
// Give it nodeOwnerLabel, or a name from nodeName, for the cleanup to find it.
func (e *testEnv) createNodeImage(t *testing.T, ni *nodeImage) *nodeImage {
	t.Helper()
	created, err := e.bosun.AppsV1alpha1().NodeImages().Create(e.ctx, ni, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating NodeImage %s: %v", ni.Name, err)
	}
	return created
}

// getNodeImage returns the NodeImage, or nil when it does not exist.
func (e *testEnv) getNodeImage(t *testing.T, name string) *nodeImage {
	t.Helper()
	ni, err := e.bosun.AppsV1alpha1().NodeImages().Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("getting NodeImage %s: %v", name, err)
	}
	return ni
}

// waitForNodeImage waits until the NodeImage exists and cond holds for it, and returns it.
func (e *testEnv) waitForNodeImage(t *testing.T, name, what string, cond func(*nodeImage) bool) *nodeImage {
	t.Helper()
	var last *nodeImage
	err := framework.WaitFor(e.ctx, waitTimeout, fmt.Sprintf("NodeImage %s: %s", name, what), func(ctx context.Context) (bool, error) {
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
		t.Fatalf("%v; last seen: %s", err, describe(last))
	}
	return last
}

// waitForNodeImageGone waits until the NodeImage no longer exists.
func (e *testEnv) waitForNodeImageGone(t *testing.T, name string) {
	t.Helper()
	err := framework.WaitFor(e.ctx, waitTimeout, "NodeImage "+name+" to be deleted", func(ctx context.Context) (bool, error) {
		_, err := e.bosun.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// updateNodeImage applies mutate to the NodeImage's spec and metadata with conflict retry
// and returns what the API server stored (after the webhooks) or the last error.
func (e *testEnv) updateNodeImage(name string, mutate func(*nodeImage)) (*nodeImage, error) {
	var updated *nodeImage
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ni, err := e.bosun.AppsV1alpha1().NodeImages().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(ni)
		updated, err = e.bosun.AppsV1alpha1().NodeImages().Update(e.ctx, ni, metav1.UpdateOptions{})
		return err
	})
	return updated, err
}

// addTag adds tag to image in the NodeImage's spec (replacing an entry of the same tag),
// with conflict retry. The webhook defaults createdAt, the timeout and the backoff limit.
func (e *testEnv) addTag(t *testing.T, name, image string, tag appsv1alpha1.ImageTagSpec) *nodeImage {
	t.Helper()
	ni, err := e.updateNodeImage(name, func(ni *nodeImage) {
		if ni.Spec.Images == nil {
			ni.Spec.Images = map[string]appsv1alpha1.ImageSpec{}
		}
		spec := ni.Spec.Images[image]
		kept := spec.Tags[:0:0]
		for _, existing := range spec.Tags {
			if existing.Tag != tag.Tag {
				kept = append(kept, existing)
			}
		}
		spec.Tags = append(kept, tag)
		ni.Spec.Images[image] = spec
	})
	if err != nil {
		t.Fatalf("adding %s:%s to NodeImage %s: %v", image, tag.Tag, name, err)
	}
	return ni
}

// newTag returns a tag entry with the TTL the webhook requires and the given owner (nil
// for none).
func newTag(tag string, ttlSeconds int32, owner *corev1.ObjectReference) appsv1alpha1.ImageTagSpec {
	spec := appsv1alpha1.ImageTagSpec{
		Tag:        tag,
		PullPolicy: &appsv1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: &ttlSeconds},
	}
	if owner != nil {
		spec.OwnerReferences = []corev1.ObjectReference{*owner}
	}
	return spec
}

// tagStatus returns the status of image:tag, or nil.
func tagStatus(ni *nodeImage, image, tag string) *appsv1alpha1.ImageTagStatus {
	if ni == nil {
		return nil
	}
	for i, s := range ni.Status.ImageStatuses[image].Tags {
		if s.Tag == tag {
			return &ni.Status.ImageStatuses[image].Tags[i]
		}
	}
	return nil
}

// tagSpec returns the spec entry of image:tag, or nil.
func tagSpec(ni *nodeImage, image, tag string) *appsv1alpha1.ImageTagSpec {
	if ni == nil {
		return nil
	}
	for i, s := range ni.Spec.Images[image].Tags {
		if s.Tag == tag {
			return &ni.Spec.Images[image].Tags[i]
		}
	}
	return nil
}

// describe renders a NodeImage for failure messages.
func describe(ni *nodeImage) string {
	if ni == nil {
		return "<none>"
	}
	return fmt.Sprintf("labels=%v spec=%+v status=%+v", ni.Labels, ni.Spec, ni.Status)
}

// ---- Events ----

// eventsFor lists the events recorded on the object of kind and name in namespace ns (""
// for cluster-scoped objects, whose events live in "default").
func (e *testEnv) eventsFor(t *testing.T, ns, kind, name string) []corev1.Event {
	t.Helper()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	selector := fmt.Sprintf("involvedObject.kind=%s,involvedObject.name=%s", kind, name)
	list, err := e.client.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatalf("listing events of %s %s: %v", kind, name, err)
	}
	return list.Items
}

// waitForEvent waits for an event with reason on the object and returns it.
func (e *testEnv) waitForEvent(t *testing.T, ns, kind, name, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := framework.WaitFor(e.ctx, waitTimeout, fmt.Sprintf("event %s on %s %s", reason, kind, name), func(context.Context) (bool, error) {
		for _, ev := range e.eventsFor(t, ns, kind, name) {
			if ev.Reason == reason {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// ---- Node agent ----

// startAgent runs the real bosun-daemon for nodeName until the test ends, talking CRI v1 to
// a fake runtime served on a unix socket in this process, and returns that runtime. It
// returns once the agent reports ready (runtime reachable, informers synced).
func (e *testEnv) startAgent(t *testing.T, nodeName string, extraArgs ...string) *crifake.Runtime {
	t.Helper()
	runtime := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	framework.StartBosunDaemon(e.ctx, t, e.cp, framework.BosunDaemonOptions{
		Node:            nodeName,
		RuntimeEndpoint: runtime.Endpoint(),
		Verbosity:       4,
		ExtraArgs:       extraArgs,
	})
	return runtime
}

// ---- Errors ----

// mustSucceed fails the test if err (of what) is not nil.
func mustSucceed(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v, want it allowed", what, err)
	}
}

// statusCode returns the HTTP status code of an API error, or 0.
func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// expectRefused fails the test unless err is an API error with code whose message contains
// every one of contains.
func expectRefused(t *testing.T, what string, err error, code int32, contains ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s was allowed, want HTTP %d", what, code)
		return
	}
	if got := statusCode(err); got != code {
		t.Errorf("%s: HTTP %d (%v), want %d", what, got, err, code)
		return
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q does not contain %q", what, err.Error(), s)
		}
	}
}

// patchNodeImageStatus merge-patches the NodeImage's status subresource, as an agent would.
func (e *testEnv) patchNodeImageStatus(t *testing.T, name string, patch []byte) {
	t.Helper()
	if _, err := e.bosun.AppsV1alpha1().NodeImages().Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patching the status of NodeImage %s: %v", name, err)
	}
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
