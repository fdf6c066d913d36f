package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// The objects of the conversion part: node agents as clusters run them, whose size comes
// from what makes real DaemonSets large, configuration in environment variables and
// pod-template annotations.

const (
	// convertObjectPrefix names the DaemonSets sent straight to /convert, listObjectPrefix
	// those the LISTs read.
	convertObjectPrefix = "agent-"
	listObjectPrefix    = "lister-"
	// agentApp and listAgentApp label the pods of either kind of object.
	agentApp     = "node-agent"
	listAgentApp = "log-shipper"
)

// agentTemplate is a node agent's pod template: the agent and a config reloader, an init
// container, host mounts, a projected token, tolerations, node affinity and probes, with
// no padding yet.
func agentTemplate(app string) corev1.PodTemplateSpec {
	labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/instance": app, "app.kubernetes.io/component": "agent"}
	directory := corev1.HostPathDirectory
	mount := func(name, path string, readOnly bool) corev1.VolumeMount {
		return corev1.VolumeMount{Name: name, MountPath: path, ReadOnly: readOnly}
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: labels,
			Annotations: map[string]string{
				"kubectl.kubernetes.io/default-container": "agent",
				"checksum/config":                         "3f5d2c1b9e8a7f6e5d4c3b2a19f8e7d6c5b4a39281f0e9d8c7b6a5f4e3d2c1b0",
				"prometheus.io/scrape":                    "true",
				"prometheus.io/port":                      "9102",
			},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName:            app,
			PriorityClassName:             "system-node-critical",
			HostNetwork:                   true,
			DNSPolicy:                     corev1.DNSClusterFirstWithHostNet,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
						{Key: "eks.amazonaws.com/compute-type", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"fargate"}},
					},
				}}},
			}},
			InitContainers: []corev1.Container{{
				Name:         "init-state",
				Image:        "registry.example.com/observability/agent-init:2.14.1",
				Command:      []string{"/bin/agent-init", "--state-dir=/var/lib/agent", "--migrate"},
				VolumeMounts: []corev1.VolumeMount{mount("state", "/var/lib/agent", false)},
			}},
			Containers: []corev1.Container{
				{
					Name:  "agent",
					Image: "registry.example.com/observability/agent:2.14.1",
					Args:  []string{"--config=/etc/agent/agent.yaml", "--state-dir=/var/lib/agent", "--log-format=json", "--metrics-address=:9102"},
					Env: []corev1.EnvVar{
						fieldEnv("NODE_NAME", "spec.nodeName"), fieldEnv("POD_NAME", "metadata.name"),
						fieldEnv("POD_NAMESPACE", "metadata.namespace"), fieldEnv("HOST_IP", "status.hostIP"),
						{Name: "GOMAXPROCS", Value: "2"}, {Name: "GOMEMLIMIT", Value: "460MiB"},
					},
					Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9102, Protocol: corev1.ProtocolTCP}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
					},
					LivenessProbe: &corev1.Probe{
						ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("metrics")}},
						InitialDelaySeconds: 10, PeriodSeconds: 30, FailureThreshold: 3,
					},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("metrics")}},
						PeriodSeconds: 10,
					},
					SecurityContext: &corev1.SecurityContext{
						Privileged: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
						Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}, Drop: []corev1.Capability{"ALL"}},
					},
					VolumeMounts: []corev1.VolumeMount{
						mount("config", "/etc/agent", true), mount("state", "/var/lib/agent", false),
						mount("proc", "/host/proc", true), mount("sys", "/host/sys", true),
						mount("varlog", "/var/log", true), mount("token", "/var/run/secrets/agent", true),
					},
				},
				{
					Name:  "config-reloader",
					Image: "registry.example.com/observability/config-reloader:0.9.3",
					Args:  []string{"--watch-dir=/etc/agent", "--reload-url=http://127.0.0.1:9102/-/reload"},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
					},
					VolumeMounts: []corev1.VolumeMount{mount("config", "/etc/agent", true)},
				},
			},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/" + app, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
				{Name: "proc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/proc", Type: &directory}}},
				{Name: "sys", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys", Type: &directory}}},
				{Name: "varlog", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: &directory}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
					ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "agent-backend", ExpirationSeconds: ptr.To[int64](3600), Path: "token"},
				}}}}},
			},
		},
	}
}

// smallAgentTemplate is a log shipper's pod template: one container with its node's name,
// resources, a probe and the host's logs, with no padding yet. Its annotations map is
// there for padding.
func smallAgentTemplate(app string) corev1.PodTemplateSpec {
	labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/instance": app}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"prometheus.io/scrape": "true"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: app,
			PriorityClassName:  "system-node-critical",
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:  "shipper",
				Image: "registry.example.com/observability/log-shipper:1.6.0",
				Env:   []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(2020)}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "varlog", MountPath: "/var/log", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "varlog", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}},
		},
	}
}

// settingValues are the shapes of the values a node agent is configured with; padding
// entries cycle through them.
var settingValues = []string{
	"https://collector.observability.svc.cluster.local:4318/v1/metrics",
	"true",
	"30s",
	"kube_pod_*,kube_node_*,container_cpu_*,container_memory_working_set_bytes",
	"/var/log/containers/*.log",
	"info",
	"tenant-platform-eu-west-1",
	"1048576",
}

// padEntry is one configuration entry: an environment variable of the agent or of the
// reloader, or a pod-template annotation, in turn.
type padEntry struct {
	container  int // -1 for an annotation
	name       string
	value      string
	jsonLength int // its bytes in compact JSON, with the comma before it
}

func newPadEntry(n int) padEntry {
	value := settingValues[n%len(settingValues)]
	switch n % 3 {
	case 0:
		name := fmt.Sprintf("AGENT_SETTING_%03d", n)
		return padEntry{container: 0, name: name, value: value, jsonLength: len(`,{"name":"","value":""}`) + len(name) + len(value)}
	case 1:
		name := fmt.Sprintf("RELOADER_OPTION_%03d", n)
		return padEntry{container: 1, name: name, value: value, jsonLength: len(`,{"name":"","value":""}`) + len(name) + len(value)}
	}
	name := fmt.Sprintf("config.agent.example.com/rule-%03d", n)
	return padEntry{container: -1, name: name, value: value, jsonLength: len(`,"":""`) + len(name) + len(value)}
}

func (e padEntry) addTo(template *corev1.PodTemplateSpec) {
	if e.container < 0 {
		template.Annotations[e.name] = e.value
		return
	}
	// A template of one container takes every variable.
	c := &template.Spec.Containers[min(e.container, len(template.Spec.Containers)-1)]
	c.Env = append(c.Env, corev1.EnvVar{Name: e.name, Value: e.value})
}

// padTemplate adds configuration entries to template until size, the compact JSON length
// of the object holding template, reaches target; it overshoots by less than one entry.
// Every object padded to the same target from the same start gets the same entries.
func padTemplate(template *corev1.PodTemplateSpec, target int, size func() (int, error)) error {
	n := 0
	for {
		current, err := size()
		if err != nil {
			return err
		}
		if current >= target {
			return nil
		}
		// The estimate never exceeds the real growth, so the loop ends within a few rounds
		// without passing the target by more than the last entry.
		for missing := target - current; missing > 0; n++ {
			e := newPadEntry(n)
			e.addTo(template)
			missing -= e.jsonLength
		}
	}
}

// jsonSize is the compact JSON length of obj.
func jsonSize(obj any) (int, error) {
	data, err := json.Marshal(obj)
	return len(data), err
}

// conversionTimestamp is the creation time of the objects built here: fixed, so that every
// object of one size has the same length.
var conversionTimestamp = metav1.NewTime(time.Date(2026, 9, 14, 8, 30, 0, 0, time.UTC))

// objectUID is the i-th object's UID, of the usual form and never placeholderUID.
func objectUID(i int) types.UID {
	return types.UID(fmt.Sprintf("5e1f7a2c-0d3b-4c6e-9a8f-%012d", i))
}

// convertDaemonSet is the i-th apps.kruise.io/v1alpha1 DaemonSet sent to /convert, as the
// API server holds it: server-set metadata with the managed fields of a Helm release and of
// the controller's status writes, a status, and, on every other object, the
// progressive-create-pod annotation that v1beta1 turns into a field. Its compact JSON is
// targetBytes long, give or take one padding entry.
func convertDaemonSet(i, targetBytes int) (*appsv1alpha1.DaemonSet, error) {
	name := fmt.Sprintf("%s%04d", convertObjectPrefix, i)
	maxUnavailable, partition, burst := intstr.FromString("10%"), intstr.FromInt32(0), intstr.FromInt32(appsv1alpha1.DefaultDaemonSetBurstReplicas)
	template := agentTemplate(agentApp)
	annotations := map[string]string{
		"meta.helm.sh/release-name":                agentApp,
		"meta.helm.sh/release-namespace":           benchNamespace,
		"deprecated.daemonset.template.generation": "7",
	}
	if i%2 == 0 {
		annotations[appsv1alpha1.ProgressiveCreatePodAnnotation] = "true"
	}
	ds := &appsv1alpha1.DaemonSet{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1alpha1.SchemeGroupVersion.String(), Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         benchNamespace,
			UID:               objectUID(i),
			ResourceVersion:   strconv.Itoa(100000 + i),
			Generation:        7,
			CreationTimestamp: conversionTimestamp,
			Labels: map[string]string{
				"app.kubernetes.io/name": agentApp, "app.kubernetes.io/instance": agentApp, "app.kubernetes.io/managed-by": "Helm",
				"app.kubernetes.io/version": "2.14.1", "helm.sh/chart": "node-agent-2.14.1",
			},
			Annotations: annotations,
			ManagedFields: []metav1.ManagedFieldsEntry{
				{
					Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: appsv1alpha1.SchemeGroupVersion.String(),
					Time: &conversionTimestamp, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:meta.helm.sh/release-name":{},` +
						`"f:meta.helm.sh/release-namespace":{}},"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{},` +
						`"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/version":{},"f:helm.sh/chart":{}}},"f:spec":{".":{},"f:burstReplicas":{},` +
						`"f:revisionHistoryLimit":{},"f:selector":{},"f:template":{},"f:updateStrategy":{".":{},"f:rollingUpdate":{".":{},` +
						`"f:maxUnavailable":{},"f:partition":{},"f:rollingUpdateType":{}},"f:type":{}}}}`)},
				},
				{
					Manager: "bosun-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: appsv1alpha1.SchemeGroupVersion.String(),
					Time: &conversionTimestamp, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:currentNumberScheduled":{},"f:daemonSetHash":{},` +
						`"f:desiredNumberScheduled":{},"f:numberAvailable":{},"f:numberMisscheduled":{},"f:numberReady":{},` +
						`"f:observedGeneration":{},"f:updatedNumberScheduled":{}}}`)},
				},
			},
		},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": agentApp, "app.kubernetes.io/instance": agentApp}},
			Template: template,
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{
				Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
					Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: &maxUnavailable, Partition: &partition,
				},
			},
			BurstReplicas:        &burst,
			RevisionHistoryLimit: ptr.To[int32](10),
		},
		Status: appsv1alpha1.DaemonSetStatus{
			CurrentNumberScheduled: 412, DesiredNumberScheduled: 412, NumberReady: 412, NumberAvailable: 412,
			UpdatedNumberScheduled: 412, ObservedGeneration: 7, DaemonSetHash: "6c9b7d8f4d",
		},
	}
	if err := padTemplate(&ds.Spec.Template, targetBytes, func() (int, error) { return jsonSize(ds) }); err != nil {
		return nil, fmt.Errorf("padding DaemonSet %s: %w", name, err)
	}
	return ds, nil
}

// listDaemonSet is the i-th apps.kruise.io/v1beta1 DaemonSet the LISTs read, as a client
// creates it: a log shipper, targetBytes of compact JSON
// (the API server adds its metadata and managed fields, the bench a status); every other
// one has partitioned scaling, which v1alpha1 shows as the progressive-create-pod
// annotation.
func listDaemonSet(i, targetBytes int) (*appsv1beta1.DaemonSet, error) {
	name := fmt.Sprintf("%s%04d", listObjectPrefix, i)
	maxUnavailable, burst := intstr.FromString("10%"), intstr.FromInt32(appsv1beta1.DefaultDaemonSetBurstReplicas)
	ds := &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"app.kubernetes.io/name": listAgentApp, "app.kubernetes.io/managed-by": "Helm"},
		},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": listAgentApp, "app.kubernetes.io/instance": listAgentApp}},
			Template: smallAgentTemplate(listAgentApp),
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
					Type: appsv1beta1.StandardRollingUpdateType, MaxUnavailable: &maxUnavailable,
				},
			},
			BurstReplicas:        &burst,
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
	if i%2 == 0 {
		ds.Spec.ScaleStrategy = &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
	}
	if err := padTemplate(&ds.Spec.Template, targetBytes, func() (int, error) { return jsonSize(ds) }); err != nil {
		return nil, fmt.Errorf("padding DaemonSet %s: %w", name, err)
	}
	return ds, nil
}

// listDaemonSetStatus is the status the bench writes on every listed DaemonSet, as its
// controller would have.
func listDaemonSetStatus(generation int64) appsv1beta1.DaemonSetStatus {
	return appsv1beta1.DaemonSetStatus{
		CurrentNumberScheduled: 412, DesiredNumberScheduled: 412, NumberReady: 412, NumberAvailable: 412,
		UpdatedNumberScheduled: 412, ObservedGeneration: generation, UpdateRevision: "6c9b7d8f4d",
	}
}
