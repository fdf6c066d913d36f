package containerrecreaterequest

import (
	"net/http"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// TestAdmission: a request for a running pod's container is completed by admission (its
// labels, strategy defaults, the pod's grace period, the container's preStop hook and
// status); requests for an unknown container, a pending pod, with too short a deadline or
// with a user-set statusContext are refused with 400 naming the field; the spec of an
// admitted request cannot be changed (403).
func TestAdmission(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	node := e.createNode(t, "a", nil)
	virtualNode := e.createNode(t, "vk", map[string]string{"type": "virtual-kubelet"})

	pod := newPod("web", node, "app", "sidecar")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
	preStop := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 1"}}}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: preStop}
	pod.Spec.Containers[1].Ports = []corev1.ContainerPort{{Name: "admin", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}}
	pod.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("admin"), Scheme: corev1.URISchemeHTTP},
	}}
	running, ids := e.createRunningPod(t, pod)

	admitted := e.requests().Create(t, newCRR("restart-app", "web", "app", "sidecar"))
	wantLabels := map[string]string{podUIDLabel: string(running.UID), nodeNameLabel: node, activeLabel: "true"}
	for key, want := range wantLabels {
		if got := admitted.Labels[key]; got != want {
			t.Errorf("label %s = %q, want %q", key, got, want)
		}
	}
	if _, ok := admitted.Labels["type"]; ok {
		t.Errorf("a request for a pod on an ordinary node has label type=%s", admitted.Labels["type"])
	}
	gotStrategy := admitted.Spec.Strategy
	if gotStrategy == nil || gotStrategy.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyFail {
		t.Errorf("strategy = %+v, want failurePolicy Fail", gotStrategy)
	} else if g := gotStrategy.TerminationGracePeriodSeconds; g == nil || *g != 45 {
		t.Errorf("strategy.terminationGracePeriodSeconds = %v, want the pod's 45", g)
	}
	if len(admitted.Spec.Containers) != 2 {
		t.Fatalf("containers = %+v, want app and sidecar", admitted.Spec.Containers)
	}
	app, sidecar := admitted.Spec.Containers[0], admitted.Spec.Containers[1]
	for _, c := range []struct {
		container appsv1alpha1.ContainerRecreateRequestContainer
		id        string
	}{{app, ids["app"]}, {sidecar, ids["sidecar"]}} {
		want := appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: containerIDOf(c.id), RestartCount: 0}
		if c.container.StatusContext == nil || *c.container.StatusContext != want {
			t.Errorf("container %s: statusContext = %+v, want %+v", c.container.Name, c.container.StatusContext, want)
		}
	}
	if app.PreStop == nil || !apiequality.Semantic.DeepEqual(app.PreStop.Exec, preStop.Exec) || len(app.Ports) != 0 {
		t.Errorf("container app: preStop %+v, ports %+v; want the pod's exec hook and no ports", app.PreStop, app.Ports)
	}
	if sidecar.PreStop == nil || sidecar.PreStop.HTTPGet == nil || len(sidecar.Ports) != 1 || sidecar.Ports[0].Name != "admin" {
		t.Errorf("container sidecar: preStop %+v, ports %+v; want the pod's httpGet hook and its ports", sidecar.PreStop, sidecar.Ports)
	}

	// A pod on a virtual-kubelet node: the request says so.
	e.createRunningPod(t, newPod("virtual", virtualNode, "app"))
	if vk := e.requests().Create(t, newCRR("restart-virtual", "virtual", "app")); vk.Labels["type"] != "virtual-kubelet" {
		t.Errorf("a request for a pod on a virtual-kubelet node has labels %v, want type=virtual-kubelet", vk.Labels)
	}

	// Refused.
	e.Pods().Create(t, newPod("pending", "", "app"))
	withStatusContext := newCRR("user-status-context", "web", "app")
	withStatusContext.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://abc"}
	for _, c := range []struct {
		what  string
		crr   *crr
		field string
	}{
		{"a request for an unknown container", newCRR("unknown", "web", "nope"), "spec.containers[0].name"},
		{"a request for a pending pod", newCRR("pending", "pending", "app"), "spec.podName"},
		{"a request for a missing pod", newCRR("missing", "missing", "app"), "spec.podName"},
		{"a request with activeDeadlineSeconds 2", withCRR(newCRR("short-deadline", "web", "app"), activeDeadline(2)), "spec.activeDeadlineSeconds"},
		{"a request with a user-set statusContext", withStatusContext, "spec.containers[0].statusContext"},
		{"a request naming a container twice", newCRR("twice", "web", "app", "app"), "spec.containers[1].name"},
		{"a request with failurePolicy Sometimes", withCRR(newCRR("bad-policy", "web", "app"),
			strategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.FailurePolicy = "Sometimes" })), "spec.strategy.failurePolicy"},
	} {
		_, err := e.requests().TryCreate(c.crr)
		framework.ExpectRefused(t, c.what, err, http.StatusBadRequest, c.field)
	}

	// The spec is fixed once admitted; the rest of the object is not.
	_, err := e.requests().TryUpdate("restart-app", func(r *crr) { r.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) })
	framework.ExpectRefused(t, "changing the spec of an admitted request", err, http.StatusForbidden, "spec is immutable")
	_, err = e.requests().TryUpdate("restart-app", func(r *crr) { r.Labels[nodeNameLabel] = "elsewhere" })
	framework.ExpectRefused(t, "changing the node-name label", err, http.StatusForbidden, nodeNameLabel)
	if _, err := e.requests().TryUpdate("restart-app", func(r *crr) { r.Labels["team"] = "web" }); err != nil {
		t.Errorf("adding a label of one's own: %v", err)
	}
}

// TestAdmissionRefusedWithoutKruiseDaemon: with feature gate KruiseDaemon off, nothing
// would recreate the containers, and new requests are refused with 403.
func TestAdmissionRefusedWithoutKruiseDaemon(t *testing.T) {
	e := setup(t)
	e.startManager(t, daemonGate+"=false")
	node := e.createNode(t, "a", nil)
	e.createRunningPod(t, newPod("web", node, "app"))
	_, err := e.requests().TryCreate(newCRR("restart-app", "web", "app"))
	framework.ExpectRefused(t, "a request with KruiseDaemon off", err, http.StatusForbidden, daemonGate)
}
