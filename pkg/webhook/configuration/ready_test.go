package configuration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
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

// Every CRD key counts: not yet looked at, it is not known to point at this replica.
func TestReadyCheckCoversTheCRDs(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, testCA, testCRD(daemonSetsCRD),
		with(testCRD(pubsCRD), func(o map[string]any) {
			unmanaged(o)
			setField(o, kruiseClientConfig, "spec", "conversion", "webhook", "clientConfig")
		}))
	f.syncBoth()
	err := readiness(f)
	for _, name := range ConversionCRDNames() {
		if err == nil || !strings.Contains(err.Error(), name+": not written yet") {
			t.Errorf("before the CRDs' syncs: %v, want %s not written yet", err, name)
		}
	}

	for _, name := range ConversionCRDNames() {
		if err := f.syncCRD(name); err != nil {
			t.Fatal(err)
		}
	}
	err = readiness(f)
	if err == nil || !strings.Contains(err.Error(), pubsCRD+": CustomResourceDefinition "+pubsCRD+" is not labelled") ||
		strings.Contains(err.Error(), daemonSetsCRD) || strings.Contains(err.Error(), crrsCRD) {
		t.Errorf("readiness %v, want only the unmanaged CRD reported", err)
	}

	// Deleted, it no longer stands in the way.
	if err := f.dyn.Resource(crdResource).Delete(f.ctx, pubsCRD, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settleCRDs()
	if err := f.syncCRD(pubsCRD); err != nil {
		t.Fatal(err)
	}
	if err := readiness(f); err != nil {
		t.Errorf("readiness after the unmanaged CRD was deleted: %v", err)
	}
}

// A CRD key counts as settled once its last sync wrote it (or found nothing to write) or
// met a problem only a person can fix; waiting for a CA bundle, a conflict, or no sync at
// all keep the admission caches waiting.
func TestConversionSettled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcomes map[string]error
		want     bool
	}{
		{"not synced", map[string]error{}, false},
		{"written", map[string]error{"a": nil, "b": nil}, true},
		{"one not synced", map[string]error{"a": nil}, false},
		{"no CA yet", map[string]error{"a": nil, "b": errNoCABundle}, false},
		{"conflict", map[string]error{"a": nil, "b": errors.New("the object has been modified")}, false},
		{"someone else's", map[string]error{"a": nil, "b": &reportedProblem{msg: "not managed"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o syncOutcomes
			for key, err := range tc.outcomes {
				o.record(key, err)
			}
			if got := o.settled([]string{"a", "b"}); got != tc.want {
				t.Errorf("settled = %v, want %v", got, tc.want)
			}
		})
	}
}

// The admission caches start once the last CRD's outcome is recorded (the wait wakes on
// the record itself) and the API server has had time to replace the storage of a CRD the
// writer updated; the wait gives up only when its context ends.
func TestWaitForConversionWrittenWakesOnTheLastOutcome(t *testing.T) {
	defer func(d time.Duration) { crdStorageSwap = d }(crdStorageSwap)
	crdStorageSwap = 300 * time.Millisecond
	f := newCRDFixture(t, testURLConfig, testCA, testCRD(daemonSetsCRD))
	names := ConversionCRDNames()

	ended, cancel := context.WithCancel(f.ctx)
	cancel()
	if f.w.WaitForConversionWritten(ended) {
		t.Fatal("with no CRD synced and the context ended, the wait reported the conversion written")
	}

	done := make(chan time.Time)
	go func() {
		if f.w.WaitForConversionWritten(f.ctx) {
			done <- time.Now()
		}
		close(done)
	}()
	var beforeWrite time.Time
	for i, name := range names {
		if name == daemonSetsCRD {
			beforeWrite = time.Now()
		}
		if err := f.syncCRD(name); err != nil {
			t.Fatal(err)
		}
		if i < len(names)-1 {
			select {
			case <-done:
				t.Fatalf("the wait ended with %s still to sync", strings.Join(names[i+1:], ", "))
			default:
			}
		}
	}
	if writes := f.crdWrites(); len(writes) != 1 || writes[0].GetVerb() != "update" {
		t.Fatalf("CRD writes %v, want the update of %s", writes, daemonSetsCRD)
	}
	select {
	case returned, ok := <-done:
		if !ok {
			t.Fatal("the wait reported the conversion not written after every CRD synced")
		}
		if waited := returned.Sub(beforeWrite); waited < crdStorageSwap {
			t.Errorf("the wait ended %v after the CRD update, before the API server's storage swap (%v)", waited, crdStorageSwap)
		}
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("the wait did not end after every CRD synced")
	}
}
