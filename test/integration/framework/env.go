package framework

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

const (
	// DefaultTestTimeout bounds a test whose EnvOptions set no Timeout.
	DefaultTestTimeout = 5 * time.Minute
	// DefaultWaitTimeout bounds one awaited state when EnvOptions set no WaitTimeout.
	DefaultWaitTimeout = 2 * time.Minute
	// cleanupTimeout bounds the removal of what a test made.
	cleanupTimeout = time.Minute
)

// EnvOptions configure NewTestEnv. The zero value is a working environment that removes
// nothing but its namespace.
type EnvOptions struct {
	// Timeout bounds the whole test: Env.Ctx ends then. DefaultTestTimeout when zero.
	Timeout time.Duration
	// WaitTimeout bounds each state the wait helpers await. DefaultWaitTimeout when zero.
	WaitTimeout time.Duration
	// Audit keeps a tail of the audit log in Env.Audit, from before the namespace is made.
	// The control plane needs Options.AuditPolicy.
	Audit bool
	// LogToTest gives Env.Ctx a logger that writes to the test's log, for code under test
	// that runs in the test binary and logs through klog.FromContext.
	LogToTest bool

	// The rest says what the end of the test removes, once everything the test started
	// after NewTestEnv (controller managers, agents) has stopped: controllers of later
	// tests watch the whole cluster, and without a namespace controller or a garbage
	// collector what a test leaves behind would stay for them to work on.

	// RemoveWebhookConfigurations deletes bosun's webhook configurations first: those that
	// fail closed would refuse the removals below, and every later request they cover.
	RemoveWebhookConfigurations bool
	// Remove names namespaced resources as kubectl does (plural.group, or plural for the
	// core group: "pods", "deployments.apps", "daemonsets.apps.kruise.io"), whose objects in
	// the test's namespaces (see NewNamespace) are removed, resource by resource in this
	// order: finalizers dropped, then deleted without grace period (there is no kubelet to
	// end a pod's).
	Remove []string
	// RemoveLabelled names cluster-scoped resources, as Remove does, whose objects labelled
	// OwnerNamespaceLabel=<namespace> are deleted after the test's Nodes (see CreateNode),
	// for example NodeImages, which carry their Node's labels.
	RemoveLabelled []string

	// PodDetails says what else than DescribePods does of a pod in the failure messages of
	// WaitForPods.
	PodDetails func(*corev1.Pod) string
}

// Env is what a test of bosun's controllers works with: a context bound to the test, admin
// clients of the control plane, a fresh namespace, helpers that read, write and await
// objects, and a cleanup that removes what the test made (see EnvOptions).
//
// Helpers that take a testing.TB fail that test on error, so that a subtest can use the
// Env of its parent.
type Env struct {
	// Ctx ends when the test ends or EnvOptions.Timeout has passed.
	Ctx context.Context
	// CP is the control plane.
	CP *ControlPlane
	// Client, Bosun and Dynamic are admin clients of the control plane: kubernetes' typed
	// clientset, bosun's and the dynamic client.
	Client  kubernetes.Interface
	Bosun   bosunclientset.Interface
	Dynamic dynamic.Interface
	// Namespace is the test's own, deleted when the test ends.
	Namespace string
	// Audit reads the audit events logged since the Env was made; nil without
	// EnvOptions.Audit.
	Audit *AuditTail
	// WaitTimeout bounds each state the wait helpers await.
	WaitTimeout time.Duration

	t    testing.TB // the test the Env was made for, whose cleanup reports to it
	opts EnvOptions
	// remove and removeLabelled are the resources of opts.Remove and opts.RemoveLabelled.
	remove, removeLabelled []schema.GroupVersionResource

	mu          sync.Mutex
	namespaces  []string // the test's namespaces, whose objects of opts.Remove are removed
	removeNodes bool     // CreateNode was called
	extraSteps  []func(ctx context.Context) error
}

// NewTestEnv prepares a test on cp: clients, a namespace (see CreateTestNamespace) and a
// context bound to the test. The cleanup it registers runs when the test ends, after
// everything the test starts later (controller managers, agents, pod readiers) has
// stopped.
func NewTestEnv(t testing.TB, cp *ControlPlane, opts EnvOptions) *Env {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTestTimeout
	}
	if opts.WaitTimeout == 0 {
		opts.WaitTimeout = DefaultWaitTimeout
	}
	e := &Env{CP: cp, WaitTimeout: opts.WaitTimeout, t: t, opts: opts}
	if opts.Audit {
		e.Audit = NewAuditTail(t, cp)
	}
	e.Client = cp.Clientset(t)
	var err error
	if e.Bosun, err = bosunclientset.NewForConfig(cp.Config()); err != nil {
		t.Fatalf("creating bosun's clientset: %v", err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(cp.Config()); err != nil {
		t.Fatalf("creating a dynamic client: %v", err)
	}
	if len(opts.Remove)+len(opts.RemoveLabelled) > 0 {
		// Looked up now, so that a name the API server does not serve fails the test before
		// it runs rather than after.
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Client.Discovery()))
		if e.remove, err = resolve(mapper, opts.Remove); err == nil {
			e.removeLabelled, err = resolve(mapper, opts.RemoveLabelled)
		}
		if err != nil {
			t.Fatalf("finding the resources the test removes: %v", err)
		}
	}
	e.Namespace = CreateTestNamespace(t, e.Client).Name
	e.namespaces = []string{e.Namespace}
	ctx := context.Background()
	if opts.LogToTest {
		_, ctx = ktesting.NewTestContext(t)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	t.Cleanup(cancel)
	e.Ctx = ctx
	t.Cleanup(e.removeLeftovers)
	return e
}

// resolve finds the preferred served version of each resource named as kubectl names it.
func resolve(mapper meta.RESTMapper, names []string) ([]schema.GroupVersionResource, error) {
	resources := make([]schema.GroupVersionResource, 0, len(names))
	for _, name := range names {
		gvr, err := mapper.ResourceFor(schema.ParseGroupResource(name).WithVersion(""))
		if err != nil {
			return nil, fmt.Errorf("resource %q: %w", name, err)
		}
		resources = append(resources, gvr)
	}
	return resources, nil
}

// NewNamespace creates one more namespace for the test (see CreateTestNamespace), whose
// objects of EnvOptions.Remove are removed when the test ends, like those of Namespace.
func (e *Env) NewNamespace(t testing.TB) string {
	t.Helper()
	ns := CreateTestNamespace(t, e.Client).Name
	e.mu.Lock()
	defer e.mu.Unlock()
	e.namespaces = append(e.namespaces, ns)
	return ns
}

// OnCleanup adds step to what the end of the test removes, after all EnvOptions name; steps
// run in the order they were added, whenever that was. An error fails the test.
func (e *Env) OnCleanup(step func(ctx context.Context) error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.extraSteps = append(e.extraSteps, step)
}

// removeLeftovers removes what EnvOptions, CreateNode and OnCleanup name, reporting every
// failure and going on with the rest.
func (e *Env) removeLeftovers() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	e.mu.Lock()
	namespaces, removeNodes, steps := e.namespaces, e.removeNodes, e.extraSteps
	e.mu.Unlock()
	if e.opts.RemoveWebhookConfigurations {
		if err := DeleteWebhookConfigurations(ctx, e.Client); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	for _, ns := range namespaces {
		for _, gvr := range e.remove {
			e.removeAll(ctx, gvr, ns)
		}
	}
	mine := metav1.ListOptions{LabelSelector: OwnerNamespaceLabel + "=" + e.Namespace}
	if removeNodes {
		if err := e.Client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, mine); err != nil {
			e.t.Errorf("cleanup: deleting Nodes: %v", err)
		}
	}
	for _, gvr := range e.removeLabelled {
		if err := e.Dynamic.Resource(gvr).DeleteCollection(ctx, metav1.DeleteOptions{}, mine); err != nil {
			e.t.Errorf("cleanup: deleting %s: %v", gvr.Resource, err)
		}
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
}

// removeAll drops the finalizers of every object of gvr in namespace ns, then deletes them
// all without grace period.
func (e *Env) removeAll(ctx context.Context, gvr schema.GroupVersionResource, ns string) {
	client := e.Dynamic.Resource(gvr).Namespace(ns)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Errorf("cleanup: listing %s in %s: %v", gvr.Resource, ns, err)
		return
	}
	dropFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	for _, item := range list.Items {
		if len(item.GetFinalizers()) == 0 {
			continue
		}
		_, err := client.Patch(ctx, item.GetName(), types.MergePatchType, dropFinalizers, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("cleanup: releasing %s %s/%s: %v", gvr.Resource, ns, item.GetName(), err)
		}
	}
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := client.DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
		e.t.Errorf("cleanup: deleting %s in %s: %v", gvr.Resource, ns, err)
	}
}
