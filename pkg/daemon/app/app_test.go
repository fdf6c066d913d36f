package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	bosunfake "github.com/bosun-dev/client-go/clientset/versioned/fake"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/bosun-dev/bosun/pkg/cmdutil"
	"github.com/bosun-dev/bosun/pkg/daemon/options"
	"github.com/bosun-dev/bosun/pkg/features"
)

func TestCommandRequiresNodeName(t *testing.T) {
	t.Setenv(options.NodeNameEnv, "")
	cmd := newCommand(features.NewFeatureGate())
	var stderr bytes.Buffer
	cmd.SetErr(&stderr)
	// As cli.Run does: the command's own output is all that is printed.
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs([]string{"--master=https://192.0.2.1:1"})
	if err := cmd.Execute(); !errors.Is(err, cmdutil.ErrInvalidFlags) {
		t.Fatalf("Execute = %v, want ErrInvalidFlags", err)
	}
	if got := stderr.String(); got != "Error: --node-name (or NODE_NAME) is required\n" {
		t.Errorf("stderr %q", got)
	}
}

// TestScopedInformersOnlyListTheirNode starts the scoped informers against fake clientsets and
// checks the selector of every LIST and WATCH they send.
func TestScopedInformersOnlyListTheirNode(t *testing.T) {
	kube := fake.NewClientset()
	bosun := bosunfake.NewClientset()
	scoped := newScopedInformers(kube, bosun, "node-a", time.Hour)
	scoped.requestCoreInformers()
	// An agent asking for pods gets only this node's.
	scoped.pods.Core().V1().Pods().Informer()

	ctx, cancel := context.WithCancel(context.Background())
	scoped.start(ctx)
	if err := scoped.waitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	// A reflector starts its watch after its list has synced the cache: on a busy machine
	// the last watches come after waitForSync returns.
	watching := func() bool {
		watched := map[string]bool{}
		for _, action := range append(kube.Actions(), bosun.Actions()...) {
			if action.GetVerb() == "watch" {
				watched[action.GetResource().Resource] = true
			}
		}
		return len(watched) >= 4 // the four resources of want below
	}
	for deadline := time.Now().Add(30 * time.Second); !watching() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	scoped.shutdown()

	want := map[string]string{
		"nodes":                     "fields=metadata.name=node-a labels=",
		"pods":                      "fields=spec.nodeName=node-a labels=",
		"nodeimages":                "fields=metadata.name=node-a labels=",
		"containerrecreaterequests": "fields= labels=crr.apps.kruise.io/active=true,crr.apps.kruise.io/node-name=node-a",
	}
	seen := map[string]bool{}
	for _, action := range append(kube.Actions(), bosun.Actions()...) {
		var restrictions clienttesting.ListRestrictions
		switch a := action.(type) {
		case clienttesting.ListAction:
			restrictions = a.GetListRestrictions()
		case clienttesting.WatchAction:
			w := a.GetWatchRestrictions()
			restrictions = clienttesting.ListRestrictions{Labels: w.Labels, Fields: w.Fields}
		default:
			t.Errorf("unexpected %s of %s", action.GetVerb(), action.GetResource().Resource)
			continue
		}
		resource := action.GetResource().Resource
		got := "fields=" + restrictions.Fields.String() + " labels=" + restrictions.Labels.String()
		if want[resource] != got {
			t.Errorf("%s %s with %q, want %q", action.GetVerb(), resource, got, want[resource])
		}
		seen[resource+" "+action.GetVerb()] = true
	}
	for resource := range want {
		if !seen[resource+" list"] || !seen[resource+" watch"] {
			t.Errorf("%s was not listed and watched (seen %v)", resource, seen)
		}
	}
}

func TestReadyzNeedsRuntime(t *testing.T) {
	runtimeErr := errors.New("no runtime")
	runtime := healthz.NamedCheck("cri", func(*http.Request) error { return runtimeErr })
	terminating := make(chan struct{})
	h := newHealthChecks(runtime, terminating)

	get := func(set http.Handler, url string) (int, string) {
		rec := httptest.NewRecorder()
		set.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body)
	}
	if code, body := get(h.Readyz, "/readyz"); code != 500 || body != "[+]informer-sync ok\n[-]cri failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n" {
		t.Errorf("runtime down: %d %q", code, body)
	}
	if code, body := get(h.Livez, "/livez?verbose"); code != 200 || !strings.HasPrefix(body, "[+]ping ok") {
		t.Errorf("livez must not depend on the runtime: %d %q", code, body)
	}
	runtimeErr = nil
	if code, _ := get(h.Readyz, "/readyz"); code != 200 {
		t.Errorf("runtime up: %d", code)
	}
	close(terminating)
	if code, _ := get(h.Readyz, "/readyz"); code != 500 {
		t.Errorf("terminating: %d, want 500", code)
	}
}
