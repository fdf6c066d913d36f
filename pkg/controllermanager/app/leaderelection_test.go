package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

func TestReleaseLease(t *testing.T) {
	tests := []struct {
		name        string
		holder      string
		wantHolder  string
		wantRelease bool
	}{
		{name: "held by this process", holder: "me_1", wantHolder: "", wantRelease: true},
		{name: "held by another process", holder: "other_2", wantHolder: "other_2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(&coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bosun-controller-manager"},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptr.To(tc.holder),
					LeaseDurationSeconds: ptr.To[int32](15),
					LeaseTransitions:     ptr.To[int32](3),
					RenewTime:            &metav1.MicroTime{Time: time.Now()},
				},
			})
			lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "bosun-controller-manager",
				client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "me_1"})
			if err != nil {
				t.Fatal(err)
			}
			if err := releaseLease(context.Background(), lock); err != nil {
				t.Fatal(err)
			}
			lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "bosun-controller-manager", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ptr.Deref(lease.Spec.HolderIdentity, ""); got != tc.wantHolder {
				t.Errorf("holder %q, want %q", got, tc.wantHolder)
			}
			if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != 3 {
				t.Errorf("transitions %d, want 3 kept", got)
			}
			if released := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) == 1; released != tc.wantRelease {
				t.Errorf("lease duration %v; released = %v, want %v", lease.Spec.LeaseDurationSeconds, released, tc.wantRelease)
			}
		})
	}
}

func TestLeaderIdentity(t *testing.T) {
	a, err := leaderIdentity()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := leaderIdentity()
	if a == b {
		t.Error("two identities are equal; each process needs its own")
	}
	hostname, _, ok := strings.Cut(a, "_")
	if !ok || hostname == "" {
		t.Errorf("identity %q is not <hostname>_<uuid>", a)
	}
}

func TestWaitForAPIServer(t *testing.T) {
	var calls atomic.Int32
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		if calls.Add(1) < 3 {
			http.Error(w, "etcd not ready", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer apiServer.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: apiServer.URL})
	if err := waitForAPIServer(context.Background(), client, time.Minute); err != nil {
		t.Fatalf("healthy after two failures: %v", err)
	}

	unhealthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer unhealthy.Close()
	err := waitForAPIServer(context.Background(), kubernetes.NewForConfigOrDie(&rest.Config{Host: unhealthy.URL}), 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "/healthz") {
		t.Errorf("never healthy: %v, want an error about /healthz", err)
	}
}
