package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bosun-dev/bosun/pkg/cmdutil"
	"github.com/bosun-dev/bosun/pkg/controllermanager/app"
	"github.com/bosun-dev/bosun/pkg/controllermanager/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// configMapWriter is a controller made for this test: it writes one ConfigMap with the
// client the manager built for it, so the test can see which identity that client has.
type configMapWriter struct {
	client    kubernetes.Interface
	namespace string
}

func (w *configMapWriter) Run(ctx context.Context) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-by-controller"}}
	if _, err := w.client.CoreV1().ConfigMaps(w.namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		panic(fmt.Sprintf("configmap-writer: %v", err))
	}
	<-ctx.Done()
}

// DebuggingHandler makes the writer Debuggable: the manager mounts it under
// /debug/controllers/<name>/.
func (w *configMapWriter) DebuggingHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(rw, "writer debug page at %s", req.URL.Path)
	})
}

// configMapWriterDescriptor registers a configMapWriter as "<clientName>-controller" whose
// client is the one the manager builds under clientName.
func configMapWriterDescriptor(clientName, namespace string) registry.Descriptor {
	return registry.Descriptor{
		Name:       clientName + "-controller",
		ClientName: clientName,
		Constructor: func(ctx context.Context, cc *registry.ControllerContext) (registry.Controller, error) {
			client, err := cc.Client()
			if err != nil {
				return nil, err
			}
			return &configMapWriter{client: client, namespace: namespace}, nil
		},
	}
}

// unhealthy is a controller whose health check always fails.
type unhealthy struct{}

func (unhealthy) Run(ctx context.Context)         { <-ctx.Done() }
func (unhealthy) HealthCheck(*http.Request) error { return errors.New("stuck") }

// TestRegisteredControllersRunWithTheirOwnClientsAndChecks runs the manager in this test
// process with controllers registered by the test — the way later controllers plug in
// with one registration — against the real API server.
func TestRegisteredControllersRunWithTheirOwnClientsAndChecks(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name

	var disabledBuilt atomic.Bool
	reg := registry.New()
	writer := configMapWriterDescriptor("configmap-writer", ns)
	writer.Aliases = []string{"writer"}
	reg.MustRegister(writer)
	reg.MustRegister(registry.Descriptor{
		Name: "unhealthy-controller",
		Constructor: func(context.Context, *registry.ControllerContext) (registry.Controller, error) {
			return unhealthy{}, nil
		},
	})
	reg.MustRegister(registry.Descriptor{
		Name:              "optional-controller",
		DisabledByDefault: true,
		Constructor: func(context.Context, *registry.ControllerContext) (registry.Controller, error) {
			disabledBuilt.Store(true)
			return unhealthy{}, nil
		},
	})

	m := runInProcess(t, cp, reg)

	waitCtx, waitCancel := context.WithTimeout(context.Background(), time.Minute)
	defer waitCancel()
	var body string
	err := framework.WaitFor(waitCtx, 30*time.Second, "both controllers' health checks", func(context.Context) (bool, error) {
		_, body = m.get(t, "/healthz?verbose", "")
		return strings.Contains(body, "unhealthy-controller"), nil
	})
	if err != nil {
		t.Fatalf("%v:\n%s", err, body)
	}
	for _, want := range []string{"[+]configmap-writer-controller ok", "[-]unhealthy-controller failed", "healthz check failed"} {
		if !strings.Contains(body, want) {
			t.Errorf("/healthz?verbose lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "optional-controller") || disabledBuilt.Load() {
		t.Errorf("the disabled-by-default controller was built:\n%s", body)
	}
	if code, _ := m.get(t, "/healthz?exclude=unhealthy-controller", ""); code != http.StatusOK {
		t.Errorf("/healthz excluding the failing check = %d, want 200", code)
	}

	token := cp.Config().BearerToken
	_, metrics := m.get(t, "/metrics", token)
	// Debug handlers sit behind authorization like /metrics.
	if code, _ := m.get(t, "/debug/controllers/configmap-writer-controller/graph", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("a controller's debug handler without credentials = %d, want 401 or 403", code)
	}
	if code, body := m.get(t, "/debug/controllers/configmap-writer-controller/graph", token); code != http.StatusOK || body != "writer debug page at /graph" {
		t.Errorf("a controller's debug handler = %d %q, want 200 with the path below its prefix", code, body)
	}
	series := `running_managed_controllers{manager="bosun-controller-manager",name="configmap-writer-controller"}`
	if v, ok := framework.MetricValue(metrics, series); !ok || v != "1" {
		t.Errorf("%s = %q (found %v), want 1", series, v, ok)
	}

	// The controller's write carries its own client name in the User-Agent.
	err = framework.WaitFor(waitCtx, 30*time.Second, "the controller's ConfigMap in the audit log", func(context.Context) (bool, error) {
		events, err := cp.AuditEvents()
		if err != nil {
			return false, err
		}
		for _, ev := range events {
			if ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" &&
				ev.ObjectRef.Namespace == ns && ev.ObjectRef.Name == "written-by-controller" {
				if !strings.HasSuffix(ev.UserAgent, "/configmap-writer") {
					return false, fmt.Errorf("the controller wrote with User-Agent %q, want one ending in /configmap-writer", ev.UserAgent)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestServiceAccountCredentialsGiveEachControllerItsIdentity runs a controller with
// --use-service-account-credentials: its writes must reach the API server as the
// ServiceAccount kube-system/<client name>, which the manager creates.
func TestServiceAccountCredentialsGiveEachControllerItsIdentity(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, client).Name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The ServiceAccount may write ConfigMaps in the test namespace, as upstream's bootstrap
	// role system:controller:<client name> would allow a real controller its objects.
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "sa-writer", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}},
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sa-writer", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "sa-writer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sa-writer", Namespace: "kube-system"}},
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	reg := registry.New()
	reg.MustRegister(configMapWriterDescriptor("sa-writer", ns))
	runInProcess(t, cp, reg, "--use-service-account-credentials")

	err := framework.WaitFor(ctx, 30*time.Second, "the manager to create the controller's ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts("kube-system").Get(ctx, "sa-writer", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = framework.WaitFor(ctx, 30*time.Second, "the controller's ConfigMap in the audit log", func(context.Context) (bool, error) {
		events, err := cp.AuditEvents()
		if err != nil {
			return false, err
		}
		for _, ev := range events {
			if ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == ns {
				if want := "system:serviceaccount:kube-system:sa-writer"; ev.User.Username != want {
					return false, fmt.Errorf("the controller wrote as %q, want %q", ev.User.Username, want)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runInProcess runs bosun-controller-manager's app.Run in the test process with reg as its
// controllers, without leader election, and stops it when the test ends.
func runInProcess(t *testing.T, cp *framework.ControlPlane, reg *registry.Registry, extraArgs ...string) *manager {
	t.Helper()
	ports, err := framework.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	o := options.NewOptions(features.NewFeatureGate())
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	cmdutil.AddFlagSets(fs, o.Flags(reg))
	args := append([]string{
		"--kubeconfig=" + cp.KubeconfigPath(),
		"--controllers=*",
		"--leader-elect=false",
		"--webhook-port=0",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]),
	}, extraArgs...)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(reg); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, o, reg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run after cancel: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	return &manager{port: ports[0]}
}
