package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// resyncedQueues are the queues of bosun-controller-manager that take every object of their
// kind again on each informer resync, by kind: over the observation each must have taken
// its objects at least three times (the first sync and two resyncs). The NodeImage
// controller takes a NodeImage only when it changed, like upstream's node controllers, so
// only its first sync is required.
var resyncedQueues = map[string]string{
	"cloneset":                 "CloneSet",
	"advanced_daemonset":       "DaemonSet",
	"podunavailablebudget":     "PodUnavailableBudget",
	"containerrecreaterequest": "ContainerRecreateRequest",
	"imagepulljob":             "ImagePullJob",
	"imagelistpulljob":         "ImageListPullJob",
}

// reportedQueues are further queues the summary shows: the NodeImage controller, bosun-
// daemon's two, which take an object again only when it changed, and the storage version
// migrator.
var reportedQueues = []string{"nodeimage", "nodeimage_agent", "containerrecreaterequest_agent", "storage_version_migrator"}

// checkResynced reads how many keys each of bosun's queues has taken since it started
// (workqueue_adds_total of both binaries) and fails unless the observation covered the
// first sync and two resyncs of every controller of the seven kinds.
func (e *env) checkResynced(ctx context.Context, baseline *snapshot) (map[string]float64, error) {
	adds := map[string]float64{}
	for _, component := range []string{"bosun-controller-manager", "bosun-daemon"} {
		code, body := framework.GetEndpoint(e.c.HealthPort(component), "/metrics", e.c.Config().BearerToken)
		if code != http.StatusOK {
			return nil, fmt.Errorf("GET /metrics of %s: status %d: %.300s", component, code, body)
		}
		for line := range strings.Lines(body) {
			rest, ok := strings.CutPrefix(line, `workqueue_adds_total{name="`)
			if !ok {
				continue
			}
			name, value, ok := strings.Cut(rest, `"} `)
			if !ok {
				continue
			}
			n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return nil, fmt.Errorf("%s: workqueue_adds_total of %s: %w", component, name, err)
			}
			adds[name] = n
		}
	}
	var short []string
	for queue, kind := range resyncedQueues {
		if want := float64(3 * baseline.count(kind)); adds[queue] < want {
			short = append(short, fmt.Sprintf("%s took %g keys, want at least %g (3 × %d %s)", queue, adds[queue], want, baseline.count(kind), kind))
		}
	}
	if adds["nodeimage"] < float64(baseline.count("NodeImage")) {
		short = append(short, fmt.Sprintf("nodeimage took %g keys, want at least %d", adds["nodeimage"], baseline.count("NodeImage")))
	}
	if len(short) > 0 {
		return adds, fmt.Errorf("the observation did not cover two resyncs: %s", strings.Join(short, "; "))
	}
	return adds, nil
}

// checkMigrated checks that etcd holds every object of the seven kinds as v1beta1 now, those
// OpenKruise had stored as v1alpha1 included.
func (e *env) checkMigrated(ctx context.Context, storedAlpha []string) error {
	now, err := e.readEtcd(ctx)
	if err != nil {
		return err
	}
	if left := storedAs(now, v1alpha1); len(left) > 0 {
		return fmt.Errorf("still stored as v1alpha1 after bosun's storage migration: %s", strings.Join(left, ", "))
	}
	fmt.Printf("  bosun's storage migration rewrote as v1beta1: %s\n", strings.Join(storedAlpha, ", "))
	return nil
}
