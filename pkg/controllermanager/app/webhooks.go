package app

import (
	"context"
	"fmt"
	"time"

	bosuninformers "github.com/bosun-dev/client-go/informers/externalversions"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	toolkitinformers "github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controllermanager/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/serving"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/certs"
	"github.com/bosun-dev/bosun/pkg/webhook/configuration"
	"github.com/bosun-dev/bosun/pkg/webhook/conversion"
	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
)

const (
	// webhookConfigurationWorkers is enough for the writer's few keys (two configurations,
	// the conversion webhook of three CRDs), which change rarely.
	webhookConfigurationWorkers = 2
	// conversionWriteWait bounds how long the admission webhooks' informers wait for the
	// writer to put the CRDs' conversion webhook in place.
	conversionWriteWait = 30 * time.Second
	// webhookClientName names the clients of the admission webhooks.
	webhookClientName = "webhooks"
)

// webhookRegistrations returns the webhooks of the enabled controllers, in the order the
// controllers are listed.
func webhookRegistrations(reg *registry.Registry, enabled []string, wc *registry.WebhookContext) ([]webhook.Registration, error) {
	var regs []webhook.Registration
	for _, name := range enabled {
		d, ok := reg.Get(name)
		if !ok || d.Webhooks == nil {
			continue
		}
		more, err := d.Webhooks(wc)
		if err != nil {
			return nil, fmt.Errorf("building the admission webhooks of %s: %w", name, err)
		}
		regs = append(regs, more...)
	}
	return regs, nil
}

// newWebhookContext returns the context the enabled controllers' webhooks are built from,
// with the process's typed informer factory (see newProcessInformers) and a bosun informer
// factory of its own, both living as long as the process. Every webhook belongs to an
// OpenKruise-compatible resource (the pod webhook spends PodUnavailableBudgets), so its
// clients have those controllers' limits.
func newWebhookContext(ctx context.Context, builder clientbuilder.Builder, typedInformers informers.SharedInformerFactory, limits clientbuilder.Limits,
	recorders registry.EventRecorderFactory, gates featuregate.FeatureGate, nodeAgents noderestriction.Identities) (*registry.WebhookContext, error) {
	builder = clientbuilder.WithLimitsPerResource(builder, limits)
	client, err := builder.Client(webhookClientName)
	if err != nil {
		return nil, err
	}
	bosunClient, err := clientbuilder.BosunClient(builder, webhookClientName)
	if err != nil {
		return nil, err
	}
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	go wait.Until(restMapper.Reset, restMapperResetPeriod, ctx.Done())
	return &registry.WebhookContext{
		ClientName:      webhookClientName,
		ClientBuilder:   builder,
		Client:          client,
		BosunClient:     bosunClient,
		InformerFactory: typedInformers,
		BosunInformerFactory: bosuninformers.NewSharedInformerFactoryWithOptions(bosunClient, 0,
			bosuninformers.WithTransform(toolkitinformers.StripManagedFields)),
		RESTMapper:    restMapper,
		EventRecorder: recorders,
		FeatureGate:   gates,
		NodeAgents:    nodeAgents,
	}, nil
}

// startWebhooks starts what every replica runs, leader or not (startup step 4): the
// certificate provider, the webhook server and the writer of bosun's webhook
// configurations and of the conversion webhook in bosun's CRDs (read and written through
// crdClient), and adds their readiness checks to /readyz. It returns once they run; fail
// is called, once, if one of them stops working for good. Nothing starts with
// --webhook-port=0.
//
// The server listens at once and serves the CRD conversion webhook (/convert) from then
// on, even when no enabled controller has admission webhooks: the API server needs it to
// read stored objects in another version, which must not wait for informers that may
// themselves be listing through it. The admission webhooks answer once their informers
// have synced.
//
// The writer runs even when no enabled controller has webhooks, so that configurations
// left by an earlier run that had some are removed instead of sending the API server to a
// server that no longer answers.
func startWebhooks(ctx context.Context, o *options.WebhookOptions, client kubernetes.Interface, crdClient dynamic.Interface,
	wc *registry.WebhookContext, regs []webhook.Registration, readyz *serving.CheckSet, fail func(error)) error {
	logger := klog.FromContext(ctx)
	if !o.Enabled() {
		logger.Info("Admission webhooks disabled (--webhook-port=0); no webhook configuration is written")
		return nil
	}
	if len(regs) == 0 {
		logger.Info("No enabled controller has admission webhooks; serving only the conversion webhook")
	}

	provider := newCertificateProvider(o, client)
	writer, factories, err := newConfigurationWriter(ctx, o, client, crdClient, wc.EventRecorder(configuration.WriterName),
		regs, provider.CABundle)
	if err != nil {
		return err
	}
	admissionReady := make(chan struct{})
	server := webhook.NewServer(webhook.ServerOptions{
		BindAddress:    o.BindAddress,
		Port:           o.Port,
		GetCertificate: provider.GetCertificate,
		AdmissionReady: admissionReady,
	})
	for _, r := range regs {
		if err := server.Register(r); err != nil {
			return fmt.Errorf("registering admission webhook %s: %w", r.Name, err)
		}
	}
	converter, err := conversion.NewHandler()
	if err != nil {
		return err
	}
	if err := server.Handle(conversion.Path, converter); err != nil {
		return fmt.Errorf("serving the conversion webhook: %w", err)
	}
	if err := readyz.Add(server.ReadyCheck(), provider, writer.ReadyCheck()); err != nil {
		return err
	}

	go func() {
		if err := provider.Run(ctx); err != nil {
			fail(fmt.Errorf("keeping the webhook certificate: %w", err))
		}
	}()
	go func() {
		if err := server.Run(ctx); err != nil {
			fail(err)
		}
	}()
	go func() {
		// The writer's first update of a CRD (the CA bundle, or an address the flags
		// correct) ends every watch of its objects; caches started after it begin from
		// a stable listing. Bounded: a writer that cannot finish (no CA yet, the API
		// server refusing) must not keep the admission webhooks down for good.
		waitCtx, cancel := context.WithTimeout(ctx, conversionWriteWait)
		if !writer.WaitForConversionWritten(waitCtx) && ctx.Err() == nil {
			logger.Info("Starting the admission webhooks' informers before the CRDs' conversion webhook was written", "waited", conversionWriteWait)
		}
		cancel()
		if waitForWebhookInformers(ctx, wc) {
			close(admissionReady)
		}
	}()
	go resyncOnCertificateChange(ctx, provider, writer)
	startWriter(ctx, writer, factories)
	return nil
}

// waitForWebhookInformers starts the webhooks' informers and waits until they have synced,
// or ctx ends (false).
func waitForWebhookInformers(ctx context.Context, wc *registry.WebhookContext) bool {
	wc.InformerFactory.Start(ctx.Done())
	wc.BosunInformerFactory.Start(ctx.Done())
	logger := klog.FromContext(ctx)
	for informerType, synced := range wc.InformerFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			logger.Info("Admission webhooks stopped before their informers synced", "type", informerType)
			return false
		}
	}
	for informerType, synced := range wc.BosunInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			logger.Info("Admission webhooks stopped before their informers synced", "type", informerType)
			return false
		}
	}
	return true
}

// informerFactory is what startWriter needs of the typed and the dynamic informer
// factories.
type informerFactory interface {
	Start(stopCh <-chan struct{})
}

// startWriter starts the writer's informers and the writer.
func startWriter(ctx context.Context, writer *configuration.Writer, factories []informerFactory) {
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	go writer.Run(ctx, webhookConfigurationWorkers)
}

// newCertificateProvider returns the provider --webhook-cert-dir or --webhook-secret asks
// for.
func newCertificateProvider(o *options.WebhookOptions, client kubernetes.Interface) certs.Provider {
	if o.CertDir != "" {
		return certs.NewFileProvider(o.CertDir)
	}
	namespace, name := o.SecretName()
	return certs.NewSecretProvider(client, namespace, name, o.CertificateHosts())
}

// newConfigurationWriter builds the writer of the two webhook configurations and of the
// conversion webhook of the CRDs that convert through it, on informers that each watch the
// one object they concern. recorder records its events on the CRDs.
func newConfigurationWriter(ctx context.Context, o *options.WebhookOptions, client kubernetes.Interface, crdClient dynamic.Interface,
	recorder record.EventRecorder, regs []webhook.Registration, caBundle func() []byte) (*configuration.Writer, []informerFactory, error) {
	mutating := informers.NewSharedInformerFactoryWithOptions(client, 0, configuration.OnlyNamed(configuration.MutatingName))
	validating := informers.NewSharedInformerFactoryWithOptions(client, 0, configuration.OnlyNamed(configuration.ValidatingName))
	crdInformers, crdFactories := configuration.NewCRDInformers(crdClient, configuration.ConversionCRDNames())
	writer, err := configuration.NewWriter(ctx, client,
		mutating.Admissionregistration().V1().MutatingWebhookConfigurations(),
		validating.Admissionregistration().V1().ValidatingWebhookConfigurations(),
		configuration.CRDs{Client: crdClient, Informers: crdInformers, Recorder: recorder},
		regs, o.ClientConfig(), caBundle)
	if err != nil {
		return nil, nil, fmt.Errorf("setting up the webhook configuration writer: %w", err)
	}
	factories := []informerFactory{mutating, validating}
	for _, f := range crdFactories {
		factories = append(factories, f)
	}
	return writer, factories, nil
}

// resyncOnCertificateChange has the writer compare the configurations and the CRDs'
// conversion webhooks again whenever the CA bundle may have changed, so that the API
// server trusts a rotated certificate, for admission and conversion alike, before it is
// served.
func resyncOnCertificateChange(ctx context.Context, provider certs.Provider, writer *configuration.Writer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-provider.Changed():
			writer.Resync()
		}
	}
}

// serveWebhooks builds the webhooks of the enabled controllers and starts serving them with
// startWebhooks. Webhooks that read the cluster may look at discovery while they are built,
// so it first waits for the API server when any enabled controller has webhooks.
func serveWebhooks(ctx context.Context, o *options.Options, rootClient kubernetes.Interface, builder clientbuilder.Builder,
	typedInformers informers.SharedInformerFactory, reg *registry.Registry, enabled []string, recorders registry.EventRecorderFactory,
	readyz *serving.CheckSet, fail func(error)) error {
	if !o.Webhook.Enabled() {
		return startWebhooks(ctx, o.Webhook, rootClient, nil, nil, nil, readyz, fail)
	}
	wc, err := newWebhookContext(ctx, builder, typedInformers, o.KruiseClientLimits(), recorders, o.FeatureGate,
		noderestriction.Identities{ServiceAccounts: o.Webhook.DaemonServiceAccounts})
	if err != nil {
		return fmt.Errorf("building the admission webhooks' clients: %w", err)
	}
	// The CRDs are written with the identity that writes the webhook configurations.
	crdConfig, err := builder.Config(componentName)
	if err != nil {
		return err
	}
	crdClient, err := dynamic.NewForConfig(crdConfig)
	if err != nil {
		return fmt.Errorf("creating the client of the conversion webhook's CRDs: %w", err)
	}
	if hasWebhooks(reg, enabled) {
		if err := waitForAPIServer(ctx, rootClient, apiServerHealthTimeout); err != nil {
			return fmt.Errorf("building the admission webhooks: %w", err)
		}
	}
	regs, err := webhookRegistrations(reg, enabled, wc)
	if err != nil {
		return err
	}
	return startWebhooks(ctx, o.Webhook, rootClient, crdClient, wc, regs, readyz, fail)
}

// hasWebhooks reports whether any enabled controller has admission webhooks.
func hasWebhooks(reg *registry.Registry, enabled []string) bool {
	for _, name := range enabled {
		if d, ok := reg.Get(name); ok && d.Webhooks != nil {
			return true
		}
	}
	return false
}
