package podcontrol

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/bosun-dev/bosun/pkg/controller/podcache"
)

func TestStatusUpdaterWritesStatusAndReadsLive(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	client := fake.NewClientset(pod)
	updater := StatusUpdater{Client: client}
	ctx := context.Background()

	changed := pod.DeepCopy()
	changed.Status.Phase = corev1.PodRunning
	written, err := updater.UpdatePodStatus(ctx, changed)
	if err != nil || written.Status.Phase != corev1.PodRunning {
		t.Fatalf("UpdatePodStatus = %+v, %v", written, err)
	}
	live, err := updater.GetPod(ctx, "ns", "p")
	if err != nil || live.Status.Phase != corev1.PodRunning {
		t.Fatalf("GetPod = %+v, %v", live, err)
	}
	var verbs []string
	for _, action := range client.Actions() {
		verbs = append(verbs, action.GetVerb()+"/"+action.GetSubresource())
		if action.GetNamespace() != "ns" {
			t.Errorf("%s went to namespace %q", action.GetVerb(), action.GetNamespace())
		}
	}
	if len(verbs) != 2 || verbs[0] != "update/status" || verbs[1] != "get/" {
		t.Errorf("requests = %v, want a status update and a get", verbs)
	}
	if _, ok := client.Actions()[0].(clienttesting.UpdateAction); !ok {
		t.Errorf("first request is %T, want an update", client.Actions()[0])
	}
}

// Rewrite tries again on the live pod after a conflict, returns what the server stored,
// and, when the live pod needs no write, returns the live pod.
func TestStatusUpdaterRewrite(t *testing.T) {
	ctx := context.Background()
	cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1"}}
	tests := []struct {
		name string
		// liveLabel is the label value someone else wrote after the cache saw the pod.
		liveLabel  string
		wantLabel  string
		wantWrites int
	}{
		{"conflict, then written on the live pod", "other", "mine", 2},
		{"conflict, and the live pod needs nothing", "mine", "mine", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live := cached.DeepCopy()
			live.ResourceVersion = "2"
			live.Labels = map[string]string{"l": tc.liveLabel, "theirs": "kept"}
			client := fake.NewClientset(live)
			writes := 0
			client.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				writes++
				if action.(clienttesting.UpdateAction).GetObject().(*corev1.Pod).ResourceVersion != "2" {
					return true, nil, apierrors.NewConflict(podsResource, "p", errors.New("stale"))
				}
				return false, nil, nil
			})
			updater := StatusUpdater{Client: client}
			var given []*corev1.Pod
			got, err := updater.Rewrite(ctx, cached, func(pod *corev1.Pod) (*corev1.Pod, error) {
				given = append(given, pod)
				if pod.Labels["l"] == "mine" {
					return nil, nil
				}
				if pod.Labels == nil {
					pod.Labels = map[string]string{}
				}
				pod.Labels["l"] = "mine"
				return updater.UpdatePod(ctx, pod)
			})
			if err != nil {
				t.Fatalf("Rewrite: %v", err)
			}
			if got.Labels["l"] != tc.wantLabel || got.Labels["theirs"] != "kept" {
				t.Errorf("Rewrite returned labels %v, want l=%s and the live pod's theirs=kept", got.Labels, tc.wantLabel)
			}
			if writes != tc.wantWrites {
				t.Errorf("%d writes, want %d", writes, tc.wantWrites)
			}
			if len(given) != 2 || given[0] == cached {
				t.Errorf("write was given %d pods (first is the caller's: %v), want two copies", len(given), len(given) > 0 && given[0] == cached)
			}
			if cached.Labels != nil {
				t.Errorf("the caller's pod was changed: %v", cached.Labels)
			}
		})
	}
}

// Rewrite gives up at once on an error other than a conflict.
func TestStatusUpdaterRewriteStopsOnOtherErrors(t *testing.T) {
	client := fake.NewClientset()
	updater := StatusUpdater{Client: client}
	calls := 0
	_, err := updater.Rewrite(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}},
		func(pod *corev1.Pod) (*corev1.Pod, error) {
			calls++
			return updater.UpdatePod(context.Background(), pod)
		})
	if !apierrors.IsNotFound(err) || calls != 1 {
		t.Errorf("Rewrite = %v after %d calls, want NotFound after one", err, calls)
	}
}

// A trimmed cached pod is never sent whole: UpdatePod refuses it without a request, and
// Rewrite writes the live pod instead, keeping what the cache had dropped.
func TestStatusUpdaterWritesTheLivePodForATrimmedOne(t *testing.T) {
	ctx := context.Background()
	live := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "app:1", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
		}}},
	}
	client := fake.NewClientset(live)
	updater := StatusUpdater{Client: client}
	obj, err := podcache.Trim(live.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cached := obj.(*corev1.Pod)

	if _, err := updater.UpdatePod(ctx, cached); !errors.Is(err, podcache.ErrTrimmed) {
		t.Errorf("UpdatePod of a trimmed pod = %v, want ErrTrimmed", err)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("UpdatePod of a trimmed pod sent %d requests", n)
	}

	written, err := updater.Rewrite(ctx, cached, func(pod *corev1.Pod) (*corev1.Pod, error) {
		pod.Spec.Containers[0].Image = "app:2"
		return updater.UpdatePod(ctx, pod)
	})
	if err != nil {
		t.Fatalf("Rewrite: %v", err)
	}
	stored, _ := updater.GetPod(ctx, "ns", "p")
	if c := stored.Spec.Containers[0]; c.Image != "app:2" || c.ReadinessProbe == nil || c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("stored container = %+v, want the live one with the new image", c)
	}
	if written.Spec.Containers[0].Image != "app:2" {
		t.Errorf("Rewrite returned %+v, want the stored pod", written)
	}
	var verbs []string
	for _, action := range client.Actions() {
		verbs = append(verbs, action.GetVerb())
	}
	if want := []string{"get", "update", "get"}; !slices.Equal(verbs, want) {
		t.Errorf("requests = %v, want %v (the live read, the write, the test's read)", verbs, want)
	}
}
