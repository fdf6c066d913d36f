package pod

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// twoContainerPod is pod p with containers main (env A=1) and side, each with the
// KRUISE_CONTAINER_PRIORITY value given ("" for none).
func twoContainerPod(mainPriority, sidePriority string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Image: "main:v1", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
			{Name: "side", Image: "side:v1"},
		}},
	}
	for i, p := range []string{mainPriority, sidePriority} {
		if p != "" {
			pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, corev1.EnvVar{Name: kruisepod.LaunchPriorityEnv, Value: p})
		}
	}
	return pod
}

// applyLaunchPriority runs the mutation on a copy of pod and returns the pod the API server
// would store, or nil when the mutation changes nothing. It fails the test when the pod the
// mutation passes on differs from what its patch makes of the request's object.
func applyLaunchPriority(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	mutated := pod.DeepCopy()
	additions, err := LaunchPriority().Mutate(ctx, createRequest(t, pod), mutated)
	if err != nil {
		t.Fatalf("mutating: %v", err)
	}
	if len(additions) == 0 {
		if !equality.Semantic.DeepEqual(mutated, pod) {
			t.Errorf("no patch, but the pod passed on changed: %+v", mutated)
		}
		return nil
	}
	resp, err := webhook.AdditionsResponse(additions)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("decoding patch %s: %v", resp.Patch, err)
	}
	original, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(original)
	if err != nil {
		t.Fatalf("applying patch %s: %v", resp.Patch, err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(patched, out); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(out, mutated) {
		t.Errorf("the patch makes %+v, but the pod passed on is %+v", out, mutated)
	}
	return out
}

// barrierOf returns "<configmap>/<key>" of container's barrier env, "" without one, and
// fails the test if it has more than one.
func barrierOf(t *testing.T, container corev1.Container) string {
	t.Helper()
	var found []string
	for _, env := range container.Env {
		if env.Name == kruisepod.LaunchBarrierEnv {
			ref := env.ValueFrom.ConfigMapKeyRef
			found = append(found, ref.Name+"/"+ref.Key)
		}
	}
	if len(found) > 1 {
		t.Errorf("container %s has %d barrier envs: %v", container.Name, len(found), found)
	}
	return strings.Join(found, ",")
}

func TestLaunchPriorityInjectsBarriers(t *testing.T) {
	pod := applyLaunchPriority(t, twoContainerPod("", "10"))
	if pod == nil {
		t.Fatal("no patch for a pod whose containers have different priorities")
	}
	if got := barrierOf(t, pod.Spec.Containers[0]); got != "p-barrier/p_0" {
		t.Errorf("main waits for %q, want p-barrier/p_0", got)
	}
	if got := barrierOf(t, pod.Spec.Containers[1]); got != "p-barrier/p_10" {
		t.Errorf("side waits for %q, want p-barrier/p_10", got)
	}
	// The container's own env stays, in order, before the barrier.
	if env := pod.Spec.Containers[0].Env; len(env) != 2 || env[0].Name != "A" || env[1].Name != kruisepod.LaunchBarrierEnv {
		t.Errorf("main's env = %+v, want A then the barrier", env)
	}
	if env := pod.Spec.Containers[1].Env; len(env) != 2 || env[0].Name != kruisepod.LaunchPriorityEnv {
		t.Errorf("side's env = %+v, want its priority then the barrier", env)
	}
	// What the in-place update batches read back.
	if p, ok := kruisepod.LaunchPriority(&pod.Spec.Containers[1]); !ok || p != 10 {
		t.Errorf("LaunchPriority(side) = %d, %v, want 10", p, ok)
	}
	if p, ok := kruisepod.LaunchPriority(&pod.Spec.Containers[0]); !ok || p != 0 {
		t.Errorf("LaunchPriority(main) = %d, %v, want 0", p, ok)
	}
}

func TestLaunchPriorityOrderedAnnotation(t *testing.T) {
	in := twoContainerPod("5", "")
	in.Spec.Containers = append(in.Spec.Containers, corev1.Container{Name: "third", Image: "third:v1"})
	in.Annotations = map[string]string{kruisepod.LaunchPriorityAnnotation: kruisepod.LaunchOrdered}
	pod := applyLaunchPriority(t, in)
	if pod == nil {
		t.Fatal("no patch for an Ordered pod")
	}
	// Spec order wins over the env.
	for i, want := range []string{"p-barrier/p_0", "p-barrier/p_-1", "p-barrier/p_-2"} {
		if got := barrierOf(t, pod.Spec.Containers[i]); got != want {
			t.Errorf("container %d waits for %q, want %q", i, got, want)
		}
	}
}

func TestLaunchPriorityLeavesOtherPodsAlone(t *testing.T) {
	single := twoContainerPod("", "10")
	single.Spec.Containers = single.Spec.Containers[1:]
	ordered := twoContainerPod("", "")
	ordered.Annotations = map[string]string{kruisepod.LaunchPriorityAnnotation: "Random"}
	for name, pod := range map[string]*corev1.Pod{
		"no priorities":          twoContainerPod("", ""),
		"all zero":               twoContainerPod("0", "0"),
		"all equal":              twoContainerPod("7", "7"),
		"one container":          single,
		"other annotation value": ordered,
	} {
		if got := applyLaunchPriority(t, pod); got != nil {
			t.Errorf("%s: patched to %+v, want no change", name, got.Spec.Containers)
		}
	}
}

func TestLaunchPriorityNamesGeneratedPods(t *testing.T) {
	in := twoContainerPod("1", "2")
	in.Name, in.GenerateName = "", "web-"
	pod := applyLaunchPriority(t, in)
	if pod == nil || !strings.HasPrefix(pod.Name, "web-") || len(pod.Name) != len("web-")+5 {
		t.Fatalf("pod named %q, want web- and five characters", pod.Name)
	}
	if got := barrierOf(t, pod.Spec.Containers[0]); got != pod.Name+"-barrier/p_1" {
		t.Errorf("main waits for %q, want the barrier of %s", got, pod.Name)
	}
}

// A pod spec copied from another pod carries that pod's barrier; it is replaced, not
// added to.
func TestLaunchPriorityReplacesCopiedBarrier(t *testing.T) {
	in := twoContainerPod("", "10")
	in.Spec.Containers[0].Env = append(in.Spec.Containers[0].Env, kruisepod.BarrierEnv("old", 0))
	pod := applyLaunchPriority(t, in)
	if got := barrierOf(t, pod.Spec.Containers[0]); got != "p-barrier/p_0" {
		t.Errorf("main waits for %q, want p-barrier/p_0", got)
	}
}

func TestLaunchPriorityRefusesNonIntegers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	_, err := LaunchPriority().Mutate(ctx, createRequest(t, twoContainerPod("high", "1")), twoContainerPod("high", "1"))
	if err == nil || !strings.Contains(err.Error(), "main") || !strings.Contains(err.Error(), kruisepod.LaunchPriorityEnv) {
		t.Errorf("error = %v, want one naming container main and %s", err, kruisepod.LaunchPriorityEnv)
	}
}

// Through the mutating pod webhook: a pod with priorities is patched along with the other
// mutations' changes; one whose priority is not an integer is refused.
func TestLaunchPriorityThroughTheWebhook(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var calls []string
	w := NewMutatingWebhook()
	w.Add(LaunchPriority(), annotating("team", "a", &calls))

	req := createRequest(t, twoContainerPod("", "10"))
	pod := patched(t, req, w.Handle(ctx, req))
	if got := barrierOf(t, pod.Spec.Containers[1]); got != "p-barrier/p_10" || pod.Annotations["team"] != "a" {
		t.Errorf("side waits for %q, annotations %v; want the barrier and the other mutation's annotation", got, pod.Annotations)
	}

	req = createRequest(t, twoContainerPod("1", "high"))
	expectDenied(t, w.Handle(ctx, req), http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`container launch priority of the new pod: container side: KRUISE_CONTAINER_PRIORITY must be an integer, not "high"`)
}
