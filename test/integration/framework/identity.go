package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
)

// ClientCertificateConfig returns a client config of user in groups that authenticates
// with a client certificate signed by the CA kube-apiserver trusts for clients
// (--client-ca-file), the way kubelets and bosun-daemon on systemd nodes authenticate: the
// user exists nowhere but in the certificate, and RBAC bindings of its name or groups
// authorize it.
func (cp *ControlPlane) ClientCertificateConfig(user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := cp.clientCA.IssueClientCertificate(user, groups)
	if err != nil {
		return nil, fmt.Errorf("issuing a client certificate for %s: %w", user, err)
	}
	return &rest.Config{
		Host:            cp.Host(),
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.caPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             -1,
	}, nil
}

// ClientCertificateKubeconfig writes a kubeconfig file of ClientCertificateConfig's user
// into the control plane's directory and returns its path.
func (cp *ControlPlane) ClientCertificateKubeconfig(user string, groups ...string) (string, error) {
	cfg, err := cp.ClientCertificateConfig(user, groups...)
	if err != nil {
		return "", err
	}
	const name = "bosun-integration"
	config := clientcmdapi.NewConfig()
	config.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	config.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	config.CurrentContext = name
	file := strings.NewReplacer(":", "-", "/", "-").Replace(user)
	path := filepath.Join(cp.dir, "kubeconfig-cert-"+file)
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return path, nil
}

// DaemonUser is the user of node's bosun-daemon, in group noderestriction.DaemonsGroup.
func DaemonUser(node string) string { return noderestriction.DaemonUserPrefix + node }

// DaemonConfig returns a client config of node's bosun-daemon: a client certificate of
// DaemonUser(node) in group bosun:daemons, authorized by config/rbac (installed first,
// see InstallDaemonRBAC) and kept to its node by the manager's node restriction webhooks.
func (cp *ControlPlane) DaemonConfig(ctx context.Context, node string) (*rest.Config, error) {
	if err := cp.InstallDaemonRBAC(ctx); err != nil {
		return nil, err
	}
	return cp.ClientCertificateConfig(DaemonUser(node), noderestriction.DaemonsGroup)
}

// DaemonKubeconfig is DaemonConfig as a kubeconfig file, for the bosun-daemon binary.
func (cp *ControlPlane) DaemonKubeconfig(ctx context.Context, node string) (string, error) {
	if err := cp.InstallDaemonRBAC(ctx); err != nil {
		return "", err
	}
	return cp.ClientCertificateKubeconfig(DaemonUser(node), noderestriction.DaemonsGroup)
}

// daemonRBACFiles are the files of config/rbac that authorize bosun-daemon: the namespace
// of its pull secrets, then its roles and bindings.
var daemonRBACFiles = []string{"00-namespace.yaml", "daemon.yaml"}

// InstallDaemonRBAC creates or updates the objects of config/rbac that authorize
// bosun-daemon, as an operator installs them, so that the agents under test run with the
// permissions they ship with. Installing them again is harmless.
func (cp *ControlPlane) InstallDaemonRBAC(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	for _, name := range daemonRBACFiles {
		path := filepath.Join(root, "config", "rbac", name)
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("reading bosun-daemon's RBAC: %w", err)
		}
		objs, err := DecodeObjects(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		for _, obj := range objs {
			if err := applyObject(ctx, client, obj); err != nil {
				return fmt.Errorf("installing %s: %w", path, err)
			}
		}
	}
	return nil
}

// rbacResources are the resources of the kinds config/rbac holds.
var rbacResources = map[string]schema.GroupVersionResource{
	"Namespace":          {Version: "v1", Resource: "namespaces"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// applyObject server-side applies obj, one of the kinds of rbacResources.
func applyObject(ctx context.Context, client dynamic.Interface, obj *unstructured.Unstructured) error {
	gvr, ok := rbacResources[obj.GetKind()]
	if !ok {
		return fmt.Errorf("%s %s: not a kind the framework installs", obj.GetKind(), obj.GetName())
	}
	var resource dynamic.ResourceInterface = client.Resource(gvr)
	if ns := obj.GetNamespace(); ns != "" {
		resource = client.Resource(gvr).Namespace(ns)
	}
	if _, err := resource.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "bosun-integration", Force: true}); err != nil {
		return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}
