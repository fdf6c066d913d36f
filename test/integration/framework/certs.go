package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// servingCerts is a throw-away CA, the kube-apiserver serving certificate it signed and
// the client certificate kube-apiserver shows kubelets. Generating them here, instead of
// letting the server self-sign, gives clients a CA to verify the server against, and lets
// a kubelet require authentication (trusting the CA) instead of allowing anonymous access.
type servingCerts struct {
	caPEM   []byte
	certPEM []byte
	keyPEM  []byte

	kubeletClientCertPEM []byte
	kubeletClientKeyPEM  []byte

	// clientCA is the CA itself, which kube-apiserver trusts for client certificates too:
	// tests issue users of their own with it (ControlPlane.ClientCertificateConfig).
	clientCA *TestCA
}

// kubeletClientUser and kubeletClientGroup are who kube-apiserver is to a kubelet: the
// group is allowed everything by RBAC, so the kubelet's webhook authorization lets it
// read logs and exec, as kubeadm's apiserver-kubelet-client certificate does.
const (
	kubeletClientUser  = "kube-apiserver-kubelet-client"
	kubeletClientGroup = "system:masters"
)

// newServingCerts makes a CA, a serving certificate valid for the given IPs and DNS names,
// and kube-apiserver's kubelet client certificate. ECDSA keys keep this fast; nothing here
// needs RSA.
func newServingCerts(ips []net.IP, dnsNames []string) (*servingCerts, error) {
	now := time.Now()
	caCert, caKey, err := newCA(big.NewInt(1), "bosun-integration-ca", now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		return nil, err
	}

	certPEM, keyPEM, err := issueCertificate(caCert, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  ips,
		DNSNames:     dnsNames,
	})
	if err != nil {
		return nil, fmt.Errorf("issuing the serving certificate: %w", err)
	}
	clientCertPEM, clientKeyPEM, err := issueCertificate(caCert, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: kubeletClientUser, Organization: []string{kubeletClientGroup}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("issuing the kubelet client certificate: %w", err)
	}
	return &servingCerts{
		caPEM:                pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}),
		certPEM:              certPEM,
		keyPEM:               keyPEM,
		kubeletClientCertPEM: clientCertPEM,
		kubeletClientKeyPEM:  clientKeyPEM,
		clientCA:             &TestCA{PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}), cert: caCert, key: caKey},
	}, nil
}

// newCA makes a key and a self-signed CA certificate for it, valid from notBefore to
// notAfter.
func newCA(serialNumber *big.Int, commonName string, notBefore, notAfter time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the CA key: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber:          serialNumber,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	return cert, key, nil
}

// issueCertificate makes a fresh key and a certificate for it from template, signed by the
// CA, both PEM-encoded.
func issueCertificate(ca *x509.Certificate, caKey crypto.Signer, template *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the key: %w", err)
	}
	certDER, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// newServiceAccountKey returns a PEM RSA private key and its public key for signing
// and verifying service account tokens.
func newServiceAccountKey() (privatePEM, publicPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the service account key: %w", err)
	}
	publicDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the service account public key: %w", err)
	}
	privatePEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	publicPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: publicDER})
	return privatePEM, publicPEM, nil
}

// newToken returns a random bearer token.
func newToken() string {
	return rand.Text()
}

// TestCA is a CA a test controls, standing in for cert-manager's or for the one in bosun's
// webhook Secret, that issues serving certificates for webhooks on 127.0.0.1.
type TestCA struct {
	// PEM is the CA's certificate, PEM-encoded: what a caBundle or a ca.crt holds.
	PEM []byte

	cert *x509.Certificate
	key  crypto.Signer
}

// NewTestCA makes a CA named name, with a random serial number so that no two are alike.
func NewTestCA(t testing.TB, name string) *TestCA {
	t.Helper()
	now := time.Now()
	cert, key, err := newCA(randomSerialNumber(t), name, now.Add(-time.Minute), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return &TestCA{PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), cert: cert, key: key}
}

// LoadTestCA loads a CA whose certificate and key the test has read, such as the ones in
// bosun's webhook Secret. The key may be EC, RSA (PKCS #1) or PKCS #8.
func LoadTestCA(t testing.TB, certPEM, keyPEM []byte) *TestCA {
	t.Helper()
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		t.Fatal("the CA certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var key any
	switch keyBlock.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(keyBlock.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	}
	if err != nil {
		t.Fatalf("parsing the CA key (%s): %v", keyBlock.Type, err)
	}
	return &TestCA{PEM: pem.EncodeToMemory(certBlock), cert: cert, key: key.(crypto.Signer)}
}

// IssueServingCertificate returns a serving certificate for 127.0.0.1 named commonName,
// signed by ca, and its key, both PEM-encoded, and the certificate's serial number (random,
// so that a renewal can be told from the certificate it replaces).
func (ca *TestCA) IssueServingCertificate(t testing.TB, commonName string) (certPEM, keyPEM []byte, serialNumber *big.Int) {
	t.Helper()
	now := time.Now()
	serialNumber = randomSerialNumber(t)
	certPEM, keyPEM, err := issueCertificate(ca.cert, ca.key, &x509.Certificate{
		SerialNumber: serialNumber,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, serialNumber
}

// WriteCertDir issues a serving certificate named commonName and puts it, its key and the
// CA into dir as tls.crt, tls.key and ca.crt, which --webhook-cert-dir reads, the way the
// kubelet updates a mounted Secret: each file written aside, then renamed into place. It
// returns the certificate's serial number.
func (ca *TestCA) WriteCertDir(t testing.TB, dir, commonName string) *big.Int {
	t.Helper()
	certPEM, keyPEM, serialNumber := ca.IssueServingCertificate(t, commonName)
	staging := filepath.Join(dir, ".staging")
	if err := os.MkdirAll(staging, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.PEM} {
		if err := os.WriteFile(filepath.Join(staging, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"ca.crt", "tls.key", "tls.crt"} {
		if err := os.Rename(filepath.Join(staging, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return serialNumber
}

// IssueClientCertificate returns a client certificate of user in groups (its CN and O, as
// kube-apiserver reads them), signed by ca, and its key, both PEM-encoded.
func (ca *TestCA) IssueClientCertificate(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	serialNumber, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	return issueCertificate(ca.cert, ca.key, &x509.Certificate{
		SerialNumber: serialNumber,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// randomSerialNumber returns a random certificate serial number of up to 127 bits.
func randomSerialNumber(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
