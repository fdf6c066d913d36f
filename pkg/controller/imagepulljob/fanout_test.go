package imagepulljob

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	appsclient "github.com/bosun-dev/client-go/clientset/versioned/typed/apps/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
)

// fanOutFixture is a fixture with n empty NodeImages and one job over all of them whose
// parallelism lets every one pull at once; the controller writes through
// wrapClient(the fake clientset), or the clientset itself when wrapClient is nil.
func fanOutFixture(t *testing.T, n int, wrapClient func(bosunclientset.Interface) bosunclientset.Interface) (*fixture, []string) {
	parallelism := intstr.FromInt32(int32(n))
	objects := []runtime.Object{newJob("job", "nginx", func(j *appsv1beta1.ImagePullJob) { j.Spec.Parallelism = &parallelism })}
	var names []string
	for i := range n {
		name := fmt.Sprintf("n%02d", i)
		names = append(names, name)
		objects = append(objects, newNodeImage(name, nil))
	}
	return newFixtureWithClient(t, wrapClient, objects...), names
}

// A NodeImage whose write fails does not keep the job's tag from the others, and the
// sync's error names each NodeImage that failed.
func TestFanOutWritesEveryNodeImageAndReportsEachFailure(t *testing.T) {
	f, names := fanOutFixture(t, 40, nil)
	failing := map[string]bool{"n03": true, "n27": true}
	f.bosunClient.PrependReactor("update", "nodeimages", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if name := action.(clienttesting.UpdateAction).GetObject().(*appsv1beta1.NodeImage).Name; failing[name] {
			return true, nil, errors.New("etcd is sulking")
		}
		return false, nil, nil
	})
	err := f.c.syncJob(f.ctx, "ns/job")
	if err == nil {
		t.Fatal("the sync succeeded although two NodeImage writes failed")
	}
	for name := range failing {
		if !strings.Contains(err.Error(), "NodeImage "+name+":") {
			t.Errorf("the error does not name NodeImage %s: %v", name, err)
		}
	}
	for _, name := range names {
		if got := f.jobTag(name, "nginx", "latest") != nil; got == failing[name] {
			t.Errorf("NodeImage %s holds the tag: %v; its write failed: %v", name, got, failing[name])
		}
	}
}

// The fan-out writes several NodeImages at once, never more than fanOutWrites.
func TestFanOutWritesConcurrentlyWithinTheBound(t *testing.T) {
	gate := &writeGate{arrivals: make(chan struct{}), release: make(chan struct{})}
	f, names := fanOutFixture(t, 3*fanOutWrites, func(client bosunclientset.Interface) bosunclientset.Interface {
		return gatedClient{Interface: client, gate: gate}
	})
	done := make(chan error, 1)
	go func() { done <- f.c.syncJob(f.ctx, "ns/job") }()

	// The first fanOutWrites writes are held until all of them are in flight; a fan-out that
	// wrote one NodeImage at a time would never get there.
	for i := range fanOutWrites {
		select {
		case <-gate.arrivals:
		case <-time.After(time.Minute): // a safety net against a hang, not a measurement
			t.Fatalf("only %d NodeImage writes were in flight at once, want %d", i, fanOutWrites)
		}
	}
	close(gate.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if gate.max != fanOutWrites {
		t.Errorf("at most %d NodeImage writes were in flight, want %d", gate.max, fanOutWrites)
	}
	for _, name := range names {
		if f.jobTag(name, "nginx", "latest") == nil {
			t.Errorf("NodeImage %s did not get the tag", name)
		}
	}
}

// writeGate counts the NodeImage updates in flight; the first fanOutWrites announce
// themselves on arrivals and wait for release.
type writeGate struct {
	arrivals, release chan struct{}

	mu               sync.Mutex
	inFlight, max, n int
}

func (g *writeGate) enter() {
	g.mu.Lock()
	g.inFlight++
	g.max = max(g.max, g.inFlight)
	g.n++
	held := g.n <= fanOutWrites
	g.mu.Unlock()
	if held {
		g.arrivals <- struct{}{}
		<-g.release
	}
}

func (g *writeGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
}

// gatedClient passes NodeImage updates through a writeGate before the fake clientset, whose
// reactors run one at a time and so cannot hold writes themselves.
type gatedClient struct {
	bosunclientset.Interface
	gate *writeGate
}

func (c gatedClient) AppsV1beta1() appsclient.AppsV1beta1Interface {
	return gatedApps{AppsV1beta1Interface: c.Interface.AppsV1beta1(), gate: c.gate}
}

type gatedApps struct {
	appsclient.AppsV1beta1Interface
	gate *writeGate
}

func (a gatedApps) NodeImages() appsclient.NodeImageInterface {
	return gatedNodeImages{NodeImageInterface: a.AppsV1beta1Interface.NodeImages(), gate: a.gate}
}

type gatedNodeImages struct {
	appsclient.NodeImageInterface
	gate *writeGate
}

func (n gatedNodeImages) Update(ctx context.Context, ni *appsv1beta1.NodeImage, opts metav1.UpdateOptions) (*appsv1beta1.NodeImage, error) {
	n.gate.enter()
	defer n.gate.leave()
	return n.NodeImageInterface.Update(ctx, ni, opts)
}
