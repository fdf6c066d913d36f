package nodeimage

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"

	"github.com/bosun-dev/bosun/pkg/controller/options"
)

func TestHandlers(t *testing.T) {
	f := newFixture(t)
	node := readyNode("n1", map[string]string{"a": "1"}, t0)
	heartbeat := node.DeepCopy()
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
	heartbeat.ResourceVersion = "2"
	f.c.updateNode(f.ctx, node, heartbeat)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("a heartbeat queued %v", got)
	}
	relabelled := node.DeepCopy()
	relabelled.Labels["a"] = "2"
	notReady := node.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, cur := range []*corev1.Node{relabelled, notReady} {
		f.queue.Reset()
		f.c.updateNode(f.ctx, node, cur)
		if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
			t.Errorf("a node update queued %v, want n1", got)
		}
	}

	owned := newNodeImage("owned", nil, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{tag("1", t0, 60, jobRef("j", "j-uid"))}}})
	f.addNodeImage(owned)
	f.addNodeImage(newNodeImage("other", nil, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{tag("1", t0, 60, jobRef("k", "k-uid"))}}}))
	f.queue.Reset()
	f.c.deleteJob(f.ctx, job("j", "j-uid"))
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"owned"}) {
		t.Errorf("deleting a job queued %v, want the NodeImage it owns a tag of", got)
	}
}

func TestNodeImageHandlers(t *testing.T) {
	f := newFixture(t)
	ni := newNodeImage("n1", nil, nil)
	ni.ResourceVersion = "1"
	f.c.addNodeImage(f.ctx, ni)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("a NodeImage added queued %v, want n1", got)
	}

	f.queue.Reset()
	f.c.updateNodeImage(f.ctx, ni, ni.DeepCopy())
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("a resync (same resourceVersion) queued %v", got)
	}
	written := ni.DeepCopy()
	written.ResourceVersion = "2"
	written.Status.Pulling = 1
	f.c.updateNodeImage(f.ctx, ni, written)
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("a status write queued %v, want n1", got)
	}

	// A NodeImage deleted is queued, and its secret references are looked up afresh
	// should it come back.
	f.c.recordSecretCheck("n1", t0)
	f.queue.Reset()
	f.c.deleteNodeImage(f.ctx, cache.DeletedFinalStateUnknown{Key: "n1", Obj: ni})
	if got := f.queue.AddedKeys(); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("a NodeImage deleted queued %v, want n1", got)
	}
	if !f.c.secretCheckDue("n1", t0) {
		t.Error("the secret check of a deleted NodeImage is remembered")
	}

	// Objects of another type are ignored.
	f.queue.Reset()
	f.c.deleteNodeImage(f.ctx, "not a NodeImage")
	f.c.deleteNode(f.ctx, ni)
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("objects of the wrong type queued %v", got)
	}
}

// Without the timing options the controller has the manager's defaults; a response
// timeout that is not positive leaves the default.
func TestNewControllerTimings(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	for _, tt := range []struct {
		name                string
		opts                []options.Option
		wantCreationDelay   time.Duration
		wantResponseTimeout time.Duration
	}{
		{"defaults", nil, DefaultCreationDelay, DefaultResponseTimeout},
		{"set", []options.Option{WithCreationDelay(time.Second), WithResponseTimeout(time.Minute)}, time.Second, time.Minute},
		{"no creation delay", []options.Option{WithCreationDelay(0)}, 0, DefaultResponseTimeout},
		{"no response timeout", []options.Option{WithResponseTimeout(0)}, DefaultCreationDelay, DefaultResponseTimeout},
		{"negative response timeout", []options.Option{WithResponseTimeout(-time.Second)}, DefaultCreationDelay, DefaultResponseTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kube := fake.NewClientset()
			bosun := bosunfake.NewSimpleClientset() //nolint:staticcheck
			factory := informers.NewSharedInformerFactory(kube, 0)
			bosunInf := bosuninformers.NewSharedInformerFactory(bosun, 0)
			c, err := NewController(ctx, factory.Core().V1().Nodes(), bosunInf.Apps().V1beta1().NodeImages(), nil,
				kube, bosun, &eventRecorder{}, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.queue.ShutDown()
			if c.creationDelay != tt.wantCreationDelay || c.responseTimeout != tt.wantResponseTimeout {
				t.Errorf("creation delay %v, response timeout %v; want %v, %v",
					c.creationDelay, c.responseTimeout, tt.wantCreationDelay, tt.wantResponseTimeout)
			}
		})
	}
}

// Run hands the queued nodes to syncHandler once the caches have synced, and returns once
// its context ends.
func TestRun(t *testing.T) {
	f := newFixture(t)
	synced := make(chan string, 1)
	f.c.syncHandler = func(_ context.Context, key string) error {
		synced <- key
		return nil
	}
	f.c.cachesSynced = nil // the fixture's informers never run
	f.queue.TypedRateLimitingInterface.Add("n1")
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		f.c.Run(ctx, 1)
		close(done)
	}()
	select {
	case key := <-synced:
		if key != "n1" {
			t.Errorf("synced %q, want n1", key)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing synced")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
