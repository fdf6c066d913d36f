package informers

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Handlers are a controller's reactions to one informer's events, in the shape every bosun
// controller uses: each takes the controller's context, for its logger, and only queues
// keys or records observations. A nil handler is not registered.
type Handlers struct {
	Add    func(ctx context.Context, obj any)
	Update func(ctx context.Context, old, cur any)
	// Delete may receive a cache.DeletedFinalStateUnknown tombstone.
	Delete func(ctx context.Context, obj any)
}

// AddHandlers registers h on informer; kind names the informer's objects in the error.
func AddHandlers(ctx context.Context, informer cache.SharedIndexInformer, kind string, h Handlers) error {
	var funcs cache.ResourceEventHandlerFuncs
	if h.Add != nil {
		funcs.AddFunc = func(obj any) { h.Add(ctx, obj) }
	}
	if h.Update != nil {
		funcs.UpdateFunc = func(old, cur any) { h.Update(ctx, old, cur) }
	}
	if h.Delete != nil {
		funcs.DeleteFunc = func(obj any) { h.Delete(ctx, obj) }
	}
	if _, err := informer.AddEventHandler(funcs); err != nil {
		return fmt.Errorf("adding %s event handlers: %w", kind, err)
	}
	return nil
}
