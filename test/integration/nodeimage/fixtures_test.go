package nodeimage

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

	// testTimeout bounds one test; waitTimeout one awaited state. Generous: the machine is
	// small and shared, and a healthy run is far quicker.
	testTimeout = 6 * time.Minute
	waitTimeout = 2 * time.Minute
)

type nodeImage = appsv1alpha1.NodeImage

// testEnv is what every test works with: the framework's environment, with a context
// bounded by testTimeout and a namespace whose name also prefixes the test's Nodes.
type testEnv struct{ *framework.Env }

// setup prepares a test. When it ends — after its manager and agents have stopped, since
// they start later — the webhook configurations are deleted (nothing answers them any
// more), then the test's Nodes and NodeImages, so that the managers of later tests, which
// watch every Node, do not work on them. NodeImages carry their node's labels; the ones a
// test made by hand carry the label too, and names prefixed with the namespace catch the
// rest.
func setup(t *testing.T) *testEnv {
	t.Helper()
	e := framework.NewTestEnv(t, framework.SharedControlPlane(t), framework.EnvOptions{
		Timeout: testTimeout, WaitTimeout: waitTimeout, RemoveWebhookConfigurations: true,
		RemoveLabelled: []string{"nodeimages.apps.kruise.io"},
	})
	e.OnCleanup(func(ctx context.Context) error {
		// Best effort, as the labelled ones cover what the controllers made.
		if list, err := e.Bosun.AppsV1alpha1().NodeImages().List(ctx, metav1.ListOptions{}); err == nil {
			for _, ni := range list.Items {
				if strings.HasPrefix(ni.Name, e.Namespace) {
					_ = e.Bosun.AppsV1alpha1().NodeImages().Delete(ctx, ni.Name, metav1.DeleteOptions{})
				}
			}
		}
		return nil
	})
	return &testEnv{e}
}

// nodeImages are the cluster's NodeImages, shown by describe when a wait fails.
func (e *testEnv) nodeImages() *framework.Objects[*nodeImage] {
	return e.NodeImages().DescribedBy(describe)
}

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
		return framework.StartBosunControllerManager(t, e.CP, opts)
	}
	probe := &nodeImage{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace + "-admission-probe"}}
	send := func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().NodeImages().Create(ctx, probe, framework.DryRunCreate)
	}
	return framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP, opts,
		framework.WebhookProbe{Webhook: webhookNodeImageMutation, Send: send},
		framework.WebhookProbe{Webhook: webhookNodeImageValidation, Send: send})
}

// ---- Nodes ----

// createNode creates the test's Node called short (see framework.Env.NodeName) with labels
// and, when readySince is not zero, a Ready condition that turned True at readySince, as a
// kubelet would report it. It returns the Node's full name.
func (e *testEnv) createNode(t *testing.T, short string, labels map[string]string, readySince time.Time) string {
	t.Helper()
	return e.CreateNode(t, e.NewNode(short, labels, readySince)).Name
}

// setNodeReady writes the Node's Ready condition with the given status, last transitioned
// at since, keeping the other conditions.
func (e *testEnv) setNodeReady(t *testing.T, name string, status corev1.ConditionStatus, since time.Time) {
	t.Helper()
	e.Nodes().UpdateStatus(t, name, func(node *corev1.Node) {
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
	})
}

// ---- NodeImages ----

// getNodeImage returns the NodeImage, or nil when it does not exist.
func (e *testEnv) getNodeImage(t *testing.T, name string) *nodeImage {
	t.Helper()
	ni, err := e.Bosun.AppsV1alpha1().NodeImages().Get(e.Ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("getting NodeImage %s: %v", name, err)
	}
	return ni
}

// addTag adds tag to image in the NodeImage's spec (replacing an entry of the same tag),
// with conflict retry. The webhook defaults createdAt, the timeout and the backoff limit.
func (e *testEnv) addTag(t *testing.T, name, image string, tag appsv1alpha1.ImageTagSpec) *nodeImage {
	t.Helper()
	ni, err := e.nodeImages().TryUpdate(name, func(ni *nodeImage) {
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

// waitForEvent waits for an event with reason on the object of kind and name in namespace
// ns ("" for a cluster-scoped object) and returns it.
func (e *testEnv) waitForEvent(t *testing.T, ns, kind, name, reason string) corev1.Event {
	t.Helper()
	return e.WaitForEvent(t, ns, kind, name, "event "+reason, func(ev *corev1.Event) bool { return ev.Reason == reason })
}

// ---- Node agent ----

// startAgent runs the real bosun-daemon for nodeName until the test ends, talking CRI v1 to
// a fake runtime served on a unix socket in this process, and returns that runtime. It
// returns once the agent reports ready (runtime reachable, informers synced).
func (e *testEnv) startAgent(t *testing.T, nodeName string, extraArgs ...string) *crifake.Runtime {
	t.Helper()
	runtime := crifake.Start(t, filepath.Join(crifake.ShortTempDir(t), "containerd.sock"))
	framework.StartBosunDaemon(e.Ctx, t, e.CP, framework.BosunDaemonOptions{
		Node:            nodeName,
		RuntimeEndpoint: runtime.Endpoint(),
		Verbosity:       4,
		ExtraArgs:       extraArgs,
	})
	return runtime
}

// ---- Errors ----

// patchNodeImageStatus merge-patches the NodeImage's status subresource, as an agent would.
func (e *testEnv) patchNodeImageStatus(t *testing.T, name string, patch []byte) {
	t.Helper()
	if _, err := e.Bosun.AppsV1alpha1().NodeImages().Patch(e.Ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
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
