package options

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/bosun-dev/bosun/pkg/webhook/configuration"
	"github.com/bosun-dev/bosun/pkg/webhook/noderestriction"
)

// Webhook defaults. The port is OpenKruise's, so that firewall rules and Services written
// for it carry over.
const (
	DefaultWebhookPort        = 9876
	DefaultWebhookBindAddress = "0.0.0.0"
	DefaultWebhookSecret      = "kube-system/bosun-webhook-certs"
	DefaultWebhookServicePort = 443
)

// groupWebhook is the --help group of the admission webhook flags.
const groupWebhook = "admission webhooks"

// WebhookOptions are the flags of the admission webhook server, which every replica runs,
// leader or not.
type WebhookOptions struct {
	// Port is --webhook-port; 0 serves no webhooks and writes no webhook configuration.
	Port int
	// BindAddress is --webhook-bind-address.
	BindAddress string
	// CertDir is --webhook-cert-dir: a directory with tls.crt, tls.key and ca.crt provided by
	// the user (cert-manager). Empty means certificates shared through Secret.
	CertDir string
	// Secret is --webhook-secret, <namespace>/<name> of the generated certificates.
	Secret string
	// URL is --webhook-url, how the API server reaches the webhooks; empty means
	// https://127.0.0.1:<port> unless Service is set.
	URL string
	// Service is --webhook-service, <namespace>/<name> of a Service in front of the replicas.
	Service string
	// ServicePort is --webhook-service-port, the Service's port.
	ServicePort int32
	// DaemonServiceAccounts is --daemon-service-accounts, <namespace>/<name> of the service
	// accounts bosun-daemon runs as, which the node restriction webhooks keep to their
	// node as they do the per-node users of group bosun:daemons.
	DaemonServiceAccounts []string
}

// NewWebhookOptions returns the defaults.
func NewWebhookOptions() *WebhookOptions {
	return &WebhookOptions{
		Port:                  DefaultWebhookPort,
		BindAddress:           DefaultWebhookBindAddress,
		Secret:                DefaultWebhookSecret,
		ServicePort:           DefaultWebhookServicePort,
		DaemonServiceAccounts: []string{noderestriction.DefaultDaemonServiceAccount},
	}
}

// AddFlags adds the webhook flags to fs.
func (o *WebhookOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Port, "webhook-port", o.Port,
		"The port the admission webhook server listens on (TLS). 0 disables the webhooks: nothing is served and no webhook configuration is written.")
	fs.StringVar(&o.BindAddress, "webhook-bind-address", o.BindAddress,
		"The IP address the admission webhook server listens on.")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", o.CertDir,
		"A directory holding the webhook server's tls.crt and tls.key, and ca.crt, the CA written into the webhook configurations' caBundle (a cert-manager Certificate's Secret mounted as a volume has all three). The files are reloaded when they change. When empty, the replicas share a generated CA and certificate through --webhook-secret.")
	fs.StringVar(&o.Secret, "webhook-secret", o.Secret,
		"<namespace>/<name> of the Secret in which the replicas share the generated webhook CA and serving certificate; the first replica creates it and any replica rotates it before it expires. Ignored with --webhook-cert-dir.")
	fs.StringVar(&o.URL, "webhook-url", o.URL,
		"The https base URL through which the API server calls the webhooks, written into the webhook configurations. Defaults to https://127.0.0.1:<webhook-port>, for control-plane nodes where every kube-apiserver has a bosun-controller-manager beside it. Mutually exclusive with --webhook-service.")
	fs.StringVar(&o.Service, "webhook-service", o.Service,
		"<namespace>/<name> of a Service in front of the bosun-controller-manager replicas through which the API server calls the webhooks, for installs inside the cluster. Mutually exclusive with --webhook-url.")
	fs.Int32Var(&o.ServicePort, "webhook-service-port", o.ServicePort,
		"The port of --webhook-service.")
	fs.StringSliceVar(&o.DaemonServiceAccounts, "daemon-service-accounts", o.DaemonServiceAccounts,
		"<namespace>/<name> of the service accounts bosun-daemon runs as (comma-separated; empty for none). Like the users of group bosun:daemons named bosun:daemon:<node>, they may write only the status of their own node's NodeImage and of the ContainerRecreateRequests of pods on their node; their node is the one their pod's token names (extra "+noderestriction.NodeNameExtra+"), and a token naming none may write neither kind.")
}

// Enabled reports whether webhooks are served.
func (o *WebhookOptions) Enabled() bool { return o.Port != 0 }

// Validate returns every problem with the webhook flags.
func (o *WebhookOptions) Validate() []error {
	var errs []error
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port must be between 0 and 65535, got %d", o.Port))
	}
	if !o.Enabled() {
		return errs
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--webhook-bind-address must be an IP address, got %q", o.BindAddress))
	}
	if o.CertDir != "" {
		if info, err := os.Stat(o.CertDir); err != nil {
			errs = append(errs, fmt.Errorf("--webhook-cert-dir: %w", err))
		} else if !info.IsDir() {
			errs = append(errs, fmt.Errorf("--webhook-cert-dir %s is not a directory", o.CertDir))
		}
	} else if _, _, err := splitNamespacedName("--webhook-secret", o.Secret); err != nil {
		errs = append(errs, err)
	}
	if err := (noderestriction.Identities{ServiceAccounts: o.DaemonServiceAccounts}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--daemon-service-accounts: %w", err))
	}
	if o.URL != "" && o.Service != "" {
		errs = append(errs, errors.New("--webhook-url and --webhook-service are mutually exclusive: the API server reaches the webhooks one way"))
		return errs
	}
	if o.Service != "" {
		if _, _, err := splitNamespacedName("--webhook-service", o.Service); err != nil {
			errs = append(errs, err)
			return errs
		}
	}
	clientConfig := o.ClientConfig()
	if err := clientConfig.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--webhook-url or --webhook-service: %w", err))
	}
	return errs
}

// ClientConfig returns how the API server reaches the webhooks. Call it only after
// Validate passed.
func (o *WebhookOptions) ClientConfig() configuration.ClientConfig {
	if o.Service != "" {
		namespace, name, _ := splitNamespacedName("--webhook-service", o.Service)
		return configuration.ClientConfig{Service: &configuration.ServiceReference{Namespace: namespace, Name: name, Port: o.ServicePort}}
	}
	if o.URL != "" {
		return configuration.ClientConfig{URL: strings.TrimSuffix(o.URL, "/")}
	}
	return configuration.ClientConfig{URL: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port))}
}

// CertificateHosts returns the names the generated serving certificate must be valid for:
// the URL's host, or the names the API server uses for the Service.
func (o *WebhookOptions) CertificateHosts() []string {
	clientConfig := o.ClientConfig()
	if s := clientConfig.Service; s != nil {
		return []string{
			s.Name + "." + s.Namespace + ".svc",
			s.Name + "." + s.Namespace + ".svc.cluster.local",
			s.Name + "." + s.Namespace,
		}
	}
	u, err := url.Parse(clientConfig.URL)
	if err != nil {
		return nil
	}
	return []string{u.Hostname()}
}

// SecretName returns the namespace and name of --webhook-secret. Call it only after
// Validate passed.
func (o *WebhookOptions) SecretName() (namespace, name string) {
	namespace, name, _ = splitNamespacedName("--webhook-secret", o.Secret)
	return namespace, name
}

// splitNamespacedName parses "<namespace>/<name>", both parts valid object names.
func splitNamespacedName(flag, value string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(value, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%s must be <namespace>/<name>, got %q", flag, value)
	}
	if problems := validation.IsDNS1123Label(namespace); len(problems) > 0 {
		return "", "", fmt.Errorf("%s: namespace %q: %s", flag, namespace, strings.Join(problems, "; "))
	}
	if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
		return "", "", fmt.Errorf("%s: name %q: %s", flag, name, strings.Join(problems, "; "))
	}
	return namespace, name, nil
}
