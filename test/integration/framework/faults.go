package framework

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The environment variables of the fault tests (the tests that SIGKILL the manager and
// kube-apiserver while a controller works).
const (
	// FaultSeedEnv replays a run: set it to the seed the run logged, and the test draws the
	// same fault plan (progress points, jitters, which fault is the API server's).
	FaultSeedEnv = "BOSUN_FAULT_SEED"
	// LongFaultsEnv=1 runs the large variant of each fault test, too slow for every CI run.
	LongFaultsEnv = "BOSUN_LONG_FAULTS"
)

const (
	// FaultJitter bounds the random delay between reaching a fault's progress point and the
	// fault, so that it lands anywhere in a sync rather than just after a poll.
	FaultJitter = 500 * time.Millisecond
	// FaultSlack widens a fault's window when the audit log's requests are matched to it:
	// the test's clock reads the moment of the signal, the API server's clock those of the
	// requests, and a killed client's last requests may still be read from its socket.
	FaultSlack = 300 * time.Millisecond
)

// LongFaults reports whether BOSUN_LONG_FAULTS=1 asks for the large variants.
func LongFaults() bool { return os.Getenv(LongFaultsEnv) == "1" }

// FaultSeed returns the seed of a fault test's plan: BOSUN_FAULT_SEED when set, else a new
// one. The test logs it, so that a failing run can be replayed.
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

// FaultTarget is what a fault SIGKILLs.
type FaultTarget string

const (
	FaultManager   FaultTarget = "manager"
	FaultAPIServer FaultTarget = "kube-apiserver"
)

// Fault is one SIGKILL a fault test sent and the restart that followed.
type Fault struct {
	Phase  string
	Target FaultTarget
	// At is just before the signal, Back when the restarted process was ready again.
	At, Back time.Time
	// Progress is how far the work under test had got then (the injector's measure).
	Progress int
}

// FaultInjector SIGKILLs a test's bosun-controller-manager and kube-apiserver at random
// progress points of the work under test, restarting each at once, and remembers when, so
// that the test can tell the requests a fault cut off from those that failed on their own.
// Its random draws come from Rng alone, in a fixed order, so that a seed replays a plan.
type FaultInjector struct {
	Rng     *rand.Rand
	CP      *ControlPlane
	Manager *ControllerManager

	mu     sync.Mutex
	faults []Fault
}

// NewFaultInjector returns an injector drawing its plans from seed. cp must be a control
// plane of the test's own (StartTestControlPlane), since its kube-apiserver is restarted.
func NewFaultInjector(seed uint64, cp *ControlPlane, manager *ControllerManager) *FaultInjector {
	return &FaultInjector{Rng: rand.New(rand.NewPCG(seed, seed)), CP: cp, Manager: manager}
}

// Inject SIGKILLs the manager kills times and kube-apiserver once, each when progress
// reports at least a random share (5% to 90%) of total, after a random jitter (at most
// FaultJitter), restarting each at once and waiting until it is ready. unit names what
// progress counts, for the log ("pods through", "tags pulled"). progress is polled every
// 100 ms within e's wait timeout; an error is retried (the API server may be down).
func (f *FaultInjector) Inject(t *testing.T, e *Env, phase string, total, kills int, unit string, progress func(ctx context.Context) (int, error)) {
	t.Helper()
	points := make([]int, kills+1)
	for i := range points {
		points[i] = max(1, int(float64(total)*(0.05+0.85*f.Rng.Float64())))
	}
	slices.Sort(points)
	apiServerAt := f.Rng.IntN(len(points))
	jitters := make([]time.Duration, len(points))
	for i := range jitters {
		jitters[i] = time.Duration(f.Rng.Int64N(int64(FaultJitter)))
	}
	t.Logf("fault plan: at %v of %d %s (kube-apiserver at the %s), jitters %v", points, total, unit, Ordinal(apiServerAt+1), jitters)
	for i, point := range points {
		var got int
		e.Await(t, fmt.Sprintf("%d of %d %s", point, total, unit), func(ctx context.Context) (bool, error) {
			n, err := progress(ctx)
			if err != nil {
				return false, err
			}
			got = n
			return got >= point, nil
		}, func() string { return fmt.Sprintf("%d %s", got, unit) })
		time.Sleep(jitters[i])
		fault := Fault{Phase: phase, Progress: got, At: time.Now()}
		if i == apiServerAt {
			fault.Target = FaultAPIServer
			if err := f.CP.RestartAPIServer(e.Ctx, KillAPIServer); err != nil {
				t.Fatal(err)
			}
		} else {
			fault.Target = FaultManager
			f.Manager.Restart()
		}
		fault.Back = time.Now()
		f.mu.Lock()
		f.faults = append(f.faults, fault)
		f.mu.Unlock()
		t.Logf("SIGKILLed %s with at least %d of %d %s; back after %v", fault.Target, got, total, unit, fault.Back.Sub(fault.At).Round(time.Millisecond))
	}
}

// Faults returns the faults injected so far, oldest first.
func (f *FaultInjector) Faults() []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.faults)
}

// DuringFault reports whether a request received and completed at those times (by the API
// server's clock) overlapped a fault: from its signal until the restarted process was
// ready, widened by FaultSlack.
func (f *FaultInjector) DuringFault(received, completed time.Time) bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool {
		return !received.After(fault.Back.Add(FaultSlack)) && !completed.Before(fault.At.Add(-FaultSlack))
	})
}

// DuringAPIServerKill reports whether an object created (or written) at when, in whole
// seconds as the API server stamps metadata, may have been written by a request the API
// server did not log before a SIGKILL.
func (f *FaultInjector) DuringAPIServerKill(when time.Time) bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool {
		return fault.Target == FaultAPIServer && !when.Before(fault.At.Add(-2*time.Second)) && !when.After(fault.At.Add(time.Second))
	})
}

// APIServerKilled reports whether kube-apiserver was SIGKILLed at all.
func (f *FaultInjector) APIServerKilled() bool {
	return slices.ContainsFunc(f.Faults(), func(fault Fault) bool { return fault.Target == FaultAPIServer })
}

// Summary counts the faults by target.
func (f *FaultInjector) Summary() string {
	counts := map[FaultTarget]int{}
	for _, fault := range f.Faults() {
		counts[fault.Target]++
	}
	return fmt.Sprintf("%d manager SIGKILLs, %d kube-apiserver SIGKILLs", counts[FaultManager], counts[FaultAPIServer])
}

// Ordinal spells i as "1st", "2nd", "3rd", "4th", ...
func Ordinal(i int) string {
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
