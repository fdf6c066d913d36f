package main

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The cluster part's shape. A cluster of many teams: a few DaemonSets on every node, a
// fifth of the pods in CloneSets, and the rest in Deployments of mixed sizes, spread over
// namespaces; a budget on every other Deployment and CloneSet.
const (
	// podsPerNode sets the nodes when --cluster-nodes is 0: 50,000 pods on 2,000 nodes.
	podsPerNode = 25
	// clusterDaemonSets each run a pod on every node (a log shipper, a node exporter).
	clusterDaemonSets = 2
	// cloneSetShare of the pods run in CloneSets of at most cloneSetSize replicas.
	cloneSetShare = 5
	cloneSetSize  = 500
	// clusterNamespaces hold the workloads, round-robin.
	clusterNamespaces = 10
	// budgetMaxUnavailable is every budget's maxUnavailable.
	budgetMaxUnavailable = "30%"
)

// deploymentSizes is the cycle of Deployment sizes: many small services, a few large ones.
var deploymentSizes = []int32{1000, 300, 100, 30, 10}

// clusterPlan is what the part creates.
type clusterPlan struct {
	nodes int
	// daemonSets run one pod on every node each.
	daemonSets  int
	cloneSets   []int32
	deployments []int32
}

// planCluster spreads pods over the workloads on nodes simulated nodes (pods/podsPerNode
// when nodes is 0): one pod per node for each DaemonSet, a fifth of all pods in
// CloneSets, and the rest in Deployments cycling through deploymentSizes, the last one cut
// to fit, so that the plan runs exactly pods pods.
func planCluster(pods, nodes int) (clusterPlan, error) {
	if nodes == 0 {
		nodes = max(pods/podsPerNode, 1)
	}
	p := clusterPlan{nodes: nodes, daemonSets: clusterDaemonSets}
	left := pods - p.daemonSets*nodes
	if left < 0 {
		return clusterPlan{}, fmt.Errorf("%d pods do not fill %d DaemonSets over %d nodes: raise --bench-pods or lower --cluster-nodes",
			pods, p.daemonSets, nodes)
	}
	for cs := pods / cloneSetShare; cs > 0 && left > 0; {
		n := min(cs, cloneSetSize, left)
		p.cloneSets = append(p.cloneSets, int32(n))
		cs -= n
		left -= n
	}
	for i := 0; left > 0; i++ {
		n := min(int(deploymentSizes[i%len(deploymentSizes)]), left)
		p.deployments = append(p.deployments, int32(n))
		left -= n
	}
	return p, nil
}

// pods is the number of pods the plan runs.
func (p clusterPlan) pods() int {
	n := p.daemonSets * p.nodes
	for _, r := range p.cloneSets {
		n += int(r)
	}
	for _, r := range p.deployments {
		n += int(r)
	}
	return n
}

// clusterWorkload is one workload of the plan.
type clusterWorkload struct {
	kind      string // "DaemonSet", "CloneSet" or "Deployment"
	namespace string
	name      string
	replicas  int32 // 0 for a DaemonSet
	budget    bool  // a PodUnavailableBudget targets it
}

// workloads lists the plan's workloads, each in its namespace; every other CloneSet and
// Deployment has a budget.
func (p clusterPlan) workloads() []clusterWorkload {
	var out []clusterWorkload
	add := func(kind, prefix string, i int, replicas int32, budget bool) {
		n := len(out)
		out = append(out, clusterWorkload{kind: kind, namespace: clusterNamespace(n), name: prefix + strconv.Itoa(i), replicas: replicas, budget: budget})
	}
	for i := range p.daemonSets {
		add(kindDaemonSet, "ds-", i, 0, false)
	}
	for i, r := range p.cloneSets {
		add(kindCloneSet, "cs-", i, r, i%2 == 0)
	}
	for i, r := range p.deployments {
		add(kindDeployment, "deploy-", i, r, i%2 == 0)
	}
	return out
}

const (
	kindDaemonSet  = "DaemonSet"
	kindCloneSet   = "CloneSet"
	kindDeployment = "Deployment"
)

func clusterNamespace(i int) string { return "cluster-" + strconv.Itoa(i%clusterNamespaces) }

// clusterPodTemplate is a pod as teams write them, so that what a cache holds per pod is
// what it holds in a real cluster: labels and annotations, resources, environment,
// a probe, mounts and volumes. imageTag is the revision a rollout changes.
func clusterPodTemplate(app, imageTag string) corev1.PodTemplateSpec {
	labels := benchLabels(app)
	labels["team"] = "team-" + app
	labels["tier"] = "backend"
	labels["version"] = "v1"
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: labels,
			Annotations: map[string]string{
				"prometheus.io/scrape": "true",
				"prometheus.io/port":   "9090",
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example.com/" + app + ":" + imageTag,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env: []corev1.EnvVar{
					{Name: "APP_NAME", Value: app},
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "LISTEN_ADDRESS", Value: ":8080"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
					PeriodSeconds: 10,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "cache", MountPath: "/var/cache/app"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
}
