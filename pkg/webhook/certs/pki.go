package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// notBeforeSkew backdates every certificate issued, so that an API server whose clock is
// a little behind ours does not find a fresh certificate not yet valid.
const notBeforeSkew = 5 * time.Minute

// newCA returns a self-signed CA valid from now for validity, and its key.
func newCA(now time.Time, validity time.Duration) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		// The creation time tells the CAs of a bundle apart for a human reading it.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("bosun-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-notBeforeSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// It signs serving certificates only, never another CA.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the CA certificate just created: %w", err)
	}
	return ca, key, nil
}

// newServingCert returns a serving certificate for hosts (DNS names and IP addresses)
// signed by ca, valid from now for validity but never past ca's own expiry, since a chain
// verifies only while every certificate in it is valid.
func newServingCert(ca *x509.Certificate, caKey crypto.Signer, hosts []string, now time.Time, validity time.Duration) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		// Verifiers read the SANs only; the common name is for humans and stays short
		// because a host may be longer than the 64 characters a common name allows.
		Subject:               pkix.Name{CommonName: "bosun-webhook"},
		NotBefore:             now.Add(-notBeforeSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("creating serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the serving certificate just created: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// newSerial returns a random 128-bit serial number: unique without any bookkeeping.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial, nil
}

// keyPair parses a PEM certificate chain and its private key, checking that they match.
func keyPair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	// X509KeyPair sets Leaf unless GODEBUG x509keypairleaf=0 says otherwise; the health
	// check and the rotation rules read it.
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &pair, nil
}

// parseSigner parses a PEM private key that can sign certificates.
func parseSigner(keyPEM []byte) (crypto.Signer, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign", key)
	}
	return signer, nil
}

// encodeKeyPair returns the PEM chain and private key of pair.
func encodeKeyPair(pair *tls.Certificate) (certPEM, keyPEM []byte, err error) {
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(pair.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	return encodeCertificates(pair.Certificate...), keyPEM, nil
}

// encodeCertificates returns the PEM encoding of DER certificates, in order.
func encodeCertificates(ders ...[]byte) []byte {
	var out []byte
	for _, der := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der})...)
	}
	return out
}

// samePublicKey reports whether a and b are the same public key.
func samePublicKey(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}
