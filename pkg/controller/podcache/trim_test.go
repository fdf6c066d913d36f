package podcache

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// servedPod is a pod as the API server serves it: defaulted, with the service account's
// projected volume and the default tolerations, running on a node.
func servedPod(name string) *corev1.Pod {
	container := func(name, image string) corev1.Container {
		return corev1.Container{
			Name: name, Image: image,
			Command: []string{"/app", "--listen=:8080"},
			Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{
				{Name: "LOG_LEVEL", Value: "info"},
				{Name: "REVISION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['rev']"}}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			ReadinessProbe:         &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
			LivenessProbe:          &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
			Lifecycle:              &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/drain"}}}},
			VolumeMounts:           []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy: corev1.PullIfNotPresent,
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: types.UID("uid-" + name), ResourceVersion: "42",
			Labels:          map[string]string{"app": "web", "rev": "r1", "pod-template-hash": "5d8f7c"},
			Annotations:     map[string]string{"apps.kruise.io/inplace-update-state": `{"revision":"r1"}`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7c", UID: "rs-uid", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{container("init", "busybox:1.36")},
			Containers:     []corev1.Container{container("app", "registry.example.com/web:1"), container("sidecar", "envoy:1.30")},
			Volumes: []corev1.Volume{
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
			},
			NodeName:     "node-1",
			NodeSelector: map[string]string{"pool": "a"},
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
				}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}},
			},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			SchedulerName:                 corev1.DefaultSchedulerName,
			SecurityContext:               &corev1.PodSecurityContext{},
			Priority:                      ptr.To[int32](0),
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: "InPlaceUpdateReady", Status: corev1.ConditionTrue},
			},
			PodIP: "10.0.0.7",
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Image: "registry.example.com/web:1", ImageID: "registry.example.com/web@sha256:aa", ContainerID: "containerd://c1",
				Ready: true, RestartCount: 2, Started: ptr.To(true),
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
				AllocatedResources:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				VolumeMounts:         []corev1.VolumeMountStatus{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			}},
		},
	}
}

// What the manager reads of a pod survives the trim: metadata, the status but for resource
// and mount reports, node placement, readiness gates, and the containers' identity, env,
// ports and hooks.
func TestTrimKeepsWhatTheManagerReads(t *testing.T) {
	pod := servedPod("web-0")
	want := pod.DeepCopy()
	got, err := Trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := got.(*corev1.Pod)
	if trimmed != pod {
		t.Error("Trim returned another object than the one it was given")
	}

	want.ManagedFields = nil
	if diff := cmp.Diff(want.ObjectMeta, trimmed.ObjectMeta); diff != "" {
		t.Errorf("metadata changed (-want +got):\n%s", diff)
	}
	wantStatus := want.Status.DeepCopy()
	wantStatus.ContainerStatuses[0].AllocatedResources, wantStatus.ContainerStatuses[0].VolumeMounts = nil, nil
	if diff := cmp.Diff(*wantStatus, trimmed.Status); diff != "" {
		t.Errorf("status changed beyond the resource and mount reports (-want +got):\n%s", diff)
	}
	spec := trimmed.Spec
	if spec.NodeName != "node-1" || spec.NodeSelector["pool"] != "a" || spec.ServiceAccountName != "default" || *spec.TerminationGracePeriodSeconds != 30 ||
		spec.RestartPolicy != corev1.RestartPolicyAlways || len(spec.ReadinessGates) != 1 || *spec.Priority != 0 {
		t.Errorf("the spec's scalars, node selector or readiness gates changed: %+v", spec)
	}
	if diff := cmp.Diff(want.Spec.Affinity.NodeAffinity, spec.Affinity.NodeAffinity); diff != "" {
		t.Errorf("node affinity changed (-want +got):\n%s", diff)
	}
	if want := []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}; !cmp.Equal(want, spec.Volumes) {
		t.Errorf("volumes = %+v, want only the claim", spec.Volumes)
	}
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 2 {
		t.Fatalf("containers dropped: %d init, %d", len(spec.InitContainers), len(spec.Containers))
	}
	for i, c := range append(spec.InitContainers, spec.Containers...) {
		source := append(want.Spec.InitContainers, want.Spec.Containers...)[i]
		if c.Name != source.Name || c.Image != source.Image || c.ImagePullPolicy != source.ImagePullPolicy ||
			!cmp.Equal(c.Env, source.Env) || !cmp.Equal(c.Ports, source.Ports) || !cmp.Equal(c.Lifecycle, source.Lifecycle) {
			t.Errorf("container %s lost what the manager reads: %+v", source.Name, c)
		}
	}
}

// What no controller or webhook of the manager reads is gone.
func TestTrimDropsWhatNoneReads(t *testing.T) {
	pod := servedPod("web-0")
	if _, err := Trim(pod); err != nil {
		t.Fatal(err)
	}
	spec := pod.Spec
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.Command != nil || c.Resources.Requests != nil || c.Resources.Limits != nil || c.ReadinessProbe != nil || c.LivenessProbe != nil ||
			c.VolumeMounts != nil || c.SecurityContext != nil || c.TerminationMessagePath != "" {
			t.Errorf("container %s kept a trimmed field: %+v", c.Name, c)
		}
	}
	if spec.Tolerations != nil || spec.SecurityContext != nil || spec.Affinity.PodAntiAffinity != nil {
		t.Errorf("the spec kept tolerations, security context or pod anti-affinity: %+v", spec)
	}
	if s := pod.Status.ContainerStatuses[0]; s.AllocatedResources != nil || s.VolumeMounts != nil {
		t.Errorf("a container status kept its resource or mount report: %+v", s)
	}
}

func TestTrimmed(t *testing.T) {
	pod := servedPod("web-0")
	if Trimmed(pod) {
		t.Error("a pod as the API server serves it counts as trimmed")
	}
	if Trimmed(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}) {
		t.Error("a pod without defaults (as unit tests build them) counts as trimmed")
	}
	if _, err := Trim(pod); err != nil {
		t.Fatal(err)
	}
	if !Trimmed(pod) || !Trimmed(pod.DeepCopy()) {
		t.Error("a trimmed pod, or its copy, does not count as trimmed")
	}
}

// Objects other than pods only lose their managed fields; tombstones pass through.
func TestTrimOfOtherObjects(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
	}
	want := node.DeepCopy()
	want.ManagedFields = nil
	got, err := Trim(node)
	if err != nil || !cmp.Equal(want, got) {
		t.Errorf("Trim(node) = %+v, %v; want %+v", got, err, want)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "team-a/web-0", Obj: servedPod("web-0")}
	if got, err := Trim(tombstone); err != nil || !cmp.Equal(tombstone, got) {
		t.Errorf("Trim(tombstone) = %+v, %v; want it unchanged", got, err)
	}
}

// workloadPod is the i-th of a cluster's pods: servedPod placed among 40 workloads of 10
// namespaces on 2,000 nodes, with its own name, UID, IP and container IDs, so that what
// pods share and what each holds alone is as in a cluster.
func workloadPod(i int) *corev1.Pod {
	workload := fmt.Sprintf("web-%d", i%40)
	hash := fmt.Sprintf("5d8f7c%d", i%40)
	pod := servedPod(fmt.Sprintf("%s-%s-%05d", workload, hash, i))
	pod.Namespace = fmt.Sprintf("team-%d", i%10)
	pod.GenerateName = workload + "-" + hash + "-"
	pod.UID = types.UID(fmt.Sprintf("0b1c2d3e-4f50-6172-8394-%012d", i))
	pod.ResourceVersion = fmt.Sprint(100000 + i)
	pod.Labels = map[string]string{"app": workload, "rev": "r1", "pod-template-hash": hash}
	pod.OwnerReferences[0].Name = workload + "-" + hash
	pod.OwnerReferences[0].UID = types.UID(fmt.Sprintf("aaaaaaaa-4f50-6172-8394-%012d", i%40))
	pod.Spec.NodeName = fmt.Sprintf("node-%d", i%2000)
	pod.Spec.Containers[0].Image = "registry.example.com/" + workload + ":1"
	pod.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	status := &pod.Status.ContainerStatuses[0]
	status.Image, status.ImageID = pod.Spec.Containers[0].Image, "registry.example.com/"+workload+"@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	status.ContainerID = fmt.Sprintf("containerd://%064d", i)
	return pod
}

// encodedWorkloadPods returns the first n pods of workloadPod as the API server sends them.
func encodedWorkloadPods(tb testing.TB, n int) [][]byte {
	tb.Helper()
	encoded := make([][]byte, n)
	for i := range encoded {
		var err error
		if encoded[i], err = workloadPod(i).Marshal(); err != nil {
			tb.Fatal(err)
		}
	}
	return encoded
}

// decodePod decodes a pod as the informer does and, with trim, trims it. It fails the test
// with Error, not Fatal, so that goroutines may call it; nil then.
func decodePod(tb testing.TB, encoded []byte, trim bool) *corev1.Pod {
	pod := &corev1.Pod{}
	if err := pod.Unmarshal(encoded); err != nil {
		tb.Error(err)
		return nil
	}
	if trim {
		if _, err := Trim(pod); err != nil {
			tb.Error(err)
			return nil
		}
	}
	return pod
}

// BenchmarkCachedPodBytes reports the heap a cached pod takes, as decoded from the API
// server's protobuf and then as Trim leaves it, over 20,000 pods of 40 workloads: run with
// -bench CachedPodBytes -benchtime 1x.
func BenchmarkCachedPodBytes(b *testing.B) {
	encoded := encodedWorkloadPods(b, 20000)
	for _, trim := range []bool{false, true} {
		b.Run(fmt.Sprintf("trimmed=%v", trim), func(b *testing.B) {
			cached := make([]*corev1.Pod, len(encoded))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range cached {
				cached[i] = decodePod(b, encoded[i], trim)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(cached)), "B/pod")
			runtime.KeepAlive(cached)
		})
	}
}

// BenchmarkDecodeAndTrim reports the CPU a pod event costs the informer: decoding the pod,
// then trimming it (or not), over the pods of workloadPod.
func BenchmarkDecodeAndTrim(b *testing.B) {
	encoded := encodedWorkloadPods(b, 2000)
	for _, trim := range []bool{false, true} {
		b.Run(fmt.Sprintf("trimmed=%v", trim), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				decodePod(b, encoded[i%len(encoded)], trim)
				i++
			}
		})
	}
}
