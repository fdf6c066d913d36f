package certs

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// caCertKey and caKeyKey hold the CA bundle and the current CA's key; the serving pair
	// is under corev1.TLSCertKey and corev1.TLSPrivateKeyKey, as type kubernetes.io/tls
	// requires.
	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"

	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "bosun"

	// caPropagationDelay is how long after a new CA was created the serving certificate
	// moves to it. Until then the one signed by the previous CA, which the bundle still
	// holds, is served: the configuration writers must first put the new bundle into the
	// webhook configurations and the API server must read them, or it would reject a
	// certificate only the new CA verifies.
	caPropagationDelay = 5 * time.Minute

	// maxRecheck bounds how long a replica goes without reading the Secret, in case a
	// timer fired late (a suspended host) or a watch event was lost.
	maxRecheck = 10 * time.Minute

	// minValidity is the shortest validity accepted. Shorter, and with notBeforeSkew a
	// fresh certificate would be due for renewal at once.
	minValidity = time.Hour

	// retryInitial and retryMax bound the wait after a failed sync, doubling in between.
	retryInitial = time.Second
	retryMax     = 2 * time.Minute
)

// secretProvider keeps the CA and serving certificate in a Secret shared by the replicas.
// The package comment describes the Secret and the rotation rules.
type secretProvider struct {
	state
	client          kubernetes.Interface
	namespace, name string
	hosts           []string
	clock           clock.Clock
	caValidity      time.Duration
	servingValidity time.Duration
	// wakeUp has a value when the Secret changed since Run last read it.
	wakeUp chan struct{}
}

// NewSecretProvider returns a Provider that shares a self-signed CA and a serving
// certificate for hosts (DNS names and IP addresses, for example
// "bosun-webhook.kube-system.svc" and "127.0.0.1") with the other replicas through the
// Secret namespace/name, creating and rotating them as needed. Its Run needs get, list,
// watch, create and update on that Secret.
func NewSecretProvider(client kubernetes.Interface, namespace, name string, hosts []string, opts ...Option) Provider {
	o := options{clock: clock.RealClock{}, caValidity: DefaultCAValidity, servingValidity: DefaultServingValidity}
	for _, opt := range opts {
		opt(&o)
	}
	return &secretProvider{
		state:           newState(o.clock),
		client:          client,
		namespace:       namespace,
		name:            name,
		hosts:           normalizeHosts(hosts),
		clock:           o.clock,
		caValidity:      o.caValidity,
		servingValidity: o.servingValidity,
		wakeUp:          make(chan struct{}, 1),
	}
}

// normalizeHosts trims, lowercases and deduplicates hosts, keeping their order, and
// writes IP addresses the way Go does.
func normalizeHosts(hosts []string) []string {
	var out []string
	for _, host := range hosts {
		host = strings.ToLower(strings.TrimSpace(host))
		if ip := net.ParseIP(host); ip != nil {
			host = ip.String()
		}
		if host != "" && !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	return out
}

func (p *secretProvider) validate() error {
	var problems []string
	if p.namespace == "" || p.name == "" {
		problems = append(problems, "the Secret needs a namespace and a name")
	}
	if len(p.hosts) == 0 {
		problems = append(problems, "no hosts for the serving certificate")
	}
	if p.caValidity < minValidity || p.servingValidity < minValidity {
		problems = append(problems, fmt.Sprintf("validities (CA %s, serving %s) must be at least %s", p.caValidity, p.servingValidity, minValidity))
	}
	if len(problems) > 0 {
		return fmt.Errorf("webhook certificate Secret %s/%s: %s", p.namespace, p.name, strings.Join(problems, "; "))
	}
	return nil
}

func (p *secretProvider) Run(ctx context.Context) error {
	if err := p.validate(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("secret", klog.KRef(p.namespace, p.name))
	ctx = klog.NewContext(ctx, logger)

	informer := coreinformers.NewFilteredSecretInformer(p.client, p.namespace, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", p.name).String()
	})
	// The informer only says when to read the Secret again; sync reads it from the API
	// server, so the cache need not hold another copy of the CA key.
	if err := informer.SetTransform(withoutData); err != nil {
		return fmt.Errorf("watching Secret %s/%s: %w", p.namespace, p.name, err)
	}
	key := p.namespace + "/" + p.name
	changed := func(obj any) {
		// The field selector already narrows the watch to the Secret; this check is for
		// servers (and fakes) that ignore it.
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil && k == key {
			select {
			case p.wakeUp <- struct{}{}:
			default:
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed,
	}); err != nil {
		return fmt.Errorf("watching Secret %s/%s: %w", p.namespace, p.name, err)
	}
	var informerDone sync.WaitGroup
	informerDone.Go(func() { informer.RunWithContext(ctx) })
	defer informerDone.Wait()

	var retryDelay time.Duration
	for {
		next, err := p.sync(ctx)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			retryDelay = min(max(2*retryDelay, retryInitial), retryMax)
			wait = retryDelay
			logger.Error(err, "Could not bring the webhook certificate up to date, retrying", "after", wait)
		default:
			retryDelay = 0
			wait = min(next.Sub(p.clock.Now()), maxRecheck)
			if wait <= 0 {
				continue // the time moved past next while syncing
			}
			logger.V(4).Info("Webhook certificate up to date", "nextCheck", next)
		}
		timer := p.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-p.wakeUp:
		case <-timer.C():
		}
		timer.Stop()
	}
}

// withoutData is the informer's transform: the Secret's metadata without its data.
func withoutData(obj any) (any, error) {
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil // a tombstone
	}
	// A new object rather than a changed one: the informer may share what it is handed.
	return &corev1.Secret{ObjectMeta: secret.ObjectMeta}, nil
}

// sync brings the Secret up to date and serves what it holds, reading it again when
// another replica wrote it first. It returns when to sync again at the latest.
func (p *secretProvider) sync(ctx context.Context) (time.Time, error) {
	logger := klog.FromContext(ctx)
	var next time.Time
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return false
		}
		logger.V(2).Info("Another replica wrote the Secret first, reading it again", "err", err)
		return true
	}, func() error {
		var err error
		next, err = p.syncOnce(ctx)
		return err
	})
	return next, err
}

func (p *secretProvider) syncOnce(ctx context.Context) (time.Time, error) {
	logger := klog.FromContext(ctx)
	secret, err := p.client.CoreV1().Secrets(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		secret = nil
	case err != nil:
		return time.Time{}, fmt.Errorf("reading Secret %s/%s: %w", p.namespace, p.name, err)
	}
	var data map[string][]byte
	if secret != nil {
		data = secret.Data
	}

	c, malformed := parseContents(data)
	now := p.clock.Now()
	reasons, err := p.renew(&c, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("renewing the webhook certificate: %w", err)
	}
	if len(reasons) > 0 {
		if malformed != nil {
			logger.Error(malformed, "Webhook certificate Secret holds unusable data, replacing it")
		}
		if err := p.write(ctx, secret, &c); err != nil {
			return time.Time{}, err
		}
		logger.Info("Wrote webhook certificate Secret", "reasons", reasons)
	}

	if p.set(c.serving, c.bundle()) {
		leaf := c.serving.Leaf
		logger.Info("Serving webhook certificate", "serial", leaf.SerialNumber.Text(16), "notAfter", leaf.NotAfter,
			"issuer", c.issuer.Subject.CommonName, "bundleCAs", 1+len(c.previous))
	}

	next := c.nextCheck()
	if !next.After(now) {
		// Every rule moves its own deadline past now; this keeps a mistake from turning
		// into a loop of writes.
		return time.Time{}, fmt.Errorf("webhook certificate would be due again at once (%s)", next)
	}
	return next, nil
}

// write creates the Secret with c's contents, or updates existing to hold them.
func (p *secretProvider) write(ctx context.Context, existing *corev1.Secret, c *contents) error {
	data, err := c.encode()
	if err != nil {
		return fmt.Errorf("encoding webhook certificate: %w", err)
	}
	secrets := p.client.CoreV1().Secrets(p.namespace)
	if existing == nil {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: p.namespace,
				Name:      p.name,
				Labels:    map[string]string{managedByLabel: managedByValue},
			},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", p.namespace, p.name, err)
		}
		return nil
	}

	// Everything else stays, the type included: it cannot change anyway.
	secret := existing.DeepCopy()
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[managedByLabel] = managedByValue
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	maps.Copy(secret.Data, data)
	// existing's resourceVersion makes this a Conflict if another replica wrote since
	// the read; sync then reads again.
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", p.namespace, p.name, err)
	}
	return nil
}

// contents is the Secret's data, parsed.
type contents struct {
	ca       *x509.Certificate // signs new serving certificates; nil if none is usable
	caKey    crypto.Signer
	previous []*x509.Certificate // earlier CAs, still in the bundle after ca
	serving  *tls.Certificate    // nil if not usable; Leaf is set
	issuer   *x509.Certificate   // the CA that signed serving; set by renew
}

// parseContents parses a Secret's data. Missing parts are left nil; the error says which
// parts are present but unusable.
func parseContents(data map[string][]byte) (contents, error) {
	var c contents
	var problems []error

	var cas []*x509.Certificate
	if caPEM := data[caCertKey]; len(caPEM) > 0 {
		certs, err := cert.ParseCertsPEM(caPEM)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", caCertKey, err))
		}
		for _, ca := range certs {
			if ca.IsCA {
				cas = append(cas, ca)
			}
		}
	}
	switch keyPEM := data[caKeyKey]; {
	case len(keyPEM) > 0:
		key, err := parseSigner(keyPEM)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", caKeyKey, err))
			break
		}
		i := slices.IndexFunc(cas, func(ca *x509.Certificate) bool { return samePublicKey(key.Public(), ca.PublicKey) })
		if i < 0 {
			problems = append(problems, fmt.Errorf("%s matches no CA certificate in %s", caKeyKey, caCertKey))
			break
		}
		c.ca, c.caKey = cas[i], key
		cas = slices.Delete(cas, i, i+1)
	case len(cas) > 0:
		problems = append(problems, fmt.Errorf("%s without %s", caCertKey, caKeyKey))
	}
	c.previous = cas

	certPEM, keyPEM := data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]
	if len(certPEM) > 0 || len(keyPEM) > 0 {
		pair, err := keyPair(certPEM, keyPEM)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s and %s: %w", corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err))
		} else {
			c.serving = pair
		}
	}
	return c, errors.Join(problems...)
}

// renew applies the rotation rules of the package comment to c at now and returns why it
// changed anything: nothing when the Secret needs no write.
func (p *secretProvider) renew(c *contents, now time.Time) ([]string, error) {
	var reasons []string

	// An expired CA verifies nothing any more.
	kept := slices.DeleteFunc(slices.Clone(c.previous), func(ca *x509.Certificate) bool { return !now.Before(ca.NotAfter) })
	if len(kept) < len(c.previous) {
		reasons = append(reasons, "an earlier CA expired")
	}
	c.previous = kept

	if c.ca == nil || !now.Before(renewalTime(c.ca.NotBefore, c.ca.NotAfter)) {
		if c.ca == nil {
			reasons = append(reasons, "no usable CA")
		} else {
			reasons = append(reasons, fmt.Sprintf("CA expires at %s", c.ca.NotAfter.UTC().Format(time.RFC3339)))
			if now.Before(c.ca.NotAfter) {
				c.previous = slices.Insert(c.previous, 0, c.ca)
			}
		}
		ca, key, err := newCA(now, p.caValidity)
		if err != nil {
			return nil, err
		}
		c.ca, c.caKey = ca, key
	}

	reason, keepSANs := p.servingProblem(c, now)
	if reason == "" {
		return reasons, nil
	}
	reasons = append(reasons, reason)
	hosts := p.hosts
	if keepSANs {
		hosts = normalizeHosts(append(sans(c.serving.Leaf), p.hosts...))
	}
	serving, err := newServingCert(c.ca, c.caKey, hosts, now, p.servingValidity)
	if err != nil {
		return nil, err
	}
	c.serving, c.issuer = serving, c.ca
	return reasons, nil
}

// servingProblem returns why c's serving certificate must be reissued, or "" if it need
// not be, and sets c.issuer. keepSANs says that the new one should keep the old one's SANs
// besides p.hosts: replicas of different versions may want different hosts during a
// rolling update, and each adding its own rather than replacing the other's converges.
func (p *secretProvider) servingProblem(c *contents, now time.Time) (reason string, keepSANs bool) {
	if c.serving == nil {
		return "no usable serving certificate", false
	}
	leaf := c.serving.Leaf
	roots := x509.NewCertPool()
	roots.AddCert(c.ca)
	for _, ca := range c.previous {
		roots.AddCert(ca)
	}
	// What the API server checks, bar the host name: a chain to the bundle, the validity
	// periods and the server-auth usage.
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now})
	if err != nil {
		return fmt.Sprintf("serving certificate does not verify against the bundle: %v", err), false
	}
	c.issuer = chains[0][len(chains[0])-1]

	switch {
	case !now.Before(renewalTime(leaf.NotBefore, earliest(leaf.NotAfter, c.issuer.NotAfter))):
		return fmt.Sprintf("serving certificate expires at %s", leaf.NotAfter.UTC().Format(time.RFC3339)), false
	case !c.issuer.Equal(c.ca) && !now.Before(switchTime(c.ca)):
		return "serving certificate signed by an earlier CA", false
	}
	for _, host := range p.hosts {
		if !covers(leaf, host) {
			return fmt.Sprintf("serving certificate does not cover %s", host), true
		}
	}
	return "", false
}

// covers reports whether host is one of leaf's SANs. It compares literally, the way the
// SANs were written from the hosts, rather than the way a TLS client matches them
// (VerifyHostname), so that a certificate just issued for the hosts surely covers them:
// otherwise every sync would issue another.
func covers(leaf *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return slices.ContainsFunc(leaf.IPAddresses, ip.Equal)
	}
	return slices.ContainsFunc(leaf.DNSNames, func(name string) bool { return strings.EqualFold(name, host) })
}

// nextCheck returns when the first rule applies to c, which renew has brought up to date.
func (c *contents) nextCheck() time.Time {
	leaf := c.serving.Leaf
	next := earliest(renewalTime(c.ca.NotBefore, c.ca.NotAfter),
		renewalTime(leaf.NotBefore, earliest(leaf.NotAfter, c.issuer.NotAfter)))
	if !c.issuer.Equal(c.ca) {
		next = earliest(next, switchTime(c.ca))
	}
	for _, ca := range c.previous {
		next = earliest(next, ca.NotAfter)
	}
	return next
}

// bundle returns the PEM CA bundle: the current CA first, then the earlier ones. Every
// replica computes the same bytes from the same Secret, so that their configuration
// writers agree.
func (c *contents) bundle() []byte {
	ders := [][]byte{c.ca.Raw}
	for _, ca := range c.previous {
		ders = append(ders, ca.Raw)
	}
	return encodeCertificates(ders...)
}

// encode returns the Secret data holding c.
func (c *contents) encode() (map[string][]byte, error) {
	caKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(c.caKey)
	if err != nil {
		return nil, fmt.Errorf("encoding CA key: %w", err)
	}
	certPEM, keyPEM, err := encodeKeyPair(c.serving)
	if err != nil {
		return nil, fmt.Errorf("encoding serving key: %w", err)
	}
	return map[string][]byte{
		corev1.TLSCertKey:       certPEM,
		corev1.TLSPrivateKeyKey: keyPEM,
		caCertKey:               c.bundle(),
		caKeyKey:                caKeyPEM,
	}, nil
}

// renewalTime is when a certificate valid from notBefore to notAfter has 1/3 of its
// validity left.
func renewalTime(notBefore, notAfter time.Time) time.Time {
	return notBefore.Add(notAfter.Sub(notBefore) * 2 / 3)
}

// switchTime is when serving certificates move to ca: caPropagationDelay after it was
// created, which is notBeforeSkew after its NotBefore.
func switchTime(ca *x509.Certificate) time.Time {
	return ca.NotBefore.Add(notBeforeSkew + caPropagationDelay)
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// sans returns a certificate's DNS and IP subject alternative names.
func sans(leaf *x509.Certificate) []string {
	names := slices.Clone(leaf.DNSNames)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}
