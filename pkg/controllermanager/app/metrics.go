package app

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// Registers client-go's leader election, workqueue and REST client metrics with the
	// legacy registry served on /metrics.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

// runningControllers is 1 while a controller runs in this process, with the same name and
// labels as upstream's metric so that dashboards carry over.
var runningControllers = metrics.NewGaugeVec(
	&metrics.GaugeOpts{
		Name:           "running_managed_controllers",
		Help:           "Indicates where instances of a controller are currently running",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"name", "manager"},
)

var registerMetricsOnce sync.Once

func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(runningControllers)
	})
}

func controllerStarted(name string) {
	runningControllers.WithLabelValues(name, componentName).Set(1)
}

func controllerStopped(name string) {
	runningControllers.WithLabelValues(name, componentName).Set(0)
}
