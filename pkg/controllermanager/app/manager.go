package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	toolkitinformers "github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/podcache"
	"github.com/bosun-dev/bosun/pkg/controllermanager/config"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/serving"
)

const (
	// apiServerHealthTimeout bounds the wait for the API server's /healthz on becoming leader.
	apiServerHealthTimeout = 10 * time.Second
	// restMapperResetPeriod is how often the discovery-backed REST mapper forgets its cache,
	// so that newly installed CRDs become known.
	restMapperResetPeriod = 30 * time.Second
)

// Client names of the manager's own clients (each controller's is in its Descriptor).
const (
	sharedInformersClientName   = "shared-informers"
	metadataInformersClientName = "metadata-informers"
	discoveryClientName         = "controller-discovery"
)

// errShutdownTimeout is returned when controllers outlive --controller-shutdown-timeout.
var errShutdownTimeout = errors.New("controller shutdown timeout reached")

// controllerManager builds and runs the enabled controllers for one leadership term and stops
// them on shutdown.
type controllerManager struct {
	registry *registry.Registry
	enabled  []string
	// rootBuilder builds the manager's own clients (shared informers, discovery) with the
	// manager's credentials; clientBuilder builds the controllers' clients, which act as
	// their own ServiceAccounts with --use-service-account-credentials.
	rootBuilder   clientbuilder.Builder
	clientBuilder clientbuilder.Builder
	rootClient    kubernetes.Interface
	// typedInformers is the process's typed informer factory, which the webhooks share (see
	// newProcessInformers).
	typedInformers informers.SharedInformerFactory
	// kruiseClientLimits replace the base client limits for the controllers whose
	// Descriptor asks for KruiseClientLimits.
	kruiseClientLimits clientbuilder.Limits
	config             *config.Configuration
	featureGate        featuregate.FeatureGate
	eventRecorder      registry.EventRecorderFactory
	health             *healthChecks
	// debugMux receives /debug/controllers/<name>/ handlers.
	debugMux serving.Handle

	startInterval time.Duration

	mu       sync.Mutex
	stopping bool
	// terms counts running leadership terms (at most one); shutdown waits for it to drop to 0.
	terms   sync.WaitGroup
	running map[string]bool
}

// builtController is a controller that its constructor built.
type builtController struct {
	name       string
	controller registry.Controller
}

// newProcessInformers returns the typed informer factory of the whole process: the
// admission webhooks read their pods and nodes from it on every replica, and the leader's
// controllers share it, so that the leader caches each pod once. It outlives a leadership
// term, which is safe because a process leads at most once: it exits when it loses the
// Lease, and a term otherwise ends only with the process. Its pods are trimmed to what the
// manager reads (podcache.Trim).
func newProcessInformers(rootBuilder clientbuilder.Builder, minResync time.Duration) (informers.SharedInformerFactory, error) {
	client, err := rootBuilder.Client(sharedInformersClientName)
	if err != nil {
		return nil, err
	}
	return toolkitinformers.NewSharedInformerFactory(client, minResync, informers.WithTransform(podcache.Trim)), nil
}

// sharedFactories are the informer factories of one leadership term; the typed one is the
// process's (newProcessInformers).
type sharedFactories struct {
	typed    informers.SharedInformerFactory
	metadata metadatainformer.SharedInformerFactory
	bosun    bosuninformers.SharedInformerFactory
}

func (f *sharedFactories) start(ctx context.Context) {
	f.typed.Start(ctx.Done())
	f.metadata.Start(ctx.Done())
	f.bosun.Start(ctx.Done())
}

// shutdown waits for the informers' goroutines; ctx must already be cancelled.
func (f *sharedFactories) shutdown() {
	f.typed.Shutdown()
	f.metadata.Shutdown()
	f.bosun.Shutdown()
}

// lead runs one leadership term: it builds the shared informers and the enabled controllers,
// starts them and blocks until ctx is cancelled and every controller and informer stopped.
// An error means the term could not start.
func (m *controllerManager) lead(ctx context.Context) error {
	if !m.beginTerm() {
		// Leadership arrived after termination began: start nothing.
		return nil
	}
	defer m.terms.Done()
	controllerContext, factories, err := m.newControllerContext(ctx)
	if err != nil {
		return err
	}
	return m.runTerm(ctx, controllerContext, factories)
}

// beginTerm registers a leadership term unless shutdown has begun; the caller must call
// m.terms.Done when the term ends.
func (m *controllerManager) beginTerm() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping {
		return false
	}
	m.terms.Add(1)
	return true
}

// runTerm builds the controllers, starts the informers and runs the controllers until ctx is
// cancelled (startup steps 7 to 10).
func (m *controllerManager) runTerm(ctx context.Context, controllerContext leaderContext, factories *sharedFactories) error {
	built, waiting, err := m.buildControllers(ctx, controllerContext)
	if err != nil {
		return err
	}
	factories.start(ctx)
	close(controllerContext.informersStarted)
	klog.FromContext(ctx).Info("Started shared informers", "controllers", len(built), "waiting", len(waiting))

	var late sync.WaitGroup
	for _, w := range waiting {
		late.Go(func() { m.buildWhenServed(ctx, controllerContext, factories, w) })
	}
	m.runControllers(ctx, built)
	// The term lasts until ctx ends even if every controller returned early (or none was
	// built): the informers stop only then.
	<-ctx.Done()
	late.Wait()
	factories.shutdown()
	return nil
}

// leaderContext is a ControllerContext with the channel the manager closes.
type leaderContext struct {
	*registry.ControllerContext
	informersStarted chan struct{}
}

// newControllerContext creates the shared informer factories, waits for the API server and
// builds the REST mapper (startup steps 6).
func (m *controllerManager) newControllerContext(ctx context.Context) (leaderContext, *sharedFactories, error) {
	minResync := m.config.MinResyncPeriod

	metadataConfig, err := m.rootBuilder.Config(metadataInformersClientName)
	if err != nil {
		return leaderContext{}, nil, err
	}
	metadataClient, err := metadata.NewForConfig(metadataConfig)
	if err != nil {
		return leaderContext{}, nil, fmt.Errorf("creating metadata client: %w", err)
	}
	bosunClient, err := clientbuilder.BosunClient(m.rootBuilder, sharedInformersClientName)
	if err != nil {
		return leaderContext{}, nil, err
	}
	factories := &sharedFactories{
		typed:    m.typedInformers,
		metadata: toolkitinformers.NewMetadataInformerFactory(metadataClient, toolkitinformers.ResyncPeriod(minResync)),
		bosun: bosuninformers.NewSharedInformerFactoryWithOptions(bosunClient, toolkitinformers.ResyncPeriod(minResync),
			bosuninformers.WithTransform(toolkitinformers.StripManagedFields)),
	}
	// The metadata factory stays out of /readyz: the garbage collector watches arbitrary
	// resources through it, and a broken custom resource may never sync.
	m.health.informerSync.WatchTypedFactory(factories.typed)
	m.health.informerSync.WatchTypedFactory(factories.bosun)

	if err := waitForAPIServer(ctx, m.rootClient, apiServerHealthTimeout); err != nil {
		return leaderContext{}, nil, err
	}

	discoveryClient, err := m.rootBuilder.Client(discoveryClientName)
	if err != nil {
		return leaderContext{}, nil, err
	}
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient.Discovery()))
	go wait.Until(restMapper.Reset, restMapperResetPeriod, ctx.Done())

	informersStarted := make(chan struct{})
	return leaderContext{
		ControllerContext: &registry.ControllerContext{
			ClientBuilder:           m.clientBuilder,
			InformerFactory:         factories.typed,
			MetadataInformerFactory: factories.metadata,
			BosunInformerFactory:    factories.bosun,
			RESTMapper:              restMapper,
			EventRecorder:           m.eventRecorder,
			FeatureGate:             m.featureGate,
			InformersStarted:        informersStarted,
			ResyncPeriod:            func() time.Duration { return toolkitinformers.ResyncPeriod(minResync) },
			Config:                  m.config,
		},
		informersStarted: informersStarted,
	}, factories, nil
}

// waitForAPIServer polls the API server's /healthz until it answers ok or timeout passes.
func waitForAPIServer(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		status := 0
		result := client.Discovery().RESTClient().Get().AbsPath("/healthz").Do(ctx).StatusCode(&status)
		switch {
		case result.Error() != nil:
			lastErr = result.Error()
			return false, nil
		case status != http.StatusOK:
			lastErr = fmt.Errorf("status %d", status)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server's /healthz (last error: %v): %w", lastErr, err)
	}
	return nil
}

// buildControllers runs the constructors of the enabled controllers in name order (startup
// step 7), registering each built controller's health check and debug handler. Controllers
// whose resources are not yet served in their version come back as waiting.
func (m *controllerManager) buildControllers(ctx context.Context, controllerContext leaderContext) ([]builtController, []waitingController, error) {
	logger := klog.FromContext(ctx)
	var built []builtController
	var waiting []waitingController
	for _, name := range m.enabled {
		descriptor, ok := m.registry.Get(name)
		if !ok {
			return nil, nil, fmt.Errorf("controller %q is not registered", name)
		}
		controller, err := m.buildController(ctx, controllerContext, descriptor)
		if reason, notBuilt := registry.IsNotBuilt(err); notBuilt {
			logger.Info("Warning: skipping controller", "controller", name, "reason", reason)
			continue
		}
		if reason, notYet := registry.IsNotYetServed(err); notYet {
			logger.Info("Warning: controller waits for its resources", "controller", name, "reason", reason, "recheck", notYetServedRecheck)
			m.health.informerSync.SetWaiting(name, reason)
			waiting = append(waiting, waitingController{descriptor: descriptor})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		built = append(built, builtController{name: name, controller: controller})
	}
	return built, waiting, nil
}

// buildController runs one controller's constructor and registers its health check and
// debug handler.
func (m *controllerManager) buildController(ctx context.Context, controllerContext leaderContext, descriptor registry.Descriptor) (registry.Controller, error) {
	name := descriptor.Name
	cc := *controllerContext.ControllerContext
	cc.ClientName = descriptor.ClientName
	if descriptor.KruiseClientLimits {
		cc.ClientBuilder = clientbuilder.WithLimitsPerResource(cc.ClientBuilder, m.kruiseClientLimits)
	}
	controllerCtx := klog.NewContext(ctx, klog.LoggerWithName(klog.FromContext(ctx), name))

	klog.FromContext(ctx).V(1).Info("Building controller", "controller", name)
	controller, err := descriptor.Constructor(controllerCtx, &cc)
	if _, notBuilt := registry.IsNotBuilt(err); notBuilt {
		return nil, err
	}
	if _, notYet := registry.IsNotYetServed(err); notYet {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("building controller %s: %w", name, err)
	}
	if controller == nil {
		return nil, fmt.Errorf("building controller %s: the constructor returned no controller", name)
	}

	check := healthz.NamedCheck(name, func(*http.Request) error { return nil })
	if checkable, ok := controller.(registry.HealthCheckable); ok {
		check = healthz.NamedCheck(name, checkable.HealthCheck)
	}
	if err := m.health.Healthz.Add(check); err != nil {
		return nil, err
	}
	if debuggable, ok := controller.(registry.Debuggable); ok {
		prefix := "/debug/controllers/" + name
		m.debugMux.HandlePrefix(prefix+"/", http.StripPrefix(prefix, debuggable.DebuggingHandler()))
	}
	return controller, nil
}

// waitingController is an enabled controller whose constructor said NotYetServed.
type waitingController struct {
	descriptor registry.Descriptor
}

// notYetServedRecheck is how often the constructor of a waiting controller runs again.
var notYetServedRecheck = 30 * time.Second

// buildWhenServed calls a waiting controller's constructor every notYetServedRecheck
// until it builds the controller, which then runs on the term's informers (started again
// for the ones it added), or says it should not run at all. It returns when the
// controller returned or ctx ended.
func (m *controllerManager) buildWhenServed(ctx context.Context, controllerContext leaderContext, factories *sharedFactories, w waitingController) {
	logger := klog.FromContext(ctx)
	name := w.descriptor.Name
	defer m.health.informerSync.ClearWaiting(name)
	ticker := time.NewTicker(notYetServedRecheck)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		controller, err := m.buildController(ctx, controllerContext, w.descriptor)
		if reason, notYet := registry.IsNotYetServed(err); notYet {
			logger.V(2).Info("Controller still waits for its resources", "controller", name, "reason", reason)
			continue
		}
		if reason, notBuilt := registry.IsNotBuilt(err); notBuilt {
			logger.Info("Warning: skipping controller", "controller", name, "reason", reason)
			return
		}
		if err != nil {
			logger.Error(err, "Building a controller that waited for its resources; trying again", "controller", name)
			continue
		}
		factories.start(ctx)
		m.health.informerSync.ClearWaiting(name)
		m.runControllers(ctx, []builtController{{name: name, controller: controller}})
		return
	}
}

// runControllers runs every built controller concurrently, each after its start jitter, and
// returns when all of them have returned (startup step 9).
func (m *controllerManager) runControllers(ctx context.Context, built []builtController) {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	for _, c := range built {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m.startInterval > 0 {
				// Spread the initial LIST load of the controllers over time.
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait.Jitter(m.startInterval, 1.0)):
				}
			}
			m.setRunning(c.name, true)
			defer m.setRunning(c.name, false)
			logger.Info("Controller running", "controller", c.name)
			c.controller.Run(klog.NewContext(ctx, klog.LoggerWithName(logger, c.name)))
			logger.Info("Controller stopped", "controller", c.name)
		}()
	}
	wg.Wait()
}

func (m *controllerManager) setRunning(name string, running bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		m.running = map[string]bool{}
	}
	if running {
		m.running[name] = true
		controllerStarted(name)
	} else {
		delete(m.running, name)
		controllerStopped(name)
	}
}

func (m *controllerManager) runningNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.running))
	for name := range m.running {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// stopControllers waits until the leadership term (if any) has ended after its context was
// cancelled, logging the controllers still running every third of timeout. No term starts
// after it was called.
func (m *controllerManager) stopControllers(ctx context.Context, timeout time.Duration) error {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	m.stopping = true
	m.mu.Unlock()

	done := make(chan struct{})
	go func() {
		m.terms.Wait()
		close(done)
	}()
	ticker := time.NewTicker(timeout / 3)
	defer ticker.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case <-done:
			logger.Info("All controllers stopped")
			return nil
		case <-ticker.C:
			logger.Info("Still waiting for some controllers to terminate...", "controllers", m.runningNames())
		case <-deadline.C:
			logger.Error(nil, "controller shutdown timeout reached", "controllers", m.runningNames())
			return errShutdownTimeout
		}
	}
}
