package controllermanager

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// These tests run the real built-in controllers (replicaset, deployment) inside the real
// binary: health and metrics per controller, client identities, and a leader that stops
// in the middle of a scale-up.

// fastClient lifts the default 20 QPS so that workloads of thousands of pods finish in
// seconds.
var fastClient = []string{"--kube-api-qps=500", "--kube-api-burst=500"}

func newReplicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}}},
			},
		},
	}
}

// podCount counts the pods of namespace, with a paged list so that thousands of pods do not
// make one huge response.
func podCount(ctx context.Context, client kubernetes.Interface, namespace string) (int, error) {
	n := 0
	opts := metav1.ListOptions{Limit: 1000}
	for {
		list, err := client.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		n += len(list.Items)
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue = list.Continue
	}
}

func TestBuiltinControllersReportHealthMetricsAndIdentity(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, client).Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	m := startManager(t, cp, "builtin", fastClient...)
	waitForHolder(ctx, t, client, "builtin", 30*time.Second, "the manager to lead", func(h string) bool { return h != "" })

	// The per-controller checks are added once the leader has built its controllers.
	wantChecks := []string{"[+]leaderElection ok", "[+]replicaset-controller ok", "[+]deployment-controller ok", "healthz check passed"}
	var body string
	err := framework.WaitFor(ctx, 30*time.Second, "/healthz?verbose to pass with every controller's check", func(context.Context) (bool, error) {
		var code int
		code, body = m.get(t, "/healthz?verbose", "")
		if code != http.StatusOK {
			return false, nil
		}
		for _, want := range wantChecks {
			if !strings.Contains(body, want) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v:\n%s", err, body)
	}

	// A Deployment exercises both controllers: deployment-controller creates the
	// ReplicaSet, replicaset-controller its pods.
	rs := newReplicaSet("web", 2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: rs.Spec.Selector, Template: rs.Spec.Template},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAgents := map[string]string{"replicasets": "/deployment-controller", "pods": "/replicaset-controller"}
	err = framework.WaitFor(ctx, time.Minute, "the ReplicaSet and pod creates in the audit log", func(context.Context) (bool, error) {
		events, err := cp.AuditEvents()
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, ev := range events {
			if ev.Verb != "create" || ev.ObjectRef == nil || ev.ObjectRef.Namespace != ns {
				continue
			}
			suffix, watched := wantAgents[ev.ObjectRef.Resource]
			if !watched {
				continue
			}
			if !strings.HasSuffix(ev.UserAgent, suffix) {
				t.Errorf("%s created with User-Agent %q, want one ending in %s", ev.ObjectRef.Resource, ev.UserAgent, suffix)
			}
			seen[ev.ObjectRef.Resource] = true
		}
		return len(seen) == len(wantAgents), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	_, metrics := m.get(t, "/metrics", cp.Config().BearerToken)
	for _, series := range []string{
		`running_managed_controllers{manager="bosun-controller-manager",name="replicaset-controller"}`,
		`running_managed_controllers{manager="bosun-controller-manager",name="deployment-controller"}`,
		`leader_election_master_status{name="bosun-controller-manager"}`,
	} {
		if v, ok := framework.MetricValue(metrics, series); !ok || v != "1" {
			t.Errorf("%s = %q (found %v), want 1", series, v, ok)
		}
	}
	for _, series := range []string{`workqueue_depth{name="replicaset"}`, `workqueue_depth{name="deployment"}`} {
		if _, ok := framework.MetricValue(metrics, series); !ok {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	if !strings.Contains(metrics, "rest_client_requests_total") {
		t.Error("/metrics lacks rest_client_requests_total")
	}
}

// A leader stopped with SIGTERM in the middle of a large scale-up exits 0, and the standby
// that takes over finishes the job without one pod too many.
func TestShutdownDuringScaleUpLosesNoPod(t *testing.T) {
	const replicas = 2000
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, client).Name
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	leader := startManager(t, cp, "scale-up-handover", fastClient...)
	waitForHolder(ctx, t, client, "scale-up-handover", 30*time.Second, "the first manager to lead", func(h string) bool { return h != "" })
	standby := startManager(t, cp, "scale-up-handover", fastClient...)

	if _, err := client.AppsV1().ReplicaSets(ns).Create(ctx, newReplicaSet("big", replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := framework.WaitFor(ctx, time.Minute, "the scale-up to be under way", func(ctx context.Context) (bool, error) {
		n, err := podCount(ctx, client, ns)
		return n >= 200, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.proc.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := leader.proc.Wait(ctx); err != nil && leader.proc.ExitCode() != 0 {
		t.Fatalf("waiting for the leader to exit: %v", err)
	}
	if code := leader.proc.ExitCode(); code != 0 {
		t.Errorf("leader exit code after SIGTERM during a scale-up = %d, want 0:\n%s", code, leader.proc.LogTail(30))
	}
	pods, err := podCount(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	if pods >= replicas {
		t.Fatalf("the leader finished the scale-up (%d pods) before it was stopped; the test proves nothing", pods)
	}
	t.Logf("the leader stopped with %d of %d pods created", pods, replicas)

	err = framework.WaitFor(ctx, 2*time.Minute, "the standby to finish the scale-up", func(ctx context.Context) (bool, error) {
		if standby.proc.Exited() {
			t.Fatalf("the standby exited:\n%s", standby.proc.LogTail(30))
		}
		rs, err := client.AppsV1().ReplicaSets(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return rs.Status.Replicas == replicas && rs.Status.ObservedGeneration == rs.Generation, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A controller that overshot would still be working off the pod events of its extra
	// creates; count only once its ReplicaSet queue has nothing queued or in progress.
	token := cp.Config().BearerToken
	err = framework.WaitFor(ctx, time.Minute, "the standby's ReplicaSet queue to be idle", func(context.Context) (bool, error) {
		code, metrics := standby.get(t, "/metrics", token)
		if code != http.StatusOK {
			return false, nil
		}
		depth, _ := framework.MetricValue(metrics, `workqueue_depth{name="replicaset"}`)
		busy, _ := framework.MetricValue(metrics, `workqueue_unfinished_work_seconds{name="replicaset"}`)
		return depth == "0" && busy == "0", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pods, err := podCount(ctx, client, ns); err != nil || pods != replicas {
		t.Fatalf("%d pods (err %v), want exactly %d", pods, err, replicas)
	}
	creates, deletes := 0, 0
	events, err := cp.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.ObjectRef == nil || ev.ObjectRef.Resource != "pods" || ev.ObjectRef.Namespace != ns || ev.ObjectRef.Subresource != "" {
			continue
		}
		ok := ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300
		switch {
		case ev.Verb == "create" && ok:
			creates++
		case ev.Verb == "delete":
			deletes++
		}
	}
	// A create whose client was cancelled by the shutdown may be stored although its
	// audit record shows no success, so successful creates can be fewer than the pods.
	if creates > replicas || deletes != 0 {
		t.Errorf("audit log: %d successful pod creates and %d deletes, want at most %d and 0", creates, deletes, replicas)
	}
}
