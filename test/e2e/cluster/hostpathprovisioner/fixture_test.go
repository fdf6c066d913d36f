package hostpathprovisioner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

const (
	testNode     = "node-a"
	testHostname = "host-a" // the node's hostname label, deliberately not its name
	testClass    = "standard"
)

// fixture is a controller on hand-filled informer caches and a fake clientset holding the
// same objects; its volumes go under a temporary directory.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	kube     *fake.Clientset
	factory  informers.SharedInformerFactory
	recorder *record.FakeRecorder
	dir      string
	c        *Controller
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{t: t, ctx: ctx, kube: fake.NewClientset(), recorder: record.NewFakeRecorder(100),
		dir: filepath.Join(t.TempDir(), "volumes")}
	f.factory = informers.NewSharedInformerFactory(f.kube, 0)
	core := f.factory.Core().V1()
	c, err := NewController(ctx, core.PersistentVolumeClaims(), core.PersistentVolumes(),
		f.factory.Storage().V1().StorageClasses(), core.Nodes(), f.kube, f.recorder, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.claimQueue.ShutDown)
	t.Cleanup(c.volumeQueue.ShutDown)
	f.c = c
	return f
}

// add puts obj into its informer's cache and on the server.
func (f *fixture) add(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		err = f.factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
	case *corev1.PersistentVolume:
		err = f.factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
	case *storagev1.StorageClass:
		err = f.factory.Storage().V1().StorageClasses().Informer().GetIndexer().Add(o)
	case *corev1.Node:
		err = f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
	default:
		f.t.Fatalf("no informer for %T", obj)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	f.addToServer(obj)
}

// addToServer puts obj on the server only: the cache has not seen it yet.
func (f *fixture) addToServer(obj runtime.Object) {
	f.t.Helper()
	if err := f.kube.Tracker().Add(obj); err != nil {
		f.t.Fatal(err)
	}
}

// writes are the create, update, patch and delete actions the controller sent.
func (f *fixture) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.kube.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a)
		}
	}
	return out
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// expectEvent fails unless exactly one event was recorded and it starts with prefix
// ("<type> <reason>").
func (f *fixture) expectEvent(prefix string) {
	f.t.Helper()
	events := f.events()
	if len(events) != 1 || !strings.HasPrefix(events[0], prefix) {
		f.t.Errorf("events = %q, want one starting with %q", events, prefix)
	}
}

func (f *fixture) expectNoEvents() {
	f.t.Helper()
	if events := f.events(); len(events) != 0 {
		f.t.Errorf("events = %q, want none", events)
	}
}

// syncClaim syncs the claim and fails the test on an error.
func (f *fixture) syncClaim(claim *corev1.PersistentVolumeClaim) {
	f.t.Helper()
	if err := f.c.syncClaim(f.ctx, claim.Namespace+"/"+claim.Name); err != nil {
		f.t.Fatalf("syncClaim: %v", err)
	}
}

func (f *fixture) syncVolume(name string) {
	f.t.Helper()
	if err := f.c.syncVolume(f.ctx, name); err != nil {
		f.t.Fatalf("syncVolume: %v", err)
	}
}

// stat is os.Stat of path, which must exist.
func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether path exists.
func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func newClass(provisioner string, reclaim corev1.PersistentVolumeReclaimPolicy) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: testClass},
		Provisioner:       provisioner,
		ReclaimPolicy:     ptr.To(reclaim),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

func newNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{corev1.LabelHostname: testHostname}}}
}

// newClaim is a claim of the test class that the PersistentVolume controller has handed to
// this provisioner, the scheduler having selected testNode.
func newClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Annotations: map[string]string{
				AnnStorageProvisioner:     ProvisionerName,
				AnnBetaStorageProvisioner: ProvisionerName,
				AnnSelectedNode:           testNode,
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(testClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
}
