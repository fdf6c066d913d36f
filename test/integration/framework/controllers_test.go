package framework_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A garbage collector started through the framework (bosun's, as the other packages start
// it) removes a dependent once its owner is gone, and keeps doing so after a crash and
// restart, which exercises Restart.
func TestGarbageCollectorRemovesDependents(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	client := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, client)
	gc := framework.StartBosunControllerManager(t, cp, framework.ControllerManagerOptions{Controllers: "garbagecollector"})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round, restart := range []bool{false, true} {
		if restart {
			gc.Restart()
		}
		owner, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "owner-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dependent, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName:    "dependent-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := client.CoreV1().ConfigMaps(ns.Name).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = framework.WaitFor(ctx, time.Minute, "the garbage collector to delete "+dependent.Name, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ConfigMaps(ns.Name).Get(ctx, dependent.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// bosun-controller-manager started by the framework serves /healthz once it runs the
// controllers it was asked for.
func TestBosunControllerManagerStarts(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	// Every controller but the collector: the shared control plane has one already (a
	// cluster runs one garbage collector).
	cm := framework.StartBosunControllerManager(t, cp, framework.ControllerManagerOptions{Controllers: "*,-garbagecollector"})
	if code, body := framework.GetEndpoint(cm.Port, "/healthz", ""); code != 200 {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	// client-go's warning when its cache mutation detector is on: tests of the manager
	// fail on a write to a cached object.
	if log, err := cm.Log(); err != nil || !strings.Contains(log, "Mutation detector is enabled") {
		t.Errorf("the manager runs without the cache mutation detector (log read: %v):\n%s", err, cm.LogTail(20))
	}
}
