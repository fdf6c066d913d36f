package serving

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// fakeAPIServer answers TokenReviews for one token and allows one user to get one path. It
// stands in for the kube-apiserver the delegating authenticator and authorizer call.
func fakeAPIServer(t *testing.T, token, user, allowedPath string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		var review authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if review.Spec.Token == token {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		attrs := review.Spec.NonResourceAttributes
		review.Status.Allowed = review.Spec.User == user && attrs != nil && attrs.Path == allowedPath && attrs.Verb == "get"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestDelegationFallsBackToMainConfig serves over TLS with empty delegation kubeconfigs and
// checks that tokens and permissions are reviewed through the main client configuration.
func TestDelegationFallsBackToMainConfig(t *testing.T) {
	apiServer := fakeAPIServer(t, "good-token", "system:serviceaccount:monitoring:prometheus", "/metrics")
	mainConfig := &rest.Config{Host: apiServer.URL}
	mainConfig.ContentType = "application/json"

	o := NewOptions(10267, "bosun-test")
	o.Authentication.SkipInClusterLookup = true // the fake publishes no client CA ConfigMap
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.SecureServing.Listener = listener
	config, err := o.Config(mainConfig)
	if err != nil {
		t.Fatal(err)
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	stop, err := config.Serve(inner)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := "https://" + listener.Addr().String()
	tests := []struct {
		name     string
		path     string
		token    string
		wantCode int
	}{
		{name: "anonymous healthz is always allowed", path: "/healthz", wantCode: 200},
		{name: "anonymous readyz is always allowed", path: "/readyz", wantCode: 200},
		{name: "anonymous livez is always allowed", path: "/livez", wantCode: 200},
		{name: "anonymous metrics is forbidden", path: "/metrics", wantCode: 403},
		{name: "anonymous debug handler is forbidden", path: "/debug/controllers/garbage-collector-controller/graph", wantCode: 403},
		{name: "unknown token is unauthorized", path: "/metrics", token: "bad-token", wantCode: 401},
		{name: "allowed token gets metrics", path: "/metrics", token: "good-token", wantCode: 200},
		{name: "token gets only what SubjectAccessReview allows", path: "/debug/pprof/", token: "good-token", wantCode: 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, base+tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("GET %s: code %d, want %d", tc.path, resp.StatusCode, tc.wantCode)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := NewOptions(10267, "bosun-controller-manager")
	if o.SecureServing.BindPort != 10267 || o.SecureServing.ServerCert.PairName != "bosun-controller-manager" ||
		o.SecureServing.ServerCert.CertDirectory != "" || o.SecureServing.BindAddress.String() != "0.0.0.0" {
		t.Errorf("secure serving defaults: %+v", o.SecureServing)
	}
	if got := o.Authorization.AlwaysAllowPaths; len(got) != 3 || got[0] != "/healthz" || got[1] != "/readyz" || got[2] != "/livez" {
		t.Errorf("always-allow paths %v", got)
	}
	if errs := o.Validate(); len(errs) != 0 {
		t.Errorf("defaults invalid: %v", errs)
	}
	o.SecureServing.BindPort = 70000
	if errs := o.Validate(); len(errs) == 0 {
		t.Error("port 70000 accepted")
	}
}

func TestPortZeroDisablesServing(t *testing.T) {
	config, err := NewOptions(0, "bosun-test").Config(nil)
	if err != nil || config.SecureServing != nil {
		t.Fatalf("port 0: serving %v, err %v; want disabled", config.SecureServing, err)
	}
	stop, err := config.Serve(http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	// Nothing runs, so stopping must not wait for anything; a blocked stop fails the test
	// through the deadlock guard below.
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Error("stopping disabled serving blocked")
	}
}
