package framework

import (
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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "bosun-integration-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
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
		caPEM:                pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM:              certPEM,
		keyPEM:               keyPEM,
		kubeletClientCertPEM: clientCertPEM,
		kubeletClientKeyPEM:  clientKeyPEM,
	}, nil
}

// issueCertificate makes a fresh key and a certificate for it from template, signed by the
// CA, both PEM-encoded.
func issueCertificate(ca *x509.Certificate, caKey *ecdsa.PrivateKey, template *x509.Certificate) (certPEM, keyPEM []byte, err error) {
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
