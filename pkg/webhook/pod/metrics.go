package pod

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// budgetDenials counts the operations a budget refused, by the workload whose pod it was
// and the user who asked. The name and labels (without the bosun_ prefix of bosun's own
// metrics) are OpenKruise's, so that its dashboards and alerts work unchanged.
var budgetDenials = metrics.NewCounterVec(
	&metrics.CounterOpts{
		Name:           "pod_unavailable_budget",
		Help:           "Number of pod deletions, evictions and updates refused by a PodUnavailableBudget, by \"<ownerKind>_<namespace>_<ownerName>\" of the pod and requesting user.",
		StabilityLevel: metrics.ALPHA,
	},
	[]string{"kind_namespace_name", "username"},
)

var registerMetricsOnce sync.Once

// registerMetrics registers the metrics with the legacy registry served on /metrics. Tests
// build the webhooks many times in one process, hence once.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(budgetDenials)
	})
}

// ownerLabel is the kind_namespace_name label of a pod: its controller's kind and name, or
// "unknown" and the pod's own name for a pod without controller.
func ownerLabel(pod *corev1.Pod) string {
	kind, name := "unknown", pod.Name
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		kind, name = ref.Kind, ref.Name
	}
	return kind + "_" + pod.Namespace + "_" + name
}
