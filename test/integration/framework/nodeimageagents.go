package framework

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// NodeImageAgentsUserAgent is the User-Agent of the stand-in node agents' requests, by which
// a test tells their writes apart in the audit log.
const NodeImageAgentsUserAgent = "nodeimage-agents-standin"

// NodeImageAgentsOptions configure StartNodeImageAgents.
type NodeImageAgentsOptions struct {
	// LabelSelector chooses the NodeImages whose nodes the agents play.
	LabelSelector string
	// PullTime is how long a pull takes: a tag reported Pulling is reported finished this
	// long after.
	PullTime time.Duration
	// Fails says which pulls fail (reported Failed rather than Succeeded); none when nil.
	Fails func(nodeImage, image, tag string) bool
	// Workers is how many NodeImages are written at a time; 8 when zero.
	Workers int
	// SkipPulling leaves out the Pulling report the daemon writes when a pull begins: a
	// tag without a status of its version counts as pulling all the same, for the
	// ImagePullJob and the NodeImage controllers alike, and the report doubles the status
	// writes, which a test of hundreds of nodes on a small machine cannot afford.
	SkipPulling bool
}

// NodeImageAgents stand in for the bosun-daemon of many simulated nodes at once, each
// pulling the images its NodeImage's spec asks for, as far as the API sees it: a tag
// without a status of its version is reported Pulling (startTime now; unless SkipPulling),
// then, PullTime later, Succeeded (progress 100, completionTime, imageID) or Failed (completionTime and a
// message); statuses of tags no longer in the spec are dropped, those of finished tags
// kept, and the counters recomputed. One informer feeds a work queue of NodeImage names;
// a status write that conflicts with another writer's (the NodeImage controller's) is made
// again from the newer copy. No CRI runtime is involved: the real agent's pulls are the
// node-side tests' concern.
type NodeImageAgents struct {
	opts   NodeImageAgentsOptions
	client bosunclientset.Interface
	lister interface {
		Get(name string) (*appsv1beta1.NodeImage, error)
	}
	queue workqueue.TypedRateLimitingInterface[string]

	// finished counts the pulls reported finished (Succeeded or Failed) by a write the API
	// server answered.
	finished atomic.Int64

	mu sync.Mutex
	// began is when each pull (NodeImage, tag and version) began.
	began map[string]time.Time
}

// StartNodeImageAgents runs the stand-in agents against cp until the test ends.
func StartNodeImageAgents(t testing.TB, ctx context.Context, cp *ControlPlane, opts NodeImageAgentsOptions) *NodeImageAgents {
	t.Helper()
	if opts.Workers == 0 {
		opts.Workers = 8
	}
	config := cp.Config()
	config.UserAgent = NodeImageAgentsUserAgent
	client, err := bosunclientset.NewForConfig(config)
	if err != nil {
		t.Fatalf("creating the stand-in agents' client: %v", err)
	}
	factory := bosuninformers.NewSharedInformerFactoryWithOptions(client, 0,
		bosuninformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = opts.LabelSelector }))
	informer := factory.Apps().V1beta1().NodeImages()
	a := &NodeImageAgents{
		opts: opts, client: client, lister: informer.Lister(), began: map[string]time.Time{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 2*time.Second)),
	}
	enqueue := func(obj any) {
		if ni, ok := obj.(*appsv1beta1.NodeImage); ok {
			a.queue.Add(ni.Name)
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		t.Fatalf("watching NodeImages: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		a.queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("the stand-in agents' NodeImage informer never synced")
	}
	for range opts.Workers {
		wg.Go(func() {
			for a.work(ctx) {
			}
		})
	}
	return a
}

// Finished returns how many pulls the agents have reported finished.
func (a *NodeImageAgents) Finished() int { return int(a.finished.Load()) }

func (a *NodeImageAgents) work(ctx context.Context) bool {
	name, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(name)
	after, err := a.sync(ctx, name)
	if err != nil {
		a.queue.AddRateLimited(name)
		return true
	}
	a.queue.Forget(name)
	if after > 0 {
		a.queue.AddAfter(name, after)
	}
	return true
}

// sync writes the status the NodeImage's node would report now, and returns when a pull
// in progress finishes.
func (a *NodeImageAgents) sync(ctx context.Context, name string) (time.Duration, error) {
	ni, err := a.lister.Get(name)
	if err != nil {
		return 0, nil // gone
	}
	now := time.Now()
	next, finished, after := a.nextStatus(ni, now)
	if next == nil {
		return after, nil
	}
	updated := ni.DeepCopy()
	updated.Status = *next
	if _, err := a.client.AppsV1beta1().NodeImages().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("reporting the pulls of NodeImage %s: %w", name, err)
	}
	a.finished.Add(int64(len(finished)))
	return after, nil
}

// nextStatus returns the status to write (nil when it would not change), the pulls it
// reports finished, and when the next pull in progress finishes (0 when none is).
func (a *NodeImageAgents) nextStatus(ni *appsv1beta1.NodeImage, now time.Time) (*appsv1beta1.NodeImageStatus, []string, time.Duration) {
	status := ni.Status.DeepCopy()
	status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
	status.Desired, status.Pulling, status.Succeeded, status.Failed, status.Waiting = 0, 0, 0, 0, 0
	var finished []string
	var after time.Duration
	wake := func(left time.Duration) {
		if after == 0 || left < after {
			after = left
		}
	}
	stamp := metav1.NewTime(now)
	for image, spec := range ni.Spec.Images {
		var tags []appsv1beta1.ImageTagStatus
		for _, tag := range spec.Tags {
			status.Desired++
			key := fmt.Sprintf("%s %s:%s v%d", ni.Name, image, tag.Tag, tag.Version)
			old := findTagStatus(ni, image, tag.Tag)
			var st appsv1beta1.ImageTagStatus
			switch {
			case old != nil && old.Version == tag.Version:
				st = *old.DeepCopy()
			case a.opts.SkipPulling:
				// The pull is the agent's secret until it ends; the status of an older
				// version, if any, stays meanwhile.
				began := a.beganAt(key, now)
				if left := began.Add(a.opts.PullTime).Sub(now); left > 0 {
					wake(left)
					status.Pulling++
					if old != nil {
						tags = append(tags, *old.DeepCopy())
					}
					continue
				}
				st = appsv1beta1.ImageTagStatus{Tag: tag.Tag, Version: tag.Version, Phase: appsv1beta1.ImagePhasePulling, StartTime: &metav1.Time{Time: began}}
			default:
				st = appsv1beta1.ImageTagStatus{Tag: tag.Tag, Version: tag.Version, Phase: appsv1beta1.ImagePhasePulling, StartTime: &stamp}
				a.beganAt(key, now)
			}
			if st.Phase == appsv1beta1.ImagePhasePulling {
				if left := a.beganAt(key, st.StartTime.Time).Add(a.opts.PullTime).Sub(now); left > 0 {
					wake(left)
				} else {
					st.CompletionTime = &stamp
					if a.opts.Fails != nil && a.opts.Fails(ni.Name, image, tag.Tag) {
						st.Phase, st.Message = appsv1beta1.ImagePhaseFailed, "pull failed (stand-in agent)"
					} else {
						st.Phase, st.Progress = appsv1beta1.ImagePhaseSucceeded, 100
						st.ImageID = fmt.Sprintf("%s@sha256:%064x", image, len(image)+len(tag.Tag))
					}
					finished = append(finished, key)
				}
			}
			switch st.Phase {
			case appsv1beta1.ImagePhaseSucceeded:
				status.Succeeded++
			case appsv1beta1.ImagePhaseFailed:
				status.Failed++
			default:
				status.Pulling++
			}
			tags = append(tags, st)
		}
		if len(tags) > 0 {
			status.ImageStatuses[image] = appsv1beta1.ImageStatus{Tags: tags}
		}
	}
	if len(status.ImageStatuses) == 0 {
		status.ImageStatuses = nil
	}
	if statusesEqual(&ni.Status, status) {
		return nil, nil, after
	}
	return status, finished, after
}

// beganAt returns when the agents began the pull key, recording when (a fallback, the
// status's startTime for a pull begun before a restart of the test's informer) if unknown.
func (a *NodeImageAgents) beganAt(key string, when time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if began, ok := a.began[key]; ok {
		return began
	}
	a.began[key] = when
	return when
}

func findTagStatus(ni *appsv1beta1.NodeImage, image, tag string) *appsv1beta1.ImageTagStatus {
	for i, st := range ni.Status.ImageStatuses[image].Tags {
		if st.Tag == tag {
			return &ni.Status.ImageStatuses[image].Tags[i]
		}
	}
	return nil
}

// statusesEqual compares what the agents write of a NodeImage's status.
func statusesEqual(a, b *appsv1beta1.NodeImageStatus) bool {
	if a.Desired != b.Desired || a.Pulling != b.Pulling || a.Succeeded != b.Succeeded || a.Failed != b.Failed || len(a.ImageStatuses) != len(b.ImageStatuses) {
		return false
	}
	for image, x := range a.ImageStatuses {
		y, ok := b.ImageStatuses[image]
		if !ok || len(x.Tags) != len(y.Tags) {
			return false
		}
		for i := range x.Tags {
			p, q := x.Tags[i], y.Tags[i]
			if p.Tag != q.Tag || p.Version != q.Version || p.Phase != q.Phase || p.Progress != q.Progress ||
				!strings.EqualFold(p.ImageID, q.ImageID) || p.Message != q.Message ||
				(p.CompletionTime == nil) != (q.CompletionTime == nil) {
				return false
			}
		}
	}
	return true
}
