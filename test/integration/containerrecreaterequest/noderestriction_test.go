package containerrecreaterequest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunclientset "github.com/bosun-dev/client-go/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Node restriction: each node's bosun-daemon credentials write the status of that node's
// NodeImage and of the ContainerRecreateRequests of pods on that node, and nothing of
// another node's, as the API server's NodeRestriction keeps kubelets to their node.
//
// Two Nodes, a and b, each with a running pod and a request for it, and their NodeImages,
// which the manager's NodeImage controller creates. Node a's agent identity, a client
// certificate of bosun:daemon:<a> in group bosun:daemons (authorized by
// config/rbac/daemon.yaml), writes the status of its NodeImage and request, and is
// refused, with the webhook's message naming both nodes, for node b's; the service account
// of the agents' DaemonSet, impersonated with the node extra of a token bound to a pod on
// node a, likewise, and without that extra it writes nothing. The admin writes node b's
// objects throughout: only agents are judged.
func TestNodeAgentsWriteOnlyTheirNode(t *testing.T) {
	e := setup(t)
	nodeA, nodeB := e.createNode(t, "a", nil), e.createNode(t, "b", nil)
	probe := newCRR("admission-probe", "admission-probe", "app")
	manager := framework.StartBosunControllerManagerWithWebhooks(e.Ctx, t, e.CP, framework.ControllerManagerOptions{
		Controllers: crrController + ",nodeimage",
		ExtraArgs:   []string{"--nodeimage-creation-delay=0s"},
	}, framework.WebhookProbe{Webhook: webhookCRRMutation, Send: func(ctx context.Context) {
		_, _ = e.Bosun.AppsV1alpha1().ContainerRecreateRequests(e.Namespace).Create(ctx, probe, framework.DryRunCreate)
	}})
	for _, node := range []string{nodeA, nodeB} {
		e.Await(t, "the NodeImage of "+node, func(ctx context.Context) (bool, error) {
			_, err := e.Bosun.AppsV1beta1().NodeImages().Get(ctx, node, metav1.GetOptions{})
			return err == nil, nil
		}, func() string { return "not created" })
	}
	e.OnCleanup(func(ctx context.Context) error {
		for _, node := range []string{nodeA, nodeB} {
			_ = e.Bosun.AppsV1beta1().NodeImages().Delete(ctx, node, metav1.DeleteOptions{})
		}
		return nil
	})
	requestOn := map[string]string{}
	for _, node := range []string{nodeA, nodeB} {
		pod := "web-" + node
		e.createRunningPod(t, newPod(pod, node, "app"))
		created := e.requests().Create(t, newCRR("restart-"+pod, pod, "app"))
		if got := created.Labels[nodeNameLabel]; got != node {
			t.Fatalf("request %s is labelled with node %q, want %q", created.Name, got, node)
		}
		requestOn[node] = created.Name
	}

	daemonA, err := e.CP.DaemonConfig(e.Ctx, nodeA)
	if err != nil {
		t.Fatal(err)
	}
	// The API server learns of the webhooks through an informer: wait until it calls them.
	dryRun := []string{metav1.DryRunAll}
	framework.WaitForWebhooksCalled(e.Ctx, t, e.CP, []framework.WebhookProbe{
		{Webhook: noderestriction.NodeImageName, Send: func(ctx context.Context) {
			_, _ = bosunClient(t, daemonA).AppsV1beta1().NodeImages().Patch(ctx, nodeB, types.MergePatchType, []byte(`{"status":{"desired":0}}`),
				metav1.PatchOptions{DryRun: dryRun}, "status")
		}},
		{Webhook: noderestriction.ContainerRecreateRequestName, Send: func(ctx context.Context) {
			_, _ = bosunClient(t, daemonA).AppsV1beta1().ContainerRecreateRequests(e.Namespace).Patch(ctx, requestOn[nodeB], types.MergePatchType,
				[]byte(`{"status":{"phase":"Pending"}}`), metav1.PatchOptions{DryRun: dryRun}, "status")
		}},
	}, manager)
	// The DaemonSet's service account with a token bound to a pod on node a, and with a
	// token bound to no pod.
	podToken := rest.CopyConfig(e.CP.Config())
	podToken.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:bosun-daemon",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
		Extra:  map[string][]string{noderestriction.NodeNameExtra: {nodeA}}}
	unboundToken := rest.CopyConfig(podToken)
	unboundToken.Impersonate.Extra = nil

	began := time.Now()
	for _, tc := range []struct {
		who    string
		config *rest.Config
	}{
		{who: framework.DaemonUser(nodeA), config: daemonA},
		{who: podToken.Impersonate.UserName, config: podToken},
	} {
		agent := bosunClient(t, tc.config)
		if err := e.writeNodeImageStatus(agent, nodeA); err != nil {
			t.Errorf("%s writing the status of its NodeImage %s: %v", tc.who, nodeA, err)
		}
		framework.ExpectRefused(t, tc.who+" writing the status of NodeImage "+nodeB, e.writeNodeImageStatus(agent, nodeB), http.StatusForbidden,
			`admission webhook "`+noderestriction.NodeImageName+`" denied the request`,
			fmt.Sprintf(`node agent %q of node %q may not write NodeImage %q, which belongs to node %q`, tc.who, nodeA, nodeB, nodeB))
		if err := e.patchRequestStatus(agent, requestOn[nodeA]); err != nil {
			t.Errorf("%s writing the status of request %s of a pod on its node: %v", tc.who, requestOn[nodeA], err)
		}
		framework.ExpectRefused(t, tc.who+" writing the status of request "+requestOn[nodeB], e.patchRequestStatus(agent, requestOn[nodeB]), http.StatusForbidden,
			`admission webhook "`+noderestriction.ContainerRecreateRequestName+`" denied the request`,
			fmt.Sprintf(`node agent %q of node %q may not write ContainerRecreateRequest %s/%s, whose pod is on node %q`, tc.who, nodeA, e.Namespace, requestOn[nodeB], nodeB))
	}

	unbound := bosunClient(t, unboundToken)
	framework.ExpectRefused(t, "a token bound to no pod writing a NodeImage's status", e.writeNodeImageStatus(unbound, nodeA), http.StatusForbidden,
		`node agent "system:serviceaccount:kube-system:bosun-daemon" has no node`)
	framework.ExpectRefused(t, "a token bound to no pod writing a request's status", e.patchRequestStatus(unbound, requestOn[nodeA]), http.StatusForbidden,
		`node agent "system:serviceaccount:kube-system:bosun-daemon" has no node`)

	// Anyone else is not judged: the admin writes node b's objects.
	if err := e.writeNodeImageStatus(e.Bosun, nodeB); err != nil {
		t.Errorf("the admin writing the status of NodeImage %s: %v", nodeB, err)
	}
	if err := e.patchRequestStatus(e.Bosun, requestOn[nodeB]); err != nil {
		t.Errorf("the admin writing the status of request %s: %v", requestOn[nodeB], err)
	}
	t.Logf("the writes took %v", time.Since(began).Round(time.Millisecond))
}

func bosunClient(t *testing.T, config *rest.Config) bosunclientset.Interface {
	t.Helper()
	client, err := bosunclientset.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// writeNodeImageStatus writes the status of the NodeImage name with client, as the agent
// does (a read, then an update of the status subresource). The NodeImage controller
// rewrites the status meanwhile (after each of these writes too), so a conflict reads again.
func (e *testEnv) writeNodeImageStatus(client bosunclientset.Interface, name string) error {
	nodeImages := framework.NewObjects(e.Env, "NodeImage", "", client.AppsV1beta1().NodeImages())
	_, err := nodeImages.TryUpdateStatus(name, func(ni *appsv1beta1.NodeImage) { ni.Status.Desired++ })
	return err
}

// patchRequestStatus writes the status of the request name with client, as the agent
// writes a phase: a read, then an update of the status subresource (a request the
// controller has not given a phase yet gets Pending, which the schema requires). The
// request's controller writes its status too, so a conflict reads again.
func (e *testEnv) patchRequestStatus(client bosunclientset.Interface, name string) error {
	requests := framework.NewObjects(e.Env, "ContainerRecreateRequest", e.Namespace, client.AppsV1beta1().ContainerRecreateRequests(e.Namespace))
	_, err := requests.TryUpdateStatus(name, func(request *appsv1beta1.ContainerRecreateRequest) {
		if request.Status.Phase == "" {
			request.Status.Phase = appsv1beta1.ContainerRecreateRequestPending
		}
		request.Status.Message = "written by the test"
	})
	return err
}
