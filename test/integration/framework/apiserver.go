package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

const (
	// ServiceClusterIPRange is the range kube-apiserver allocates Service IPs from.
	ServiceClusterIPRange = "10.0.0.0/24"

	// advertiseAddress is what kube-apiserver records as the endpoint of the
	// "kubernetes" Service. A loopback address is rejected there, and picking the
	// machine's address can fail on hosts without a default route, so this is an
	// address from TEST-NET-1 that never routes anywhere.
	advertiseAddress = "192.0.2.1"

	// serviceAccountIssuer is the issuer of service account tokens.
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
)

// apiServerFiles are the files kube-apiserver reads at start-up.
type apiServerFiles struct {
	certFile, keyFile             string
	saPublicKey, saPrivateKey     string
	tokenFile, clientCAFile       string
	kubeletClientCert             string
	kubeletClientKey              string
	auditPolicyFile, auditLogFile string // empty unless auditing is on
}

// writeAPIServerFiles generates the certificates, service account key and static
// token file for a kube-apiserver and writes them to dir.
func writeAPIServerFiles(dir string, certs *servingCerts, tokens []staticToken, auditPolicy string) (*apiServerFiles, error) {
	files := &apiServerFiles{
		certFile:     filepath.Join(dir, "apiserver.crt"),
		keyFile:      filepath.Join(dir, "apiserver.key"),
		saPublicKey:  filepath.Join(dir, "service-account.pub"),
		saPrivateKey: filepath.Join(dir, "service-account.key"),
		tokenFile:    filepath.Join(dir, "tokens.csv"),
		clientCAFile: filepath.Join(dir, "client-ca.crt"),

		kubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	saPrivate, saPublic, err := newServiceAccountKey()
	if err != nil {
		return nil, err
	}
	var tokenCSV strings.Builder
	for _, tok := range tokens {
		// token,user,uid,"group1,group2" is the format of --token-auth-file.
		fmt.Fprintf(&tokenCSV, "%s,%s,%s,%q\n", tok.token, tok.user.Name, tok.user.Name, strings.Join(tok.user.Groups, ","))
	}
	contents := map[string][]byte{
		files.certFile:     certs.certPEM,
		files.keyFile:      certs.keyPEM,
		files.saPublicKey:  saPublic,
		files.saPrivateKey: saPrivate,
		files.tokenFile:    []byte(tokenCSV.String()),
		files.clientCAFile: certs.caPEM,

		files.kubeletClientCert: certs.kubeletClientCertPEM,
		files.kubeletClientKey:  certs.kubeletClientKeyPEM,
	}
	if auditPolicy != "" {
		files.auditPolicyFile = filepath.Join(dir, "audit-policy.yaml")
		files.auditLogFile = filepath.Join(dir, "audit.log")
		contents[files.auditPolicyFile] = []byte(auditPolicy)
	}
	for path, data := range contents {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return files, nil
}

// apiServerArgs returns the flags for a kube-apiserver on port that stores in etcdURL.
func apiServerArgs(dir, etcdURL string, port int, files *apiServerFiles) []string {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--advertise-address=" + advertiseAddress,
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file=" + files.certFile,
		"--tls-private-key-file=" + files.keyFile,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + files.saPublicKey,
		"--service-account-signing-key-file=" + files.saPrivateKey,
		"--token-auth-file=" + files.tokenFile,
		// With a client CA the API server publishes the ConfigMap
		// kube-system/extension-apiserver-authentication, which components that
		// delegate authentication (bosun's binaries among them) read, as in a real cluster.
		"--client-ca-file=" + files.clientCAFile,
		// Front-proxy settings as kubeadm writes them, published in the same ConfigMap.
		"--requestheader-client-ca-file=" + files.clientCAFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--authorization-mode=Node,RBAC",
		// Kubelets (the end-to-end node) trust the client CA and authenticate the API
		// server by this certificate, so none has to allow anonymous access.
		"--kubelet-client-certificate=" + files.kubeletClientCert,
		"--kubelet-client-key=" + files.kubeletClientKey,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		// Workloads under test may run privileged pods (node agents do).
		"--allow-privileged=true",
		// No kube-controller-manager runs, so no "default" ServiceAccount appears in
		// new namespaces and the ServiceAccount plugin would reject every pod that does
		// not name an existing account. CreateTestNamespace creates the account anyway,
		// for tests that turn the plugin back on.
		"--disable-admission-plugins=ServiceAccount",
		"--enable-admission-plugins=NodeRestriction",
	}
	if files.auditPolicyFile != "" {
		args = append(args,
			"--audit-policy-file="+files.auditPolicyFile,
			"--audit-log-path="+files.auditLogFile,
			"--audit-log-format=json",
			// Blocking mode writes each event before the request completes, so a test
			// finds the events of the requests it made.
			"--audit-log-mode=blocking",
			// One file, never rotated: AuditTail reads on from an offset into it, and a
			// restarted server (RestartAPIServer) appends to it. Rotation, at 100 MB by
			// default, would hide every later event from the readers.
			"--audit-log-maxsize=0",
		)
	}
	return args
}

// startAPIServer starts kube-apiserver on a free loopback port and waits for /readyz.
// adminConfig is completed with the chosen host. It returns the flags the server runs
// with, which RestartAPIServer starts it with again.
func startAPIServer(ctx context.Context, binary, dir, etcdURL string, files *apiServerFiles, extraArgs []string, adminConfig *rest.Config) (*Process, []string, error) {
	logger := klog.FromContext(ctx)
	for attempt := 1; ; attempt++ {
		ports, err := FreeLoopbackPorts(1)
		if err != nil {
			return nil, nil, err
		}
		adminConfig.Host = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		args := mergeArgs(apiServerArgs(dir, etcdURL, ports[0], files), extraArgs)
		proc, err := runAPIServer(ctx, binary, args, apiServerLogPath(dir), adminConfig)
		if err == nil {
			return proc, args, nil
		}
		if proc != nil && attempt < portAttempts && logMentionsPortConflict(proc) {
			logger.Info("Retrying kube-apiserver start on another port", "attempt", attempt)
			continue
		}
		return nil, nil, err
	}
}

// apiServerLogPath is the file kube-apiserver writes to; a restarted server appends to it.
func apiServerLogPath(dir string) string { return filepath.Join(dir, "kube-apiserver.log") }

// runAPIServer starts kube-apiserver with args and waits until adminConfig's client finds
// it ready. On failure the process, if it started, is returned killed, for its log.
func runAPIServer(ctx context.Context, binary string, args []string, logPath string, adminConfig *rest.Config) (*Process, error) {
	proc, err := StartProcess(ProcessConfig{Name: "kube-apiserver", Path: binary, Args: args, LogPath: logPath})
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(adminConfig)
	if err != nil {
		proc.Kill()
		return proc, fmt.Errorf("creating a client for %s: %w", adminConfig.Host, err)
	}
	if err := waitForServer(ctx, proc, func(ctx context.Context) error { return apiServerReady(ctx, client) }); err != nil {
		proc.Kill()
		return proc, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("kube-apiserver is ready", "host", adminConfig.Host, "pid", proc.Pid())
	return proc, nil
}

// apiServerReady asks /readyz, which answers "ok" only after etcd is reachable and all
// post-start hooks (RBAC bootstrap roles, priority classes, ...) have run.
func apiServerReady(ctx context.Context, client kubernetes.Interface) error {
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w: %s", err, body)
	}
	if string(body) != "ok" {
		return fmt.Errorf("/readyz answered %q", body)
	}
	return nil
}
