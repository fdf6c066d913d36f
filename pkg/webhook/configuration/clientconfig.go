package configuration

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// defaultServicePort is the port the API server assumes for a service reference without
// one.
const defaultServicePort int32 = 443

// ClientConfig says how the API server reaches the webhook server. Exactly one of URL and
// Service is set.
type ClientConfig struct {
	// URL is the server's base URL, for example "https://127.0.0.1:9876", for control-plane
	// installs where every kube-apiserver has a bosun beside it. A webhook's URL is URL
	// followed by its registration's path.
	URL string
	// Service names the Service in front of the replicas, for in-cluster installs.
	Service *ServiceReference
}

// ServiceReference names the Service the API server calls the webhooks through.
type ServiceReference struct {
	Namespace string
	Name      string
	// Port is the Service's port; 443 when zero, as the API server assumes.
	Port int32
}

// Validate returns what is wrong with c, or nil. The URL rules are the API server's: a
// configuration it would reject would only fail later, on every write.
func (c ClientConfig) Validate() error {
	switch {
	case c.URL == "" && c.Service == nil:
		return errors.New("webhook client config: neither a URL nor a Service is set; exactly one must be")
	case c.URL != "" && c.Service != nil:
		return errors.New("webhook client config: both a URL and a Service are set; exactly one must be")
	case c.Service != nil:
		return c.Service.validate()
	}
	return validateBaseURL(c.URL)
}

func validateBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("webhook URL %q is not a valid URL: %w", base, err)
	}
	var problems []string
	if u.Scheme != "https" {
		problems = append(problems, fmt.Sprintf("scheme %q is not https", u.Scheme))
	}
	if u.Host == "" {
		problems = append(problems, "no host")
	}
	if u.User != nil {
		problems = append(problems, "user information is not allowed")
	}
	// A bare "?" (ForceQuery) passes the API server's own check, but the webhook paths
	// appended to the base would then end up in the query.
	if u.RawQuery != "" || u.ForceQuery {
		problems = append(problems, "a query is not allowed")
	}
	if u.Fragment != "" || strings.Contains(base, "#") {
		problems = append(problems, "a fragment is not allowed")
	}
	if len(problems) > 0 {
		return fmt.Errorf("webhook URL %q: %s; want https://host[:port][/path]", base, strings.Join(problems, "; "))
	}
	return nil
}

func (s *ServiceReference) validate() error {
	var problems []string
	if msgs := validation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
		problems = append(problems, fmt.Sprintf("namespace %q: %s", s.Namespace, strings.Join(msgs, ", ")))
	}
	if msgs := validation.IsDNS1035Label(s.Name); len(msgs) > 0 {
		problems = append(problems, fmt.Sprintf("name %q: %s", s.Name, strings.Join(msgs, ", ")))
	}
	if s.Port != 0 {
		if msgs := validation.IsValidPortNum(int(s.Port)); len(msgs) > 0 {
			problems = append(problems, fmt.Sprintf("port %d: %s", s.Port, strings.Join(msgs, ", ")))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("webhook service %s/%s: %s", s.Namespace, s.Name, strings.Join(problems, "; "))
	}
	return nil
}

// validatePath returns what the API server would object to in path as a webhook's path
// under c. Only a Service path is checked beyond what a registration already guarantees:
// the API server wants each of its segments to be a DNS subdomain (lower case, no "_").
func (c ClientConfig) validatePath(path string) error {
	if c.Service == nil || path == "/" {
		return nil
	}
	for i, segment := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/"), "/") {
		if segment == "" {
			return fmt.Errorf("path %q: segment %d is empty, which a service path may not have", path, i)
		}
		if msgs := validation.IsDNS1123Subdomain(segment); len(msgs) > 0 {
			return fmt.Errorf("path %q: segment %q, as a service path segment: %s", path, segment, strings.Join(msgs, ", "))
		}
	}
	return nil
}

// webhookClientConfig is the clientConfig of the webhook served at path.
func (c ClientConfig) webhookClientConfig(path string, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	config := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
	if c.Service != nil {
		config.Service = &admissionregistrationv1.ServiceReference{
			Namespace: c.Service.Namespace,
			Name:      c.Service.Name,
			Path:      ptr.To(path),
			Port:      ptr.To(cmp.Or(c.Service.Port, defaultServicePort)),
		}
		return config
	}
	// A trailing slash on the base would double the one every path starts with.
	config.URL = ptr.To(strings.TrimSuffix(c.URL, "/") + path)
	return config
}
