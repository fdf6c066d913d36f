package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// bosun-daemon on the node is ready and names the runtime it talks to: the same containerd,
// at the same version, that the kubelet reports in the node's status.
func TestDaemonIsReadyAndNamesTheRuntime(t *testing.T) {
	c := requireCluster(t)
	client := clientset(t)
	node, err := client.CoreV1().Nodes().Get(testContext(t), c.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet reports "<runtime>://<version>", for example containerd://1.6.20.
	runtime, version, ok := strings.Cut(node.Status.NodeInfo.ContainerRuntimeVersion, "://")
	if !ok {
		t.Fatalf("node %s reports runtime %q", node.Name, node.Status.NodeInfo.ContainerRuntimeVersion)
	}

	port := c.HealthPort("bosun-daemon")
	if port == 0 {
		t.Fatal("the cluster does not say where bosun-daemon serves /readyz")
	}
	code, body := framework.GetEndpoint(port, "/readyz?verbose", "")
	if code != http.StatusOK {
		t.Fatalf("bosun-daemon /readyz?verbose = %d:\n%s", code, body)
	}
	want := fmt.Sprintf("[+]cri ok: %s %s", runtime, version)
	for _, line := range []string{want, "[+]informer-sync ok", "readyz check passed"} {
		if !strings.Contains(body, line) {
			t.Errorf("bosun-daemon /readyz?verbose lacks %q:\n%s", line, body)
		}
	}
	if !strings.Contains(body, c.RuntimeEndpoint()) {
		t.Errorf("bosun-daemon /readyz?verbose does not name the endpoint %s:\n%s", c.RuntimeEndpoint(), body)
	}
}
