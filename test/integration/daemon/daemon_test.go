// Package daemon runs the bosun-daemon binary as a process against a real kube-apiserver:
// its flag checks, its readiness while the container runtime comes and goes, and — read
// from the API server's audit log — that it never lists or watches beyond its own node.
package daemon

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/daemon/controller/runtimecondition"
	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
}

func TestNodeNameIsRequired(t *testing.T) {
	binary := framework.BuildBosunBinary(t, "bosun-daemon")
	p := framework.RunProcess(t, framework.ProcessConfig{
		Path: binary,
		Args: []string{"--master=https://127.0.0.1:1"},
		Env:  []string{"NODE_NAME="},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = p.Wait(ctx)
	if code := p.ExitCode(); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if log, _ := p.Log(); !strings.Contains(log, "--node-name (or NODE_NAME) is required") {
		t.Errorf("the error does not say what is missing:\n%s", log)
	}
}

func TestReadinessFollowsTheRuntimeAndWatchesStayOnTheNode(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	socket := filepath.Join(crifake.ShortTempDir(t), "containerd.sock")
	const node = "node-a"
	daemon := framework.RunBosunDaemon(t, cp, framework.BosunDaemonOptions{Node: node, RuntimeEndpoint: "unix://" + socket})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	get := daemon.Get
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := framework.WaitFor(ctx, time.Minute, what, func(context.Context) (bool, error) {
			if err := daemon.ExitError(); err != nil {
				return false, err
			}
			return cond(), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// No runtime yet: alive, but not ready, and it says why.
	waitFor("/livez to answer", func() bool { code, _ := get("/livez"); return code == http.StatusOK })
	code, body := get("/readyz?verbose")
	if code == http.StatusOK || !strings.Contains(body, "[-]cri failed") {
		t.Errorf("/readyz without a runtime = %d:\n%s", code, body)
	}

	runtime := crifake.Start(t, socket)
	waitFor("/readyz to pass once the runtime is up", func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
	// Ready, and it names the runtime it talks to.
	_, body = get("/readyz?verbose")
	for _, check := range []string{"[+]cri ok: fake-runtime 1.2.3 (runtime API v1) at " + runtime.Endpoint() + "\n", "[+]informer-sync ok\n"} {
		if !strings.Contains(body, check) {
			t.Errorf("/readyz?verbose lacks %q:\n%s", check, body)
		}
	}

	runtime.Stop()
	waitFor("/readyz to fail once the runtime is gone", func() bool { code, _ := get("/readyz"); return code != http.StatusOK })

	// Every list and watch the daemon made names its node.
	events, err := cp.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, ev := range events {
		if !strings.Contains(ev.UserAgent, "bosun-daemon") || (ev.Verb != "list" && ev.Verb != "watch") {
			continue
		}
		checked++
		u, err := url.Parse(ev.RequestURI)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		// Delegated authentication of the daemon's own endpoints reads the one named
		// ConfigMap that holds the cluster's client CA, like every component does.
		authConfig := u.Path == "/api/v1/namespaces/kube-system/configmaps" &&
			q.Get("fieldSelector") == "metadata.name=extension-apiserver-authentication"
		scoped := authConfig || q.Get("fieldSelector") == "metadata.name="+node ||
			q.Get("fieldSelector") == "spec.nodeName="+node ||
			strings.Contains(q.Get("labelSelector"), "crr.apps.kruise.io/node-name="+node)
		if !scoped {
			t.Errorf("bosun-daemon made a %s beyond its node: %s", ev.Verb, ev.RequestURI)
		}
	}
	if checked == 0 {
		t.Fatal("the audit log holds no list or watch from bosun-daemon; nothing was checked")
	}
	t.Logf("checked %d list/watch requests of bosun-daemon", checked)
}

// The agent reports on its Node whether it reaches the runtime: condition
// BosunDaemonRuntimeReady False with the reason while the socket is missing (the agent keeps
// running), True once the runtime answers, False again when it goes, with an event at each
// change.
func TestRuntimeConditionOnTheNode(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const node = "node-runtime-condition"
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	socket := filepath.Join(crifake.ShortTempDir(t), "containerd.sock")
	daemon := framework.RunBosunDaemon(t, cp, framework.BosunDaemonOptions{Node: node, RuntimeEndpoint: "unix://" + socket})
	waitForCondition := func(status corev1.ConditionStatus, reason, eventType, eventReason string) {
		t.Helper()
		err := framework.WaitFor(ctx, time.Minute, fmt.Sprintf("condition %s=%s (%s) and a %s %s event", runtimecondition.ConditionType, status, reason, eventType, eventReason), func(ctx context.Context) (bool, error) {
			if err := daemon.ExitError(); err != nil {
				return false, err
			}
			n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			found := false
			for _, c := range n.Status.Conditions {
				found = found || (c.Type == runtimecondition.ConditionType && c.Status == status && c.Reason == reason)
			}
			if !found {
				return false, nil
			}
			events, err := client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=" + eventReason,
			})
			if err != nil {
				return false, err
			}
			for _, e := range events.Items {
				if e.Type == eventType {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	waitForCondition(corev1.ConditionFalse, runtimecondition.ReasonRuntimeUnavailable, corev1.EventTypeWarning, runtimecondition.EventRuntimeUnavailable)
	runtime := crifake.Start(t, socket)
	waitForCondition(corev1.ConditionTrue, runtimecondition.ReasonRuntimeAnswering, corev1.EventTypeNormal, runtimecondition.EventRuntimeAvailable)
	runtime.Stop()
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == runtimecondition.ConditionType && c.Status != corev1.ConditionTrue {
			t.Fatalf("condition %+v before the runtime went", c)
		}
	}
	err = framework.WaitFor(ctx, time.Minute, "the condition to turn False again", func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == runtimecondition.ConditionType {
				return c.Status == corev1.ConditionFalse, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if daemon.Exited() {
		t.Fatalf("bosun-daemon exited without its runtime:\n%s", daemon.LogTail(40))
	}
}
