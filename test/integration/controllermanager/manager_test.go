package controllermanager

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Short leader-election timings keep the takeover tests quick; they satisfy the rule
// lease > renew > 1.2 × retry.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// manager is one running bosun-controller-manager.
type manager struct {
	proc *framework.Process
	port int
}

// startManager runs bosun-controller-manager against the control plane with its own
// Lease name, so that the tests of this package do not see each other's leaders.
func startManager(t *testing.T, cp *framework.ControlPlane, leaseName string, extraArgs ...string) *manager {
	t.Helper()
	binary := framework.BuildBosunBinary(t, "bosun-controller-manager")
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--kubeconfig=" + cp.KubeconfigPath(),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]),
		"--leader-elect-resource-name=" + leaseName,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		// Several managers run on this machine at once; webhook serving has tests of its own.
		"--webhook-port=0",
		"--v=2",
	}, extraArgs...)
	m := &manager{proc: framework.RunBinary(t, binary, args...), port: ports[0]}
	m.waitServing(t)
	return m
}

// get requests path from the manager's secure port (see framework.GetEndpoint).
func (m *manager) get(t *testing.T, path, token string) (int, string) {
	t.Helper()
	return framework.GetEndpoint(m.port, path, token)
}

func (m *manager) waitServing(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := framework.WaitFor(ctx, time.Minute, "bosun-controller-manager to serve /livez", func(context.Context) (bool, error) {
		if m.proc.Exited() {
			return false, fmt.Errorf("it exited with status %d:\n%s", m.proc.ExitCode(), m.proc.LogTail(40))
		}
		code, _ := m.get(t, "/livez", "")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func leaseHolder(ctx context.Context, client kubernetes.Interface, name string) (string, error) {
	lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// waitForHolder waits until the Lease is held by an identity for which accept is true.
func waitForHolder(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, timeout time.Duration, what string, accept func(string) bool) string {
	t.Helper()
	var holder string
	err := framework.WaitFor(ctx, timeout, what, func(ctx context.Context) (bool, error) {
		var err error
		holder, err = leaseHolder(ctx, client, name)
		return err == nil && accept(holder), nil
	})
	if err != nil {
		t.Fatalf("%v (holder %q)", err, holder)
	}
	return holder
}

func TestUnknownControllerIsAFlagError(t *testing.T) {
	binary := framework.BuildBosunBinary(t, "bosun-controller-manager")
	// An unreachable server: the flag error must come before any connection attempt.
	p := framework.RunBinary(t, binary, "--controllers=nosuch", "--master=https://127.0.0.1:1", "--leader-elect=false")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil && p.ExitCode() < 0 {
		t.Fatalf("waiting for exit: %v", err)
	}
	if code := p.ExitCode(); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	log, _ := p.Log()
	if !strings.Contains(log, `"nosuch" is not in the list of known controllers`) {
		t.Errorf("the error does not name the unknown controller:\n%s", log)
	}
	for _, name := range []string{"replicaset-controller", "deployment-controller", "replicaset", "deployment"} {
		if !strings.Contains(log, name) {
			t.Errorf("the error does not list %q among the valid names:\n%s", name, log)
		}
	}
	if strings.Contains(log, "127.0.0.1:1") {
		t.Errorf("the manager contacted the server before rejecting its flags:\n%s", log)
	}
}

func TestInvalidLeaderElectionTimingsAreReportedTogether(t *testing.T) {
	binary := framework.BuildBosunBinary(t, "bosun-controller-manager")
	p := framework.RunBinary(t, binary, "--master=https://127.0.0.1:1",
		"--leader-elect-lease-duration=1s", "--leader-elect-renew-deadline=2s",
		"--leader-elect-resource-lock=configmaps", "--controllers=nosuch")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = p.Wait(ctx)
	if code := p.ExitCode(); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	log, _ := p.Log()
	for _, want := range []string{"nosuch", "configmaps", "renew"} {
		if !strings.Contains(log, want) {
			t.Errorf("the errors do not mention %q; all validation errors must be reported together:\n%s", want, log)
		}
	}
}

func TestLeaderTakesLeaseAndReportsHealthy(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}

	m := startManager(t, cp, "leader-health")
	holder := waitForHolder(ctx, t, client, "leader-health", 30*time.Second, "the manager to take the Lease",
		func(h string) bool { return h != "" })
	if !strings.HasPrefix(holder, hostname+"_") {
		t.Errorf("Lease holder %q does not start with the host name %q and an underscore", holder, hostname)
	}

	err = framework.WaitFor(ctx, 30*time.Second, "/healthz?verbose to pass", func(context.Context) (bool, error) {
		code, body := m.get(t, "/healthz?verbose", "")
		return code == http.StatusOK && strings.Contains(body, "healthz check passed"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, body := m.get(t, "/healthz?verbose", "")
	if !strings.Contains(body, "[+]leaderElection ok") {
		t.Errorf("/healthz?verbose lacks the leaderElection check:\n%s", body)
	}
	// Readiness also waits for the controllers' informers to sync, which may finish a moment
	// after /healthz passes.
	for _, path := range []string{"/livez", "/readyz"} {
		var code int
		var body string
		err := framework.WaitFor(ctx, 30*time.Second, path+" to answer ok", func(context.Context) (bool, error) {
			code, body = m.get(t, path, "")
			return code == http.StatusOK && body == "ok", nil
		})
		if err != nil {
			t.Errorf("%s = %d %q, want 200 ok", path, code, body)
		}
	}
}

func TestMetricsNeedAuthorization(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := startManager(t, cp, "metrics-auth")
	waitForHolder(ctx, t, cp.Clientset(t), "metrics-auth", 30*time.Second, "the manager to lead", func(h string) bool { return h != "" })

	if code, _ := m.get(t, "/metrics", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("/metrics without credentials = %d, want 401 or 403", code)
	}
	if code, _ := m.get(t, "/metrics", "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a bad token = %d, want 401", code)
	}
	// A scraper's ServiceAccount: refused until RBAC allows it to get /metrics.
	scraperToken := serviceAccountToken(ctx, t, cp, "metrics-scraper")
	if code, _ := m.get(t, "/metrics", scraperToken); code != http.StatusForbidden {
		t.Errorf("/metrics for a ServiceAccount without RBAC = %d, want 403", code)
	}
	allowMetrics(ctx, t, cp, "metrics-scraper")
	err := framework.WaitFor(ctx, 30*time.Second, "the scraper to be allowed /metrics", func(context.Context) (bool, error) {
		code, _ := m.get(t, "/metrics", scraperToken)
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Health endpoints need no credentials at all.
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, _ := m.get(t, path, ""); code != http.StatusOK {
			t.Errorf("%s without credentials = %d, want 200", path, code)
		}
	}

	token := cp.Config().BearerToken
	var metrics string
	err = framework.WaitFor(ctx, 30*time.Second, "leader_election_master_status 1", func(context.Context) (bool, error) {
		code, body := m.get(t, "/metrics", token)
		metrics = body
		v, ok := framework.MetricValue(body, `leader_election_master_status{name="bosun-controller-manager"}`)
		return code == http.StatusOK && ok && v == "1", nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, metrics)
	}
	for _, family := range []string{"rest_client_requests_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(metrics, family) {
			t.Errorf("/metrics lacks %s", family)
		}
	}
}

func TestStandbyTakesOverWhenTheLeaderIsKilled(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	token := cp.Config().BearerToken

	first := startManager(t, cp, "takeover")
	firstHolder := waitForHolder(ctx, t, client, "takeover", 30*time.Second, "the first manager to lead",
		func(h string) bool { return h != "" })
	second := startManager(t, cp, "takeover")

	// The standby serves health and metrics but only the leaderElection check, and
	// reports that it does not lead.
	err := framework.WaitFor(ctx, 30*time.Second, "the standby to report master status 0", func(context.Context) (bool, error) {
		_, body := second.get(t, "/metrics", token)
		v, ok := framework.MetricValue(body, `leader_election_master_status{name="bosun-controller-manager"}`)
		return ok && v == "0", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code, body := second.get(t, "/healthz?verbose", "")
	if code != http.StatusOK || !strings.Contains(body, "[+]leaderElection ok") {
		t.Errorf("standby /healthz?verbose = %d:\n%s", code, body)
	}
	if holder, _ := leaseHolder(ctx, client, "takeover"); holder != firstHolder {
		t.Fatalf("the standby took the Lease from a live leader: holder %q, want %q", holder, firstHolder)
	}

	killed := time.Now()
	first.proc.Kill()
	secondHolder := waitForHolder(ctx, t, client, "takeover", leaseDuration+2*retryPeriod+10*time.Second,
		"the standby to take over", func(h string) bool { return h != "" && h != firstHolder })
	t.Logf("standby %s took over %v after SIGKILL of the leader", secondHolder, time.Since(killed).Round(100*time.Millisecond))

	err = framework.WaitFor(ctx, 30*time.Second, "the new leader to report master status 1", func(context.Context) (bool, error) {
		_, body := second.get(t, "/metrics", token)
		v, ok := framework.MetricValue(body, `leader_election_master_status{name="bosun-controller-manager"}`)
		return ok && v == "1", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGracefulShutdownReleasesTheLease(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first := startManager(t, cp, "release")
	firstHolder := waitForHolder(ctx, t, client, "release", 30*time.Second, "the first manager to lead",
		func(h string) bool { return h != "" })
	second := startManager(t, cp, "release")
	_ = second

	if err := first.proc.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := first.proc.Wait(ctx); err != nil && first.proc.ExitCode() != 0 {
		t.Fatalf("waiting for the leader to exit: %v", err)
	}
	if code := first.proc.ExitCode(); code != 0 {
		t.Errorf("leader exit code after SIGINT = %d, want 0:\n%s", code, first.proc.LogTail(30))
	}
	// Released, the Lease goes to the standby within a few retry periods rather than
	// after the lease duration.
	stopped := time.Now()
	waitForHolder(ctx, t, client, "release", leaseDuration, "the standby to take the released Lease",
		func(h string) bool { return h != "" && h != firstHolder })
	t.Logf("standby took the released Lease %v after the leader exited", time.Since(stopped).Round(100*time.Millisecond))
}

func TestLeaderExitsWhenItsLeaseIsTaken(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	m := startManager(t, cp, "stolen")
	t.Cleanup(func() {
		// The intruder's hour-long Lease would keep a rerun (go test -count) from leading.
		_ = client.CoordinationV1().Leases("kube-system").Delete(context.Background(), "stolen", metav1.DeleteOptions{})
	})
	waitForHolder(ctx, t, client, "stolen", 30*time.Second, "the manager to lead", func(h string) bool { return h != "" })

	// Another holder overwrites the Lease, as a split brain or an operator would. The
	// manager renews every retry period, so a read-then-write can lose the race to a
	// renewal; the intruder, like any writer, reads again and retries.
	steal := func() error {
		lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "stolen", metav1.GetOptions{})
		if err != nil {
			return err
		}
		lease.Spec = coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("intruder"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		}
		_, err = client.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{})
		return err
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, steal); err != nil {
		t.Fatalf("overwriting the Lease: %v", err)
	}
	if err := m.proc.Wait(ctx); err != nil && !m.proc.Exited() {
		t.Fatalf("the manager kept running after losing its Lease: %v", err)
	}
	if code := m.proc.ExitCode(); code != 1 {
		t.Errorf("exit code after losing the Lease = %d, want 1:\n%s", code, m.proc.LogTail(30))
	}
}

// serviceAccountToken creates a ServiceAccount in kube-system and returns a token for it
// from the TokenRequest API, as a Prometheus in the cluster would hold.
func serviceAccountToken(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string) string {
	t.Helper()
	client := cp.Clientset(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
	if _, err := client.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-system outlives the test; a rerun (go test -count) starts from scratch.
	t.Cleanup(func() {
		_ = client.CoreV1().ServiceAccounts("kube-system").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tr, err := client.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s: %v", name, err)
	}
	return tr.Status.Token
}

// allowMetrics grants the ServiceAccount get on the non-resource URL /metrics.
func allowMetrics(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string) {
	t.Helper()
	client := cp.Clientset(t)
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "kube-system"}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}
