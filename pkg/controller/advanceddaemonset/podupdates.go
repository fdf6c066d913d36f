package advanceddaemonset

import (
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/bosun-dev/bosun/pkg/controller/expectations"
)

// podUpdateExpectations remembers, per DaemonSet key, the resource version each pod had
// after this controller updated it (in place, or to hold it for a preDelete hook). Until
// the informer shows those versions the cache still has the old pods, and acting on them
// would update or delete them a second time. The create/delete expectations count objects
// and cannot say this, hence a store of its own; it shares their timeout.
type podUpdateExpectations struct {
	clock clock.PassiveClock

	mu    sync.Mutex
	byKey map[string]map[types.UID]expectedVersion
}

type expectedVersion struct {
	resourceVersion string
	since           time.Time
}

func newPodUpdateExpectations(clk clock.PassiveClock) *podUpdateExpectations {
	return &podUpdateExpectations{clock: clk, byKey: map[string]map[types.UID]expectedVersion{}}
}

// expect records that pod, as the API server returned it, is yet to be observed.
func (e *podUpdateExpectations) expect(key string, pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byKey[key] == nil {
		e.byKey[key] = map[types.UID]expectedVersion{}
	}
	e.byKey[key][pod.UID] = expectedVersion{resourceVersion: pod.ResourceVersion, since: e.clock.Now()}
}

// observe records that the informer shows pod; the expectation is met when the pod's
// version is at least the expected one.
func (e *podUpdateExpectations) observe(key string, pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	expected, ok := e.byKey[key][pod.UID]
	if ok && !olderVersion(pod.ResourceVersion, expected.resourceVersion) {
		delete(e.byKey[key], pod.UID)
	}
}

// observeGone drops the expectation for a pod that is being deleted.
func (e *podUpdateExpectations) observeGone(key string, pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey[key], pod.UID)
}

// pending returns how long the oldest unmet expectation of key may still hold a sync back,
// and false when none does. Expectations older than the timeout are dropped: the informer
// lost the update, or another writer replaced it, and waiting longer would stall the
// DaemonSet.
func (e *podUpdateExpectations) pending(key string) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var (
		wait  time.Duration
		found bool
	)
	now := e.clock.Now()
	for uid, expected := range e.byKey[key] {
		left := expectations.ExpectationsTimeout - now.Sub(expected.since)
		if left <= 0 {
			delete(e.byKey[key], uid)
			continue
		}
		if !found || left < wait {
			wait, found = left, true
		}
	}
	return wait, found
}

// forget drops every expectation of key.
func (e *podUpdateExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}

// olderVersion reports whether resource version a is older than b. Resource versions are
// opaque, but every Kubernetes API server issues increasing integers; anything else is
// only compared for equality.
func olderVersion(a, b string) bool {
	an, errA := strconv.ParseUint(a, 10, 64)
	bn, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return an < bn
}
