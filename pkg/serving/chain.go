package serving

import (
	"fmt"
	"net/http"

	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/client-go/kubernetes/scheme"
)

// BuildHandlerChain wraps handler so that a request passes, outermost first: panic recovery,
// request logging, cache-control, request info, authentication, authorization. A nil
// authenticator or authorizer leaves that step out.
func BuildHandlerChain(handler http.Handler, authn *genericapiserver.AuthenticationInfo, authz *genericapiserver.AuthorizationInfo) http.Handler {
	// Every path served here is a non-resource URL, so the empty factory (which knows no API
	// prefixes) classifies requests correctly: authorization asks for verb "get" on the path.
	requestInfoResolver := &apirequest.RequestInfoFactory{}

	if authz != nil && authz.Authorizer != nil {
		handler = genericapifilters.WithAuthorization(handler, authz.Authorizer, scheme.Codecs)
	}
	if authn != nil && authn.Authenticator != nil {
		failed := genericapifilters.Unauthorized(scheme.Codecs)
		handler = genericapifilters.WithAuthentication(handler, authn.Authenticator, failed, nil, authn.RequestHeaderConfig)
	}
	handler = genericapifilters.WithRequestInfo(handler, requestInfoResolver)
	handler = genericapifilters.WithCacheControl(handler)
	handler = genericfilters.WithHTTPLogging(handler)
	handler = genericfilters.WithPanicRecovery(handler, requestInfoResolver)
	return handler
}

// Serve serves handler behind the handler chain until the returned stop function is
// called; stop returns once the server has stopped. With serving disabled (nil
// SecureServing) nothing is served and stop returns at once.
//
// Serving is stopped by the caller rather than by the process' root context on purpose:
// during graceful shutdown the endpoint must keep answering (with /readyz failing) until
// the very end.
func (c *Config) Serve(handler http.Handler) (stop func(), err error) {
	if c.SecureServing == nil {
		return func() {}, nil
	}
	chain := BuildHandlerChain(handler, &c.Authentication, &c.Authorization)
	stopCh := make(chan struct{})
	stopped, _, err := c.SecureServing.Serve(chain, 0, stopCh)
	if err != nil {
		return nil, fmt.Errorf("starting secure serving: %w", err)
	}
	return func() {
		close(stopCh)
		<-stopped
	}, nil
}
