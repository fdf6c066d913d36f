package informers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Handlers are a controller's reactions to one informer's events, in the shape every bosun
// controller uses: each takes the controller's context, for its logger, and only queues
// keys or records observations. A nil handler is not registered.
type Handlers struct {
	Add func(ctx context.Context, obj any)
	// AddDetailed replaces Add for a controller that treats the objects of the informer's
	// initial list apart from those created while it runs: isInInitialList is set for the
	// former. Set at most one of Add and AddDetailed.
	AddDetailed func(ctx context.Context, obj any, isInInitialList bool)
	Update      func(ctx context.Context, old, cur any)
	// Delete may receive a cache.DeletedFinalStateUnknown tombstone.
	Delete func(ctx context.Context, obj any)
}

// AddHandlers registers h on informer; kind names the informer's objects in the error.
func AddHandlers(ctx context.Context, informer cache.SharedIndexInformer, kind string, h Handlers) error {
	if err := h.check(kind); err != nil {
		return err
	}
	if _, err := informer.AddEventHandler(h.funcs(ctx)); err != nil {
		return fmt.Errorf("adding %s event handlers: %w", kind, err)
	}
	return nil
}

// AddRemovableHandlers registers h on informer like AddHandlers, but never delivers
// periodic resyncs to h, whatever the informer's default, and returns the registration so
// that the handlers can be removed again (informer.RemoveEventHandler) and their own sync
// state read (HasSynced). The garbage collector's monitors use it: they come and go with
// the resources discovery reports, on informers other controllers share, and a resync
// would only replay every object into the ownership graph.
func AddRemovableHandlers(ctx context.Context, informer cache.SharedIndexInformer, kind string, h Handlers) (cache.ResourceEventHandlerRegistration, error) {
	if err := h.check(kind); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	registration, err := informer.AddEventHandlerWithOptions(h.funcs(ctx), cache.HandlerOptions{Logger: &logger, ResyncPeriod: ptr.To(time.Duration(0))})
	if err != nil {
		return nil, fmt.Errorf("adding %s event handlers: %w", kind, err)
	}
	return registration, nil
}

// check refuses handlers that set both Add and AddDetailed: one of them would be dropped.
func (h Handlers) check(kind string) error {
	if h.Add != nil && h.AddDetailed != nil {
		return fmt.Errorf("adding %s event handlers: both Add and AddDetailed are set", kind)
	}
	return nil
}

// funcs binds h to ctx: cache.ResourceEventHandlerDetailedFuncs when h needs to know about
// the initial list, cache.ResourceEventHandlerFuncs otherwise.
func (h Handlers) funcs(ctx context.Context) cache.ResourceEventHandler {
	plain := h.plainFuncs(ctx)
	if h.AddDetailed == nil {
		return plain
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, isInInitialList bool) { h.AddDetailed(ctx, obj, isInInitialList) },
		UpdateFunc: plain.UpdateFunc,
		DeleteFunc: plain.DeleteFunc,
	}
}

// plainFuncs binds Add, Update and Delete to ctx.
func (h Handlers) plainFuncs(ctx context.Context) cache.ResourceEventHandlerFuncs {
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
	return funcs
}
