package clientbuilder

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestSimpleBuilderGivesEachClientItsOwnConfig(t *testing.T) {
	base := &rest.Config{Host: "https://example.invalid", QPS: 20, Burst: 30, BearerToken: "manager-token"}
	base.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(20, 30)
	b := NewSimpleBuilder(base)

	rs, _ := b.Config("replicaset-controller")
	gc, _ := b.Config("generic-garbage-collector")
	gc.QPS *= 2

	if !strings.HasSuffix(rs.UserAgent, "/replicaset-controller") || !strings.HasPrefix(rs.UserAgent, rest.DefaultKubernetesUserAgent()) {
		t.Errorf("User-Agent %q: want the default one with /replicaset-controller appended", rs.UserAgent)
	}
	if rs.QPS != 20 || rs.Burst != 30 || base.QPS != 20 {
		t.Errorf("changing one client's QPS leaked: rs %v/%d, base %v", rs.QPS, rs.Burst, base.QPS)
	}
	if rs.RateLimiter != nil || gc.RateLimiter != nil {
		t.Error("a client config shares the base rate limiter")
	}
	if rs.BearerToken != "manager-token" {
		t.Error("simple builder dropped the base credentials")
	}
}

func TestWithLimitsOverridesOnlyTheLimits(t *testing.T) {
	base := &rest.Config{Host: "https://example.invalid", QPS: 20, Burst: 30, BearerToken: "manager-token"}
	limited := WithLimits(NewSimpleBuilder(base), Limits{QPS: 50, Burst: 100})

	ads, err := limited.Config("advanced-daemonset-controller")
	if err != nil {
		t.Fatal(err)
	}
	if ads.QPS != 50 || ads.Burst != 100 {
		t.Errorf("limited config QPS/burst = %v/%d, want 50/100", ads.QPS, ads.Burst)
	}
	if !strings.HasSuffix(ads.UserAgent, "/advanced-daemonset-controller") || ads.BearerToken != "manager-token" || ads.RateLimiter != nil {
		t.Errorf("limited config lost what the inner builder set: User-Agent %q, token %q, shared limiter %v", ads.UserAgent, ads.BearerToken, ads.RateLimiter != nil)
	}
	if base.QPS != 20 || base.Burst != 30 {
		t.Errorf("the base changed to %v/%d", base.QPS, base.Burst)
	}

	// Every client built through it, typed or bosun's, runs its own bucket at the limits.
	client, err := limited.Client("advanced-daemonset-controller")
	if err != nil {
		t.Fatal(err)
	}
	bosunClient, err := BosunClient(limited, "advanced-daemonset-controller")
	if err != nil {
		t.Fatal(err)
	}
	typedLimiter := client.CoreV1().RESTClient().GetRateLimiter()
	bosunLimiter := bosunClient.AppsV1alpha1().RESTClient().GetRateLimiter()
	if typedLimiter.QPS() != 50 || bosunLimiter.QPS() != 50 || typedLimiter == bosunLimiter {
		t.Errorf("client limiters: typed %v, bosun %v (shared: %v), want 50 each, separate", typedLimiter.QPS(), bosunLimiter.QPS(), typedLimiter == bosunLimiter)
	}
	unlimited, err := NewSimpleBuilder(base).Client("replicaset-controller")
	if err != nil {
		t.Fatal(err)
	}
	if got := unlimited.CoreV1().RESTClient().GetRateLimiter().QPS(); got != 20 {
		t.Errorf("a client of the plain builder runs at %v QPS, want the base's 20", got)
	}
}

// fakeTokenAPI makes a fake clientset issue tokens "<sa>-<n>" valid for an hour from now() for
// ServiceAccounts that exist in its tracker.
func fakeTokenAPI(now func() time.Time) *fake.Clientset {
	client := fake.NewClientset()
	var mu sync.Mutex
	issued := 0
	client.PrependReactor("create", "serviceaccounts", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "token" {
			return false, nil, nil
		}
		create := action.(clienttesting.CreateAction)
		name := create.(clienttesting.CreateActionImpl).Name
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
		if _, err := client.Tracker().Get(gvr, action.GetNamespace(), name); err != nil {
			return true, nil, apierrors.NewNotFound(gvr.GroupResource(), name)
		}
		mu.Lock()
		issued++
		n := issued
		mu.Unlock()
		req := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		req.Status = authenticationv1.TokenRequestStatus{
			Token:               fmt.Sprintf("%s-%d", name, n),
			ExpirationTimestamp: metav1.NewTime(now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, req, nil
	})
	return client
}

func TestServiceAccountBuilder(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	respondUnauthorized := false
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.UserAgent())
		if respondUnauthorized {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer apiServer.Close()
	lastSeen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return seen[len(seen)-1]
	}

	fakeClock := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	root := fakeTokenAPI(fakeClock.Now)
	b := NewServiceAccountBuilder(&rest.Config{Host: apiServer.URL, BearerToken: "manager-token"}, root.CoreV1(), "kube-system").(*serviceAccountBuilder)
	b.clock = fakeClock

	client, err := b.Client("replicaset-controller")
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		t.Helper()
		_, _ = client.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{})
	}

	get()
	if got := lastSeen(); !strings.HasPrefix(got, "Bearer replicaset-controller-1 ") || !strings.HasSuffix(got, "/replicaset-controller") {
		t.Fatalf("first request carried %q; want the ServiceAccount's first token and the client name", got)
	}
	if _, err := root.CoreV1().ServiceAccounts("kube-system").Get(context.Background(), "replicaset-controller", metav1.GetOptions{}); err != nil {
		t.Errorf("missing ServiceAccount was not created: %v", err)
	}

	fakeClock.SetTime(fakeClock.Now().Add(47 * time.Minute))
	get()
	if got := lastSeen(); !strings.HasPrefix(got, "Bearer replicaset-controller-1 ") {
		t.Errorf("before 80%% of the lifetime: %q; want the cached token", got)
	}

	fakeClock.SetTime(fakeClock.Now().Add(2 * time.Minute)) // 49 min > 48 min
	get()
	if got := lastSeen(); !strings.HasPrefix(got, "Bearer replicaset-controller-2 ") {
		t.Errorf("after 80%% of the lifetime: %q; want a renewed token", got)
	}

	mu.Lock()
	respondUnauthorized = true
	mu.Unlock()
	get()
	mu.Lock()
	respondUnauthorized = false
	mu.Unlock()
	get()
	if got := lastSeen(); !strings.HasPrefix(got, "Bearer replicaset-controller-3 ") {
		t.Errorf("after a 401: %q; want a new token", got)
	}
	for _, s := range seen {
		if strings.Contains(s, "manager-token") {
			t.Errorf("request carried the manager's own credentials: %q", s)
		}
	}
}

func TestBosunClientSpeaksJSON(t *testing.T) {
	var accept string
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ContainerRecreateRequestList","apiVersion":"apps.kruise.io/v1alpha1","items":[]}`))
	}))
	defer apiServer.Close()
	base := &rest.Config{Host: apiServer.URL}
	base.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := BosunClient(NewSimpleBuilder(base), "nodeimage-agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.AppsV1alpha1().ContainerRecreateRequests("").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if accept != "application/json" {
		t.Errorf("Accept %q, want application/json", accept)
	}
}
