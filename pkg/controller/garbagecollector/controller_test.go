package garbagecollector

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/bosun-dev/bosun/pkg/controller/options"
)

var (
	vertexLine = regexp.MustCompile(`(?m)^  "([^"]+)" \[$`)
	edgeLine   = regexp.MustCompile(`(?m)^  "([^"]+)" -> "([^"]+)";$`)
)

func TestDebuggingHandler(t *testing.T) {
	f := newFixture(t)
	rs := object(replicaSetKind, testNamespace, "web", "rs")
	owner := object(secretKind, testNamespace, "s", "secret")
	f.observeAll(
		rs,
		object(podKind, testNamespace, "web-1", "p1", ownedBy(blocking(rs))),
		object(podKind, testNamespace, "web-2", "p2", ownedBy(blocking(rs))),
		owner,
		object(configMapKind, testNamespace, "c", "cm", ownedBy(ref(owner, nil))),
		object(configMapKind, testNamespace, "lone", "lone"),
	)
	handler := f.c.DebuggingHandler()

	tests := []struct {
		name         string
		method, path string
		wantCode     int
		wantVertices []string
		wantEdges    []string
	}{
		{name: "filtered by the ReplicaSet", method: http.MethodGet, path: "/graph?uid=rs", wantCode: http.StatusOK,
			wantVertices: []string{"p1", "p2", "rs"}, wantEdges: []string{`"p1" -> "rs"`, `"p2" -> "rs"`}},
		{name: "filtered by a pod reaches its siblings through the owner", method: http.MethodGet, path: "/graph?uid=p1", wantCode: http.StatusOK,
			wantVertices: []string{"p1", "p2", "rs"}, wantEdges: []string{`"p1" -> "rs"`, `"p2" -> "rs"`}},
		{name: "repeated uid", method: http.MethodGet, path: "/graph?uid=rs&uid=cm", wantCode: http.StatusOK,
			wantVertices: []string{"cm", "p1", "p2", "rs", "secret"}, wantEdges: []string{`"cm" -> "secret"`, `"p1" -> "rs"`, `"p2" -> "rs"`}},
		{name: "whole graph, lone objects left out", method: http.MethodGet, path: "/graph", wantCode: http.StatusOK,
			wantVertices: []string{"cm", "p1", "p2", "rs", "secret"}, wantEdges: []string{`"cm" -> "secret"`, `"p1" -> "rs"`, `"p2" -> "rs"`}},
		{name: "unknown uid: empty graph", method: http.MethodGet, path: "/graph?uid=nope", wantCode: http.StatusOK},
		{name: "other path", method: http.MethodGet, path: "/other", wantCode: http.StatusNotFound},
		{name: "graph subpath", method: http.MethodGet, path: "/graph/x", wantCode: http.StatusNotFound},
		{name: "root", method: http.MethodGet, path: "/", wantCode: http.StatusNotFound},
		{name: "write method", method: http.MethodPost, path: "/graph", wantCode: http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantCode {
				t.Fatalf("status %d, want %d; body:\n%s", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantCode != http.StatusOK {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != "text/vnd.graphviz" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			body := rec.Body.String()
			if !strings.HasPrefix(body, "strict digraph full {\n") || !strings.HasSuffix(body, "}\n") {
				t.Errorf("not a DOT graph:\n%s", body)
			}
			var vertices, edges []string
			for _, m := range vertexLine.FindAllStringSubmatch(body, -1) {
				vertices = append(vertices, m[1])
			}
			for _, m := range edgeLine.FindAllString(body, -1) {
				edges = append(edges, strings.TrimSpace(strings.TrimSuffix(m, ";")))
			}
			if diff := cmp.Diff(tc.wantVertices, vertices); diff != "" {
				t.Errorf("vertices (-want +got):\n%s\nbody:\n%s", diff, body)
			}
			if diff := cmp.Diff(tc.wantEdges, edges); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHealthCheckIsAPing(t *testing.T) {
	f := newFixture(t)
	if err := f.c.HealthCheck(httptest.NewRequest(http.MethodGet, "/healthz", nil)); err != nil {
		t.Errorf("HealthCheck = %v", err)
	}
}

// TestRunCollects runs the whole collector on the fake client: an object whose owner is
// missing is deleted, one with an existing owner stays, and a resource whose monitor
// never syncs (its list always fails) delays the workers by the sync timeout only.
func TestRunCollects(t *testing.T) {
	rs := object(replicaSetKind, testNamespace, "rs", "RS")
	kept := object(podKind, testNamespace, "kept", "KEPT", ownedBy(blocking(rs)))
	orphan := object(podKind, testNamespace, "orphan", "ORPHAN", ownedBy(ref(object(replicaSetKind, testNamespace, "gone", "GONE"), nil)))
	f := newFixtureWith(t, fixtureOptions{opts: []options.Option{withMonitorSyncTimeout(500 * time.Millisecond)}}, rs, kept, orphan)
	f.client.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("conversion webhook unreachable"))
	})
	f.discovery.set(nil, resourceList("v1", "pods:Pod"), resourceList("apps/v1", "replicasets:ReplicaSet"),
		resourceList("example.com/v1", "widgets:Widget"))
	started := f.informersStarted

	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.c.Run(ctx, 2)
	}()
	time.Sleep(50 * time.Millisecond)
	if len(f.client.Actions()) != 0 {
		t.Error("the collector sent requests before the process started its informers")
	}
	close(started)

	pods := f.client.Resource(podResource).Namespace(testNamespace)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := pods.Get(ctx, "orphan", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod whose owner is missing was not collected; writes: %v", f.writes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := pods.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod with an existing owner: %v", err)
	}
	if f.c.IsSynced(ctx) {
		t.Error("IsSynced with a monitor that cannot list")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if !slices.Contains(f.writes(), "delete pods ns/orphan policy=Background uid=ORPHAN rv=1") {
		t.Errorf("writes: %v", f.writes())
	}
}
