package clientbuilder

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/pods":                   "/pods",
		"/api/v1/namespaces/ns/pods/web-abcde":         "/pods",
		"/api/v1/namespaces/ns/pods/web-abcde/status":  "/pods",
		"/api/v1/namespaces/ns/persistentvolumeclaims": "/persistentvolumeclaims",
		"/api/v1/pods":                   "/pods",
		"/api/v1/nodes/n1/status":        "/nodes",
		"/api/v1/namespaces":             "/namespaces",
		"/api/v1/namespaces/ns":          "/namespaces",
		"/api/v1/namespaces/ns/status":   "/namespaces",
		"/api/v1/namespaces/ns/finalize": "/namespaces",
		"/apis/apps.kruise.io/v1beta1/namespaces/ns/clonesets/web/scale": "apps.kruise.io/clonesets",
		"/apis/apps/v1/namespaces/ns/controllerrevisions":                "apps/controllerrevisions",
		"/apis/apps.kruise.io/v1alpha1/nodeimages/n1":                    "apps.kruise.io/nodeimages",
		"/api":                         "",
		"/apis/apps.kruise.io/v1beta1": "",
		"/version":                     "",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// With limits per resource a client may spend a whole burst on each resource: here two
// pods and two claims at burst 2, where one bucket would make the third request wait. The
// next pod request then waits for its own bucket, which refills once a second, and gives
// up at its context's deadline without reaching the server.
func TestWithLimitsPerResource(t *testing.T) {
	requests := make(chan string, 10)
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests <- r.Method + " " + r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer apiServer.Close()

	limits := Limits{QPS: 1, Burst: 2}
	b := WithLimitsPerResource(NewSimpleBuilder(&rest.Config{Host: apiServer.URL}), limits)
	config, err := b.Config("cloneset-controller")
	if err != nil {
		t.Fatal(err)
	}
	if config.QPS != 1 || config.Burst != 2 {
		t.Errorf("config limits %v/%d, want 1/2 recorded", config.QPS, config.Burst)
	}
	client, err := b.Client("cloneset-controller")
	if err != nil {
		t.Fatal(err)
	}
	if got := client.CoreV1().RESTClient().GetRateLimiter().QPS(); got != 1 {
		t.Errorf("the client's limiter reports %v QPS, want the per-resource 1", got)
	}

	// Far within the one-second refill, however slow the machine: a request that has to
	// wait for a token fails at once (the bucket knows the wait exceeds the deadline).
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	for i := range 2 {
		if _, err := client.CoreV1().Pods("ns").Get(ctx, "x", metav1.GetOptions{}); err != nil {
			t.Fatalf("pod request %d within the burst: %v", i+1, err)
		}
		if _, err := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "x", metav1.GetOptions{}); err != nil {
			t.Fatalf("claim request %d within the burst: %v", i+1, err)
		}
	}
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}}, metav1.UpdateOptions{}); err == nil {
		t.Error("a third pod request (a status write, same bucket) went through a spent burst")
	}
	close(requests)
	var seen []string
	for r := range requests {
		seen = append(seen, r)
	}
	if len(seen) != 4 {
		t.Errorf("the server saw %v, want the 4 requests within the bursts", seen)
	}
}
