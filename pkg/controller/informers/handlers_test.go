package informers

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

type ctxKey struct{}

// capturingInformer keeps the handler registered on it; nothing else of the interface is
// used.
type capturingInformer struct {
	cache.SharedIndexInformer
	handler cache.ResourceEventHandler
}

func (i *capturingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handler = h
	return nil, nil
}

func TestAddHandlersPassesContextAndSkipsNil(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "mine")
	var got []string
	record := func(what string) func(context.Context) {
		return func(ctx context.Context) {
			if ctx.Value(ctxKey{}) != "mine" {
				t.Errorf("%s handler got another context", what)
			}
			got = append(got, what)
		}
	}
	informer := &capturingInformer{}
	err := AddHandlers(ctx, informer, "ConfigMap", Handlers{
		Add:    func(ctx context.Context, _ any) { record("add")(ctx) },
		Delete: func(ctx context.Context, _ any) { record("delete")(ctx) },
	})
	if err != nil {
		t.Fatal(err)
	}
	funcs, ok := informer.handler.(cache.ResourceEventHandlerFuncs)
	if !ok {
		t.Fatalf("registered %T, want cache.ResourceEventHandlerFuncs", informer.handler)
	}
	if funcs.UpdateFunc != nil {
		t.Error("a nil Update handler was registered")
	}
	funcs.OnAdd("obj", false)
	funcs.OnUpdate("old", "cur") // must be a no-op, not a nil call
	funcs.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/obj"})
	if !slices.Equal(got, []string{"add", "delete"}) {
		t.Errorf("handlers called: %v, want [add delete]", got)
	}
}

// AddDetailed hands the handler the informer's initial-list flag, and the other handlers
// are registered beside it as usual.
func TestAddHandlersDetailedAdd(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "mine")
	type added struct {
		obj     any
		initial bool
	}
	var adds []added
	var deletes []any
	informer := &capturingInformer{}
	err := AddHandlers(ctx, informer, "Pod", Handlers{
		AddDetailed: func(ctx context.Context, obj any, isInInitialList bool) {
			if ctx.Value(ctxKey{}) != "mine" {
				t.Error("the add handler got another context")
			}
			adds = append(adds, added{obj, isInInitialList})
		},
		Delete: func(_ context.Context, obj any) { deletes = append(deletes, obj) },
	})
	if err != nil {
		t.Fatal(err)
	}
	funcs, ok := informer.handler.(cache.ResourceEventHandlerDetailedFuncs)
	if !ok {
		t.Fatalf("registered %T, want cache.ResourceEventHandlerDetailedFuncs", informer.handler)
	}
	if funcs.UpdateFunc != nil {
		t.Error("a nil Update handler was registered")
	}
	funcs.OnAdd("listed", true)
	funcs.OnAdd("created", false)
	funcs.OnUpdate("old", "cur") // must be a no-op, not a nil call
	funcs.OnDelete("gone")
	if want := []added{{"listed", true}, {"created", false}}; !slices.Equal(adds, want) {
		t.Errorf("adds %v, want %v", adds, want)
	}
	if !slices.Equal(deletes, []any{"gone"}) {
		t.Errorf("deletes %v, want [gone]", deletes)
	}
}

func TestAddHandlersRefusesBothAdds(t *testing.T) {
	informer := &capturingInformer{}
	err := AddHandlers(context.Background(), informer, "Pod", Handlers{
		Add:         func(context.Context, any) {},
		AddDetailed: func(context.Context, any, bool) {},
	})
	if err == nil {
		t.Fatal("both Add and AddDetailed were accepted")
	}
	if informer.handler != nil {
		t.Error("handlers were registered despite the error")
	}
}

// capturingOptionsInformer keeps the options AddRemovableHandlers registers with.
type capturingOptionsInformer struct {
	cache.SharedIndexInformer
	options cache.HandlerOptions
}

func (i *capturingOptionsInformer) AddEventHandlerWithOptions(_ cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	i.options = options
	return nil, nil
}

func TestAddRemovableHandlersAsksForNoResync(t *testing.T) {
	informer := &capturingOptionsInformer{}
	if _, err := AddRemovableHandlers(context.Background(), informer, "ConfigMap", Handlers{}); err != nil {
		t.Fatal(err)
	}
	if informer.options.ResyncPeriod == nil || *informer.options.ResyncPeriod != 0 {
		t.Errorf("ResyncPeriod = %v, want a pointer to 0", informer.options.ResyncPeriod)
	}
	if informer.options.Logger == nil {
		t.Error("no logger passed on")
	}
}

// On a real informer that resyncs every 20ms, the removable handlers see the object once
// (the initial list) while handlers added the usual way see resyncs; once removed they see
// nothing more.
func TestAddRemovableHandlersOnAResyncingInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	factory := kubeinformers.NewSharedInformerFactory(fake.NewClientset(cm), 20*time.Millisecond)
	informer := factory.Core().V1().ConfigMaps().Informer()

	var resyncs, removableEvents atomic.Int32
	if err := AddHandlers(ctx, informer, "ConfigMap", Handlers{
		Update: func(context.Context, any, any) { resyncs.Add(1) },
	}); err != nil {
		t.Fatal(err)
	}
	count := func(context.Context, any) { removableEvents.Add(1) }
	registration, err := AddRemovableHandlers(ctx, informer, "ConfigMap", Handlers{
		Add: count, Update: func(ctx context.Context, _, cur any) { count(ctx, cur) }, Delete: count,
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), registration.HasSynced) {
		t.Fatal("registration never synced")
	}
	deadline := time.Now().Add(10 * time.Second)
	for resyncs.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the informer never resynced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := removableEvents.Load(); got != 1 {
		t.Errorf("removable handlers got %d events, want 1 (the initial add)", got)
	}
	if err := informer.RemoveEventHandler(registration); err != nil {
		t.Fatal(err)
	}
	if informer.IsStopped() {
		t.Fatal("removing handlers must not stop a shared informer")
	}
}
