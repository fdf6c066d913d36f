package framework_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestSharedControlPlaneServesTheAPI(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := cp.Clientset(t)

	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz = %q, %v; want ok", body, err)
	}
	if !strings.HasPrefix(cp.Host(), "https://127.0.0.1:") {
		t.Errorf("Host() = %q, want a loopback https URL", cp.Host())
	}

	ns := framework.CreateTestNamespace(t, client)
	if !strings.HasPrefix(ns.Name, "testsharedcontrolplaneservestheapi-") {
		t.Errorf("namespace %q is not named after the test", ns.Name)
	}
	if _, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("getting the default ServiceAccount of the test namespace: %v", err)
	}
	// With ServiceAccount admission off, a pod needs no token volume; the API server
	// stores it although no node will ever run it.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}}},
	}
	if _, err := client.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a pod: %v", err)
	}

	// The kubeconfig file works for a real client binary.
	kubectl, err := framework.ToolPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	p := framework.RunBinary(t, kubectl, "--kubeconfig", cp.KubeconfigPath(), "get", "pods", "-n", ns.Name, "-o", "name")
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("kubectl failed: %v\n%s", err, p.LogTail(20))
	}
	if got, _ := p.Log(); got != "pod/web\n" {
		t.Errorf("kubectl get pods printed %q, want %q", got, "pod/web\n")
	}
}

func TestNamespacesOfTestsAreIsolated(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	first := framework.CreateTestNamespace(t, client)
	second := framework.CreateTestNamespace(t, client)
	if first.Name == second.Name {
		t.Errorf("two test namespaces are both called %s", first.Name)
	}
	if first.Labels[framework.TestNamespaceLabel] != "true" {
		t.Errorf("namespace labels = %v, want %s=true", first.Labels, framework.TestNamespaceLabel)
	}
}

func TestStaticUsersAreAuthorizedByRBAC(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, admin)

	viewerConfig, err := cp.UserConfig("viewer")
	if err != nil {
		t.Fatal(err)
	}
	viewer := kubernetes.NewForConfigOrDie(viewerConfig)
	if _, err := viewer.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing pods as an unbound user: err = %v, want Forbidden", err)
	}

	// Not the "view" ClusterRole: it is aggregated, and without kube-controller-manager
	// nobody fills in its rules.
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := admin.RbacV1().Roles(ns.Name).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "viewers"}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns.Name).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer learns about the binding through a watch, a moment later.
	err = framework.WaitFor(ctx, 30*time.Second, "the viewer to be allowed to list pods", func(ctx context.Context) (bool, error) {
		_, err := viewer.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viewer.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("creating a pod as a viewer: err = %v, want Forbidden", err)
	}
	if _, err := cp.UserConfig("nobody"); err == nil {
		t.Error("UserConfig of an undefined user succeeded")
	}
}

func TestAuditLogRecordsUserAgents(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := cp.Config()
	cfg.UserAgent = "framework-audit-test/v1"
	client := kubernetes.NewForConfigOrDie(cfg)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t))
	if _, err := client.CoreV1().ConfigMaps(ns.Name).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	err := framework.WaitFor(ctx, 30*time.Second, "an audit event of the list request", func(context.Context) (bool, error) {
		events, err := cp.AuditEvents()
		return slices.ContainsFunc(events, func(e auditv1.Event) bool {
			return e.UserAgent == cfg.UserAgent && e.Verb == "list" && e.User.Username == framework.AdminUser &&
				e.ObjectRef != nil && e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == ns.Name
		}), err
	})
	if err != nil {
		t.Fatal(err)
	}
}
