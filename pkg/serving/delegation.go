package serving

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// The API server publishes the CAs and front-proxy header names that delegated
// authenticators trust in this ConfigMap.
const (
	authenticationConfigMapNamespace = "kube-system"
	authenticationConfigMapName      = "extension-apiserver-authentication"
)

// delegationClientUserAgent is appended to the default User-Agent of the client that sends
// TokenReviews and SubjectAccessReviews.
const delegationClientUserAgent = "delegated-auth"

// applyAuthentication fills info with an authenticator that trusts client certificates,
// front-proxy headers and (through TokenReview) bearer tokens.
//
// With --authentication-kubeconfig set, upstream's options do the work unchanged. Without it,
// upstream would try the in-cluster configuration and, outside a pod, silently disable token
// authentication; bosun delegates through its main client configuration instead, so that
// authenticated /metrics scraping works without extra files.
func applyAuthentication(o *apiserveroptions.DelegatingAuthenticationOptions, mainConfig *rest.Config,
	info *genericapiserver.AuthenticationInfo, servingInfo *genericapiserver.SecureServingInfo) error {
	if o.RemoteKubeConfigFile != "" || mainConfig == nil {
		return o.ApplyTo(info, servingInfo, nil)
	}
	client, err := delegationClient(mainConfig)
	if err != nil {
		return err
	}
	return delegateAuthentication(context.Background(), o, client, info, servingInfo)
}

// delegateAuthentication builds the authenticator from o with client as the path to the API
// server.
func delegateAuthentication(ctx context.Context, o *apiserveroptions.DelegatingAuthenticationOptions, client kubernetes.Interface,
	info *genericapiserver.AuthenticationInfo, servingInfo *genericapiserver.SecureServingInfo) error {
	cfg := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: true},
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: o.TokenRequestTimeout,
		WebhookRetryBackoff:      o.WebhookRetryBackoff,
		CacheTTL:                 o.CacheTTL,
	}

	// Client certificates: an explicit CA wins; otherwise trust the CA the API server
	// publishes, kept up to date by a controller that the serving code runs.
	var clientCA dynamiccertificates.CAContentProvider
	var err error
	switch {
	case o.ClientCert.ClientCA != "" || o.ClientCert.CAContentProvider != nil:
		clientCA, err = o.ClientCert.GetClientCAContentProvider()
		if err != nil {
			return fmt.Errorf("loading --client-ca-file: %w", err)
		}
	case !o.SkipInClusterLookup:
		clientCA, err = dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca",
			authenticationConfigMapNamespace, authenticationConfigMapName, "client-ca-file", client)
		if err != nil {
			return fmt.Errorf("watching the cluster's client CA: %w", err)
		}
	}
	if clientCA != nil {
		cfg.ClientCertificateCAContentProvider = clientCA
		if err := info.ApplyClientCert(clientCA, servingInfo); err != nil {
			return fmt.Errorf("trusting the client CA: %w", err)
		}
	}

	// Front-proxy (request header) authentication, same precedence.
	var requestHeader *authenticatorfactory.RequestHeaderConfig
	switch {
	case o.RequestHeader.ClientCAFile != "":
		requestHeader, err = o.RequestHeader.ToAuthenticationRequestHeaderConfig()
		if err != nil {
			return fmt.Errorf("loading --requestheader-client-ca-file: %w", err)
		}
	case !o.SkipInClusterLookup:
		requestHeader, err = requestHeaderFromCluster(ctx, client)
		if err != nil {
			if !o.TolerateInClusterLookupFailure {
				return err
			}
			klog.FromContext(ctx).Info("Warning: continuing without front-proxy authentication; set --authentication-tolerate-lookup-failure=false to make this fatal", "err", err)
			requestHeader = nil
		}
	}
	if requestHeader != nil {
		cfg.RequestHeaderConfig = requestHeader
		info.RequestHeaderConfig = requestHeader
		if err := info.ApplyClientCert(requestHeader.CAContentProvider, servingInfo); err != nil {
			return fmt.Errorf("trusting the front-proxy CA: %w", err)
		}
	}

	info.Authenticator, _, err = cfg.New()
	if err != nil {
		return fmt.Errorf("building the authenticator: %w", err)
	}
	return nil
}

// requestHeaderFromCluster reads the front-proxy CA and header names from the API server's
// published ConfigMap and keeps them current.
func requestHeaderFromCluster(ctx context.Context, client kubernetes.Interface) (*authenticatorfactory.RequestHeaderConfig, error) {
	caController, err := dynamiccertificates.NewDynamicCAFromConfigMapController("requestheader-client-ca",
		authenticationConfigMapNamespace, authenticationConfigMapName, "requestheader-client-ca-file", client)
	if err != nil {
		return nil, fmt.Errorf("watching the cluster's front-proxy CA: %w", err)
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(
		authenticationConfigMapName, authenticationConfigMapNamespace, client,
		"requestheader-username-headers",
		"requestheader-uid-headers",
		"requestheader-group-headers",
		"requestheader-extra-headers-prefix",
		"requestheader-allowed-names",
	)
	// The combined controller is both the CA provider and the header provider; because it is
	// handed to the serving code as a client CA, that code also runs it.
	dynamic := &apiserveroptions.DynamicRequestHeaderController{
		ConfigMapCAController:              caController,
		RequestHeaderAuthRequestController: headers,
	}
	if err := dynamic.RunOnce(ctx); err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", authenticationConfigMapNamespace, authenticationConfigMapName, err)
	}
	return &authenticatorfactory.RequestHeaderConfig{
		CAContentProvider:   dynamic,
		UsernameHeaders:     headerrequest.StringSliceProviderFunc(dynamic.UsernameHeaders),
		UIDHeaders:          headerrequest.StringSliceProviderFunc(dynamic.UIDHeaders),
		GroupHeaders:        headerrequest.StringSliceProviderFunc(dynamic.GroupHeaders),
		ExtraHeaderPrefixes: headerrequest.StringSliceProviderFunc(dynamic.ExtraHeaderPrefixes),
		AllowedClientNames:  headerrequest.StringSliceProviderFunc(dynamic.AllowedClientNames),
	}, nil
}

// applyAuthorization fills info with an authorizer that lets the always-allowed groups and
// paths through and asks the API server (SubjectAccessReview) about everything else. The
// kubeconfig fallback is the same as for authentication.
func applyAuthorization(o *apiserveroptions.DelegatingAuthorizationOptions, mainConfig *rest.Config, info *genericapiserver.AuthorizationInfo) error {
	if o.RemoteKubeConfigFile != "" || mainConfig == nil {
		return o.ApplyTo(info)
	}
	config := rest.CopyConfig(mainConfig)
	config.Timeout = o.ClientTimeout
	client, err := delegationClient(config)
	if err != nil {
		return err
	}
	info.Authorizer, err = delegateAuthorization(o, client)
	return err
}

// delegateAuthorization builds the authorizer from o with client as the path to the API server.
func delegateAuthorization(o *apiserveroptions.DelegatingAuthorizationOptions, client kubernetes.Interface) (authorizer.Authorizer, error) {
	var authorizers []authorizer.Authorizer
	if len(o.AlwaysAllowGroups) > 0 {
		authorizers = append(authorizers, authorizerfactory.NewPrivilegedGroups(o.AlwaysAllowGroups...))
	}
	if len(o.AlwaysAllowPaths) > 0 {
		byPath, err := path.NewAuthorizer(o.AlwaysAllowPaths)
		if err != nil {
			return nil, fmt.Errorf("parsing --authorization-always-allow-paths: %w", err)
		}
		authorizers = append(authorizers, byPath)
	}
	subjectAccessReview, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             o.AllowCacheTTL,
		DenyCacheTTL:              o.DenyCacheTTL,
		WebhookRetryBackoff:       o.WebhookRetryBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("building the SubjectAccessReview authorizer: %w", err)
	}
	authorizers = append(authorizers, subjectAccessReview)
	return union.New(authorizers...), nil
}

// delegationClient builds the client for review requests from a copy of base. Its limits are
// high because every request to the endpoint may cause a review while the caches are cold.
func delegationClient(base *rest.Config) (kubernetes.Interface, error) {
	config := rest.AddUserAgent(rest.CopyConfig(base), delegationClientUserAgent)
	config.QPS = 200
	config.Burst = 400
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the delegation client: %w", err)
	}
	return client, nil
}
