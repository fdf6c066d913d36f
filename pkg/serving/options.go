// Package serving holds what bosun-controller-manager and bosun-daemon share for their HTTPS
// endpoint: the secure-serving and delegated authentication/authorization flags, the handler
// chain in front of the endpoints, the base mux (health, metrics, profiling) and mutable health
// check sets. Both binaries use it so that operators configure, scrape and probe them alike.
package serving

import (
	"fmt"
	"net"

	apiserver "k8s.io/apiserver/pkg/server"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	netutils "k8s.io/utils/net"
)

// Names of the flag groups these options add flags to; they match the groups of --help.
const (
	SecureServingFlagGroup  = "secure serving"
	AuthenticationFlagGroup = "authentication"
	AuthorizationFlagGroup  = "authorization"
)

// Options are the flags of the HTTPS endpoint.
type Options struct {
	SecureServing  *apiserveroptions.SecureServingOptions
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
}

// NewOptions returns the defaults for a binary that serves on port and names its generated
// self-signed certificate pairName.
func NewOptions(port int, pairName string) *Options {
	secureServing := apiserveroptions.NewSecureServingOptions()
	secureServing.BindPort = port
	secureServing.BindAddress = netutils.ParseIPSloppy("0.0.0.0")
	// No certificate directory by default: the self-signed pair stays in memory unless
	// --cert-dir asks for it to be written.
	secureServing.ServerCert.CertDirectory = ""
	secureServing.ServerCert.PairName = pairName

	// The defaults already skip authorization for /healthz, /readyz and /livez and let
	// system:masters through.
	return &Options{
		SecureServing:  secureServing,
		Authentication: apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:  apiserveroptions.NewDelegatingAuthorizationOptions(),
	}
}

// AddFlags adds the flags to their groups in fss.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	o.SecureServing.AddFlags(fss.FlagSet(SecureServingFlagGroup))
	authn := fss.FlagSet(AuthenticationFlagGroup)
	o.Authentication.AddFlags(authn)
	authz := fss.FlagSet(AuthorizationFlagGroup)
	o.Authorization.AddFlags(authz)

	// Unlike upstream, an empty delegation kubeconfig does not mean "in-cluster or nothing";
	// say so where operators look.
	const fallback = " Optional: when empty, the main client configuration (--kubeconfig, --master or in-cluster) is used."
	authn.Lookup("authentication-kubeconfig").Usage += fallback
	authz.Lookup("authorization-kubeconfig").Usage += fallback
}

// Validate returns every problem with the flags.
func (o *Options) Validate() []error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	return errs
}

// Config is the applied form of Options: the listener with its certificates and the
// authenticator and authorizer guarding it.
type Config struct {
	// SecureServing is nil when serving is disabled (--secure-port=0).
	SecureServing  *apiserver.SecureServingInfo
	Authentication apiserver.AuthenticationInfo
	Authorization  apiserver.AuthorizationInfo
}

// Config opens the listener, loads or generates the serving certificate and builds the
// delegated authenticator and authorizer. mainConfig is the binary's own client
// configuration; it is used for delegation when the delegation kubeconfig flags are empty.
// It may contact the API server (to read the client CA published in kube-system).
func (o *Options) Config(mainConfig *rest.Config) (*Config, error) {
	c := &Config{}
	if o.SecureServing.BindPort == 0 && o.SecureServing.Listener == nil {
		return c, nil
	}
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed serving certificate: %w", err)
	}
	if err := o.SecureServing.ApplyTo(&c.SecureServing); err != nil {
		return nil, fmt.Errorf("setting up secure serving: %w", err)
	}
	if err := applyAuthentication(o.Authentication, mainConfig, &c.Authentication, c.SecureServing); err != nil {
		return nil, fmt.Errorf("setting up delegated authentication: %w", err)
	}
	if err := applyAuthorization(o.Authorization, mainConfig, &c.Authorization); err != nil {
		return nil, fmt.Errorf("setting up delegated authorization: %w", err)
	}
	return c, nil
}
