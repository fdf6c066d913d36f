package framework_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A restarted kube-apiserver, killed or terminated, serves on the same host what was stored
// before; clients made before it work on, an informer's watch comes back by itself, and the
// audit log goes on in the same file, for a tail made before the restart as for a full read.
func TestRestartAPIServer(t *testing.T) {
	cp := framework.StartTestControlPlane(t, framework.Options{AuditPolicy: framework.MetadataAuditPolicy})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := cp.Clientset(t)
	ns := framework.CreateTestNamespace(t, client).Name
	tail := framework.NewAuditTail(t, cp)
	configMaps := client.CoreV1().ConfigMaps(ns)
	create := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ConfigMap %s: %v", name, err)
		}
		return cm
	}
	before := create("before")

	var mu sync.Mutex
	var seen []string
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc:  func(opts metav1.ListOptions) (runtime.Object, error) { return configMaps.List(ctx, opts) },
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) { return configMaps.Watch(ctx, opts) },
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, obj.(*corev1.ConfigMap).Name)
	}}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go informer.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}

	host := cp.Host()
	for _, how := range []framework.APIServerStop{framework.KillAPIServer, framework.TerminateAPIServer} {
		oldPid := cp.Processes()[1].Pid()
		if err := cp.RestartAPIServer(ctx, how); err != nil {
			t.Fatalf("%v: %v", how, err)
		}
		if cp.Host() != host {
			t.Errorf("after a %v restart the API server is at %s, want %s as before", how, cp.Host(), host)
		}
		if pid := cp.Processes()[1].Pid(); pid == oldPid {
			t.Errorf("after a %v restart kube-apiserver still has pid %d", how, pid)
		}
		got, err := configMaps.Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil || got.UID != before.UID {
			t.Fatalf("after a %v restart, reading ConfigMap %s stored before: %v, %v (want UID %s)", how, before.Name, got, err, before.UID)
		}
		after := create("after-" + strings.ToLower(how.String()))
		err = framework.WaitFor(ctx, time.Minute, "the informer to see ConfigMap "+after.Name, func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(seen, after.Name), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	created := func(events []auditv1.Event) []string {
		var names []string
		for _, ev := range events {
			if ev.Verb == "create" && ev.Stage == auditv1.StageResponseComplete && ev.ObjectRef != nil &&
				ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == ns {
				names = append(names, ev.ObjectRef.Name)
			}
		}
		return names
	}
	want := []string{"before", "after-sigkill", "after-sigterm"}
	events, err := tail.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got := created(events); !slices.Equal(got, want) {
		t.Errorf("the audit tail shows creates of %v, want %v", got, want)
	}
	all, err := cp.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	if got := created(all); !slices.Equal(got, want) {
		t.Errorf("the audit log shows creates of %v, want %v", got, want)
	}
}

// The shared control plane is not restarted: other tests use it.
func TestRestartAPIServerRefusesTheSharedControlPlane(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	pid := cp.Processes()[1].Pid()
	if err := cp.RestartAPIServer(context.Background(), framework.KillAPIServer); err == nil {
		t.Error("RestartAPIServer restarted the shared control plane")
	}
	if p := cp.Processes()[1]; p.Pid() != pid || p.Exited() {
		t.Errorf("kube-apiserver of the shared control plane is now pid %d (exited: %v), want %d running", p.Pid(), p.Exited(), pid)
	}
}
