package podunavailablebudget

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	stormPods           = 200
	stormMaxUnavailable = 5
	stormClients        = 50
	stormRequests       = 500
	// The storm with replica kills sends more requests, paced, so that it lasts long enough
	// for both kills and the takeovers between them: about killStormRequests/stormClients ×
	// killStormPause/2.
	killStormRequests = 1250
	killStormPause    = 2 * time.Second
	// replacementDelay is how long the test, as the pods' owner, takes to create a
	// replacement for a pod that is gone, and readyDelay how long the replacement then takes
	// to become Ready.
	replacementDelay = 300 * time.Millisecond
	readyDelay       = 200 * time.Millisecond
)

// An eviction storm: 200 Ready pods under one budget with maxUnavailable 5, and 500 evictions
// and deletes of random pods from 50 clients at once, admitted by two manager replicas behind
// a load balancer (only one of which runs the controller), while the test, as the pods'
// owner, replaces every pod that goes with a new one that becomes Ready a moment later.
//
// Disrupted pods are Ready pods of the budget that got a deletionTimestamp or vanished,
// minus the replacements that became Ready since: at every moment that is 200 minus the
// number of active Ready pods of the budget. Replaying every pod and budget change in the
// order the API server made them (by resourceVersion, which kube-apiserver takes from
// etcd's revision, one sequence for all resources), the test checks that it never exceeds
// 5, and that every pod was recorded in the budget's disruptedPods before it went.
//
// A request is admitted when the API server answered it 2xx: only then did it delete the
// pod. The set of pods ever recorded in disruptedPods must be exactly the set of admitted
// pods. The budget's controller drops a record as soon as it sees the pod gone, often
// within milliseconds, so the records are read from the watch of the budget, which sees
// every version, not from its status after the storm. A request answered 404 — another
// admitted request deleted the pod first — is not an admission; its pod is accounted for
// by the request that deleted it. At the end every original pod either still exists or
// was admitted for disruption: none went without an admitted request.
//
// The API server calls webhooks at a loopback address over one HTTP/2 connection, which a
// TCP balancer cannot spread over two replicas; at any other address it speaks HTTP/1.1 and
// opens a connection per concurrent call. So the balancer listens on a non-loopback address
// of this host, passing TLS through untouched to both replicas, which serve one certificate
// from the same Secret.
func TestEvictionStorm(t *testing.T) {
	runEvictionStorm(t, stormOptions{requests: stormRequests})
}

// The same storm, paced to last about 35 s, while both replicas are SIGKILLed in turn:
// the leader at a random moment of the storm's first third, and, once the standby has
// taken over and the killed replica is back, the new leader at a random moment of the
// storm's last third (BOSUN_FAULT_SEED replays the plan and the storm). The killed replica
// is restarted, on the same webhook port, only once the other one leads, so that
// leadership must move; the test checks that it did both times.
//
// Every check of TestEvictionStorm holds, with two allowances for a request in flight at
// a kill, which the API server answers with an error naming the webhook call that failed
// (every webhook of the budget fails closed): such a request is not an admission, its pod
// is not deleted, and it is only allowed when it overlapped a kill ("failed at a fault");
// and its pod may be recorded in disruptedPods though not admitted, since the replica may
// have written the record and died before answering (the record then expires, and holds
// back the budget meanwhile, which is the safe way round). A pod whose fate its clients'
// answers do not explain fails the test with what the API server's audit log says it
// answered each request for the pod.
func TestEvictionStormSurvivesReplicaKills(t *testing.T) {
	runEvictionStorm(t, stormOptions{
		requests:     killStormRequests,
		pause:        killStormPause,
		replicaKills: true,
		// A short lease, so that the standby takes over soon after the leader's kill.
		managerArgs: []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"},
	})
}

// stormOptions make the variants of the storm test.
type stormOptions struct {
	// requests is how many requests the storm sends, from stormClients clients.
	requests int
	// pause bounds the random pause of each client between its requests; zero sends them
	// back to back.
	pause time.Duration
	// replicaKills SIGKILLs both replicas in turn during the storm (see
	// TestEvictionStormSurvivesReplicaKills).
	replicaKills bool
	// managerArgs are added to both replicas' flags.
	managerArgs []string
}

func runEvictionStorm(t *testing.T, opts stormOptions) {
	e := setup(t)
	began := time.Now()
	// phase logs how long the test has taken so far, to tell where a slow run spends it.
	phase := func(what string) { t.Logf("%s after %v", what, time.Since(began).Round(time.Millisecond)) }
	listener, _ := framework.ListenNonLoopback(t)
	ports, err := framework.FreeLoopbackPorts(2)
	if err != nil {
		t.Fatal(err)
	}
	balancer := framework.StartBalancer(t, listener, framework.BalancerOptions{Backends: []string{
		net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
	}})
	lease := "bosun-pub-storm-" + e.Namespace
	t.Cleanup(func() {
		err := e.Client.CoordinationV1().Leases("kube-system").Delete(context.Background(), lease, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting Lease %s: %v", lease, err)
		}
	})
	replica := func(port int) framework.ControllerManagerOptions {
		args := append([]string{
			"--leader-elect=true", "--leader-elect-resource-name=" + lease,
			"--webhook-url=https://" + listener.Addr().String(),
			"--webhook-secret=kube-system/bosun-webhook-certs"}, opts.managerArgs...)
		managerOpts := managerOptions("", args...)
		managerOpts.WebhookPort = port
		return managerOpts
	}
	leader := framework.StartBosunControllerManager(t, e.CP, replica(ports[0]))
	waitForLeader(t, e, leader, "the first replica to lead")
	standby := framework.StartBosunControllerManager(t, e.CP, replica(ports[1]))
	if leads(standby) {
		t.Fatalf("the second replica runs the controller, so it is not a standby")
	}
	e.waitForAdmission(t, leader, standby)

	// The pods, their owner and the budget.
	labels := map[string]string{"app": "storm"}
	owner := e.ReplicaSets().Create(t, newReplicaSet("storm", stormPods, labels))
	e.budgets().Create(t, newBudget("storm", withSelector(labels), withMaxUnavailable(intstr.FromInt32(stormMaxUnavailable))))
	originals := make([]string, stormPods)
	for i := range originals {
		originals[i] = fmt.Sprintf("storm-%03d", i)
	}
	parallel(t, 10, originals, func(name string) error {
		if _, err := e.Client.CoreV1().Pods(e.Namespace).Create(e.Ctx, newPod(name, labels, owner), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", name, err)
		}
		_, err := framework.SetPodRunning(e.Ctx, e.Client, e.Namespace, name, true, time.Time{})
		return err
	})
	e.waitForTagged(t, "storm", originals...)
	e.waitForSettled(t, "storm", counts{total: stormPods, desired: stormPods - stormMaxUnavailable, current: stormPods, allowed: stormMaxUnavailable})

	phase("replicas and pods ready")
	// Record every change from now on, and replace every original pod that goes.
	history := e.recordHistory(t)
	owners := e.startOwner(t, sets.New(originals...), labels, owner)

	// The storm, and the kills during it.
	seed := framework.FaultSeed(t)
	t.Logf("storm seed %d (%s=%d replays it)", seed, framework.FaultSeedEnv, seed)
	var answered atomic.Int64
	waitStorm := e.storm(t, seed, originals, opts, &answered)
	var kills []replicaKill
	if opts.replicaKills {
		kills = killReplicas(t, e, seed, opts.requests, &answered, leader, standby)
	}
	outcomes := waitStorm()
	admitted, denied, gone := sets.New[string](), 0, 0
	// failedAtFault are the pods of requests whose webhook call a kill cut off.
	failedAtFault, failedAnswers := sets.New[string](), map[string]int{}
	budgetDenials := 0
	goneAnswers := map[string]int{}
	first, last := time.Time{}, time.Time{}
	for _, o := range outcomes {
		if first.IsZero() || o.start.Before(first) {
			first = o.start
		}
		if o.answer.After(last) {
			last = o.answer
		}
		switch o.kind {
		case outcomeAdmitted:
			if admitted.Has(o.pod) {
				t.Logf("pod %s admitted a second time, by a %s of client %d", o.pod, o.op, o.client)
			}
			admitted.Insert(o.pod)
		case outcomeDenied:
			denied++
			if strings.Contains(o.message, budgetDeniedMessage) {
				budgetDenials++
			}
		case outcomeGone:
			gone++
			goneAnswers[fmt.Sprintf("%s: HTTP %d", o.op, o.code)]++
		case outcomeWebhookFailed:
			if duringKill(kills, o) {
				failedAtFault.Insert(o.pod)
				failedAnswers[fmt.Sprintf("%s: HTTP %d", o.op, o.code)]++
				continue
			}
			t.Errorf("%s of pod %s by client %d failed with no kill near (%s to %s): HTTP %d %s", o.op, o.pod, o.client,
				o.start.Format("15:04:05.000"), o.answer.Format("15:04:05.000"), o.code, o.message)
		default:
			t.Errorf("%s of pod %s by client %d: HTTP %d %s", o.op, o.pod, o.client, o.code, o.message)
		}
	}
	t.Logf("%d requests in %v: %d admitted (%d pods), %d denied (%d for the budget), %d for pods already gone %v, %d failed at a kill %v",
		len(outcomes), last.Sub(first).Round(time.Millisecond), countKind(outcomes, outcomeAdmitted), admitted.Len(), denied, budgetDenials, gone, goneAnswers,
		countKind(outcomes, outcomeWebhookFailed), failedAnswers)
	if opts.replicaKills && len(kills) != 2 {
		t.Errorf("%d replica kills during the storm, want 2", len(kills))
	}
	if admitted.Len() < stormMaxUnavailable || budgetDenials == 0 {
		t.Errorf("the storm did not use up the budget: %d pods admitted, %d budget denials", admitted.Len(), budgetDenials)
	}

	// Wait for the owner's replacements and for the budget to be whole again, then for the
	// recorded history to have caught up with what the API server now holds.
	phase("storm over")
	owners.wait(t)
	settled := counts{total: stormPods, desired: stormPods - stormMaxUnavailable, current: stormPods, allowed: stormMaxUnavailable}
	var lastSeen *pub
	err = framework.WaitFor(e.Ctx, waitTimeout, "the budget to settle at "+settled.String(), func(ctx context.Context) (bool, error) {
		b, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Get(ctx, "storm", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		lastSeen = b
		return settledAt(settled)(b), nil
	})
	if err != nil {
		// Said while the replicas still run: their state is what the budget waits on.
		t.Fatalf("%v; last seen: %s\n%s", err, describeBudget(lastSeen), e.stormDiagnosis(lease, leader, standby))
	}
	history.waitCaughtUp(t, e)
	phase("budget settled and history caught up")

	// Replay.
	replay := history.replay(labels)
	if len(replay.violations) > 0 {
		t.Errorf("more than %d pods of the budget were disrupted at once %d times; first: %s", stormMaxUnavailable, len(replay.violations), replay.violations[0])
	}
	t.Logf("at most %d pods of the budget were disrupted at once", replay.maxDisrupted)
	for _, msg := range replay.unrecorded {
		t.Errorf("pod went without being recorded in the budget first: %s", msg)
	}
	// A replica may record a pod and die before it answers: that request failed at a kill.
	recordedAtFault := replay.recorded.Difference(admitted).Intersection(failedAtFault)
	if recordedAtFault.Len() > 0 {
		t.Logf("recorded in disruptedPods but not admitted, their request cut off by a kill: %v", sets.List(recordedAtFault))
	}
	if recorded := replay.recorded.Difference(recordedAtFault); !recorded.Equal(admitted) {
		t.Errorf("disruptedPods recorded %d pods, %d were admitted: recorded but not admitted %v, admitted but never recorded %v",
			recorded.Len(), admitted.Len(), sets.List(recorded.Difference(admitted)), sets.List(admitted.Difference(recorded)))
	}
	final, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	present := sets.New[string]()
	for _, pod := range final.Items {
		present.Insert(pod.Name)
	}
	for _, name := range originals {
		if present.Has(name) == admitted.Has(name) {
			t.Errorf("pod %s: present at the end %v, admitted %v; its requests: %s; as the API server answered them: %s",
				name, present.Has(name), admitted.Has(name), requestsOf(outcomes, name), e.answersTo(name))
		}
	}

	// Both replicas answered admission requests.
	token := e.CP.Config().BearerToken
	for _, cm := range []*framework.ControllerManager{leader, standby} {
		metrics, err := cm.Metrics(token)
		if err != nil {
			t.Fatal(err)
		}
		served := framework.WebhookRequests(metrics, webhookPodValidation) + framework.WebhookRequests(metrics, webhookEvictionValidation)
		t.Logf("replica on webhook port %d answered %v pod deletes and evictions (since its last start)", cm.WebhookPort, served)
		// A replica restarted late in the storm may have answered none since.
		if served == 0 && !opts.replicaKills {
			t.Errorf("the replica on webhook port %d answered no pod delete or eviction", cm.WebhookPort)
		}
	}
	if conns := balancer.Stats().Served; conns[0] == 0 || conns[1] == 0 {
		t.Errorf("the balancer sent connections %v to the two replicas, want some to each", conns)
	}
}

// parallel runs do for every item with workers goroutines and fails the test on the first
// error.
func parallel(t *testing.T, workers int, items []string, do func(string) error) {
	t.Helper()
	work := make(chan string)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range work {
				if err := do(item); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, item := range items {
		work <- item
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// ---- The storm ----

type outcomeKind int

const (
	outcomeAdmitted outcomeKind = iota
	outcomeDenied
	outcomeGone
	// outcomeWebhookFailed is an answer naming a webhook call that failed: the pod was not
	// deleted.
	outcomeWebhookFailed
	outcomeUnexpected
)

// outcome is one request of the storm and its answer.
type outcome struct {
	client        int
	op            string // "evict" or "delete"
	pod           string
	start, answer time.Time
	kind          outcomeKind
	code          int32
	message       string
}

// requestsOf describes the storm's requests for the pod, for a failure message.
func requestsOf(outcomes []outcome, pod string) string {
	var described []string
	for _, o := range outcomes {
		if o.pod == pod {
			described = append(described, fmt.Sprintf("%s by client %d %s to %s: HTTP %d %q", o.op, o.client,
				o.start.Format("15:04:05.000"), o.answer.Format("15:04:05.000"), o.code, o.message))
		}
	}
	return strings.Join(described, "; ")
}

// answersTo describes, from the API server's audit log, every request that deleted or
// evicted the pod: who sent it, when, and the status it was answered with. It tells a
// client's view of a request from what the server did.
func (e *testEnv) answersTo(pod string) string {
	events, err := e.AuditEvents(func(ev *auditv1.Event) bool {
		ref := ev.ObjectRef
		return ref != nil && ref.Resource == "pods" && ref.Namespace == e.Namespace && ref.Name == pod &&
			(ev.Verb == "delete" || ref.Subresource == "eviction")
	})
	if err != nil {
		return "reading the audit log: " + err.Error()
	}
	var described []string
	for _, ev := range events {
		code, message := int32(0), ""
		if ev.ResponseStatus != nil {
			code, message = ev.ResponseStatus.Code, ev.ResponseStatus.Message
		}
		described = append(described, fmt.Sprintf("%s %s by %q %s to %s: HTTP %d %q", ev.Verb, ev.ObjectRef.Subresource, ev.UserAgent,
			ev.RequestReceivedTimestamp.Format("15:04:05.000"), ev.StageTimestamp.Format("15:04:05.000"), code, message))
	}
	if len(described) == 0 {
		return "none"
	}
	return strings.Join(described, "; ")
}

func countKind(outcomes []outcome, kind outcomeKind) int {
	n := 0
	for _, o := range outcomes {
		if o.kind == kind {
			n++
		}
	}
	return n
}

// storm sends opts.requests requests from stormClients clients at once, each client with a
// connection of its own, half evictions and half deletes of random original pods, each
// client pausing up to opts.pause at random before each request, and counts in answered
// the requests answered so far. It returns at once; the function it returns waits for the
// storm to end and returns every outcome. Neither request is retried by the client:
// client-go would repeat some answers by itself.
func (e *testEnv) storm(t *testing.T, seed uint64, pods []string, opts stormOptions, answered *atomic.Int64) func() []outcome {
	t.Helper()
	clients := make([]kubernetes.Interface, stormClients)
	for i := range clients {
		cfg := e.CP.Config()
		cfg.UserAgent = fmt.Sprintf("storm-client-%d", i)
		// A dialer of its own gives the client a transport, and connection, of its own.
		cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = client
	}
	perClient := opts.requests / stormClients
	outcomes := make([]outcome, 0, opts.requests)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, client := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			<-start
			for range perClient {
				if opts.pause > 0 {
					time.Sleep(time.Duration(r.Int64N(int64(opts.pause))))
				}
				o := outcome{client: i, op: "delete", pod: pods[r.IntN(len(pods))], start: time.Now()}
				var err error
				rest := client.CoreV1().RESTClient()
				if r.IntN(2) == 0 {
					o.op = "evict"
					err = rest.Post().Namespace(e.Namespace).Resource("pods").Name(o.pod).SubResource("eviction").MaxRetries(0).
						Body(evictionOf(e.Namespace, o.pod)).Do(e.Ctx).Error()
				} else {
					err = rest.Delete().Namespace(e.Namespace).Resource("pods").Name(o.pod).MaxRetries(0).
						Body(&metav1.DeleteOptions{}).Do(e.Ctx).Error()
				}
				o.answer = time.Now()
				o.code, o.message = framework.StatusCode(err), ""
				if err != nil {
					o.message = err.Error()
				}
				switch {
				case err == nil:
					o.kind = outcomeAdmitted
				case o.code == http.StatusForbidden:
					o.kind = outcomeDenied
				case apierrors.IsNotFound(err), strings.Contains(o.message, "not found"):
					o.kind = outcomeGone
				case strings.Contains(o.message, "failed calling webhook"):
					o.kind = outcomeWebhookFailed
				default:
					o.kind = outcomeUnexpected
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
				answered.Add(1)
			}
		}()
	}
	close(start)
	return func() []outcome {
		wg.Wait()
		return outcomes
	}
}

// ---- The kills ----

// killSlack widens a kill's window when requests are matched to it: a request's answer
// may trail the kill by the time the API server takes to give up on the webhook call.
const killSlack = 500 * time.Millisecond

// replicaKill is one SIGKILL of a replica during the storm.
type replicaKill struct {
	webhookPort int
	// answered is how many storm requests had been answered at the kill.
	answered int
	// at is just before the signal, back when the restarted replica was ready again.
	at, back time.Time
	// takeover is how long after the kill the other replica ran the controller.
	takeover time.Duration
}

// duringKill reports whether the request overlapped a kill: from its signal until the
// killed replica was back, widened by killSlack.
func duringKill(kills []replicaKill, o outcome) bool {
	return slices.ContainsFunc(kills, func(k replicaKill) bool {
		return !o.start.After(k.back.Add(killSlack)) && !o.answer.Before(k.at.Add(-killSlack))
	})
}

// killReplicas SIGKILLs the leader once a random 5% to 30% of the storm's requests are
// answered, waits for the standby to take over, restarts the killed replica, then does the
// same to the new leader once a random 60% to 85% are answered. The restart waits for the
// takeover so that leadership has to move rather than come back to the restarted replica.
// It fails the test when the storm ends before both kills.
func killReplicas(t *testing.T, e *testEnv, seed uint64, requests int, answered *atomic.Int64, leader, standby *framework.ControllerManager) []replicaKill {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	points := []int{requests * (5 + rng.IntN(26)) / 100, requests * (60 + rng.IntN(26)) / 100}
	t.Logf("kill plan: the leader at %d, then the new leader at %d of %d requests answered", points[0], points[1], requests)
	var kills []replicaKill
	for i, point := range points {
		err := framework.WaitFor(e.Ctx, waitTimeout, fmt.Sprintf("%d of %d storm requests to be answered", point, requests), func(context.Context) (bool, error) {
			n := int(answered.Load())
			if n >= requests {
				return false, fmt.Errorf("the storm ended before kill %d: make it longer", i+1)
			}
			return n >= point, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !leads(leader) {
			t.Fatalf("the replica on webhook port %d, about to be killed as the leader, does not run the controller", leader.WebhookPort)
		}
		k := replicaKill{webhookPort: leader.WebhookPort, answered: int(answered.Load()), at: time.Now()}
		leader.Kill()
		waitForLeader(t, e, standby, fmt.Sprintf("the replica on webhook port %d to take over from the killed leader", standby.WebhookPort))
		k.takeover = time.Since(k.at)
		leader.Restart()
		k.back = time.Now()
		if leads(leader) {
			t.Errorf("the restarted replica on webhook port %d runs the controller while the other one leads", leader.WebhookPort)
		}
		t.Logf("SIGKILLed the leader (webhook port %d) with %d of %d requests answered; the other replica led after %v, the killed one was back after %v",
			k.webhookPort, k.answered, requests, k.takeover.Round(time.Millisecond), k.back.Sub(k.at).Round(time.Millisecond))
		kills = append(kills, k)
		leader, standby = standby, leader
	}
	return kills
}

// leads reports whether the manager runs the budget's controller, as its /healthz lists it
// only then.
func leads(cm *framework.ControllerManager) bool {
	_, body := framework.GetEndpoint(cm.Port, "/healthz?verbose", "")
	return strings.Contains(body, "[+]"+pubController+" ok")
}

// waitForLeader waits until the manager runs the budget's controller.
func waitForLeader(t *testing.T, e *testEnv, cm *framework.ControllerManager, what string) {
	t.Helper()
	if err := framework.WaitFor(e.Ctx, waitTimeout, what, func(context.Context) (bool, error) { return leads(cm), nil }); err != nil {
		t.Fatal(err)
	}
}

// stormDiagnosis describes, for a failed storm, what a budget that did not settle depends
// on: each replica's process and leadership, the Lease, the pods that are not Ready, and the
// last writes to the budget's status as the audit log records them.
func (e *testEnv) stormDiagnosis(lease string, replicas ...*framework.ControllerManager) string {
	var lines []string
	for _, cm := range replicas {
		state := fmt.Sprintf("running, runs the controller: %v", leads(cm))
		if cm.Exited() {
			state = fmt.Sprintf("exited with status %d", cm.ExitCode())
		}
		log, _ := cm.Log()
		var election []string
		for line := range strings.Lines(log) {
			if strings.Contains(line, "Started leading") || strings.Contains(line, "Leader election lost") {
				election = append(election, strings.TrimSpace(line))
			}
		}
		lines = append(lines, fmt.Sprintf("replica on webhook port %d (pid %d): %s; leadership lines in its log: %q", cm.WebhookPort, cm.Pid(), state, election))
	}
	if l, err := e.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), lease, metav1.GetOptions{}); err != nil {
		lines = append(lines, fmt.Sprintf("Lease %s: %v", lease, err))
	} else {
		lines = append(lines, fmt.Sprintf("Lease %s: holder %q, renewed %v", lease, ptr.Deref(l.Spec.HolderIdentity, ""), l.Spec.RenewTime))
	}
	if pods, err := e.Client.CoreV1().Pods(e.Namespace).List(context.Background(), metav1.ListOptions{}); err != nil {
		lines = append(lines, fmt.Sprintf("listing the pods: %v", err))
	} else {
		var notReady []string
		for i := range pods.Items {
			if pod := &pods.Items[i]; !isActiveReady(pod) {
				notReady = append(notReady, fmt.Sprintf("%s (phase %s, deleting %v)", pod.Name, pod.Status.Phase, pod.DeletionTimestamp != nil))
			}
		}
		lines = append(lines, fmt.Sprintf("%d pods, not active and Ready: %v", len(pods.Items), notReady))
	}
	writes, err := e.AuditEvents(func(ev *auditv1.Event) bool {
		ref := ev.ObjectRef
		return ref != nil && ref.Resource == "podunavailablebudgets" && ref.Namespace == e.Namespace && ev.Verb != "get" &&
			ev.Verb != "list" && ev.Verb != "watch"
	})
	if err != nil {
		lines = append(lines, "reading the audit log: "+err.Error())
	} else {
		lines = append(lines, fmt.Sprintf("%d writes to the budget; the last ones:", len(writes)))
		for _, ev := range writes[max(len(writes)-8, 0):] {
			code := int32(0)
			if ev.ResponseStatus != nil {
				code = ev.ResponseStatus.Code
			}
			lines = append(lines, fmt.Sprintf("  %s %s by %q at %s: HTTP %d", ev.Verb, ev.ObjectRef.Subresource, ev.UserAgent,
				ev.RequestReceivedTimestamp.Format("15:04:05.000"), code))
		}
	}
	return strings.Join(lines, "\n")
}

// evictionOf is the Eviction of the named pod.
func evictionOf(namespace, name string) *policyv1.Eviction {
	return &policyv1.Eviction{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}
}

// ---- The pods' owner ----

// podOwner replaces every original pod that goes, as its ReplicaSet would: replacementDelay
// after the pod is gone it creates <pod>-r, which becomes Ready readyDelay later.
type podOwner struct {
	e         *testEnv
	originals sets.Set[string]
	wg        sync.WaitGroup
	mu        sync.Mutex
	replaced  sets.Set[string]
	errs      []error
}

func (e *testEnv) startOwner(t *testing.T, originals sets.Set[string], labels map[string]string, rs *appsv1.ReplicaSet) *podOwner {
	t.Helper()
	o := &podOwner{e: e, originals: originals, replaced: sets.New[string]()}
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startRetryWatch(t, e.Ctx, list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, opts)
	}, func(ev watch.Event) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type != watch.Deleted || !originals.Has(pod.Name) {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.replaced.Has(pod.Name) {
			return
		}
		o.replaced.Insert(pod.Name)
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			if err := o.replace(pod.Name, labels, rs); err != nil {
				o.mu.Lock()
				o.errs = append(o.errs, err)
				o.mu.Unlock()
			}
		}()
	})
	t.Cleanup(o.wg.Wait)
	return o
}

func (o *podOwner) replace(name string, labels map[string]string, rs *appsv1.ReplicaSet) error {
	time.Sleep(replacementDelay)
	replacement := newPod(name+"-r", labels, rs)
	if _, err := o.e.Client.CoreV1().Pods(o.e.Namespace).Create(o.e.Ctx, replacement, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the replacement of %s: %w", name, err)
	}
	time.Sleep(readyDelay)
	_, err := framework.SetPodRunning(o.e.Ctx, o.e.Client, o.e.Namespace, replacement.Name, true, time.Time{})
	return err
}

// wait waits until every original pod that is gone has a Ready replacement, and fails the
// test if a replacement could not be made.
func (o *podOwner) wait(t *testing.T) {
	t.Helper()
	o.e.WaitForPods(t, "a Ready replacement for every pod that went", func(pods []corev1.Pod) bool {
		byName := map[string]*corev1.Pod{}
		for i := range pods {
			byName[pods[i].Name] = &pods[i]
		}
		for name := range o.originals {
			if byName[name] != nil {
				continue
			}
			if r := byName[name+"-r"]; r == nil || !isActiveReady(r) {
				return false
			}
		}
		return true
	})
	o.wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, err := range o.errs {
		t.Error(err)
	}
}

// ---- The history of the storm ----

// change is one change of a pod or of the budget, as a watch delivered it.
type change struct {
	rv      uint64
	pod     *corev1.Pod // nil for a change of the budget
	deleted bool
	budget  *pub
}

// history is every change of the namespace's pods and of one budget from some moment on.
type history struct {
	mu            sync.Mutex
	initialPods   map[string]*corev1.Pod
	initialBudget *pub
	changes       []change
	budgetName    string
}

// recordHistory records the namespace's pods and the budget "storm" from now on, until the
// test ends.
func (e *testEnv) recordHistory(t *testing.T) *history {
	t.Helper()
	h := &history{initialPods: map[string]*corev1.Pod{}, budgetName: "storm"}
	pods, err := e.Client.CoreV1().Pods(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		h.initialPods[pods.Items[i].Name] = &pods.Items[i]
	}
	field := "metadata.name=" + h.budgetName
	budgets, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).List(e.Ctx, metav1.ListOptions{FieldSelector: field})
	if err != nil || len(budgets.Items) != 1 {
		t.Fatalf("listing budget %s: %v (%d found)", h.budgetName, err, len(budgets.Items))
	}
	h.initialBudget = &budgets.Items[0]

	startRetryWatch(t, e.Ctx, pods.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, opts)
	}, func(ev watch.Event) {
		if pod, ok := ev.Object.(*corev1.Pod); ok {
			h.add(t, change{pod: pod, deleted: ev.Type == watch.Deleted}, pod.ResourceVersion)
		}
	})
	startRetryWatch(t, e.Ctx, budgets.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = field
		return e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Watch(ctx, opts)
	}, func(ev watch.Event) {
		if b, ok := ev.Object.(*pub); ok && ev.Type != watch.Deleted {
			h.add(t, change{budget: b}, b.ResourceVersion)
		}
	})
	return h
}

func (h *history) add(t *testing.T, c change, resourceVersion string) {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		t.Errorf("resourceVersion %q is not an etcd revision: %v", resourceVersion, err)
		return
	}
	c.rv = rv
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = append(h.changes, c)
}

// waitCaughtUp waits until the recorded history ends where the API server now is: the
// pods it replays to are the pods listed, version for version, and the last version of the
// budget is the one stored.
func (h *history) waitCaughtUp(t *testing.T, e *testEnv) {
	t.Helper()
	err := framework.WaitFor(e.Ctx, waitTimeout, "the recorded history to catch up", func(ctx context.Context) (bool, error) {
		pods, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		budget, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Get(ctx, h.budgetName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		live := map[string]string{}
		for _, pod := range pods.Items {
			live[pod.Name] = pod.ResourceVersion
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		replayed := map[string]string{}
		for name, pod := range h.initialPods {
			replayed[name] = pod.ResourceVersion
		}
		lastBudget := h.initialBudget.ResourceVersion
		for _, c := range h.sortedLocked() {
			switch {
			case c.budget != nil:
				lastBudget = c.budget.ResourceVersion
			case c.deleted:
				delete(replayed, c.pod.Name)
			default:
				replayed[c.pod.Name] = c.pod.ResourceVersion
			}
		}
		return maps.Equal(live, replayed) && lastBudget == budget.ResourceVersion, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sortedLocked returns the changes ordered by resourceVersion.
func (h *history) sortedLocked() []change {
	changes := slices.Clone(h.changes)
	slices.SortStableFunc(changes, func(a, b change) int { return cmp.Compare(a.rv, b.rv) })
	return changes
}

// replayResult is what replaying a history found.
type replayResult struct {
	// maxDisrupted is the largest number of disrupted pods at any moment.
	maxDisrupted int
	// violations describe the moments more than stormMaxUnavailable pods were disrupted.
	violations []string
	// recorded are the pods ever recorded in the budget's disruptedPods.
	recorded sets.Set[string]
	// unrecorded describe pods that were deleted before any version of the budget recorded
	// them.
	unrecorded []string
}

// replay replays the history in resourceVersion order. The budget covers the pods with
// labels; every one of them was Ready when the history began.
func (h *history) replay(labels map[string]string) replayResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	covered := func(pod *corev1.Pod) bool {
		for k, v := range labels {
			if pod.Labels[k] != v {
				return false
			}
		}
		return true
	}
	pods := maps.Clone(h.initialPods)
	available := func() int {
		n := 0
		for _, pod := range pods {
			if covered(pod) && isActiveReady(pod) {
				n++
			}
		}
		return n
	}
	result := replayResult{recorded: sets.New[string]()}
	for name := range h.initialBudget.Status.DisruptedPods {
		result.recorded.Insert(name)
	}
	for _, c := range h.sortedLocked() {
		if c.budget != nil {
			for name := range c.budget.Status.DisruptedPods {
				result.recorded.Insert(name)
			}
			continue
		}
		name := c.pod.Name
		before := pods[name]
		wasUp := before != nil && isActiveReady(before)
		if c.deleted {
			delete(pods, name)
		} else {
			pods[name] = c.pod
		}
		goes := c.deleted || c.pod.DeletionTimestamp != nil
		if wasUp && goes && covered(c.pod) && !result.recorded.Has(name) {
			result.unrecorded = append(result.unrecorded, fmt.Sprintf("%s at resourceVersion %d", name, c.rv))
		}
		disrupted := stormPods - available()
		result.maxDisrupted = max(result.maxDisrupted, disrupted)
		if disrupted > stormMaxUnavailable {
			result.violations = append(result.violations, fmt.Sprintf("%d disrupted after the %s of pod %s at resourceVersion %d",
				disrupted, map[bool]string{true: "deletion", false: "change"}[c.deleted], name, c.rv))
		}
	}
	return result
}
