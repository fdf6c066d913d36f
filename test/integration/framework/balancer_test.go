package framework_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// A TCP balancer passes no connection to a backend that is not ready, nor to one that
// refuses connections: every connection lands on the one backend that is both up and ready.
func TestBalancerTCPSkipsUnreadyAndRefusingBackends(t *testing.T) {
	unready := startEchoServer(t, "unready")
	refusing := closedPort(t)
	up := startEchoServer(t, "up")
	backends := []string{unready, refusing, up}
	balancer, addr := startTestBalancer(t, framework.BalancerOptions{
		Backends: backends,
		Ready:    func(_ context.Context, i int) bool { return i != 0 },
	})

	for i := range 6 {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "hello %d\n", i); err != nil {
			t.Fatal(err)
		}
		answer := make([]byte, 64)
		n, err := conn.Read(answer)
		conn.Close()
		if want := fmt.Sprintf("up: hello %d\n", i); err != nil || string(answer[:n]) != want {
			t.Errorf("connection %d: read %q (%v), want %q", i, answer[:n], err, want)
		}
	}
	stats := balancer.Stats()
	if !slices.Equal(stats.Served, []int64{0, 0, 6}) || stats.Refused == 0 || stats.Unserved != 0 {
		t.Errorf("stats %+v, want all 6 connections served by the last backend after at least one refusal", stats)
	}
}

// An HTTP balancer sends a request again to the next backend when the connection to its
// backend breaks before the answer, and passes any answer back as it is, errors included.
func TestBalancerHTTPRetriesBrokenCalls(t *testing.T) {
	// The first backend reads each request and dies on it, as a SIGKILLed server would.
	dying := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	dying.StartTLS()
	t.Cleanup(dying.Close)
	answering := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/unready" {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		_, _ = w.Write(append([]byte("answered: "), body...))
	}))
	answering.TLS = dying.TLS // one certificate, as replicas sharing a Secret serve
	answering.StartTLS()
	t.Cleanup(answering.Close)

	// httptest's certificate is valid for 127.0.0.1: the balancer serves it too.
	roots := x509.NewCertPool()
	roots.AddCert(dying.Certificate())
	balancer, addr := startTestBalancer(t, framework.BalancerOptions{
		Backends: []string{dying.Listener.Addr().String(), answering.Listener.Addr().String()},
		HTTP: &framework.BalancerHTTP{
			Certificate: dying.TLS.Certificates[0],
			BackendTLS:  &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"},
		},
	})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	t.Cleanup(client.CloseIdleConnections)

	for i := range 4 {
		body := fmt.Sprintf(`{"call":%d}`, i)
		resp, err := client.Post("https://"+addr+"/review", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(answer) != "answered: "+body || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("call %d: HTTP %d %q (%s), want 200 %q", i, resp.StatusCode, answer, resp.Header.Get("Content-Type"), "answered: "+body)
		}
	}
	resp, err := client.Post("https://"+addr+"/unready", "application/json", bytes.NewReader([]byte("{}")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a backend's 503 reached the client as HTTP %d, want it passed back as it is", resp.StatusCode)
	}
	stats := balancer.Stats()
	if stats.Served[0] != 0 || stats.Served[1] != 5 || stats.Broken < 2 || stats.Unserved != 0 {
		t.Errorf("stats %+v, want all 5 answers from the second backend, after at least 2 broken calls on the first", stats)
	}
}

// startTestBalancer starts a balancer on a loopback port and returns it with its address.
func startTestBalancer(t *testing.T, opts framework.BalancerOptions) (*framework.Balancer, string) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return framework.StartBalancer(t, listener, opts), listener.Addr().String()
}

// startEchoServer answers every line it reads on a connection with "<name>: <line>".
func startEchoServer(t *testing.T, name string) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				line := make([]byte, 64)
				n, err := conn.Read(line)
				if err != nil {
					return
				}
				_, _ = fmt.Fprintf(conn, "%s: %s", name, line[:n])
			}()
		}
	}()
	return listener.Addr().String()
}

// closedPort returns a loopback address that refuses connections.
func closedPort(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	listener.Close()
	return addr
}
