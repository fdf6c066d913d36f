package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// fileRecheckInterval is how often the directory is read whatever the watch says:
	// a watch can miss changes, for instance when the directory itself is replaced.
	fileRecheckInterval = 10 * time.Second
	// fileSettleDelay is how long after a first event the directory is read. A swap is
	// several events (new files, a renamed symlink, removals); reading once it is over
	// avoids loading, and complaining about, a half-written pair.
	fileSettleDelay = 100 * time.Millisecond
)

// fileProvider serves the pair in a directory, reloading it when the files change.
type fileProvider struct {
	state
	dir                       string
	certFile, keyFile, caFile string
	recheck, settle           time.Duration
	// lastRead is the files' content as last read, so that an unchanged directory is
	// neither parsed nor complained about again.
	lastRead fileContents
}

type fileContents struct {
	cert, key, ca []byte // ca is nil when the directory has no ca.crt
}

func (f fileContents) equal(g fileContents) bool {
	return bytes.Equal(f.cert, g.cert) && bytes.Equal(f.key, g.key) && bytes.Equal(f.ca, g.ca)
}

// NewFileProvider returns a Provider serving tls.crt and tls.key in dir, with ca.crt, if
// present, as the CA bundle. When dir has no ca.crt, CABundle stays nil and whoever writes
// the webhook configurations must know the bundle otherwise (for instance, cert-manager's
// CA injector).
func NewFileProvider(dir string) Provider {
	return &fileProvider{
		state:    newState(clock.RealClock{}),
		dir:      dir,
		certFile: filepath.Join(dir, corev1.TLSCertKey),
		keyFile:  filepath.Join(dir, corev1.TLSPrivateKeyKey),
		caFile:   filepath.Join(dir, caCertKey),
		recheck:  fileRecheckInterval,
		settle:   fileSettleDelay,
	}
}

func (p *fileProvider) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("dir", p.dir)

	// The directory is watched rather than the files: a mounted Secret's files are
	// symlinks through ..data, which the kubelet replaces in one rename.
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s for certificate changes: %w", p.dir, err)
	}
	defer watcher.Close()
	// Watching before the first read keeps a change in between from going unnoticed.
	if err := watcher.Add(p.dir); err != nil {
		return fmt.Errorf("watching %s for certificate changes: %w", p.dir, err)
	}
	if err := p.reload(logger); err != nil {
		return fmt.Errorf("loading the webhook serving certificate: %w", err)
	}

	ticker := time.NewTicker(p.recheck)
	defer ticker.Stop()
	events, watchErrors := watcher.Events, watcher.Errors
	var settled <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case event, ok := <-events:
			if !ok {
				events = nil // closed: the periodic reads go on alone
				continue
			}
			logger.V(5).Info("Certificate directory changed", "event", event.String())
			if settled == nil {
				settled = time.After(p.settle)
			}
		case err, ok := <-watchErrors:
			if !ok {
				watchErrors = nil
				continue
			}
			logger.Error(err, "Watching the certificate directory failed, relying on periodic reads", "interval", p.recheck)
		case <-settled:
			settled = nil
			p.reloadOrKeep(logger)
		case <-ticker.C:
			p.reloadOrKeep(logger)
		}
	}
}

// reloadOrKeep reloads the pair, logging why the one served stays if it cannot.
func (p *fileProvider) reloadOrKeep(logger klog.Logger) {
	if err := p.reload(logger); err != nil {
		logger.Error(err, "Keeping the webhook serving certificate served so far")
	}
}

// reload reads the files and serves their pair if it changed and is valid.
func (p *fileProvider) reload(logger klog.Logger) error {
	read, err := p.read()
	if err != nil {
		return err
	}
	if read.equal(p.lastRead) {
		return nil
	}
	p.lastRead = read

	pair, err := keyPair(read.cert, read.key)
	if err != nil {
		return fmt.Errorf("loading %s and %s: %w", p.certFile, p.keyFile, err)
	}
	if read.ca != nil {
		cas, err := cert.ParseCertsPEM(read.ca)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", p.caFile, err)
		}
		// Served all the same: the files are what the operator provided, and the API
		// server may trust another bundle than ca.crt. But it is most likely a mistake.
		roots, intermediates := x509.NewCertPool(), x509.NewCertPool()
		for _, ca := range cas {
			roots.AddCert(ca)
		}
		for _, der := range pair.Certificate[1:] {
			if c, err := x509.ParseCertificate(der); err == nil {
				intermediates.AddCert(c)
			}
		}
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: p.clock.Now()}); err != nil {
			logger.Error(err, "Webhook serving certificate does not verify against the CA bundle", "certificate", p.certFile, "bundle", p.caFile)
		}
	}

	if p.set(pair, read.ca) {
		logger.Info("Serving webhook certificate", "serial", pair.Leaf.SerialNumber.Text(16), "notAfter", pair.Leaf.NotAfter, "caBundle", read.ca != nil)
		if err := p.Check(nil); err != nil {
			logger.Error(err, "Serving an unusable webhook certificate", "certificate", p.certFile)
		}
	}
	return nil
}

// read returns the files' content.
func (p *fileProvider) read() (fileContents, error) {
	var f fileContents
	var err error
	if f.cert, err = os.ReadFile(p.certFile); err != nil {
		return f, err
	}
	if f.key, err = os.ReadFile(p.keyFile); err != nil {
		return f, err
	}
	f.ca, err = os.ReadFile(p.caFile)
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && len(f.ca) == 0:
		// An empty ca.crt, as some issuers write, is no bundle either.
		f.ca = nil
	case err != nil:
		return f, err
	}
	return f, nil
}
