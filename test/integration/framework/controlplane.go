package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

const (
	// AdminUser is the user of ControlPlane.Config and the kubeconfig file. It is in
	// the system:masters group, which RBAC lets do everything.
	AdminUser = "admin"

	// DefaultStartTimeout bounds how long StartControlPlane waits for the servers. A
	// start takes about ten seconds, but the test machines are small and shared.
	DefaultStartTimeout = 3 * time.Minute

	// serverStopGracePeriod is how long the servers get to shut down cleanly. Their
	// data is thrown away, so this only has to be long enough not to slow teardown.
	serverStopGracePeriod = 5 * time.Second
)

// MetadataAuditPolicy is an audit policy that logs the metadata (user, user agent,
// verb, object) of every request. Use it as Options.AuditPolicy to check which
// component made which requests.
const MetadataAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// PodCreatesAuditPolicy is MetadataAuditPolicy but for pod creates, which it logs with
// the created pod too: the name of a pod created with generateName, as DaemonSet pods are,
// is only in the response. Use it for tests that account for every pod create.
const PodCreatesAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["pods"]
- level: Metadata
`

// User is an extra static user of the control plane, authenticated by a generated
// bearer token and authorized only through RBAC bindings of its name or groups.
type User struct {
	// Name is the user name.
	Name string
	// Groups are the groups the user belongs to, besides system:authenticated.
	Groups []string
}

// Options configure StartControlPlane. The zero value is a working control plane.
type Options struct {
	// Dir holds the etcd data, certificates, kubeconfig and logs. When empty a new
	// temporary directory is made and Stop removes it.
	Dir string
	// EtcdArgs are extra etcd flags. A flag also set by the framework replaces it.
	EtcdArgs []string
	// APIServerArgs are extra kube-apiserver flags. A flag also set by the framework
	// replaces it, so "--disable-admission-plugins=" turns the ServiceAccount
	// admission plugin back on.
	APIServerArgs []string
	// Users are static users besides AdminUser; see ControlPlane.UserConfig.
	Users []User
	// AuditPolicy, when set, is the YAML of an audit policy, and kube-apiserver writes
	// audit events to ControlPlane.AuditLogPath. See MetadataAuditPolicy.
	AuditPolicy string
	// BosunCRDs installs bosun's own CustomResourceDefinitions (DefaultCRDDir) before
	// StartControlPlane returns.
	BosunCRDs bool
	// CRDDirs are further directories whose CustomResourceDefinitions are installed (see
	// InstallCRDs) before StartControlPlane returns.
	CRDDirs []string
	// StartTimeout bounds the start; DefaultStartTimeout when zero.
	StartTimeout time.Duration
}

// ControlPlane is a running etcd and kube-apiserver. Stop it when done; tests use
// StartTestControlPlane or SharedControlPlane, which do that for them.
type ControlPlane struct {
	dir         string
	removeDir   bool
	etcdURL     string
	caPEM       []byte
	clientCA    *TestCA
	tokens      map[string]string // user name to bearer token
	adminConfig *rest.Config
	kubeconfig  string
	auditLog    string
	startupTime time.Duration

	etcd *Process
	// apiServerBinary and apiServerArgs are what kube-apiserver runs, again on a restart.
	apiServerBinary string
	apiServerArgs   []string

	// mu guards apiServer, which RestartAPIServer replaces, and stopped, after which it
	// starts none.
	mu        sync.Mutex
	apiServer *Process
	stopped   bool
	// shared is set for SharedControlPlane's, which no test may restart.
	shared bool

	conversion conversionState

	stopOnce sync.Once
	stopErr  error
}

// staticToken is one line of kube-apiserver's token file.
type staticToken struct {
	token string
	user  User
}

// StartControlPlane starts etcd and kube-apiserver and waits until the API is ready.
// ctx bounds only the start; the servers run until Stop. The error is a
// *MissingBinariesError when the servers have not been built.
func StartControlPlane(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	logger := klog.FromContext(ctx)
	began := time.Now()
	binaries, err := toolPaths(ServerBinaries...)
	if err != nil {
		return nil, err
	}
	etcdBinary, apiServerBinary := binaries[0], binaries[1]
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cp := &ControlPlane{dir: opts.Dir, tokens: map[string]string{}}
	if cp.dir == "" {
		if cp.dir, err = os.MkdirTemp("", "bosun-integration-"); err != nil {
			return nil, fmt.Errorf("creating the control plane directory: %w", err)
		}
		cp.removeDir = true
	} else if err := os.MkdirAll(cp.dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the control plane directory: %w", err)
	}
	defer func() {
		if err != nil {
			// Whatever started is stopped; the directory is kept only if the caller
			// owns it, the error already carries the end of the logs.
			_ = cp.Stop()
		}
	}()

	tokens, err := cp.makeTokens(opts.Users)
	if err != nil {
		return nil, err
	}
	certs, err := newServingCerts(
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	)
	if err != nil {
		return nil, err
	}
	cp.caPEM = certs.caPEM
	cp.clientCA = certs.clientCA
	files, err := writeAPIServerFiles(cp.dir, certs, tokens, opts.AuditPolicy)
	if err != nil {
		return nil, err
	}
	cp.auditLog = files.auditLogFile
	cp.adminConfig = cp.configFor(cp.tokens[AdminUser])

	etcdBegan := time.Now()
	if cp.etcd, cp.etcdURL, err = startEtcd(ctx, etcdBinary, cp.dir, opts.EtcdArgs); err != nil {
		return nil, err
	}
	etcdTime := time.Since(etcdBegan)
	apiServerBegan := time.Now()
	cp.apiServerBinary = apiServerBinary
	if cp.apiServer, cp.apiServerArgs, err = startAPIServer(ctx, apiServerBinary, cp.dir, cp.etcdURL, files, opts.APIServerArgs, cp.adminConfig); err != nil {
		return nil, err
	}
	apiServerTime := time.Since(apiServerBegan)

	cp.kubeconfig = filepath.Join(cp.dir, "kubeconfig")
	if err := cp.writeKubeconfig(cp.kubeconfig, AdminUser); err != nil {
		return nil, err
	}
	crdDirs := opts.CRDDirs
	if opts.BosunCRDs {
		dir, err := DefaultCRDDir()
		if err != nil {
			return nil, err
		}
		crdDirs = append([]string{dir}, crdDirs...)
	}
	for _, dir := range crdDirs {
		if err := InstallCRDs(ctx, cp.Config(), dir); err != nil {
			return nil, err
		}
	}
	if len(crdDirs) > 0 {
		if err := cp.ServeConversion(ctx); err != nil {
			return nil, err
		}
	}
	cp.startupTime = time.Since(began)
	logger.Info("Control plane is ready", "host", cp.Host(), "dir", cp.dir,
		"duration", cp.startupTime.Round(time.Millisecond),
		"etcd", etcdTime.Round(time.Millisecond), "kubeAPIServer", apiServerTime.Round(time.Millisecond))
	return cp, nil
}

// makeTokens generates a bearer token for the admin and each extra user.
func (cp *ControlPlane) makeTokens(users []User) ([]staticToken, error) {
	all := append([]User{{Name: AdminUser, Groups: []string{"system:masters"}}}, users...)
	tokens := make([]staticToken, 0, len(all))
	for _, user := range all {
		if user.Name == "" || strings.ContainsAny(user.Name, ",\"\n") {
			return nil, fmt.Errorf("invalid static user name %q", user.Name)
		}
		if _, dup := cp.tokens[user.Name]; dup {
			return nil, fmt.Errorf("static user %q is defined twice (%q is built in)", user.Name, AdminUser)
		}
		token := newToken()
		cp.tokens[user.Name] = token
		tokens = append(tokens, staticToken{token: token, user: user})
	}
	return tokens, nil
}

// configFor returns a client config that authenticates with token. The host is filled
// in once the server's port is known.
func (cp *ControlPlane) configFor(token string) *rest.Config {
	return &rest.Config{
		Host:            cp.hostOrEmpty(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.caPEM},
		// Tests should not wait for client-side throttling; a negative QPS turns the
		// rate limiter off.
		QPS: -1,
	}
}

func (cp *ControlPlane) hostOrEmpty() string {
	if cp.adminConfig == nil {
		return ""
	}
	return cp.adminConfig.Host
}

// writeKubeconfig writes a kubeconfig for the named user to path.
func (cp *ControlPlane) writeKubeconfig(path, user string) error {
	const name = "bosun-integration"
	config := clientcmdapi.NewConfig()
	config.Clusters[name] = &clientcmdapi.Cluster{Server: cp.Host(), CertificateAuthorityData: cp.caPEM}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cp.tokens[user]}
	config.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	config.CurrentContext = name
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// Host returns the URL of the API server, https://127.0.0.1:<port>.
func (cp *ControlPlane) Host() string { return cp.adminConfig.Host }

// Config returns a new client config of AdminUser; callers may change it.
func (cp *ControlPlane) Config() *rest.Config { return rest.CopyConfig(cp.adminConfig) }

// KubeconfigPath returns a kubeconfig file of AdminUser, for binaries under test.
func (cp *ControlPlane) KubeconfigPath() string { return cp.kubeconfig }

// UserConfig returns a client config of a user from Options.Users.
func (cp *ControlPlane) UserConfig(name string) (*rest.Config, error) {
	token, ok := cp.tokens[name]
	if !ok {
		return nil, fmt.Errorf("no static user %q", name)
	}
	return cp.configFor(token), nil
}

// UserKubeconfig writes a kubeconfig file of a user from Options.Users into the
// control plane's directory and returns its path.
func (cp *ControlPlane) UserKubeconfig(name string) (string, error) {
	if _, ok := cp.tokens[name]; !ok {
		return "", fmt.Errorf("no static user %q", name)
	}
	path := filepath.Join(cp.dir, "kubeconfig-"+name)
	if err := cp.writeKubeconfig(path, name); err != nil {
		return "", err
	}
	return path, nil
}

// Clientset returns a clientset of AdminUser, failing the test if it cannot.
func (cp *ControlPlane) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(cp.Config())
	if err != nil {
		t.Fatalf("creating a clientset for %s: %v", cp.Host(), err)
	}
	return client
}

// EtcdURL returns the client URL of etcd.
func (cp *ControlPlane) EtcdURL() string { return cp.etcdURL }

// Dir returns the directory of the control plane's data, kubeconfig and logs.
func (cp *ControlPlane) Dir() string { return cp.dir }

// CAFile is the CA that signed kube-apiserver's serving certificate. kube-apiserver also
// trusts it for client certificates, so a kubelet given it as its client CA accepts the API
// server's kubelet client certificate.
func (cp *ControlPlane) CAFile() string { return filepath.Join(cp.dir, "client-ca.crt") }

// ServiceAccountKeyFile is the private key that signs service account tokens, for
// kube-controller-manager's --service-account-private-key-file.
func (cp *ControlPlane) ServiceAccountKeyFile() string {
	return filepath.Join(cp.dir, "service-account.key")
}

// AuditLogPath returns the file of audit events (JSON lines), or "" without
// Options.AuditPolicy.
func (cp *ControlPlane) AuditLogPath() string { return cp.auditLog }

// StartupTime returns how long StartControlPlane took.
func (cp *ControlPlane) StartupTime() time.Duration { return cp.startupTime }

// Processes returns the server processes: etcd, then kube-apiserver (the one running now,
// after a RestartAPIServer).
func (cp *ControlPlane) Processes() []*Process {
	return slices.DeleteFunc([]*Process{cp.etcd, cp.currentAPIServer()}, func(p *Process) bool { return p == nil })
}

func (cp *ControlPlane) currentAPIServer() *Process {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.apiServer
}

// LogTails returns the last n lines of each server's log, for failure messages.
func (cp *ControlPlane) LogTails(n int) string {
	return cp.logTailsSince(nil, n)
}

// logTailsSince is LogTails restricted to what was written after the given log sizes
// (by process), so that a test sharing the servers sees its own part of the logs.
func (cp *ControlPlane) logTailsSince(offsets map[*Process]int64, n int) string {
	var b strings.Builder
	for _, p := range cp.Processes() {
		tail := tailFile(p.LogPath(), offsets[p], n)
		if tail == "" {
			tail = "(nothing logged)\n"
		}
		fmt.Fprintf(&b, "--- last lines of %s (%s) ---\n%s", p.Name(), p.LogPath(), tail)
	}
	return b.String()
}

// Stop stops kube-apiserver, then etcd, and removes the directory if the control plane
// made it. It returns once both processes are gone; calling it again does nothing.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		// The API server first, so that it does not spend its shutdown retrying etcd.
		cp.mu.Lock()
		cp.stopped = true
		apiServer := cp.apiServer
		cp.mu.Unlock()
		if apiServer != nil {
			apiServer.Stop(serverStopGracePeriod)
		}
		if cp.etcd != nil {
			cp.etcd.Stop(serverStopGracePeriod)
		}
		cp.stopConversion()
		if cp.removeDir {
			if err := os.RemoveAll(cp.dir); err != nil {
				cp.stopErr = fmt.Errorf("removing the control plane directory: %w", err)
			}
		}
	})
	return cp.stopErr
}

// StartTestControlPlane starts a control plane for one test and stops it when the test
// ends, printing the end of the server logs if the test failed. It skips the test when
// integration tests are disabled or the servers are not built (see
// RequireIntegration). Most tests should share one control plane instead: see
// SharedControlPlane.
func StartTestControlPlane(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	RequireIntegration(t)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	_, ctx := ktesting.NewTestContext(t)
	cp, err := StartControlPlane(ctx, opts)
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cp.LogTails(failureLogLines))
		}
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	return cp
}

// IntegrationEnv names the environment variable that controls integration tests:
// "0" skips them, "1" makes them fail instead of skip when the servers are missing.
const IntegrationEnv = "BOSUN_INTEGRATION"

// RequireIntegration skips the test when integration tests should not run: with
// `go test -short`, with BOSUN_INTEGRATION=0, or when the server binaries are not built.
// With BOSUN_INTEGRATION=1 missing binaries fail the test, so CI cannot pass by
// skipping.
func RequireIntegration(t testing.TB) {
	t.Helper()
	if reason := integrationSkipReason(); reason != "" {
		t.Skip(reason)
	}
	if _, err := toolPaths(ServerBinaries...); err != nil {
		var missing *MissingBinariesError
		if errors.As(err, &missing) && os.Getenv(IntegrationEnv) != "1" {
			t.Skipf("skipping integration test: %v", err)
		}
		t.Fatal(err)
	}
}

func integrationSkipReason() string {
	switch {
	case os.Getenv(IntegrationEnv) == "0":
		return "skipping integration test: " + IntegrationEnv + "=0"
	case testing.Short():
		return "skipping integration test in -short mode"
	}
	return ""
}
