package containerrecreaterequest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// crrFaultScale is how large a run of TestCRRTimeoutsSurviveManagerKills is.
type crrFaultScale struct {
	// requests is how many requests are made, a quarter of each kind.
	requests int
	// spread is how long their creation is spread over.
	spread time.Duration
	// kills is how many times the manager is SIGKILLed; kube-apiserver is SIGKILLed once.
	kills   int
	timeout time.Duration
}

var (
	defaultCRRFaults = crrFaultScale{requests: 40, spread: 8 * time.Second, kills: 3, timeout: 4 * time.Minute}
	longCRRFaults    = crrFaultScale{requests: 200, spread: 40 * time.Second, kills: 10, timeout: 15 * time.Minute}
)

// The kinds of request of TestCRRTimeoutsSurviveManagerKills, by the label kindLabel.
const (
	// kindUnpicked: no agent picks it up; its activeDeadlineSeconds (under the 60 s
	// response timeout) completes it.
	kindUnpicked = "unpicked"
	// kindRecreating: the stand-in agent sets it Recreating and never finishes it; its
	// activeDeadlineSeconds completes it. It has an unready grace period and its pod the
	// KruisePodReady gate, so the manager marks the pod not ready, then releases it.
	kindRecreating = "recreating"
	// kindAgentDone: the stand-in agent completes it itself, a second after Recreating.
	kindAgentDone = "agent-done"
	// kindPodGone: its pod is deleted two seconds after its creation.
	kindPodGone = "pod-gone"

	kindLabel           = "faults.bosun.dev/kind"
	crrAgentUserAgent   = "crr-agent-standin"
	managerUserAgent    = "bosun-controller-manager/"
	preRecreateGrace    = "PreRecreateGrace"
	agentCompletionWait = time.Second
)

var crrKinds = []string{kindUnpicked, kindRecreating, kindAgentDone, kindPodGone}

// crrPlan is what the test asks of one request.
type crrPlan struct {
	name, kind string
	deadline   int64 // activeDeadlineSeconds
	ttl        int32 // ttlSecondsAfterFinished
}

// wantMessage is the message the request must complete with.
func (p crrPlan) wantMessage() string {
	switch p.kind {
	case kindUnpicked, kindRecreating:
		return messageDeadlineExceeds
	case kindPodGone:
		return messagePodGone
	}
	return ""
}

// completedByManager says whether the manager, not the agent, completes the request.
func (p crrPlan) completedByManager() bool { return p.kind != kindAgentDone }

// ContainerRecreateRequests with activeDeadlineSeconds and ttlSecondsAfterFinished end
// right while the manager (containerrecreaterequest controller and its webhook) is
// SIGKILLed and restarted several times and kube-apiserver once, at random points of their
// progress (seeded; BOSUN_FAULT_SEED replays, BOSUN_LONG_FAULTS=1 runs 200 requests and 10
// manager kills). Their creation is spread over 8 s, their deadlines over 3 to 10 s, their
// TTLs over 2 to 5 s, and of four kinds: never picked up (completed at the deadline), set
// Recreating by a stand-in agent and never finished (completed at the deadline; with an
// unready grace period, which marks the pod not ready), completed by the stand-in agent,
// and with their pod deleted (completed "pod has gone"). From a watch of every version of
// every request: each completed once, with the right message, never before its deadline,
// its phase, completionTime and message never changed afterwards, lost its active label,
// its finalizer, and was deleted once. From the audit log: the manager completed each
// request it had to complete with one status write (none for those the agent completed),
// wrote no status after the completion and deleted each request once, no earlier than its
// TTL after its completionTime. The pods of the Recreating requests end Ready, with no
// not-ready mark left.
func TestCRRTimeoutsSurviveManagerKills(t *testing.T) {
	scale := defaultCRRFaults
	if framework.LongFaults() {
		scale = longCRRFaults
	}
	seed := framework.FaultSeed(t)
	t.Logf("fault seed %d (replay with %s=%d); %d requests, %d manager kills and 1 kube-apiserver kill",
		seed, framework.FaultSeedEnv, seed, scale.requests, scale.kills)
	began := time.Now()

	cp := framework.StartTestControlPlane(t, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
	opts := envOptions
	opts.Timeout, opts.Audit = scale.timeout, true
	e := &testEnv{framework.NewTestEnv(t, cp, opts)}
	manager := e.startManager(t, "")
	// The first test of a package builds the manager, which takes minutes on a loaded machine.
	t.Logf("control plane and manager up after %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	node := e.createNode(t, "a", nil)

	var plans []crrPlan
	for i := range scale.requests {
		p := crrPlan{name: fmt.Sprintf("r%03d", i), kind: crrKinds[i%len(crrKinds)], deadline: 3 + int64(i*7)%8, ttl: 2 + int32(i/len(crrKinds))%4}
		if p.kind == kindAgentDone || p.kind == kindPodGone {
			// Ended by the agent or the pod's deletion, never by the deadline.
			p.deadline = 120
		}
		plans = append(plans, p)
		pod := newPod(p.name, node, "app")
		if p.kind == kindRecreating {
			pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruisePodReady}}
		}
		e.createRunningPod(t, pod)
	}
	list, err := e.Bosun.AppsV1beta1().ContainerRecreateRequests(e.Namespace).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseInt(list.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	history := framework.WatchEtcdHistory[*appsv1beta1.ContainerRecreateRequest](t, e.Ctx, cp, "/registry/apps.kruise.io/containerrecreaterequests/"+e.Namespace+"/", rv)
	e.startCRRAgent(t)
	t.Logf("%d running pods set up in %v", len(plans), time.Since(began).Round(time.Millisecond))

	created := e.createSpread(t, plans, scale.spread)
	faults := framework.NewFaultInjector(e.Env, manager, seed, scale.kills)
	// Progress: completions and deletions seen by the watch.
	total := 2 * len(plans)
	faults.Inject(t, "timeouts", total, func(context.Context) (int, error) {
		n := 0
		for _, p := range plans {
			versions := history.Versions(t, p.name)
			if len(versions) == 0 {
				continue
			}
			last := versions[len(versions)-1]
			switch {
			case last.Type == watch.Deleted:
				n += 2
			case last.Object.Status.CompletionTime != nil:
				n++
			}
		}
		return n, nil
	})
	<-created
	e.Await(t, "every request to be deleted", func(ctx context.Context) (bool, error) {
		list, err := e.Bosun.AppsV1beta1().ContainerRecreateRequests(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	}, nil)
	e.WaitForNoWrites(t, 2*time.Second)
	if manager.Exited() {
		t.Fatalf("the manager exited: %s", manager.LogTail(40))
	}
	e.checkCRRHistory(t, history, plans)
	e.checkCRRWrites(t, faults, history, plans)
	e.checkPodsReleased(t, plans)
	t.Logf("%d faults in %v: %s", len(faults.Faults()), time.Since(began).Round(time.Second), faults.Summary())
}

// createSpread creates the requests one after another over spread, each again until it is
// admitted (the webhook or the API server may be down), and deletes the pods of kindPodGone
// two seconds after their request. The channel closes once all that is done.
func (e *testEnv) createSpread(t *testing.T, plans []crrPlan, spread time.Duration) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	retry := func(what string, do func(ctx context.Context) error) {
		err := framework.WaitFor(e.Ctx, time.Minute, what, func(ctx context.Context) (bool, error) {
			return do(ctx) == nil, nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	go func() {
		defer close(done)
		defer wg.Wait()
		step := spread / time.Duration(len(plans))
		for _, p := range plans {
			r := withCRR(newCRR(p.name, p.name, "app"), activeDeadline(p.deadline), ttlAfterFinished(p.ttl))
			r.Labels = map[string]string{kindLabel: p.kind}
			if p.kind == kindRecreating {
				r = withCRR(r, strategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) {
					s.UnreadyGracePeriodSeconds = ptr.To[int64](30)
				}))
			}
			retry("creating request "+p.name, func(ctx context.Context) error {
				_, err := e.Bosun.AppsV1alpha1().ContainerRecreateRequests(e.Namespace).Create(ctx, r, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
			if p.kind == kindPodGone {
				wg.Go(func() {
					time.Sleep(2 * time.Second)
					retry("deleting pod "+p.name, func(ctx context.Context) error {
						err := e.Client.CoreV1().Pods(e.Namespace).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
						if apierrors.IsNotFound(err) {
							return nil
						}
						return err
					})
				})
			}
			time.Sleep(step)
		}
	}()
	return done
}

// startCRRAgent runs, until the test ends, a stand-in for the node agent: every 200 ms it
// sets the active requests of kinds kindRecreating and kindAgentDone that have no phase
// Recreating, and completes those of kindAgentDone a second after (phase Completed,
// completionTime, the container Succeeded), as bosun-daemon reports them. Its writes carry
// the resourceVersion it read, so it never undoes the manager's.
func (e *testEnv) startCRRAgent(t *testing.T) {
	config := e.CP.Config()
	config.UserAgent = crrAgentUserAgent
	client, err := bosunclientset.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	// recreating is when the agent set each request Recreating.
	recreating := map[string]time.Time{}
	go func() {
		defer close(done)
		ticker := time.NewTicker(200 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			list, err := client.AppsV1beta1().ContainerRecreateRequests(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: activeLabel})
			if err != nil {
				continue
			}
			for i := range list.Items {
				r := &list.Items[i]
				kind := r.Labels[kindLabel]
				if (kind != kindRecreating && kind != kindAgentDone) || r.Status.CompletionTime != nil {
					continue
				}
				now := metav1.Now()
				switch {
				case r.Status.Phase == "":
					r.Status.Phase = appsv1beta1.ContainerRecreateRequestRecreating
					r.Status.ContainerRecreateStates = []appsv1beta1.ContainerRecreateRequestContainerRecreateState{{Name: "app", Phase: appsv1beta1.ContainerRecreateRequestRecreating}}
				case kind == kindAgentDone && r.Status.Phase == appsv1beta1.ContainerRecreateRequestRecreating && since(recreating, r.Name) >= agentCompletionWait:
					r.Status.Phase = appsv1beta1.ContainerRecreateRequestCompleted
					r.Status.CompletionTime = &now
					r.Status.ContainerRecreateStates = []appsv1beta1.ContainerRecreateRequestContainerRecreateState{{Name: "app", Phase: appsv1beta1.ContainerRecreateRequestSucceeded, IsKilled: true}}
				default:
					continue
				}
				if _, err := client.AppsV1beta1().ContainerRecreateRequests(e.Namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{}); err == nil &&
					r.Status.Phase == appsv1beta1.ContainerRecreateRequestRecreating {
					recreating[r.Name] = time.Now()
				}
			}
		}
	}()
}

// since returns how long ago the agent set the request name Recreating; zero when it did
// not (a write whose answer a fault cut off): it sets it again.
func since(recreating map[string]time.Time, name string) time.Duration {
	at, ok := recreating[name]
	if !ok {
		recreating[name] = time.Now()
		return 0
	}
	return time.Since(at)
}

// checkCRRHistory checks every version the watch saw of every request.
func (e *testEnv) checkCRRHistory(t *testing.T, history *framework.History[*appsv1beta1.ContainerRecreateRequest], plans []crrPlan) {
	t.Helper()
	graced := 0
	defer func() { t.Logf("%d requests started their unready grace period", graced) }()
	for _, p := range plans {
		versions := history.Versions(t, p.name)
		if len(versions) == 0 {
			t.Errorf("request %s: never seen", p.name)
			continue
		}
		var completed *appsv1beta1.ContainerRecreateRequest
		var graceSince *metav1.Time
		deletes := 0
		for i, v := range versions {
			r := v.Object
			if v.Type == watch.Deleted {
				deletes++
				prev := versions[max(i-1, 0)].Object
				if _, active := prev.Labels[activeLabel]; active {
					t.Errorf("request %s: deleted while still labelled active", p.name)
				}
				continue
			}
			if c := condition(r, preRecreateGrace); c != nil {
				if graceSince != nil && !c.LastTransitionTime.Equal(graceSince) {
					t.Errorf("request %s: the PreRecreateGrace time moved from %v to %v", p.name, graceSince, c.LastTransitionTime)
				}
				graceSince = &c.LastTransitionTime
			}
			if completed == nil {
				if r.Status.CompletionTime != nil || r.Status.Phase == appsv1beta1.ContainerRecreateRequestCompleted {
					completed = r
				}
				continue
			}
			s, c := r.Status, completed.Status
			if s.Phase != c.Phase || !s.CompletionTime.Equal(c.CompletionTime) || s.Message != c.Message {
				t.Errorf("request %s: completed as %s at %v (%q), later %s at %v (%q)", p.name, c.Phase, c.CompletionTime, c.Message,
					s.Phase, s.CompletionTime, s.Message)
			}
		}
		if deletes != 1 {
			t.Errorf("request %s: the watch saw %d deletions, want 1", p.name, deletes)
		}
		if completed == nil {
			t.Errorf("request %s: never completed", p.name)
			continue
		}
		s := completed.Status
		if s.Phase != appsv1beta1.ContainerRecreateRequestCompleted || s.CompletionTime == nil || s.Message != p.wantMessage() {
			t.Errorf("request %s (%s): completed as %s at %v with %q, want Completed with %q", p.name, p.kind, s.Phase, s.CompletionTime, s.Message, p.wantMessage())
			continue
		}
		if p.wantMessage() == messageDeadlineExceeds {
			// Both times have whole seconds.
			if deadline := completed.CreationTimestamp.Add(time.Duration(p.deadline) * time.Second); s.CompletionTime.Before(&metav1.Time{Time: deadline}) {
				t.Errorf("request %s: completed at %v, before its deadline of %d s after %v", p.name, s.CompletionTime, p.deadline, completed.CreationTimestamp)
			}
		}
		if p.kind == kindRecreating && graceSince != nil {
			graced++
		}
	}
}

// checkCRRWrites checks the manager's writes of the requests in the audit log: one status
// write completing each request the manager completes, none after a completion, one
// delete each, no earlier than the TTL after completionTime.
func (e *testEnv) checkCRRWrites(t *testing.T, faults *framework.FaultInjector, history *framework.History[*appsv1beta1.ContainerRecreateRequest], plans []crrPlan) {
	t.Helper()
	writes, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Resource == "containerrecreaterequests" && ev.ObjectRef.Namespace == e.Namespace &&
			framework.IsWriteVerb(ev.Verb) && strings.Contains(ev.UserAgent, managerUserAgent)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A write whose client a fault cut off may have landed all the same, and be logged
	// as failed: those are kept apart.
	byName, cutOff, cutOffDeletes := map[string][]framework.Request{}, map[string]int{}, map[string]int{}
	for _, w := range writes {
		switch {
		case w.Code == http.StatusOK || w.Code == http.StatusCreated || w.Code == http.StatusAccepted:
			byName[w.Name] = append(byName[w.Name], w)
		case w.Subresource == "status" && w.Verb == "update" && faults.DuringFault(w.Received, w.Completed):
			cutOff[w.Name]++
		case w.Verb == "delete" && faults.DuringFault(w.Received, w.Completed):
			cutOffDeletes[w.Name]++
		}
	}
	var completions, deletions, unaudited int
	for _, p := range plans {
		versions := history.Versions(t, p.name)
		var completedAt *metav1.Time
		for _, v := range versions {
			if v.Object.Status.CompletionTime != nil {
				completedAt = v.Object.Status.CompletionTime
				break
			}
		}
		if completedAt == nil {
			continue // reported by checkCRRHistory
		}
		// The manager's one status update is the completion; it may be received well
		// after the completionTime it carries (the client waits out a kube-apiserver
		// restart). No status write may follow it.
		var statusUpdates, late, deletes []framework.Request
		for _, w := range byName[p.name] {
			switch {
			case w.Verb == "delete":
				deletes = append(deletes, w)
			case w.Subresource == "status" && len(statusUpdates) > 0:
				late = append(late, w)
			case w.Subresource == "status" && w.Verb == "update":
				statusUpdates = append(statusUpdates, w)
			}
		}
		if !p.completedByManager() {
			late, statusUpdates = append(late, statusUpdates...), nil
		}
		switch {
		case !p.completedByManager():
		case len(statusUpdates) == 1:
			completions++
		case len(statusUpdates) == 0 && (cutOff[p.name] > 0 || nearAPIServerKill(faults, completedAt.Time)):
			unaudited++
		default:
			t.Errorf("request %s (%s), completed at %v: no status update (completion) of the manager is audited", p.name, p.kind, completedAt)
		}
		for _, w := range late {
			t.Errorf("request %s (%s): the manager wrote its status (%s) at %v, after its completion at %v", p.name, p.kind, w.Verb, w.Received, completedAt)
		}
		switch {
		case len(deletes) == 1:
			deletions++
			// completionTime has whole seconds.
			if earliest := completedAt.Add(time.Duration(p.ttl)*time.Second - time.Second); deletes[0].Received.Before(earliest) {
				t.Errorf("request %s: deleted at %v, before its TTL of %d s after its completion at %v", p.name, deletes[0].Received, p.ttl, completedAt)
			}
		case len(deletes) == 0 && (cutOffDeletes[p.name] > 0 || nearAPIServerKill(faults, completedAt.Add(time.Duration(p.ttl)*time.Second))):
			// Due when kube-apiserver was SIGKILLed, and carried out before it logged it.
			unaudited++
		default:
			t.Errorf("request %s: deleted %d times by the manager, want once: %+v", p.name, len(deletes), deletes)
		}
	}
	t.Logf("the manager completed %d requests and deleted %d, each once; %d writes cut off by a fault or unaudited at the kube-apiserver kill", completions, deletions, unaudited)
}

// checkPodsReleased checks that the pods of the Recreating requests carry no not-ready mark
// of a request in their KruisePodReady condition any more, which is True.
func (e *testEnv) checkPodsReleased(t *testing.T, plans []crrPlan) {
	t.Helper()
	for _, p := range plans {
		if p.kind != kindRecreating {
			continue
		}
		pod, err := e.Client.CoreV1().Pods(e.Namespace).Get(e.Ctx, p.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A request the manager saw Recreating only after its deadline never marked its pod.
		if c := podCondition(pod, kruisePodReady); c != nil && (c.Status != corev1.ConditionTrue || strings.Contains(c.Message, "ContainerRecreateRequest")) {
			t.Errorf("pod %s: condition %s is %+v, want True with no mark of a request", p.name, kruisePodReady, c)
		}
	}
}

// nearAPIServerKill reports whether a write due at when (whole seconds) may have been
// carried out by kube-apiserver and lost from its audit log at its SIGKILL: the log is
// written behind the requests, seconds behind on a loaded machine.
func nearAPIServerKill(faults *framework.FaultInjector, when time.Time) bool {
	for _, f := range faults.Faults() {
		if f.Target == framework.FaultAPIServer && !when.Before(f.At.Add(-5*time.Second)) && !when.After(f.Back.Add(time.Second)) {
			return true
		}
	}
	return false
}

func condition(r *appsv1beta1.ContainerRecreateRequest, kind string) *metav1.Condition {
	for i := range r.Status.Conditions {
		if r.Status.Conditions[i].Type == kind {
			return &r.Status.Conditions[i]
		}
	}
	return nil
}
