package framework_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The pod readier stands in for kubelets: it marks the pods it accepts Running and Ready
// and leaves the others alone.
func TestPodReadierMarksAcceptedPods(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, client)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	readier := framework.StartPodReadier(ctx, client, ns.Name, 2, func(p *corev1.Pod) bool { return p.Labels["skip"] != "yes" })
	for i, skip := range []string{"no", "no", "yes", "no"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"skip": skip}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c:1"}}},
		}
		if _, err := client.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := framework.WaitFor(ctx, 30*time.Second, "3 pods to be marked ready", func(context.Context) (bool, error) {
		return readier.Marked() == 3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := readier.Stop(); err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		ready := len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodRunning
		if want := p.Labels["skip"] == "no"; ready != want {
			t.Errorf("pod %s: running and ready = %v, want %v (status %+v)", p.Name, ready, want, p.Status)
		}
	}

	// SetPodRunning backdates the Ready transition, for minReadySeconds tests.
	since := time.Now().Add(-time.Hour).Truncate(time.Second)
	pod, err := framework.SetPodRunning(ctx, client, ns.Name, "p2", true, since)
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Status.Conditions[0].LastTransitionTime.Time; !got.Equal(since) {
		t.Errorf("Ready lastTransitionTime = %v, want %v", got, since)
	}
}
