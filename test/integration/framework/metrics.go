package framework

import (
	"fmt"
	"net/http"
	"strings"
)

// MetricValue returns the value of one series of a Prometheus text exposition (what
// /metrics serves), for example `workqueue_depth{name="deployment"}`: the series name and
// labels exactly as exposed, labels in the order the exporter writes them (sorted by name
// for component-base metrics). It reports false when the series is absent.
func MetricValue(metrics, series string) (string, bool) {
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimSpace(strings.TrimPrefix(line, series)), true
		}
	}
	return "", false
}

// Metrics scrapes the manager's /metrics with a bearer token; both managers authorize
// /metrics through the API server, so the admin token (cp.Config().BearerToken) is the
// usual one. A process that has exited or answers anything but 200 is an error, so that
// a caller polling metrics stops on a dead manager instead of timing out.
func (cm *ControllerManager) Metrics(token string) (string, error) {
	if cm.Exited() {
		return "", fmt.Errorf("%s exited with status %d:\n%s", cm.Name(), cm.ExitCode(), cm.LogTail(40))
	}
	code, body := GetEndpoint(cm.Port, "/metrics", token)
	if code != http.StatusOK {
		return "", fmt.Errorf("GET /metrics of %s: status %d: %s", cm.Name(), code, body)
	}
	return body, nil
}
