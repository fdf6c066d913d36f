package toolkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// eventSource is the component the tests' recorder reports, as the ReplicaSet
// controller's does.
const eventSource = "replicaset-controller"

// sentinelReason marks the event eventsOn records after the action under test.
const sentinelReason = "TestSentinel"

// startRecorder returns a recorder writing events to the API server through a real
// broadcaster, as bosun's controller manager sets it up.
func startRecorder(ctx context.Context, t *testing.T, client kubernetes.Interface) record.EventRecorder {
	t.Helper()
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventSource})
}

// event is what the tests compare of a recorded event.
type event struct {
	Type, Reason, Message string
}

// eventsOn returns the events recorded on owner so far. To tell "no event" from "not
// written yet" without sleeping, it first records a sentinel event through the same
// recorder and polls the API until it arrives: the broadcaster writes a recorder's
// events one after the other, in order, so every earlier event has been written by then.
func eventsOn(ctx context.Context, t *testing.T, client kubernetes.Interface, recorder record.EventRecorder, owner *appsv1.ReplicaSet) []event {
	t.Helper()
	sentinel := "sentinel " + string(uuid.NewUUID())
	recorder.Event(owner, corev1.EventTypeNormal, sentinelReason, sentinel)
	var got []event
	err := framework.WaitFor(ctx, 30*time.Second, "the sentinel event on "+owner.Name, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events(owner.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = nil
		seen := false
		for _, e := range list.Items {
			if e.InvolvedObject.UID != owner.UID {
				continue
			}
			if e.Source.Component != eventSource {
				t.Errorf("event %s/%s has source %q, want %q", e.Reason, e.Message, e.Source.Component, eventSource)
			}
			if e.Reason == sentinelReason {
				seen = seen || e.Message == sentinel
				continue
			}
			got = append(got, event{e.Type, e.Reason, e.Message})
		}
		return seen, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// newPodControlOwner creates a ReplicaSet to own the pods and events of one subtest and
// returns it with its controller reference.
func newPodControlOwner(ctx context.Context, t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, *metav1.OwnerReference) {
	t.Helper()
	owner, err := client.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the owner: %v", err)
	}
	return owner, metav1.NewControllerRef(owner, replicaSetGVK)
}

// TestPodControlCreatesPods checks the pod podcontrol builds from a template, as the API
// server stores it, and the SuccessfulCreate event on the owner.
func TestPodControlCreatesPods(t *testing.T) {
	ctx, _, client, ns := setup(t)
	recorder := startRecorder(ctx, t, client)

	longName := strings.Repeat("l", 253) // the longest name an owner can have
	cases := []struct {
		name         string
		ownerName    string
		generateName string // argument of CreatePodsWithGenerateName; "" calls CreatePods
		wantGenerate string
	}{{
		name:         "generateName from the owner",
		ownerName:    "web",
		wantGenerate: "web-",
	}, {
		name:         "explicit generateName",
		ownerName:    "api",
		generateName: "api-canary-",
		wantGenerate: "api-canary-",
	}, {
		// "<name>-" would be 254 characters, one too many.
		name:         "owner name of the maximum length",
		ownerName:    longName,
		wantGenerate: longName,
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReplicaSet(ns, tc.ownerName)
			// Not selectorLabels(ownerName): a label value has at most 63 characters.
			podLabels := map[string]string{"app": fmt.Sprintf("create-%d", i), "tier": "backend"}
			rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: podLabels}
			rs.Spec.Template.Labels = podLabels
			owner, ref := newPodControlOwner(ctx, t, client, rs)
			template := &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: map[string]string{"example.com/note": "from the template"},
					Finalizers:  []string{keepFinalizer},
					// Not part of what a pod inherits.
					Name: "template-name", Namespace: "elsewhere",
				},
				Spec: podSpec(),
			}
			var written []*corev1.Pod
			control := &podcontrol.Real{Client: client, Recorder: recorder, OnWrite: func(pod *corev1.Pod, ref *metav1.OwnerReference) {
				written = append(written, pod)
			}}

			var err error
			if tc.generateName == "" {
				err = control.CreatePods(ctx, ns, template, owner, ref)
			} else {
				err = control.CreatePodsWithGenerateName(ctx, ns, template, owner, ref, tc.generateName)
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}

			pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(rs.Spec.Selector)})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 1 {
				t.Fatalf("the server has %d pods for the owner, want 1", len(pods.Items))
			}
			pod := pods.Items[0]
			if pod.GenerateName != tc.wantGenerate {
				t.Errorf("generateName = %q, want %q", pod.GenerateName, tc.wantGenerate)
			}
			// The server cuts the prefix to 58 characters and adds 5 random ones.
			if wantPrefix := tc.wantGenerate[:min(len(tc.wantGenerate), 58)]; !strings.HasPrefix(pod.Name, wantPrefix) || len(pod.Name) != len(wantPrefix)+5 {
				t.Errorf("pod name %q is not %q plus a 5-character suffix", pod.Name, wantPrefix)
			}
			if diff := cmp.Diff([]metav1.OwnerReference{*ref}, pod.OwnerReferences); diff != "" {
				t.Errorf("ownerReferences (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(template.Labels, pod.Labels); diff != "" {
				t.Errorf("labels (-template +pod):\n%s", diff)
			}
			if diff := cmp.Diff(template.Annotations, pod.Annotations); diff != "" {
				t.Errorf("annotations (-template +pod):\n%s", diff)
			}
			if diff := cmp.Diff(template.Finalizers, pod.Finalizers); diff != "" {
				t.Errorf("finalizers (-template +pod):\n%s", diff)
			}
			if pod.Namespace != ns {
				t.Errorf("pod namespace %q, want %q", pod.Namespace, ns)
			}
			if got, want := pod.Spec.Containers[0].Image, template.Spec.Containers[0].Image; got != want {
				t.Errorf("container image %q, want the template's %q", got, want)
			}
			if len(written) != 1 || written[0].UID != pod.UID {
				t.Errorf("OnWrite saw %d pods, want the created pod %s once", len(written), pod.Name)
			}

			want := []event{{corev1.EventTypeNormal, podcontrol.SuccessfulCreatePodReason, "Created pod: " + pod.Name}}
			if diff := cmp.Diff(orNil(want), orNil(eventsOn(ctx, t, client, recorder, owner))); diff != "" {
				t.Errorf("events on the owner (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodControlCreateErrors checks that a create the API server refuses records
// FailedCreate, except in a terminating namespace, where the refusal is expected and an
// event per pod would only be noise.
func TestPodControlCreateErrors(t *testing.T) {
	ctx, _, client, ns := setup(t)
	recorder := startRecorder(ctx, t, client)
	terminating := terminatingNamespace(ctx, t, client)

	noImage := podSpec()
	noImage.Containers[0].Image = ""
	cases := []struct {
		name      string
		namespace string // where the pod is created; the owner and its events are in ns
		spec      corev1.PodSpec
		wantErr   func(error) bool
		// wantFailedCreate is whether a FailedCreate event must be recorded.
		wantFailedCreate bool
	}{{
		name:      "namespace terminating",
		namespace: terminating,
		spec:      podSpec(),
		wantErr: func(err error) bool {
			return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
		},
	}, {
		name:             "pod refused by validation",
		namespace:        ns,
		spec:             noImage,
		wantErr:          apierrors.IsInvalid,
		wantFailedCreate: true,
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owner, ref := newPodControlOwner(ctx, t, client, newReplicaSet(ns, "failing-"+string(rune('a'+i))))
			template := owner.Spec.Template.DeepCopy()
			template.Spec = tc.spec
			control := &podcontrol.Real{Client: client, Recorder: recorder}

			err := control.CreatePods(ctx, tc.namespace, template, owner, ref)
			if err == nil || !tc.wantErr(err) {
				t.Fatalf("create error = %v, which the test case does not expect", err)
			}
			var want []event
			if tc.wantFailedCreate {
				var status *apierrors.StatusError
				if !errors.As(err, &status) {
					t.Fatalf("create error %v carries no API status", err)
				}
				want = []event{{corev1.EventTypeWarning, podcontrol.FailedCreatePodReason, "Error creating: " + status.Error()}}
			}
			if diff := cmp.Diff(orNil(want), orNil(eventsOn(ctx, t, client, recorder, owner))); diff != "" {
				t.Errorf("events on the owner (-want +got):\n%s", diff)
			}
			pods, err := client.CoreV1().Pods(tc.namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 0 {
				t.Errorf("namespace %s has %d pods after a refused create", tc.namespace, len(pods.Items))
			}
		})
	}
}

// terminatingNamespace creates a namespace and deletes it. No namespace controller runs,
// so it stays Terminating for good.
func terminatingNamespace(ctx context.Context, t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "toolkit-terminating-",
		Labels:       map[string]string{framework.TestNamespaceLabel: "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The NamespaceLifecycle admission plugin reads namespaces from its own informer;
	// wait until it refuses new content, using a ConfigMap as a probe.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	err = framework.WaitFor(ctx, 30*time.Second, "namespace "+ns.Name+" to refuse new objects", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, probe, metav1.CreateOptions{})
		switch {
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return true, nil
		case err == nil:
			return false, client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, probe.Name, metav1.DeleteOptions{})
		default:
			return false, err
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// TestPodControlDeletePod checks DeletePod's result and events: success records
// SuccessfulDelete, and a pod that is already gone returns NotFound without an event.
func TestPodControlDeletePod(t *testing.T) {
	ctx, _, client, ns := setup(t)
	recorder := startRecorder(ctx, t, client)

	cases := []struct {
		name      string
		createPod bool
		wantErr   func(error) bool
		wantEvent bool
	}{{
		name:      "existing pod",
		createPod: true,
		wantErr:   func(err error) bool { return err == nil },
		wantEvent: true,
	}, {
		name:    "missing pod",
		wantErr: apierrors.IsNotFound,
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owner, ref := newPodControlOwner(ctx, t, client, newReplicaSet(ns, "deleting-"+string(rune('a'+i))))
			podName := owner.Name + "-pod"
			if tc.createPod {
				pod := newPod(ns, podName, owner.Spec.Template.Labels, []metav1.OwnerReference{*ref}, nil)
				if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			control := &podcontrol.Real{Client: client, Recorder: recorder}

			if err := control.DeletePod(ctx, ns, podName, owner); !tc.wantErr(err) {
				t.Errorf("delete error = %v, which the test case does not expect", err)
			}
			if _, err := client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete = %v, want NotFound", err)
			}
			var want []event
			if tc.wantEvent {
				want = []event{{corev1.EventTypeNormal, podcontrol.SuccessfulDeletePodReason, "Deleted pod: " + podName}}
			}
			if diff := cmp.Diff(orNil(want), orNil(eventsOn(ctx, t, client, recorder, owner))); diff != "" {
				t.Errorf("events on the owner (-want +got):\n%s", diff)
			}
		})
	}
}
