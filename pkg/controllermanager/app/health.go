package app

import (
	"errors"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/bosun-dev/bosun/pkg/serving"
)

// leaderElectionHealthTolerance is how long past the lease duration a leader that has not
// renewed keeps passing the leaderElection check; beyond it the process is stuck and should be
// restarted.
const leaderElectionHealthTolerance = 20 * time.Second

// healthChecks are the manager's three health endpoints and the checks wired into them.
type healthChecks struct {
	serving.HealthEndpoints

	informerSync *serving.InformerSync
	// election is nil without leader election.
	election *leaderelection.HealthzAdaptor
	// checksWired is closed once start-up has added every readiness check of this
	// replica (the webhooks' come after serving has started).
	checksWired chan struct{}
}

// readinessChecksWired marks the readiness checks complete: /readyz may pass from now on.
func (h *healthChecks) readinessChecksWired() { close(h.checksWired) }

// newHealthChecks assembles the checks a process starts with:
//   - /healthz: leaderElection (or ping without leader election); each controller adds its own
//     check once built on the leader, so a standby shows only leaderElection.
//   - /livez: ping and leaderElection, the one condition that warrants a restart.
//   - /readyz: ping, startup (failing until readinessChecksWired), informer-sync and shutdown
//     (failing once terminating began, which is when terminating closes); independent of
//     leadership.
func newHealthChecks(leaderElect bool, terminating <-chan struct{}) *healthChecks {
	h := &healthChecks{informerSync: &serving.InformerSync{}, checksWired: make(chan struct{})}
	var healthzChecks []healthz.HealthChecker
	livezChecks := []healthz.HealthChecker{healthz.PingHealthz}
	if leaderElect {
		h.election = leaderelection.NewLeaderHealthzAdaptor(leaderElectionHealthTolerance)
		healthzChecks = append(healthzChecks, h.election)
		livezChecks = append(livezChecks, h.election)
	}
	h.Healthz = serving.NewCheckSet("/healthz", healthzChecks...)
	h.Livez = serving.NewCheckSet("/livez", livezChecks...)
	// Serving starts before the webhooks add their checks: until they have, a /readyz
	// passing on the checks present so far would report ready a replica whose webhooks
	// cannot answer yet.
	wired := healthz.NamedCheck("startup", func(*http.Request) error {
		select {
		case <-h.checksWired:
			return nil
		default:
			return errors.New("starting up: not every readiness check is in place yet")
		}
	})
	h.Readyz = serving.NewCheckSet("/readyz", healthz.PingHealthz, wired, h.informerSync, healthz.NewShutdownHealthz(terminating))
	return h
}
