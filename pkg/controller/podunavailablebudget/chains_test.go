package podunavailablebudget

import (
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

// TestSyncChain: the lookup a handler left reads the chain live and queues the budgets
// targeting any workload of it, and no other.
func TestSyncChain(t *testing.T) {
	widget := func(name string) chainLookup {
		return chainLookup{namespace: testNamespace, apiVersion: "example.com/v1", kind: "Widget", name: name, uid: types.UID("uid-" + name)}
	}
	for _, tc := range []struct {
		name   string
		lookup chainLookup
		want   []string
	}{
		{"chain of two Widgets", widget("w"), []string{"ns/by-top", "ns/by-widget"}},
		{"top of the chain", widget("top"), []string{"ns/by-top"}},
		{"Widget that is gone", widget("gone"), nil},
		{"Widget re-created under its name", chainLookup{namespace: testNamespace, apiVersion: "example.com/v1", kind: "Widget", name: "w", uid: "uid-earlier"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := chainFixture(t)
			if err := f.c.syncChain(f.ctx, tc.lookup); err != nil {
				t.Fatalf("syncChain: %v", err)
			}
			if got := f.queue.AddedKeys(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
			if len(f.metadata.Actions()) == 0 {
				t.Error("the chain was not read live")
			}
		})
	}
}

// TestSyncChainFailure: a chain that cannot be read is an error, so that the lookup is
// retried, and queues nothing.
func TestSyncChainFailure(t *testing.T) {
	f := chainFixture(t)
	boom := errors.New("boom")
	f.metadata.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, boom
	})
	err := f.c.syncChain(f.ctx, chainLookup{namespace: testNamespace, apiVersion: "example.com/v1", kind: "Widget", name: "w", uid: "uid-w"})
	if !errors.Is(err, boom) {
		t.Errorf("syncChain error %v, want one wrapping %v", err, boom)
	}
	if got := f.queue.AddedKeys(); len(got) != 0 {
		t.Errorf("queued %v", got)
	}
}
