package configuration

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

func readiness(f *fixture) error {
	return f.w.ReadyCheck().Check(&http.Request{})
}

func TestReadyCheckPassesOnceBothConfigurationsAreWritten(t *testing.T) {
	f := newFixture(t, testRegistrations(), testURLConfig, nil)
	if name := f.w.ReadyCheck().Name(); name != "webhook-configuration" {
		t.Errorf("check name %q", name)
	}
	err := readiness(f)
	if err == nil || !strings.Contains(err.Error(), MutatingName+": not written yet") || !strings.Contains(err.Error(), ValidatingName+": not written yet") {
		t.Fatalf("before any sync: %v, want both configurations not written yet", err)
	}

	f.syncBoth()
	if err := readiness(f); err == nil || !strings.Contains(err.Error(), "waiting for the CA bundle") {
		t.Fatalf("without a CA bundle: %v, want waiting for the CA bundle", err)
	}

	f.ca.set(testCA)
	f.sync(MutatingName)
	if err := readiness(f); err == nil || strings.Contains(err.Error(), MutatingName) || !strings.Contains(err.Error(), ValidatingName) {
		t.Fatalf("after writing only the mutating configuration: %v, want only the validating one reported", err)
	}
	f.sync(ValidatingName)
	if err := readiness(f); err != nil {
		t.Fatalf("after writing both: %v", err)
	}
}

func TestReadyCheckFailsWhileAWriteFails(t *testing.T) {
	f := newFixture(t, testRegistrations(), testURLConfig, testCA)
	f.client.PrependReactor("create", "validatingwebhookconfigurations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is down")
	})
	f.sync(MutatingName)
	if err := f.w.sync(f.ctx, ValidatingName); err == nil {
		t.Fatal("the failing create returned no error")
	}
	err := readiness(f)
	if err == nil || !strings.Contains(err.Error(), ValidatingName+": creating webhook configuration") || !strings.Contains(err.Error(), "etcd is down") {
		t.Fatalf("readiness %v, want the failed create", err)
	}

	// Once the write goes through, the replica is ready again.
	f.client.ReactionChain = f.client.ReactionChain[1:]
	f.sync(ValidatingName)
	if err := readiness(f); err != nil {
		t.Fatalf("after the write succeeded: %v", err)
	}
}
