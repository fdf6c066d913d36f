package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// RunPodInformer runs an informer on the test namespace's pods with handler until the test
// ends, and returns it once the handler has been given the initial list. Like the
// informers of a controller, it lists and watches again on its own when the API server
// goes away and comes back.
func (e *Env) RunPodInformer(t testing.TB, handler cache.ResourceEventHandler) cache.SharedIndexInformer {
	t.Helper()
	client := e.Client.CoreV1().Pods(e.Namespace)
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) { return client.List(e.Ctx, opts) },
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(e.Ctx, opts)
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	RunInformer(t, informer, handler)
	return informer
}

// RunInformer runs informer with handler until the test ends, and returns once the handler
// has been given the initial list.
func RunInformer(t testing.TB, informer cache.SharedIndexInformer, handler cache.ResourceEventHandler) {
	t.Helper()
	registration, err := informer.AddEventHandler(handler)
	if err != nil {
		t.Fatalf("adding an event handler: %v", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.Run(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	if !cache.WaitForCacheSync(stop, informer.HasSynced, registration.HasSynced) {
		t.Fatal("the informer did not sync")
	}
}
