package controllermanager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// The leader's controllers and the admission webhooks read pods from one cache: the
// process watches pods through one client, not once for the controllers and once more for
// the webhooks, which would hold every pod of the cluster twice.
func TestLeaderWatchesPodsOnce(t *testing.T) {
	cp := framework.StartTestControlPlane(t, framework.Options{BosunCRDs: true, AuditPolicy: framework.MetadataAuditPolicy})
	// Both the controllers and the webhooks of these read pods.
	started := time.Now()
	framework.StartBosunControllerManager(t, cp, framework.ControllerManagerOptions{
		Controllers: "replicaset,podunavailablebudget,containerrecreaterequest",
		Webhooks:    true,
	})
	// The webhooks' caches have synced once /readyz answers, which the start waits for; the
	// controllers' once /healthz does.
	var readers []string
	err := framework.WaitFor(context.Background(), 30*time.Second, "the manager's pod watches to show in the audit log", func(context.Context) (bool, error) {
		events, err := cp.AuditEvents()
		if err != nil {
			return false, err
		}
		readers = podReaders(events, started)
		return len(readers) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A moment more, for a second cache that would start late.
	time.Sleep(2 * time.Second)
	events, err := cp.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	if readers = podReaders(events, started); len(readers) != 1 {
		t.Errorf("pods are listed or watched by %d clients of bosun-controller-manager, want 1: %q", len(readers), readers)
	}
}

// podReaders are the User-Agents of bosun-controller-manager's clients that listed or
// watched pods of every namespace since started.
func podReaders(events []auditv1.Event, started time.Time) []string {
	var agents []string
	for _, ev := range events {
		ref := ev.ObjectRef
		if ref == nil || ref.Resource != "pods" || ref.Namespace != "" || ref.Subresource != "" ||
			(ev.Verb != "list" && ev.Verb != "watch") || ev.RequestReceivedTimestamp.Time.Before(started) ||
			!strings.Contains(ev.UserAgent, "bosun-controller-manager") {
			continue
		}
		if !slices.Contains(agents, ev.UserAgent) {
			agents = append(agents, ev.UserAgent)
		}
	}
	return agents
}
