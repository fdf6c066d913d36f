package certs

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a CA that issues pairs for the directory tests.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	ca, key, err := newCA(time.Now(), 365*day)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{ca, key}
}

func (ca testCA) bundle() []byte {
	return encodeCertificates(ca.cert.Raw)
}

// issue returns a PEM pair for testHosts valid from notBefore for validity.
func (ca testCA) issue(t *testing.T, notBefore time.Time, validity time.Duration) (certPEM, keyPEM []byte, serial string) {
	t.Helper()
	pair, err := newServingCert(ca.cert, ca.key, testHosts, notBefore, validity)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err = encodeKeyPair(pair)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, pair.Leaf.SerialNumber.String()
}

// writeFiles writes name→content into dir, each through a temporary file renamed over
// the old one.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, content := range files {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// atomicWriter lays out a directory the way the kubelet mounts a Secret: every file a
// symlink through ..data to a timestamped directory, and an update a new timestamped
// directory that ..data is renamed to point at.
type atomicWriter struct {
	t       *testing.T
	dir     string
	version int
}

func (w *atomicWriter) write(files map[string][]byte) {
	w.t.Helper()
	w.version++
	versionDir := filepath.Join(w.dir, fmt.Sprintf("..v%d", w.version))
	if err := os.Mkdir(versionDir, 0o700); err != nil {
		w.t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(versionDir, name), content, 0o600); err != nil {
			w.t.Fatal(err)
		}
	}
	tmpLink := filepath.Join(w.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(versionDir), tmpLink); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmpLink, filepath.Join(w.dir, "..data")); err != nil {
		w.t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(w.dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			w.t.Fatal(err)
		}
	}
	if w.version > 1 {
		if err := os.RemoveAll(filepath.Join(w.dir, fmt.Sprintf("..v%d", w.version-1))); err != nil {
			w.t.Fatal(err)
		}
	}
}

func TestFileProviderRejectsABadStart(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	certPEM, _, _ := ca.issue(t, time.Now(), 90*day)
	_, otherKey, _ := other.issue(t, time.Now(), 90*day)
	goodCert, goodKey, _ := ca.issue(t, time.Now(), 90*day)

	for name, tc := range map[string]struct {
		files map[string][]byte
		want  []string // in the error
	}{
		"no files":      {nil, []string{"tls.crt"}},
		"mismatch":      {map[string][]byte{"tls.crt": certPEM, "tls.key": otherKey}, []string{"tls.crt", "tls.key", "does not match"}},
		"not PEM":       {map[string][]byte{"tls.crt": []byte("junk"), "tls.key": goodKey}, []string{"tls.crt", "tls.key"}},
		"bad CA bundle": {map[string][]byte{"tls.crt": goodCert, "tls.key": goodKey, "ca.crt": []byte("junk")}, []string{"ca.crt"}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, _ := testContext(t)
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			p := NewFileProvider(dir)
			err := p.Run(ctx)
			if err == nil {
				t.Fatal("Run accepted a directory without a valid pair")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if p.Check(nil) == nil {
				t.Error("healthy without a certificate")
			}
		})
	}
}

func TestFileProviderReloadsRenamedFiles(t *testing.T) {
	ctx, _ := testContext(t)
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM, first := ca.issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.bundle()})

	p := NewFileProvider(dir)
	run(ctx, t, p)
	waitReady(t, p)
	expectChanged(t, p)
	if serial(p) != first {
		t.Errorf("serial %s, want %s", serial(p), first)
	}
	if string(p.CABundle()) != string(ca.bundle()) {
		t.Error("CABundle is not ca.crt")
	}
	verifyHosts(t, p, time.Now(), testHosts...)

	certPEM, keyPEM, second := ca.issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
	eventually(t, "the renamed pair", func() bool { return serial(p) == second })
	expectChanged(t, p)
	if got := handshake(t, p, testHosts[0]); got.SerialNumber.String() != second {
		t.Errorf("server presented serial %s, want %s", got.SerialNumber, second)
	}
}

func TestFileProviderReloadsAnAtomicWriterSwap(t *testing.T) {
	ctx, _ := testContext(t)
	ca := newTestCA(t)
	w := &atomicWriter{t: t, dir: t.TempDir()}
	certPEM, keyPEM, first := ca.issue(t, time.Now(), 90*day)
	w.write(map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.bundle()})

	p := NewFileProvider(w.dir)
	run(ctx, t, p)
	waitReady(t, p)
	if serial(p) != first {
		t.Errorf("serial %s, want %s", serial(p), first)
	}
	drainChanged(p)

	// cert-manager renewed the certificate and rotated its CA.
	newCA := newTestCA(t)
	certPEM, keyPEM, second := newCA.issue(t, time.Now(), 90*day)
	w.write(map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": newCA.bundle()})
	eventually(t, "the swapped pair", func() bool { return serial(p) == second })
	expectChanged(t, p)
	if string(p.CABundle()) != string(newCA.bundle()) {
		t.Error("CABundle is not the new ca.crt")
	}
	verifyHosts(t, p, time.Now(), testHosts...)
}

func TestFileProviderKeepsThePairWhenTheNewOneIsBad(t *testing.T) {
	ctx, logs := testContext(t)
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM, first := ca.issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.bundle()})
	p := NewFileProvider(dir)
	run(ctx, t, p)
	waitReady(t, p)
	drainChanged(p)

	_, otherKey, _ := newTestCA(t).issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.key": otherKey})
	eventually(t, "the bad pair to be reported", func() bool {
		return strings.Contains(logs.String(), "Keeping the webhook serving certificate served so far")
	})
	if serial(p) != first {
		t.Errorf("serial %s after a bad pair, want the previous %s", serial(p), first)
	}
	if err := p.Check(nil); err != nil {
		t.Errorf("unhealthy after a bad pair: %v", err)
	}
	select {
	case <-p.Changed():
		t.Error("Changed signalled for a pair that was not loaded")
	default:
	}

	// Fixed: served again.
	certPEM, keyPEM, second := ca.issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
	eventually(t, "the fixed pair", func() bool { return serial(p) == second })
}

func TestFileProviderWithoutCABundle(t *testing.T) {
	ctx, _ := testContext(t)
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM, _ := ca.issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})

	p := NewFileProvider(dir)
	run(ctx, t, p)
	waitReady(t, p)
	if p.CABundle() != nil {
		t.Errorf("CABundle() = %q without ca.crt, want nil", p.CABundle())
	}
}

func TestFileProviderReportsAnExpiredPair(t *testing.T) {
	ctx, _ := testContext(t)
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM, _ := ca.issue(t, time.Now().Add(-2*day), day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.bundle()})

	p := NewFileProvider(dir)
	run(ctx, t, p)
	eventually(t, "a certificate", func() bool { return leaf(p) != nil })
	if err := p.Check(nil); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("Check() = %v with an expired certificate, want an expiry error", err)
	}
}

func TestFileProviderRereadsPeriodically(t *testing.T) {
	ctx, _ := testContext(t)
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM, _ := ca.issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})

	p := NewFileProvider(dir).(*fileProvider)
	// Changes seen by the watch settle for longer than the test waits: only the
	// periodic read can pick this one up.
	p.recheck, p.settle = 50*time.Millisecond, time.Hour
	run(ctx, t, p)
	waitReady(t, p)

	certPEM, keyPEM, second := ca.issue(t, time.Now(), 90*day)
	writeFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
	eventually(t, "the periodic read", func() bool { return serial(p) == second })
}
