package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// These tests run the Env's helpers against fake clientsets: they need no servers.

// fakeEnv is an Env of namespace "ns" over fake clientsets, whose waits give up after a
// moment.
func fakeEnv(t *testing.T, objects ...k8sruntime.Object) (*Env, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objects...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &Env{Ctx: ctx, Client: client, Bosun: bosunfake.NewSimpleClientset(), Namespace: "ns", WaitTimeout: 300 * time.Millisecond, t: t}, client
}

func newTestPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// recorder stands in for a test whose failures are themselves under test: it records them,
// and Fatal ends the goroutine as testing's does.
type recorder struct {
	testing.TB
	mu             sync.Mutex
	fatals, errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// record runs f with a recorder in a goroutine of its own and returns the recorder once f
// has returned or failed fatally.
func record(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// expectFatal fails the test unless r recorded exactly one fatal failure containing every
// one of parts.
func expectFatal(t *testing.T, r *recorder, parts ...string) {
	t.Helper()
	if len(r.fatals) != 1 {
		t.Fatalf("recorded fatal failures %q, want one", r.fatals)
	}
	for _, part := range parts {
		if !strings.Contains(r.fatals[0], part) {
			t.Errorf("failure %q does not contain %q", r.fatals[0], part)
		}
	}
}

func TestObjectsWriteAndReadThroughTheTypedClient(t *testing.T) {
	e, _ := fakeEnv(t)
	pods := e.Pods()
	created := pods.Create(t, newTestPod("web"))
	if created.Name != "web" {
		t.Fatalf("created %+v", created)
	}
	updated := pods.Update(t, "web", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} })
	if updated.Labels["app"] != "web" {
		t.Errorf("Update returned labels %v, want app=web", updated.Labels)
	}
	pods.UpdateStatus(t, "web", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
	got := pods.Get(t, "web")
	if got.Labels["app"] != "web" || got.Status.Phase != corev1.PodRunning {
		t.Errorf("Get = labels %v phase %s, want app=web and Running", got.Labels, got.Status.Phase)
	}
	if _, err := pods.TryCreate(newTestPod("web")); !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating web again: %v, want AlreadyExists", err)
	}
	pods.Delete(t, "web")
	pods.WaitForGone(t, "web")
	if _, err := pods.TryUpdate("web", func(*corev1.Pod) {}); !apierrors.IsNotFound(err) {
		t.Errorf("updating a deleted pod: %v, want NotFound", err)
	}
}

func TestObjectsUpdateRetriesConflicts(t *testing.T) {
	e, client := fakeEnv(t, newTestPod("web"))
	updates := 0
	client.PrependReactor("update", "pods", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		updates++
		if updates == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("changed meanwhile"))
		}
		return false, nil, nil
	})
	mutations := 0
	e.Pods().Update(t, "web", func(p *corev1.Pod) { mutations++; p.Labels = map[string]string{"v": "2"} })
	if updates != 2 || mutations != 2 {
		t.Errorf("%d updates of %d mutated copies, want 2 of 2: a conflict is retried on the live object", updates, mutations)
	}
	if got := e.Pods().Get(t, "web").Labels["v"]; got != "2" {
		t.Errorf("label v = %q after the retried update, want 2", got)
	}
}

func TestObjectsWaitForNamesWhatItAwaitedAndTheLastState(t *testing.T) {
	pod := newTestPod("web")
	pod.Labels = map[string]string{"app": "web"}
	e, _ := fakeEnv(t, pod)
	calls := 0
	r := record(t, func(tb testing.TB) {
		e.Pods().WaitFor(tb, "web", "phase Running", func(*corev1.Pod) bool { calls++; return false })
	})
	expectFatal(t, r, "pod ns/web: phase Running", "timed out after 300ms", "last seen: generation 0, labels map[app:web]")
	if calls < 2 {
		t.Errorf("the condition was checked %d times, want it polled", calls)
	}

	described := e.Pods().DescribedBy(func(p *corev1.Pod) string { return "pod " + p.Name + " as the suite shows it" })
	r = record(t, func(tb testing.TB) { described.WaitFor(tb, "web", "never", func(*corev1.Pod) bool { return false }) })
	expectFatal(t, r, "last seen: pod web as the suite shows it")

	r = record(t, func(tb testing.TB) {
		e.Pods().WaitFor(tb, "missing", "to exist", func(*corev1.Pod) bool { return true })
	})
	expectFatal(t, r, "pod ns/missing: to exist", "last seen: <nothing>", "last error: pods \"missing\" not found")
}

func TestObjectsWaitForEvenAbsentShowsAMissingObjectAsNil(t *testing.T) {
	e, _ := fakeEnv(t)
	var sawNil bool
	got := e.Pods().WaitForEvenAbsent(t, "gone", "to be absent", func(p *corev1.Pod) bool { sawNil = p == nil; return p == nil })
	if !sawNil || got != nil {
		t.Errorf("cond saw nil = %v, returned %v; want nil for a missing pod", sawNil, got)
	}
	if s := DescribeObject[*corev1.Pod](nil); s != "<none>" {
		t.Errorf("DescribeObject(nil) = %q, want <none>", s)
	}
}

func TestAwaitRetriesErrorsAndReportsTheLastOne(t *testing.T) {
	e, _ := fakeEnv(t)
	calls := 0
	e.Await(t, "the third call", func(context.Context) (bool, error) {
		calls++
		if calls < 3 {
			return false, errors.New("not yet")
		}
		return true, nil
	}, nil)
	if calls != 3 {
		t.Errorf("condition called %d times, want 3: errors do not end the wait", calls)
	}
	r := record(t, func(tb testing.TB) {
		e.Await(tb, "the impossible", func(context.Context) (bool, error) { return false, errors.New("boom") },
			func() string { return "the state" })
	})
	expectFatal(t, r, "waiting for the impossible", "last seen: the state", "last error: boom")
}

func TestWaitForPodsReturnsThePodsSortedByName(t *testing.T) {
	e, _ := fakeEnv(t, newTestPod("b"), newTestPod("a"))
	pods := e.WaitForPods(t, "two pods", func(pods []corev1.Pod) bool { return len(pods) == 2 })
	if pods[0].Name != "a" || pods[1].Name != "b" {
		t.Errorf("pods %s, %s; want a, b", pods[0].Name, pods[1].Name)
	}
	r := record(t, func(tb testing.TB) {
		e.WaitForPods(tb, "three pods", func(pods []corev1.Pod) bool { return len(pods) == 3 })
	})
	expectFatal(t, r, "three pods", "last seen: 2 pods; a (owner <orphan>, phase , ready false")
}

func TestWaitForEventMatchesOnTheObjectsEvents(t *testing.T) {
	event := func(name, object, reason string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: object},
			Type:           corev1.EventTypeNormal, Reason: reason, Message: "hello", Source: corev1.EventSource{Component: "kubelet"},
		}
	}
	e, _ := fakeEnv(t, event("e1", "web", "Pulled"), event("e2", "web", "Started"))
	found := e.WaitForEvent(t, "ns", "Pod", "web", "a Started event", func(ev *corev1.Event) bool { return ev.Reason == "Started" })
	if found.Name != "e2" {
		t.Errorf("found event %s, want e2", found.Name)
	}
	r := record(t, func(tb testing.TB) {
		e.WaitForEvent(tb, "ns", "Pod", "web", "a Killing event", func(ev *corev1.Event) bool { return ev.Reason == "Killing" })
	})
	expectFatal(t, r, "a Killing event on Pod web", `Normal Pulled "hello" from kubelet`)
}

func TestExpectRefused(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("denied by the budget"))
	for _, tc := range []struct {
		name     string
		err      error
		code     int32
		contains []string
		want     string // "" when the check passes
	}{
		{"refused as expected", forbidden, http.StatusForbidden, []string{"budget"}, ""},
		{"allowed", nil, http.StatusForbidden, nil, "deleting web was allowed, want HTTP 403"},
		{"other code", forbidden, http.StatusTooManyRequests, nil, "deleting web: HTTP 403"},
		{"other message", forbidden, http.StatusForbidden, []string{"quota"}, `does not contain "quota"`},
		{"not an API error", errors.New("connection refused"), http.StatusForbidden, nil, "deleting web: HTTP 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record(t, func(tb testing.TB) { ExpectRefused(tb, "deleting web", tc.err, tc.code, tc.contains...) })
			switch {
			case tc.want == "" && len(r.errors) > 0:
				t.Errorf("failed with %q, want a pass", r.errors)
			case tc.want != "" && (len(r.errors) != 1 || !strings.Contains(r.errors[0], tc.want)):
				t.Errorf("failed with %q, want one failure containing %q", r.errors, tc.want)
			}
		})
	}
}

// The resources a test removes are looked up when it begins: a name the API server does not
// serve fails the test then, not once it has run.
func TestNewTestEnvRejectsUnknownResources(t *testing.T) {
	cp := SharedControlPlane(t)
	r := record(t, func(tb testing.TB) {
		NewTestEnv(tb, cp, EnvOptions{Remove: []string{"pods", "deployments.apps", "widgets.example.invalid"}})
	})
	expectFatal(t, r, "finding the resources the test removes", `"widgets.example.invalid"`)
	e := NewTestEnv(t, cp, EnvOptions{Remove: []string{"pods", "deployments.apps"}, RemoveLabelled: []string{"nodes"}})
	want := []schema.GroupVersionResource{{Version: "v1", Resource: "pods"}, {Group: "apps", Version: "v1", Resource: "deployments"}}
	if !slices.Equal(e.remove, want) || len(e.removeLabelled) != 1 || e.removeLabelled[0].Resource != "nodes" {
		t.Errorf("resolved %v and %v, want %v and nodes", e.remove, e.removeLabelled, want)
	}
}
