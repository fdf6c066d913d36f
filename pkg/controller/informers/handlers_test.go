package informers

import (
	"context"
	"slices"
	"testing"

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
