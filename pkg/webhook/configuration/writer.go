package configuration

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	admissionregistrationinformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	toolkitinformers "github.com/bosun-dev/bosun/pkg/controller/informers"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

const (
	// WriterName names the writer in logs.
	WriterName = "webhook-configuration-writer"

	// caBundleWait is how long a sync waits for the CA bundle before it looks again. The
	// certificate provider's Resync usually comes first; this covers a missed one.
	caBundleWait = 2 * time.Second
)

// Writer creates, updates and deletes bosun's two webhook configurations so that they stay
// what Desired says, and points the conversion webhook of bosun's CRDs at the same server.
// See the package comment for one sync's steps.
type Writer struct {
	caBundle     func() []byte
	targets      map[string]target
	cachesSynced []cache.InformerSynced
	queue        workqueue.TypedRateLimitingInterface[string]
	outcomes     syncOutcomes
	crdWrites    crdWrites
}

// NewWriter returns a writer of the configurations for regs, and of the conversion webhook
// of the CRDs crds has informers for (none: the writer leaves CRDs alone), reached through
// clientConfig and trusting what caBundle returns, which is nil until a CA is known. It
// fails if clientConfig or a registration is one the API server would reject, since every
// write would then fail.
//
// The informers may come from a factory restricted to one object (OnlyNamed,
// NewCRDInformers) or list every object; objects of other names are ignored. Since every
// replica runs a writer, their factories must run on every replica, not only on the
// leader. NewWriter adds its handlers to them, so it must be called before they start; ctx
// is the handlers' logging context.
func NewWriter(ctx context.Context, client kubernetes.Interface,
	mutatingInformer admissionregistrationinformers.MutatingWebhookConfigurationInformer,
	validatingInformer admissionregistrationinformers.ValidatingWebhookConfigurationInformer,
	crds CRDs, regs []webhook.Registration, clientConfig ClientConfig, caBundle func() []byte) (*Writer, error) {
	if err := validate(regs, clientConfig); err != nil {
		return nil, err
	}
	if err := crds.validate(); err != nil {
		return nil, fmt.Errorf("invalid webhook configuration: %w", err)
	}
	w := &Writer{
		caBundle: caBundle,
		targets: map[string]target{
			MutatingName:   newMutatingTarget(regs, clientConfig, mutatingInformer, client),
			ValidatingName: newValidatingTarget(regs, clientConfig, validatingInformer, client),
		},
		cachesSynced: []cache.InformerSynced{mutatingInformer.Informer().HasSynced, validatingInformer.Informer().HasSynced},
		queue:        queue.New[string](queue.NameWebhookConfiguration),
	}

	handlers := toolkitinformers.Handlers{Add: w.addConfiguration, Update: w.updateConfiguration, Delete: w.deleteConfiguration}
	if err := toolkitinformers.AddHandlers(ctx, mutatingInformer.Informer(), "MutatingWebhookConfiguration", handlers); err != nil {
		return nil, err
	}
	if err := toolkitinformers.AddHandlers(ctx, validatingInformer.Informer(), "ValidatingWebhookConfiguration", handlers); err != nil {
		return nil, err
	}

	crdHandlers := toolkitinformers.Handlers{Add: w.addCRD, Update: w.updateCRD, Delete: w.deleteCRD}
	for name, informer := range crds.Informers {
		w.targets[name] = newCRDTarget(name, clientConfig, informer, crds, &w.crdWrites)
		w.cachesSynced = append(w.cachesSynced, informer.Informer().HasSynced)
		if err := toolkitinformers.AddHandlers(ctx, informer.Informer(), "CustomResourceDefinition", crdHandlers); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func newMutatingTarget(regs []webhook.Registration, clientConfig ClientConfig,
	informer admissionregistrationinformers.MutatingWebhookConfigurationInformer, client kubernetes.Interface) target {
	return &configTarget[*admissionregistrationv1.MutatingWebhookConfiguration]{
		name:       MutatingName,
		registered: hasType(regs, webhook.Mutating),
		desired: func(caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
			m, _ := Desired(regs, clientConfig, caBundle)
			return m
		},
		cache:  informer.Lister(),
		client: client.AdmissionregistrationV1().MutatingWebhookConfigurations(),
		webhooks: func(c *admissionregistrationv1.MutatingWebhookConfiguration) any {
			hooks := c.DeepCopy().Webhooks
			for i := range hooks {
				setMutatingDefaults(&hooks[i])
			}
			return hooks
		},
		setWebhooks: func(dst, src *admissionregistrationv1.MutatingWebhookConfiguration) {
			dst.Webhooks = src.DeepCopy().Webhooks
		},
	}
}

func newValidatingTarget(regs []webhook.Registration, clientConfig ClientConfig,
	informer admissionregistrationinformers.ValidatingWebhookConfigurationInformer, client kubernetes.Interface) target {
	return &configTarget[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		name:       ValidatingName,
		registered: hasType(regs, webhook.Validating),
		desired: func(caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
			_, v := Desired(regs, clientConfig, caBundle)
			return v
		},
		cache:  informer.Lister(),
		client: client.AdmissionregistrationV1().ValidatingWebhookConfigurations(),
		webhooks: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) any {
			hooks := c.DeepCopy().Webhooks
			for i := range hooks {
				setValidatingDefaults(&hooks[i])
			}
			return hooks
		},
		setWebhooks: func(dst, src *admissionregistrationv1.ValidatingWebhookConfiguration) {
			dst.Webhooks = src.DeepCopy().Webhooks
		},
	}
}

// validate returns everything in regs and clientConfig that the API server would reject in
// the configurations, in one error.
func validate(regs []webhook.Registration, clientConfig ClientConfig) error {
	errs := []error{clientConfig.Validate()}
	seen := map[webhook.Type]map[string]bool{webhook.Mutating: {}, webhook.Validating: {}}
	for _, reg := range regs {
		errs = append(errs, reg.Validate())
		if err := clientConfig.validatePath(reg.Path); err != nil {
			errs = append(errs, fmt.Errorf("webhook %q: %w", reg.Name, err))
		}
		if names := seen[reg.Type]; names != nil {
			// The API server requires unique names within one configuration.
			if names[reg.Name] {
				errs = append(errs, fmt.Errorf("webhook %q: registered twice as %s", reg.Name, reg.Type))
			}
			names[reg.Name] = true
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid webhook configuration: %w", err)
	}
	return nil
}

func hasType(regs []webhook.Registration, t webhook.Type) bool {
	for _, reg := range regs {
		if reg.Type == t {
			return true
		}
	}
	return false
}

// OnlyNamed is an informer factory option that restricts its informers to the object
// named name. A factory built with it serves one of the writer's two informers; it keeps
// the writer's cache and watch to the one object it cares about.
func OnlyNamed(name string) informers.SharedInformerOption {
	return informers.WithTweakListOptions(onlyNamed(name))
}

func onlyNamed(name string) func(*metav1.ListOptions) {
	return func(options *metav1.ListOptions) {
		options.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
}

// Run waits for the caches to sync, then keeps the configurations and the CRDs' conversion
// webhooks up to date with workers workers until ctx ends. A few workers are enough for
// the few keys, which change rarely.
func (w *Writer) Run(ctx context.Context, workers int) {
	// A configuration that does not exist yet produces no informer event, so nothing else
	// would ever queue its key.
	w.Resync()
	queue.RunController(ctx, WriterName, w.queue, workers, w.cachesSynced, w.sync)
}

// Resync makes the writer compare both configurations with Desired, and the CRDs'
// conversion webhooks with the flags and the CA, again. The certificate provider calls it
// when the CA bundle changes; it only queues, so it never blocks.
func (w *Writer) Resync() {
	for key := range w.targets {
		w.queue.Add(key)
	}
}

func (w *Writer) addConfiguration(ctx context.Context, obj any) {
	w.enqueue(ctx, obj, "Webhook configuration added")
}

// updateConfiguration queues on every update, periodic resyncs included: comparing two
// small objects is cheap, and a resync then also repairs anything an earlier sync missed.
func (w *Writer) updateConfiguration(ctx context.Context, _, cur any) {
	w.enqueue(ctx, cur, "Webhook configuration updated")
}

// deleteConfiguration queues the deleted configuration's key, so that the sync puts it
// back. obj may be a deletion tombstone.
func (w *Writer) deleteConfiguration(ctx context.Context, obj any) {
	w.enqueue(ctx, obj, "Webhook configuration deleted")
}

func (w *Writer) addCRD(ctx context.Context, obj any) {
	w.enqueue(ctx, obj, "CustomResourceDefinition added")
}

// updateCRD queues on every update: the CRDs the writer watches change rarely (an apply,
// a status condition), and comparing their conversion webhook is cheap.
func (w *Writer) updateCRD(ctx context.Context, _, cur any) {
	w.enqueue(ctx, cur, "CustomResourceDefinition updated")
}

// deleteCRD queues the deleted CRD's key, so that readiness stops reporting what was
// wrong with it. obj may be a deletion tombstone.
func (w *Writer) deleteCRD(ctx context.Context, obj any) {
	w.enqueue(ctx, obj, "CustomResourceDefinition deleted")
}

// enqueue queues obj's key if it is one of the writer's. The key is the object's name
// whatever its kind: a validating configuration that happened to be named MutatingName
// would only cost one sync that finds nothing to do. CRD names, which hold a dot, never
// meet a configuration's.
func (w *Writer) enqueue(ctx context.Context, obj any, msg string) {
	key, err := queue.KeyFor(obj)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue object", "event", msg)
		return
	}
	if _, ours := w.targets[key]; !ours {
		return
	}
	klog.FromContext(ctx).V(4).Info(msg, "key", key)
	w.queue.Add(key)
}
