package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

const (
	testNamespace = "kube-system"
	testName      = "bosun-webhook-certs"
)

var testHosts = []string{"bosun-webhook.kube-system.svc", "127.0.0.1"}

var secretsResource = corev1.SchemeGroupVersion.WithResource("secrets")

func getSecret(t *testing.T, client *fake.Clientset) *corev1.Secret {
	t.Helper()
	secret, err := client.CoreV1().Secrets(testNamespace).Get(t.Context(), testName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the Secret: %v", err)
	}
	return secret
}

// countActions counts the client's calls of verb on Secrets.
func countActions(client *fake.Clientset, verb string) int {
	n := 0
	for _, action := range client.Actions() {
		if action.GetVerb() == verb && action.GetResource() == secretsResource {
			n++
		}
	}
	return n
}

// secretHolding returns the Secret a replica would have written for c.
func secretHolding(t *testing.T, c *contents) *corev1.Secret {
	t.Helper()
	data, err := c.encode()
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testName, Labels: map[string]string{managedByLabel: managedByValue}},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
}

func TestSecretProviderCreatesTheSecretAndServes(t *testing.T) {
	ctx, _ := testContext(t)
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(time.Now())
	p := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))

	if p.Name() != "webhook-certificate" {
		t.Errorf("Name() = %q", p.Name())
	}
	if err := p.Check(nil); err == nil {
		t.Error("healthy before Run")
	}
	if _, err := p.GetCertificate(nil); err == nil {
		t.Error("GetCertificate succeeded before Run")
	}
	if p.CABundle() != nil {
		t.Error("CABundle is not nil before Run")
	}

	run(ctx, t, p)
	waitReady(t, p)
	expectChanged(t, p)

	secret := getSecret(t, client)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type = %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	if secret.Labels[managedByLabel] != managedByValue {
		t.Errorf("Secret labels = %v, want %s=%s", secret.Labels, managedByLabel, managedByValue)
	}
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
		if len(secret.Data[key]) == 0 {
			t.Errorf("Secret has no %s", key)
		}
	}
	if string(secret.Data["ca.crt"]) != string(p.CABundle()) {
		t.Error("CABundle differs from the Secret's ca.crt")
	}

	verifyHosts(t, p, clk.Now(), testHosts...)
	for _, host := range testHosts {
		if got := handshake(t, p, host); got.SerialNumber.Cmp(leaf(p).SerialNumber) != 0 {
			t.Errorf("server presented serial %s for %s, want %s", got.SerialNumber, host, leaf(p).SerialNumber)
		}
	}

	serving := leaf(p)
	if len(serving.ExtKeyUsage) != 1 || serving.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("serving certificate's extended key usages = %v, want server auth", serving.ExtKeyUsage)
	}
	if got := serving.SerialNumber.BitLen(); got > 128 || got < 64 {
		t.Errorf("serial number has %d bits, want a random 128-bit number", got)
	}
	if key, ok := serving.PublicKey.(*ecdsa.PublicKey); !ok || key.Curve != elliptic.P256() {
		t.Errorf("serving key is %T, want ECDSA P-256", serving.PublicKey)
	}
	if want := serving.NotBefore.Add(notBeforeSkew + DefaultServingValidity); !serving.NotAfter.Equal(want.Truncate(time.Second)) {
		t.Errorf("serving certificate valid until %s, want %s", serving.NotAfter, want)
	}
	cas := bundleCAs(t, p)
	if len(cas) != 1 {
		t.Fatalf("bundle holds %d CAs, want 1", len(cas))
	}
	if ca := cas[0]; !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA has IsCA %v and key usage %b, want a CA that may sign certificates", ca.IsCA, ca.KeyUsage)
	}
}

func TestSecretProviderReplicasShareOneCA(t *testing.T) {
	ctx, _ := testContext(t)
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(time.Now())

	first := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))
	run(ctx, t, first)
	waitReady(t, first)
	second := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))
	run(ctx, t, second)
	waitReady(t, second)

	if string(first.CABundle()) != string(second.CABundle()) {
		t.Error("the replicas have different CA bundles")
	}
	if serial(first) != serial(second) {
		t.Errorf("the replicas serve serials %s and %s, want the same certificate", serial(first), serial(second))
	}
	if n := countActions(client, "create"); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
	if n := countActions(client, "update"); n != 0 {
		t.Errorf("%d updates of a fresh Secret, want none", n)
	}
}

func TestSecretProviderLosingTheCreateRaceTakesTheWinnersCA(t *testing.T) {
	ctx, _ := testContext(t)
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(time.Now())

	// The other replica's Secret, created between our read and our create.
	var winner contents
	if _, err := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk)).(*secretProvider).renew(&winner, clk.Now()); err != nil {
		t.Fatal(err)
	}
	var creates atomic.Int32
	client.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) == 1 {
			if err := client.Tracker().Add(secretHolding(t, &winner)); err != nil {
				t.Errorf("adding the winner's Secret: %v", err)
			}
		}
		return false, nil, nil // on to the tracker, which finds the winner's
	})

	p := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))
	run(ctx, t, p)
	waitReady(t, p)

	if string(p.CABundle()) != string(winner.bundle()) {
		t.Error("the loser serves its own CA, want the winner's")
	}
	if got, want := serial(p), winner.serving.Leaf.SerialNumber.String(); got != want {
		t.Errorf("serial %s, want the winner's %s", got, want)
	}
	if n := countActions(client, "update"); n != 0 {
		t.Errorf("%d updates of the winner's fresh Secret, want none", n)
	}
}

func TestSecretProviderRotatesTheServingCertificate(t *testing.T) {
	ctx, _ := testContext(t)
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(time.Now())

	rotating := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))
	run(ctx, t, rotating)
	waitReady(t, rotating)
	observing := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(newObserverClock(clk)))
	run(ctx, t, observing)
	waitReady(t, observing)

	before, bundle := serial(rotating), string(rotating.CABundle())
	drainChanged(rotating)
	drainChanged(observing)

	// Less than 1/3 of the 90 days left.
	stepWhenWaiting(t, clk, 61*day)
	eventually(t, "a new serving certificate", func() bool { return serial(rotating) != before })
	expectChanged(t, rotating)
	if string(rotating.CABundle()) != bundle {
		t.Error("the CA changed with the serving certificate")
	}
	verifyHosts(t, rotating, clk.Now(), testHosts...)

	eventually(t, "the other replica to serve the new certificate", func() bool { return serial(observing) == serial(rotating) })
	expectChanged(t, observing)
	if string(observing.CABundle()) != bundle {
		t.Error("the other replica's CA bundle changed")
	}
}

func TestSecretProviderRotatesTheCAInTwoSteps(t *testing.T) {
	ctx, _ := testContext(t)
	clk := testingclock.NewFakeClock(time.Now())
	now := clk.Now()

	// A CA with less than 1/3 of its year left, and a serving certificate it signed
	// yesterday.
	oldCA, oldKey, err := newCA(now.Add(-250*day), 365*day)
	if err != nil {
		t.Fatal(err)
	}
	oldServing, err := newServingCert(oldCA, oldKey, testHosts, now.Add(-day), 90*day)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(secretHolding(t, &contents{ca: oldCA, caKey: oldKey, serving: oldServing}))
	p := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))
	run(ctx, t, p)
	waitReady(t, p)

	// Step 1: a new CA, both in the bundle, the serving certificate unchanged.
	eventually(t, "a second CA", func() bool { return len(bundleCAs(t, p)) == 2 })
	cas := bundleCAs(t, p)
	newCA := cas[0]
	if !cas[1].Equal(oldCA) || newCA.Equal(oldCA) {
		t.Fatalf("bundle holds %s and %s, want a new CA then the old one %s", cas[0].Subject, cas[1].Subject, oldCA.Subject)
	}
	if got, want := serial(p), oldServing.Leaf.SerialNumber.String(); got != want {
		t.Errorf("serial %s right after the CA rotation, want the old certificate %s still", got, want)
	}
	verifyHosts(t, p, clk.Now(), testHosts...)
	key, err := parseSigner(getSecret(t, client).Data["ca.key"])
	if err != nil || !samePublicKey(key.Public(), newCA.PublicKey) {
		t.Errorf("ca.key is not the new CA's key (%v)", err)
	}

	// Step 2: once the bundle had time to reach the API server, a certificate from the
	// new CA; the old CA stays for replicas that have not switched yet.
	drainChanged(p)
	stepWhenWaiting(t, clk, caPropagationDelay)
	eventually(t, "a serving certificate from the new CA", func() bool { return leaf(p).CheckSignatureFrom(newCA) == nil })
	expectChanged(t, p)
	if n := len(bundleCAs(t, p)); n != 2 {
		t.Errorf("bundle holds %d CAs after the switch, want 2", n)
	}
	verifyHosts(t, p, clk.Now(), testHosts...)

	// Step 3: the old CA leaves the bundle when it expires.
	stepWhenWaiting(t, clk, oldCA.NotAfter.Sub(clk.Now()))
	eventually(t, "the old CA to leave the bundle", func() bool { return len(bundleCAs(t, p)) == 1 })
	if !bundleCAs(t, p)[0].Equal(newCA) {
		t.Error("the bundle lost the new CA")
	}
	verifyHosts(t, p, clk.Now(), testHosts...)
}

func TestSecretProviderConflictTakesTheOtherReplicasRotation(t *testing.T) {
	ctx, _ := testContext(t)
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(time.Now())

	// Once armed, the first update finds that another replica rotated since our read: it
	// writes its own certificate, from the same CA, and ours fails on the
	// resourceVersion. (Reactors must be in place before the client is used.)
	var armed atomic.Bool
	var updates atomic.Int32
	var theirs atomic.Pointer[tls.Certificate]
	client.PrependReactor("update", "secrets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if !armed.Load() || updates.Add(1) > 1 {
			return false, nil, nil
		}
		secret := action.(clienttesting.UpdateAction).GetObject().(*corev1.Secret).DeepCopy()
		c, err := parseContents(secret.Data)
		if err != nil {
			t.Errorf("parsing the update: %v", err)
			return true, nil, err
		}
		if c.serving, err = newServingCert(c.ca, c.caKey, testHosts, clk.Now(), 90*day); err != nil {
			t.Errorf("issuing the other replica's certificate: %v", err)
			return true, nil, err
		}
		theirs.Store(c.serving)
		secret.Data, _ = c.encode()
		if err := client.Tracker().Update(secretsResource, secret, testNamespace); err != nil {
			t.Errorf("writing the other replica's Secret: %v", err)
		}
		return true, nil, apierrors.NewConflict(secretsResource.GroupResource(), testName, errors.New("the object has been modified"))
	})

	p := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))
	run(ctx, t, p)
	waitReady(t, p)
	before := serial(p)
	armed.Store(true)

	stepWhenWaiting(t, clk, 61*day)
	eventually(t, "the other replica's certificate", func() bool {
		return theirs.Load() != nil && serial(p) == theirs.Load().Leaf.SerialNumber.String()
	})
	if serial(p) == before {
		t.Error("the certificate did not rotate")
	}
	if n := updates.Load(); n != 1 {
		t.Errorf("%d updates, want only the one that conflicted", n)
	}
}

func TestSecretProviderReissuesForNewHosts(t *testing.T) {
	ctx, _ := testContext(t)
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(time.Now())
	start := func(hosts ...string) (Provider, func()) {
		p := NewSecretProvider(client, testNamespace, testName, hosts, WithClock(clk))
		stop := run(ctx, t, p)
		waitReady(t, p)
		return p, stop
	}

	p, stop := start(testHosts...)
	first, bundle := serial(p), string(p.CABundle())
	stop()

	added := append([]string{"bosun-webhook.example.com"}, testHosts...)
	p, stop = start(added...)
	if serial(p) == first {
		t.Error("a certificate that does not cover a new host was kept")
	}
	if string(p.CABundle()) != bundle {
		t.Error("a new host changed the CA")
	}
	verifyHosts(t, p, clk.Now(), added...)
	stop()

	// A replica of another version, wanting other hosts, adds its own to the others'.
	p, stop = start("bosun-webhook.kube-system.svc", "10.0.0.1")
	verifyHosts(t, p, clk.Now(), append(added, "10.0.0.1")...)
	covering := serial(p)
	stop()

	// Fewer hosts are no reason to reissue.
	p, _ = start("bosun-webhook.kube-system.svc")
	if serial(p) != covering {
		t.Error("a certificate covering every host was reissued")
	}
}

func TestSecretProviderReplacesAMalformedSecret(t *testing.T) {
	ctx, logs := testContext(t)
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testName, Labels: map[string]string{"team": "platform"}},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"tls.crt": []byte("not PEM"),
			"tls.key": []byte("not PEM"),
			"ca.crt":  []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
			"ca.key":  []byte("not PEM"),
			"other":   []byte("kept"),
		},
	})
	clk := testingclock.NewFakeClock(time.Now())
	p := NewSecretProvider(client, testNamespace, testName, testHosts, WithClock(clk))
	run(ctx, t, p)
	waitReady(t, p)

	verifyHosts(t, p, clk.Now(), testHosts...)
	secret := getSecret(t, client)
	if string(secret.Data["ca.crt"]) != string(p.CABundle()) {
		t.Error("the Secret's ca.crt is not what is served")
	}
	if string(secret.Data["other"]) != "kept" || secret.Labels["team"] != "platform" || secret.Type != corev1.SecretTypeOpaque {
		t.Errorf("what bosun does not own changed: type %q, labels %v, other %q", secret.Type, secret.Labels, secret.Data["other"])
	}
	if secret.Labels[managedByLabel] != managedByValue {
		t.Errorf("labels %v lack %s=%s", secret.Labels, managedByLabel, managedByValue)
	}
	if text := logs.String(); !strings.Contains(text, "holds unusable data") || !strings.Contains(text, "ca.key") {
		t.Errorf("no error log naming what was unusable:\n%s", text)
	}
}

func TestSecretProviderRejectsBadSettings(t *testing.T) {
	for name, p := range map[string]Provider{
		"no hosts":       NewSecretProvider(fake.NewClientset(), testNamespace, testName, []string{" "}),
		"no name":        NewSecretProvider(fake.NewClientset(), testNamespace, "", testHosts),
		"short validity": NewSecretProvider(fake.NewClientset(), testNamespace, testName, testHosts, WithValidity(365*day, time.Minute)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := p.Run(t.Context()); err == nil {
				t.Error("Run accepted bad settings")
			}
		})
	}
}

func TestStateSignalsChangesAndChecksExpiry(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ca, caKey, err := newCA(clk.Now(), 365*day)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := newServingCert(ca, caKey, testHosts, clk.Now(), 90*day)
	if err != nil {
		t.Fatal(err)
	}
	s := newState(clk)
	if err := s.Check(nil); err == nil {
		t.Error("healthy without a certificate")
	}
	bundle := encodeCertificates(ca.Raw)
	if !s.set(pair, bundle) || !s.set(pair, nil) {
		t.Error("a new certificate or bundle was not a change")
	}
	if s.set(pair, nil) {
		t.Error("the same certificate and bundle again was a change")
	}
	select {
	case <-s.Changed():
	default:
		t.Error("Changed was not signalled")
	}
	select {
	case <-s.Changed():
		t.Error("Changed was signalled once per change rather than coalesced")
	default:
	}
	if err := s.Check(nil); err != nil {
		t.Errorf("unhealthy with a valid certificate: %v", err)
	}
	clk.SetTime(pair.Leaf.NotAfter.Add(time.Second))
	if err := s.Check(nil); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("Check() = %v with an expired certificate, want an expiry error", err)
	}
}

func TestCoversComparesSANsLiterally(t *testing.T) {
	ca, caKey, err := newCA(time.Now(), 365*day)
	if err != nil {
		t.Fatal(err)
	}
	hosts := normalizeHosts([]string{"*.Example.com", " 0:0:0:0:0:0:0:1 ", "bosun-webhook.kube-system.svc", "::1"})
	if want := []string{"*.example.com", "::1", "bosun-webhook.kube-system.svc"}; !slices.Equal(hosts, want) {
		t.Errorf("normalizeHosts() = %q, want %q", hosts, want)
	}
	pair, err := newServingCert(ca, caKey, hosts, time.Now(), 90*day)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"*.example.com":                 true,
		"BOSUN-webhook.kube-system.svc": true,
		"0:0:0:0:0:0:0:1":               true,
		"a.example.com":                 false, // a wildcard SAN does not stand for a host asked for
		"127.0.0.1":                     false,
	} {
		if got := covers(pair.Leaf, host); got != want {
			t.Errorf("covers(%s) = %v, want %v", host, got, want)
		}
	}
}
