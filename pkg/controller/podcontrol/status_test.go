package podcontrol

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

var _ kruisepod.PodStatusUpdater = StatusUpdater{}

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
