package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
)

// The environment variables of the fault tests (the tests that SIGKILL the manager and
// kube-apiserver while a controller works).
const (
	// FaultSeedEnv replays a run: set it to the seed the run logged, and the test draws the
	// same fault plan (progress points, jitters, which fault is the API server's).
	FaultSeedEnv = "BOSUN_FAULT_SEED"
	// LongFaultsEnv=1 runs a fault test's large variant, too slow for every CI run.
	LongFaultsEnv = "BOSUN_LONG_FAULTS"
)

const (
	// faultJitter bounds the random delay between reaching a fault's progress point and the
	// fault, so that it lands anywhere in a sync rather than just after a poll.
	faultJitter = 500 * time.Millisecond
	// faultSlack widens a fault's window when the audit log's requests are matched to it:
	// the test's clock reads the moment of the signal, the API server's clock those of the
	// requests, and a killed client's last requests may still be read from its socket.
	faultSlack = 300 * time.Millisecond
)

// RetryWindow is how long after kube-apiserver is back from a SIGKILL a controller may
// still be retrying, or redoing, a write the kill left unanswered.
const RetryWindow = 15 * time.Second

// Fault targets.
const (
	FaultManager   = "manager"
	FaultAPIServer = "kube-apiserver"
)

// LongFaults reports whether LongFaultsEnv asks for the large variant of a fault test.
func LongFaults() bool { return os.Getenv(LongFaultsEnv) == "1" }

// FaultSeed returns the seed of the test's fault plan: FaultSeedEnv's when set, else a
// new one. The test logs it.
func FaultSeed(t testing.TB) uint64 {
	t.Helper()
	s := os.Getenv(FaultSeedEnv)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", FaultSeedEnv, s, err)
	}
	return seed
}

// Fault is one SIGKILL a fault test sent and the restart that followed.
type Fault struct {
	Phase, Target string
	// At is just before the signal, Back when the restarted process was ready again.
	At, Back time.Time
	// Through is how many of the phase's objects had got through it then.
	Through int
}

// FaultInjector SIGKILLs a test's controller manager and kube-apiserver (on a control plane
// of the test's own) at random progress points of each phase of the test, drawn from one
// seed, and remembers when, so that the audit log's requests can be matched to the faults.
type FaultInjector struct {
	e       *Env
	manager *ControllerManager
	// kills is how many times each phase SIGKILLs the manager; each also SIGKILLs
	// kube-apiserver once.
	kills int
	rng   *rand.Rand

	mu     sync.Mutex
	faults []Fault
}

// NewFaultInjector returns the injector of a test on e whose manager is manager.
func NewFaultInjector(e *Env, manager *ControllerManager, seed uint64, kills int) *FaultInjector {
	return &FaultInjector{e: e, manager: manager, kills: kills, rng: rand.New(rand.NewPCG(seed, seed))}
}

// Inject SIGKILLs the manager `kills` times and kube-apiserver once during phase, each when
// a random share (5% to 90%) of the phase's n objects has got through it, as progress
// counts them, after a random jitter; it restarts each at once and waits until it is
// ready. Points close together hit a manager right after its restart.
func (f *FaultInjector) Inject(t testing.TB, phase string, n int, progress func(ctx context.Context) (int, error)) {
	t.Helper()
	points := make([]int, f.kills+1)
	for i := range points {
		points[i] = max(1, int(float64(n)*(0.05+0.85*f.rng.Float64())))
	}
	slices.Sort(points)
	apiServerAt := f.rng.IntN(len(points))
	jitters := make([]time.Duration, len(points))
	for i := range jitters {
		jitters[i] = time.Duration(f.rng.Int64N(int64(faultJitter)))
	}
	t.Logf("fault plan: at %v of %d through (kube-apiserver at the %s), jitters %v", points, n, ordinal(apiServerAt+1), jitters)
	for i, point := range points {
		var got int
		f.e.Await(t, fmt.Sprintf("%d of %d to get through the phase", point, n), func(ctx context.Context) (bool, error) {
			var err error
			got, err = progress(ctx)
			return err == nil && got >= point, err
		}, func() string { return fmt.Sprintf("%d through", got) })
		time.Sleep(jitters[i])
		fault := Fault{Phase: phase, Through: got, At: time.Now()}
		if i == apiServerAt {
			fault.Target = FaultAPIServer
			if err := f.e.CP.RestartAPIServer(f.e.Ctx, KillAPIServer); err != nil {
				t.Fatal(err)
			}
		} else {
			fault.Target = FaultManager
			f.manager.Restart()
		}
		fault.Back = time.Now()
		f.mu.Lock()
		f.faults = append(f.faults, fault)
		f.mu.Unlock()
		t.Logf("SIGKILLed %s with at least %d of %d through; back after %v", fault.Target, got, n, fault.Back.Sub(fault.At).Round(time.Millisecond))
	}
}

func ordinal(i int) string {
	switch i {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(i) + "th"
}

// Faults returns the faults so far.
func (f *FaultInjector) Faults() []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.faults)
}

// Summary counts the faults by target.
func (f *FaultInjector) Summary() string {
	counts := map[string]int{}
	for _, fault := range f.Faults() {
		counts[fault.Target]++
	}
	return fmt.Sprintf("%d manager SIGKILLs, %d kube-apiserver SIGKILLs", counts[FaultManager], counts[FaultAPIServer])
}

// DuringFault reports whether a request received and completed at those times (by the API
// server's clock) overlapped a fault: from its signal until the restarted process was
// ready, widened by faultSlack.
func (f *FaultInjector) DuringFault(received, completed time.Time) bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool {
		return !received.After(fault.Back.Add(faultSlack)) && !completed.Before(fault.At.Add(-faultSlack))
	})
}

// AtAPIServerKill reports whether a request the API server completed at completed (by its
// clock) may have been cut off before its answer left: kube-apiserver was SIGKILLed within
// faultSlack of it.
func (f *FaultInjector) AtAPIServerKill(completed time.Time) bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool {
		return fault.Target == FaultAPIServer && !completed.Before(fault.At.Add(-faultSlack)) && !completed.After(fault.At.Add(faultSlack))
	})
}

// AfterAPIServerKill reports whether at (by the API server's clock) falls between a
// kube-apiserver SIGKILL and within after its restart.
func (f *FaultInjector) AfterAPIServerKill(at time.Time, within time.Duration) bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool {
		return fault.Target == FaultAPIServer && !at.Before(fault.At.Add(-faultSlack)) && !at.After(fault.Back.Add(within))
	})
}

// DuringAPIServerKill reports whether an object created (or written) at created, in whole
// seconds as the API server stamps metadata, may have been written by a request the API
// server did not log before a SIGKILL.
func (f *FaultInjector) DuringAPIServerKill(created time.Time) bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool {
		return fault.Target == FaultAPIServer && !created.Before(fault.At.Add(-2*time.Second)) && !created.After(fault.At.Add(time.Second))
	})
}

// APIServerKilled reports whether kube-apiserver was SIGKILLed at all.
func (f *FaultInjector) APIServerKilled() bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool { return fault.Target == FaultAPIServer })
}

// PodWrites are the pod creates and deletes of one phase of a fault test, as the audit log
// and the pods left tell them.
type PodWrites struct {
	// Created are the pods the phase created, whether or not their create was answered:
	// those the API server accepted a create of, and those of the workload that exist or
	// were deleted and were not there before.
	Created sets.Set[string]
	// Accepted counts the creates answered 201.
	Accepted int
	// CreatedAt is when the API server received the create of each pod whose create is
	// audited.
	CreatedAt map[string]time.Time
	// Deleted counts the successful deletes of each pod.
	Deleted map[string]int
	// CutOff are the requests that failed during a fault, as "verb name: code".
	CutOff []string
	// Unanswered counts the creates and deletes whose outcome their client could not
	// know: those that failed during a fault, those of AcceptedAtKill, the pods of
	// Unaudited not counted by a failed create, and pods whose accepted create was
	// followed by a kube-apiserver SIGKILL and that are gone with no audited delete. A
	// controller that takes such a create as failed may create another pod in its place;
	// one that takes such a delete as failed leaves the pod a while longer.
	Unanswered int
	// UnansweredCreates is the share of Unanswered that are creates: each may have left
	// one surplus pod.
	UnansweredCreates int
	// AcceptedAtKill are the pods whose create kube-apiserver carried out and audited
	// right at its SIGKILL: the audit event is written before the answer leaves the
	// server, and a SIGKILL between the two leaves the client with a broken connection
	// for a create that landed. (A delete answered so is retried and answered 404, which
	// counts it.)
	AcceptedAtKill []string
	// Unaudited are pods that exist with no audited create: created at a kube-apiserver
	// SIGKILL, which may cut off the audit event of a write that landed, or by a create of a
	// generated name that a fault cut off (one pod for each such create).
	Unaudited []string
}

// String is the log line of the writes.
func (w PodWrites) String() string {
	return fmt.Sprintf("%d pods created (%d creates accepted, %d of them at a kube-apiserver SIGKILL, %d not audited by name), %d deleted; %d requests cut off by faults: %v",
		w.Created.Len(), w.Accepted, len(w.AcceptedAtKill), len(w.Unaudited), len(w.Deleted), len(w.CutOff), w.CutOff)
}

// CheckPodWrites reads from the audit log the creates and deletes of pods of the test's
// namespace received since began, and fails the test for every one that cannot be: a pod
// created twice, a deletecollection, a request that failed with no fault near, a pod whose
// create was accepted but that neither exists nor was deleted, a pod that exists or was
// deleted with no audited create (unless it was created within a second or two of a
// kube-apiserver SIGKILL, or a create of a generated name was cut off). The names of pods
// created with generateName are in the log only with PodCreatesAuditPolicy. previous are the names of the pods before the phase, existing
// all the namespace's pods now, and owned tells the workload's pods. What the phase should
// have created and deleted is the caller's to check on what it returns.
func (f *FaultInjector) CheckPodWrites(t testing.TB, began time.Time, previous sets.Set[string], existing []corev1.Pod, owned func(*corev1.Pod) bool) PodWrites {
	t.Helper()
	events, err := f.e.AuditEvents(func(ev *auditv1.Event) bool {
		return (ev.Verb == "create" || ev.Verb == "delete" || ev.Verb == "deletecollection") && ev.ObjectRef != nil &&
			ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Subresource == "" && ev.ObjectRef.Namespace == f.e.Namespace &&
			!ev.RequestReceivedTimestamp.Time.Before(began)
	})
	if err != nil {
		t.Fatal(err)
	}
	w := PodWrites{Created: sets.New[string](), Deleted: map[string]int{}, CreatedAt: map[string]time.Time{}}
	createdOK, tried := sets.New[string](), sets.New[string]()
	// Creates of a generated name cut off by a fault: each may have created one pod whose
	// name the audit log does not tell.
	unnamed := 0
	for i := range events {
		ev := &events[i]
		name, code, message := auditedName(ev), int32(0), ""
		if ev.ResponseStatus != nil {
			code, message = ev.ResponseStatus.Code, ev.ResponseStatus.Message
		}
		switch ok := code == http.StatusCreated || code == http.StatusOK; {
		case ev.Verb == "deletecollection":
			t.Errorf("a deletecollection of pods answered %d", code)
		case ok && ev.Verb == "create":
			if createdOK.Has(name) {
				t.Errorf("pod %s was created twice", name)
			}
			createdOK.Insert(name)
			tried.Insert(name)
			w.CreatedAt[name] = ev.RequestReceivedTimestamp.Time
			if f.AtAPIServerKill(ev.StageTimestamp.Time) {
				w.AcceptedAtKill = append(w.AcceptedAtKill, name)
			}
		case ok:
			w.Deleted[name]++
		case f.DuringFault(ev.RequestReceivedTimestamp.Time, ev.StageTimestamp.Time),
			// The retry of a delete that landed, unanswered and unaudited, at a SIGKILL.
			ev.Verb == "delete" && code == http.StatusNotFound && f.AfterAPIServerKill(ev.RequestReceivedTimestamp.Time, RetryWindow):
			w.CutOff = append(w.CutOff, fmt.Sprintf("%s %s: %d", ev.Verb, name, code))
			w.Unanswered++
			switch {
			case ev.Verb == "create" && name == "":
				w.UnansweredCreates++
				unnamed++
			case ev.Verb == "create":
				w.UnansweredCreates++
				tried.Insert(name)
			}
		default:
			t.Errorf("%s of pod %s at %s answered %d, with no fault near: %s", ev.Verb, name,
				ev.RequestReceivedTimestamp.Format("15:04:05.000"), code, message)
		}
	}
	w.Accepted = createdOK.Len()
	// Pods deleted either stay, Terminating, when bound and no kubelet ends them, or go at
	// once: the namespace's pods and the deletes name every pod there was.
	byName := map[string]*corev1.Pod{}
	for i := range existing {
		byName[existing[i].Name] = &existing[i]
	}
	for name, pod := range byName {
		if !previous.Has(name) && owned(pod) {
			w.Created.Insert(name)
		}
	}
	for name := range w.Deleted {
		if !previous.Has(name) {
			w.Created.Insert(name)
		}
	}
	// The unaudited creates at a SIGKILL; a cut-off create of a generated name is counted
	// above, by its failed request.
	unauditedAtKill := 0
	for _, name := range sets.List(w.Created.Difference(tried)) {
		// A create the API server carried out but did not log before its SIGKILL.
		if pod := byName[name]; pod != nil && f.DuringAPIServerKill(pod.CreationTimestamp.Time) {
			w.Unaudited = append(w.Unaudited, name)
			unauditedAtKill++
			continue
		}
		// Or the pod of a create of a generated name that was cut off: one pod each.
		if unnamed > 0 {
			unnamed--
			w.Unaudited = append(w.Unaudited, name)
			continue
		}
		t.Errorf("pod %s exists or was deleted, but no create of it in this phase is audited", name)
	}
	w.Unanswered += unauditedAtKill + len(w.AcceptedAtKill)
	w.UnansweredCreates += unauditedAtKill + len(w.AcceptedAtKill)
	for _, name := range sets.List(createdOK.Difference(w.Created)) {
		// Deleted by a request whose audit event a kube-apiserver SIGKILL cut off.
		if f.AfterAPIServerKill(w.CreatedAt[name], time.Hour) {
			w.Created.Insert(name)
			w.Unanswered++
			continue
		}
		t.Errorf("pod %s was created, but neither exists nor was deleted", name)
	}
	return w
}

// auditedName is the name of the object of an audited request: the request's, or for a
// create of a generated name the created object's, when the policy logged it.
func auditedName(ev *auditv1.Event) string {
	if ev.ObjectRef.Name != "" || ev.ResponseObject == nil {
		return ev.ObjectRef.Name
	}
	var created metav1.PartialObjectMetadata
	if err := json.Unmarshal(ev.ResponseObject.Raw, &created); err != nil {
		return ""
	}
	return created.Name
}

// ProtobufClientset is an admin clientset of cp that speaks protobuf, which costs the API
// server and the test a fraction of JSON's for the frequent lists of hundreds of pods of a
// fault test; userAgent tells its requests in the audit log.
func (cp *ControlPlane) ProtobufClientset(t testing.TB, userAgent string) kubernetes.Interface {
	t.Helper()
	config := cp.Config()
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.UserAgent = userAgent
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
