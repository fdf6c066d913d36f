package app

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/pkg/controllermanager/options"
)

// leaderElectionClientName is the leader election client's User-Agent suffix.
const leaderElectionClientName = "leader-election"

// runWithLeaderElection campaigns for the Lease, runs the controllers while leading and, on
// termination, stops them before releasing the Lease.
//
// The elector gets its own context, cancelled only after the controllers stopped: it must keep
// renewing while they drain, and the Lease must not be released before every worker stopped
// (otherwise two leaders would briefly work at once). Because client-go's ReleaseOnCancel
// would also release on a lost lease, the release is done here instead.
func runWithLeaderElection(ctx context.Context, o *options.Options, baseConfig *rest.Config, m *controllerManager, recorder record.EventRecorder) error {
	logger := klog.FromContext(ctx)
	le := o.LeaderElection

	identity, err := leaderIdentity()
	if err != nil {
		return err
	}
	// A client of its own with a request timeout of one renew deadline, so that neither a
	// throttled controller nor a hung request can starve lease renewal.
	electionConfig := rest.CopyConfig(baseConfig)
	electionConfig.Timeout = le.RenewDeadline.Duration
	electionClient, err := kubernetes.NewForConfig(rest.AddUserAgent(electionConfig, leaderElectionClientName))
	if err != nil {
		return fmt.Errorf("creating the leader election client: %w", err)
	}
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		electionClient.CoreV1(), electionClient.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: recorder})
	if err != nil {
		return fmt.Errorf("creating the leader election lock: %w", err)
	}

	var releasing atomic.Bool
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: le.LeaseDuration.Duration,
		RenewDeadline: le.RenewDeadline.Duration,
		RetryPeriod:   le.RetryPeriod.Duration,
		WatchDog:      m.health.election,
		// Name labels leader_election_master_status.
		Name: componentName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				logger.Info("Started leading", "lock", lock.Describe(), "identity", identity)
				// Controllers run on the process context, not the elector's, so that
				// SIGTERM stops them while the Lease is still renewed.
				m.leadOrExit(ctx)
			},
			OnStoppedLeading: func() {
				if releasing.Load() {
					return
				}
				// Another process may already be leading: stop at once without draining;
				// the next leader starts from informer state.
				logger.Error(nil, "Leader election lost", "lock", lock.Describe(), "identity", identity)
				klog.FlushAndExit(klog.ExitFlushTimeout, 1)
			},
			OnNewLeader: func(leader string) {
				if leader != identity {
					logger.Info("New leader elected", "identity", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	m.health.election.SetLeaderElection(elector)

	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		logger.Info("Attempting to acquire leader lease", "lock", lock.Describe(), "identity", identity)
		elector.Run(electionCtx)
	}()

	<-ctx.Done()
	logger.Info("Termination requested, stopping controllers")
	if err := m.stopControllers(ctx, o.ControllerShutdownTimeout); err != nil {
		// Workers may still be writing: keep the Lease so that nobody else starts before it
		// expires.
		return err
	}
	releasing.Store(true)
	cancelElection()
	<-electionDone
	if elector.IsLeader() {
		releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), le.RenewDeadline.Duration)
		defer cancel()
		if err := releaseLease(releaseCtx, lock); err != nil {
			// Not fatal: the Lease expires by itself.
			logger.Error(err, "Failed to release the leader lease", "lock", lock.Describe())
		} else {
			logger.Info("Released the leader lease", "lock", lock.Describe())
		}
	}
	return nil
}

// leaderIdentity is "<hostname>_<random UUID>": readable in the Lease, unique per process.
func leaderIdentity() (string, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("getting the host name for the leader identity: %w", err)
	}
	return hostname + "_" + string(uuid.NewUUID()), nil
}

// releaseLease clears the holder of a Lease this process holds, so that a standby acquires it
// within one retry period instead of waiting for it to expire. It keeps the transition count.
func releaseLease(ctx context.Context, lock resourcelock.Interface) error {
	record, _, err := lock.Get(ctx)
	if err != nil {
		return fmt.Errorf("reading the lease: %w", err)
	}
	if record.HolderIdentity != lock.Identity() {
		return nil
	}
	now := metav1.Now()
	released := resourcelock.LeaderElectionRecord{
		LeaderTransitions:    record.LeaderTransitions,
		LeaseDurationSeconds: 1,
		AcquireTime:          now,
		RenewTime:            now,
	}
	if err := lock.Update(ctx, released); err != nil {
		return fmt.Errorf("clearing the lease holder: %w", err)
	}
	return nil
}
