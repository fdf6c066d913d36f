package deploymentutil

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// epoch is the reference creation time of test objects; tests place ReplicaSets relative
// to it in whole seconds, the resolution of creationTimestamp.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) metav1.Time { return metav1.NewTime(epoch.Add(time.Duration(sec) * time.Second)) }

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

// rolling returns a RollingUpdate Deployment of replicas with the given maxSurge and
// maxUnavailable ("25%" style strings or integers).
func rolling(replicas int32, maxSurge, maxUnavailable intstr.IntOrString) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Template: template("v2"),
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
			},
		},
	}
	return d
}

func recreate(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Template: template("v2"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		},
	}
}

var (
	pct25 = intstr.FromString("25%")
	zero  = intstr.FromInt32(0)
)

func num(n int32) intstr.IntOrString { return intstr.FromInt32(n) }

type rsOption func(*appsv1.ReplicaSet)

// replicaSet returns a ReplicaSet named name, created sec seconds after epoch, asking for
// spec replicas; its UID is derived from its name.
func replicaSet(name string, sec int, spec int32, opts ...rsOption) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: at(sec),
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(spec), Template: template("v1")},
	}
	for _, o := range opts {
		o(rs)
	}
	return rs
}

func available(n int32) rsOption {
	return func(rs *appsv1.ReplicaSet) { rs.Status.AvailableReplicas = n }
}

func status(replicas, ready, avail int32) rsOption {
	return func(rs *appsv1.ReplicaSet) {
		rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = replicas, ready, avail
	}
}

func annotated(kv ...string) rsOption {
	return func(rs *appsv1.ReplicaSet) {
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			rs.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func revision(r string) rsOption { return annotated(RevisionAnnotation, r) }

func withTemplate(t corev1.PodTemplateSpec) rsOption {
	return func(rs *appsv1.ReplicaSet) { rs.Spec.Template = t }
}

func names(rsList []*appsv1.ReplicaSet) []string {
	out := make([]string, 0, len(rsList))
	for _, rs := range rsList {
		out = append(out, rs.Name)
	}
	return out
}

// sizes renders scale targets as "name=size" for readable comparisons.
func sizes(targets []ScaleTarget) []string {
	out := make([]string, 0, len(targets))
	for _, t := range targets {
		out = append(out, t.RS.Name+"="+itoa(t.Replicas))
	}
	return out
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
