package advanceddaemonset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// pinnedTemplateDS returns a DaemonSet whose template touches most of what a pod template
// can say, so that its revision pins the encoding of all of it.
func pinnedTemplateDS() *appsv1beta1.DaemonSet {
	ds := newDS()
	ds.Annotations = map[string]string{"team": "infra"}
	template := &ds.Spec.Template
	template.Labels = map[string]string{"app": "ds", "tier": "node"}
	template.Annotations = map[string]string{"prometheus.io/scrape": "true"}
	template.Spec = corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "true"}}},
		Containers: []corev1.Container{{
			Name:  "agent",
			Image: "registry.example.com/agent:v1.2.3",
			Args:  []string{"--verbose", "--port=9100"},
			Env:   []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, HostPort: 9100, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("metrics")}},
				PeriodSeconds: 10,
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "proc", MountPath: "/host/proc", ReadOnly: true}},
		}},
		Volumes:                       []corev1.Volume{{Name: "proc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/proc"}}}},
		NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
		Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		HostNetwork:                   true,
		PriorityClassName:             "system-node-critical",
		TerminationGracePeriodSeconds: ptr.To[int64](30),
	}
	return ds
}

// TestRevisionIsPinned pins the name, hash and data of the revisions written for a fixed
// template, with and without a collision count. These bytes are what OpenKruise and every
// earlier bosun wrote: a controller that names or encodes a revision differently would roll
// every pod of every DaemonSet at takeover.
func TestRevisionIsPinned(t *testing.T) {
	const wantData = `{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"prometheus.io/scrape":"true"},"creationTimestamp":null,"labels":{"app":"ds","tier":"node"}},"spec":{"containers":[{"args":["--verbose","--port=9100"],"env":[{"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}],"image":"registry.example.com/agent:v1.2.3","name":"agent","ports":[{"containerPort":9100,"hostPort":9100,"name":"metrics","protocol":"TCP"}],"readinessProbe":{"httpGet":{"path":"/healthz","port":"metrics"},"periodSeconds":10},"resources":{"limits":{"memory":"128Mi"},"requests":{"cpu":"100m","memory":"64Mi"}},"volumeMounts":[{"mountPath":"/host/proc","name":"proc","readOnly":true}]}],"hostNetwork":true,"initContainers":[{"command":["sh","-c","true"],"image":"busybox:1.36","name":"init","resources":{}}],"nodeSelector":{"kubernetes.io/os":"linux"},"priorityClassName":"system-node-critical","terminationGracePeriodSeconds":30,"tolerations":[{"operator":"Exists"}],"volumes":[{"hostPath":{"path":"/proc"},"name":"proc"}]}}}}`
	tests := []struct {
		name           string
		collisionCount *int32
		wantName       string
	}{
		{"no collisions", nil, "ds-7856b768f9"},
		{"collision count 2", ptr.To[int32](2), "ds-7f7df6fc85"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := pinnedTemplateDS()
			ds.Status.CollisionCount = tc.collisionCount
			f := newFixture(t, fixtureOption{}, ds, newNode("n1"))
			f.sync(ds)
			creates := f.actions("create", "controllerrevisions")
			if len(creates) != 1 {
				t.Fatalf("revision creates = %d, want 1", len(creates))
			}
			revision := creates[0].(clienttesting.CreateAction).GetObject().(*appsv1.ControllerRevision)
			if revision.Name != tc.wantName {
				t.Errorf("revision name = %s, want %s", revision.Name, tc.wantName)
			}
			if got, want := revision.Labels[appsv1beta1.ControllerRevisionHashLabelKey], tc.wantName[len("ds-"):]; got != want {
				t.Errorf("revision hash label = %s, want %s", got, want)
			}
			if got := string(revision.Data.Raw); got != wantData {
				t.Errorf("revision data =\n%s\nwant\n%s", got, wantData)
			}
			if revision.Revision != 1 {
				t.Errorf("revision number = %d, want 1", revision.Revision)
			}
		})
	}
}
