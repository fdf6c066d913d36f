package configuration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/webhook/conversion"
)

// crdResource is the CustomResourceDefinition API. The writer reads and writes CRDs as
// unstructured objects through the dynamic client: their Go types live in a module of
// their own, far larger than the handful of fields the writer looks at.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

var crdKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// ConversionCRDNames returns the names of the CRDs whose objects the API server converts
// between versions through bosun's conversion webhook. The versions of the other kinds
// have identical schemas and need no webhook.
func ConversionCRDNames() []string {
	return []string{
		"daemonsets.apps.kruise.io",
		"containerrecreaterequests.apps.kruise.io",
		"podunavailablebudgets.policy.kruise.io",
		"clonesets.apps.kruise.io",
	}
}

// The reasons of the Warning events the writer records on CRDs.
const (
	// ReasonConversionNotManaged: a CRD that converts through a webhook is not labelled as
	// bosun's, so the writer leaves it alone and its conversions go elsewhere.
	ReasonConversionNotManaged = "ConversionNotManaged"
	// ReasonConversionClientConfigCorrected: the writer replaced the url or service of a
	// CRD's conversion webhook (or its review versions) with what the manager's flags say.
	ReasonConversionClientConfigCorrected = "ConversionClientConfigCorrected"
	// ReasonConversionStrategyNotWebhook: a CRD labelled as bosun's converts with a strategy
	// other than Webhook, unlike bosun's manifests; the writer does not change the strategy.
	ReasonConversionStrategyNotWebhook = "ConversionStrategyNotWebhook"
)

const (
	conversionStrategyWebhook = "Webhook"
	// conversionStrategyNone is what the API server assumes when a CRD names no strategy.
	conversionStrategyNone = "None"
)

// conversionReviewVersions are the ConversionReview versions /convert speaks; a new slice
// each time. The API server sends the first version of a CRD's list that it knows, so the
// list must be exactly this.
func conversionReviewVersions() []string { return []string{"v1"} }

// CRDs is what the writer needs to keep the conversion webhook of CRDs pointing at bosun:
// one informer per CRD name (NewCRDInformers), a client that reads and updates
// customresourcedefinitions, and a recorder for the Warning events on them.
type CRDs struct {
	Client    dynamic.Interface
	Informers map[string]informers.GenericInformer
	Recorder  record.EventRecorder
}

func (c CRDs) validate() error {
	if len(c.Informers) == 0 {
		return nil
	}
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("CRD conversion: no client"))
	}
	if c.Recorder == nil {
		errs = append(errs, errors.New("CRD conversion: no event recorder"))
	}
	for name := range c.Informers {
		if name == MutatingName || name == ValidatingName {
			errs = append(errs, fmt.Errorf("CRD conversion: %q is the name of a webhook configuration", name))
		}
	}
	return errors.Join(errs...)
}

// NewCRDInformers returns, for each name, an informer that watches the CRD of that name
// alone, and the factories that run them; start them after NewWriter. Like OnlyNamed, the
// name field selector keeps the cache to the few CRDs the writer needs (a CRD can be
// large), and lets RBAC grant list and watch on those names only.
func NewCRDInformers(client dynamic.Interface, names []string) (map[string]informers.GenericInformer, []dynamicinformer.DynamicSharedInformerFactory) {
	crdInformers := make(map[string]informers.GenericInformer, len(names))
	factories := make([]dynamicinformer.DynamicSharedInformerFactory, 0, len(names))
	for _, name := range names {
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, metav1.NamespaceAll, onlyNamed(name))
		crdInformers[name] = factory.ForResource(crdResource)
		factories = append(factories, factory)
	}
	return crdInformers, factories
}

// crdTarget is the conversion webhook of one CRD. The writer owns only
// spec.conversion.webhook (its clientConfig and review versions) of a CRD labelled as
// bosun's; everything else, the strategy, the versions and their storage flags and the
// status included, belongs to the manifests and the API server.
type crdTarget struct {
	name         string
	clientConfig ClientConfig
	cache        cache.GenericLister
	client       dynamic.ResourceInterface
	recorder     record.EventRecorder
	// writes learns of every update this target makes.
	writes *crdWrites
	// lastReport is the problem the last event reported, so that syncs that find the same
	// problem again (a Resync on every certificate change) record no further events. The
	// queue never hands a key to two workers at once, so only one sync reads it at a time.
	lastReport string
}

func newCRDTarget(name string, clientConfig ClientConfig, informer informers.GenericInformer, crds CRDs, writes *crdWrites) *crdTarget {
	return &crdTarget{
		name:         name,
		clientConfig: clientConfig,
		cache:        informer.Lister(),
		client:       crds.Client.Resource(crdResource),
		recorder:     crds.Recorder,
		writes:       writes,
	}
}

// sync points the CRD's conversion webhook at bosun's /convert with the current CA, if
// the CRD exists, is bosun's and converts through a webhook.
func (t *crdTarget) sync(ctx context.Context, caBundle func() []byte) error {
	logger := klog.FromContext(ctx).WithValues("crd", t.name)
	ctx = klog.NewContext(ctx, logger)

	crd, err := t.get()
	if apierrors.IsNotFound(err) {
		// The kind is not installed: nothing to convert.
		logger.V(4).Info("CustomResourceDefinition does not exist; nothing to configure")
		t.lastReport = ""
		return nil
	}
	if err != nil {
		return err
	}
	live, err := readConversion(crd)
	if err != nil {
		return fmt.Errorf("reading the conversion settings of CustomResourceDefinition %s: %w", t.name, err)
	}

	if !isManaged(crd) {
		if live.strategy != conversionStrategyWebhook {
			// Nothing is converted through a webhook, so nothing can be sent to the wrong
			// one: for instance the v1alpha1-only CRDs of an earlier bosun or OpenKruise,
			// still in place while the manager is upgraded before the CRDs.
			logger.V(2).Info("CustomResourceDefinition is not managed by bosun and converts through no webhook; leaving it alone",
				"strategy", live.strategy)
			t.lastReport = ""
			return nil
		}
		return t.report(ctx, crd, ReasonConversionNotManaged, fmt.Sprintf(
			"CustomResourceDefinition %s is not labelled %s=%s, so bosun leaves its conversion webhook alone: "+
				"the API server sends its conversions to %s, not to bosun's %s",
			t.name, managedByLabel, managedByBosun, describeClientConfig(live.clientConfig), conversion.Path))
	}
	if live.strategy != conversionStrategyWebhook {
		// bosun's manifests give this kind a webhook. Flipping the strategy would make
		// the writer a second author of the manifests (and fight whoever applies them);
		// applying the right manifests is the fix.
		return t.report(ctx, crd, ReasonConversionStrategyNotWebhook, fmt.Sprintf(
			"CustomResourceDefinition %s is labelled %s=%s but its conversion strategy is %s, not %s as in bosun's manifests: "+
				"the API server converts its objects between versions by changing their apiVersion alone; bosun does not change the strategy, apply bosun's CRD manifests",
			t.name, managedByLabel, managedByBosun, live.strategy, conversionStrategyWebhook))
	}
	t.lastReport = ""

	ca := caBundle()
	if len(ca) == 0 {
		// An empty caBundle would make the API server distrust the webhook, or use its
		// own roots: conversions would fail until the next write.
		logger.V(2).Info("No CA bundle yet; looking again later", "after", caBundleWait)
		return errNoCABundle
	}
	return t.ensure(ctx, crd, live, ca)
}

// get returns the CRD from the cache.
func (t *crdTarget) get() (*unstructured.Unstructured, error) {
	obj, err := t.cache.Get(t.name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading CustomResourceDefinition %s from the cache: %w", t.name, err)
	}
	crd, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("reading CustomResourceDefinition %s from the cache: got a %T", t.name, obj)
	}
	return crd, nil
}

// ensure updates the CRD's conversion webhook to point at bosun with caBundle, if it does
// not already.
func (t *crdTarget) ensure(ctx context.Context, crd *unstructured.Unstructured, live conversionSettings, caBundle []byte) error {
	logger := klog.FromContext(ctx)
	desired := t.clientConfig.webhookClientConfig(conversion.Path, caBundle)
	endpointMatches := sameEndpoint(live.clientConfig, desired)
	caMatches := live.clientConfig != nil && bytes.Equal(live.clientConfig.CABundle, desired.CABundle)
	versionsMatch := slices.Equal(live.reviewVersions, conversionReviewVersions())
	if endpointMatches && caMatches && versionsMatch {
		logger.V(4).Info("Conversion webhook of CustomResourceDefinition is up to date")
		return nil
	}

	// On top of the cached object: its resourceVersion makes a concurrent write conflict
	// rather than be lost, and everything outside spec.conversion.webhook goes back as read.
	updated := crd.DeepCopy()
	if err := setConversionWebhook(updated, desired, !endpointMatches, !versionsMatch); err != nil {
		return fmt.Errorf("setting the conversion webhook of CustomResourceDefinition %s: %w", t.name, err)
	}
	stored, err := t.client.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Someone wrote (or deleted) the CRD since the cache saw it; the retry looks
			// at the newer object, which may already be right.
			return fmt.Errorf("%w: updating the conversion webhook of CustomResourceDefinition %s: %w", queue.ErrRequeue, t.name, err)
		}
		return fmt.Errorf("updating the conversion webhook of CustomResourceDefinition %s: %w", t.name, err)
	}
	t.writes.note(time.Now())
	logger.Info("Updated the conversion webhook of CustomResourceDefinition",
		"caBundleChanged", !caMatches, "clientConfigCorrected", !endpointMatches, "reviewVersionsCorrected", !versionsMatch)

	if !endpointMatches || !versionsMatch {
		var changes []string
		if !endpointMatches {
			changes = append(changes, fmt.Sprintf("clientConfig %s replaced by %s", describeClientConfig(live.clientConfig), describeClientConfig(&desired)))
		}
		if !versionsMatch {
			changes = append(changes, fmt.Sprintf("conversionReviewVersions %v replaced by %v", live.reviewVersions, conversionReviewVersions()))
		}
		t.recorder.Event(eventObject(stored), corev1.EventTypeWarning, ReasonConversionClientConfigCorrected,
			fmt.Sprintf("Conversion webhook of CustomResourceDefinition %s: %s, where bosun-controller-manager serves %s",
				t.name, strings.Join(changes, "; "), conversion.Path))
	}

	// What the API server stored is what the next sync compares with: a difference the
	// comparison does not expect would be rewritten on every sync.
	got, err := readConversion(stored)
	if err != nil {
		return fmt.Errorf("reading back the conversion settings of CustomResourceDefinition %s: %w", t.name, err)
	}
	if !sameEndpoint(got.clientConfig, desired) || got.clientConfig == nil || !bytes.Equal(got.clientConfig.CABundle, desired.CABundle) ||
		!slices.Equal(got.reviewVersions, conversionReviewVersions()) {
		return fmt.Errorf("the API server stored the conversion webhook of CustomResourceDefinition %s as %s with review versions %v, not as written: %s with %v",
			t.name, describeClientConfig(got.clientConfig), got.reviewVersions, describeClientConfig(&desired), conversionReviewVersions())
	}
	return nil
}

// report records a Warning event on crd, unless the last one reported the same problem,
// and returns the problem for readiness.
func (t *crdTarget) report(ctx context.Context, crd *unstructured.Unstructured, reason, msg string) error {
	if report := reason + "\n" + msg; report != t.lastReport {
		t.lastReport = report
		klog.FromContext(ctx).Error(nil, "Cannot point the conversion webhook of CustomResourceDefinition at bosun", "reason", reason, "problem", msg)
		t.recorder.Event(eventObject(crd), corev1.EventTypeWarning, reason, msg)
	}
	return &reportedProblem{msg: msg}
}

// eventObject returns crd with its kind set, which an event's reference needs.
func eventObject(crd *unstructured.Unstructured) runtime.Object {
	if crd.GetKind() != "" && crd.GetAPIVersion() != "" {
		return crd
	}
	crd = crd.DeepCopy()
	crd.SetGroupVersionKind(crdKind)
	return crd
}

// conversionSettings are the parts of a CRD's spec.conversion the writer reads.
type conversionSettings struct {
	// strategy is the API server's default, None, when the CRD names none.
	strategy string
	// clientConfig is nil without spec.conversion.webhook.clientConfig. Its fields are
	// those of a CRD's webhook clientConfig, whose JSON is an admission webhook's.
	clientConfig   *admissionregistrationv1.WebhookClientConfig
	reviewVersions []string
}

func readConversion(crd *unstructured.Unstructured) (conversionSettings, error) {
	var s conversionSettings
	strategy, _, err := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if err != nil {
		return s, err
	}
	s.strategy = cmp.Or(strategy, conversionStrategyNone)
	config, found, err := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig")
	if err != nil {
		return s, err
	}
	if found {
		s.clientConfig = &admissionregistrationv1.WebhookClientConfig{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(config, s.clientConfig); err != nil {
			return s, fmt.Errorf("spec.conversion.webhook.clientConfig: %w", err)
		}
	}
	s.reviewVersions, _, err = unstructured.NestedStringSlice(crd.Object, "spec", "conversion", "webhook", "conversionReviewVersions")
	return s, err
}

// setConversionWebhook sets crd's spec.conversion.webhook to config: the whole clientConfig
// if its endpoint is wrong, otherwise only its caBundle, so that a clientConfig written as
// the manifests have it (a service without its default port, say) keeps its form and the
// writer changes, and owns, no more than the caBundle; and the review versions to the ones
// /convert speaks if they are wrong. Nothing else changes.
func setConversionWebhook(crd *unstructured.Unstructured, config admissionregistrationv1.WebhookClientConfig, endpoint, reviewVersions bool) error {
	clientConfigPath := []string{"spec", "conversion", "webhook", "clientConfig"}
	if endpoint {
		value, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&config)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(crd.Object, value, clientConfigPath...); err != nil {
			return err
		}
	} else {
		// The JSON form of bytes, as the API server reads it.
		caBundle := base64.StdEncoding.EncodeToString(config.CABundle)
		if err := unstructured.SetNestedField(crd.Object, caBundle, append(clientConfigPath, "caBundle")...); err != nil {
			return err
		}
	}
	if reviewVersions {
		return unstructured.SetNestedStringSlice(crd.Object, conversionReviewVersions(), "spec", "conversion", "webhook", "conversionReviewVersions")
	}
	return nil
}

// sameEndpoint reports whether live sends conversions where desired does, whatever the CA
// bundles: the same URL, or the same service, path and port, a missing port being the API
// server's default.
func sameEndpoint(live *admissionregistrationv1.WebhookClientConfig, desired admissionregistrationv1.WebhookClientConfig) bool {
	if live == nil {
		return false
	}
	a, b := live.DeepCopy(), desired.DeepCopy()
	a.CABundle, b.CABundle = nil, nil
	for _, c := range []*admissionregistrationv1.WebhookClientConfig{a, b} {
		setClientConfigAndRuleDefaults(c, nil)
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// describeClientConfig says where config sends requests, for events and readiness.
func describeClientConfig(config *admissionregistrationv1.WebhookClientConfig) string {
	switch {
	case config == nil:
		return "no webhook (the CRD has no clientConfig)"
	case config.URL != nil:
		return "url " + *config.URL
	case config.Service != nil:
		s := config.Service
		port := defaultServicePort
		if s.Port != nil {
			port = *s.Port
		}
		path := "/"
		if s.Path != nil {
			path = *s.Path
		}
		return fmt.Sprintf("service %s/%s port %d path %s", s.Namespace, s.Name, port, path)
	}
	return "no webhook (the clientConfig names neither a url nor a service)"
}
