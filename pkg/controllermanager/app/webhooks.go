package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controllermanager/options"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/serving"
	"github.com/bosun-dev/bosun/pkg/webhook"
	"github.com/bosun-dev/bosun/pkg/webhook/certs"
	"github.com/bosun-dev/bosun/pkg/webhook/configuration"
)

// webhookConfigurationWorkers is enough for the writer's two keys.
const webhookConfigurationWorkers = 2

// webhookRegistrations returns the webhooks of the enabled controllers, in the order the
// controllers are listed.
func webhookRegistrations(reg *registry.Registry, enabled []string) []webhook.Registration {
	var regs []webhook.Registration
	for _, name := range enabled {
		if d, ok := reg.Get(name); ok && d.Webhooks != nil {
			regs = append(regs, d.Webhooks()...)
		}
	}
	return regs
}

// startWebhooks starts what every replica runs, leader or not (startup step 4): the
// certificate provider, the webhook server and the writer of bosun's webhook
// configurations, and adds their readiness checks to /readyz. It returns once they run;
// fail is called, once, if one of them stops working for good. Nothing starts with
// --webhook-port=0.
//
// The writer runs even when no enabled controller has webhooks, so that configurations
// left by an earlier run that had some are removed instead of sending the API server to a
// server that no longer answers.
func startWebhooks(ctx context.Context, o *options.WebhookOptions, client kubernetes.Interface, regs []webhook.Registration,
	readyz *serving.CheckSet, fail func(error)) error {
	logger := klog.FromContext(ctx)
	if !o.Enabled() {
		logger.Info("Admission webhooks disabled (--webhook-port=0); no webhook configuration is written")
		return nil
	}

	if len(regs) == 0 {
		// Only the writer runs, to remove configurations left by an earlier run; with
		// nothing to serve there is no certificate to keep.
		logger.Info("No enabled controller has admission webhooks; not serving any")
		writer, factories, err := newConfigurationWriter(ctx, o, client, nil, func() []byte { return nil })
		if err != nil {
			return err
		}
		startWriter(ctx, writer, factories)
		return nil
	}

	provider := newCertificateProvider(o, client)
	writer, factories, err := newConfigurationWriter(ctx, o, client, regs, provider.CABundle)
	if err != nil {
		return err
	}
	server := webhook.NewServer(webhook.ServerOptions{
		BindAddress:    o.BindAddress,
		Port:           o.Port,
		GetCertificate: provider.GetCertificate,
	})
	for _, r := range regs {
		if err := server.Register(r); err != nil {
			return fmt.Errorf("registering admission webhook %s: %w", r.Name, err)
		}
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
	go resyncOnCertificateChange(ctx, provider, writer)
	startWriter(ctx, writer, factories)
	return nil
}

// startWriter starts the writer's informers and the writer.
func startWriter(ctx context.Context, writer *configuration.Writer, factories []informers.SharedInformerFactory) {
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

// newConfigurationWriter builds the writer of the two webhook configurations on informers
// that each watch the one object they concern.
func newConfigurationWriter(ctx context.Context, o *options.WebhookOptions, client kubernetes.Interface,
	regs []webhook.Registration, caBundle func() []byte) (*configuration.Writer, []informers.SharedInformerFactory, error) {
	mutating := informers.NewSharedInformerFactoryWithOptions(client, 0, configuration.OnlyNamed(configuration.MutatingName))
	validating := informers.NewSharedInformerFactoryWithOptions(client, 0, configuration.OnlyNamed(configuration.ValidatingName))
	writer, err := configuration.NewWriter(ctx, client,
		mutating.Admissionregistration().V1().MutatingWebhookConfigurations(),
		validating.Admissionregistration().V1().ValidatingWebhookConfigurations(),
		regs, o.ClientConfig(), caBundle)
	if err != nil {
		return nil, nil, fmt.Errorf("setting up the webhook configuration writer: %w", err)
	}
	return writer, []informers.SharedInformerFactory{mutating, validating}, nil
}

// resyncOnCertificateChange has the writer compare the configurations again whenever the
// CA bundle may have changed, so that the API server trusts a rotated certificate before
// it is served.
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
