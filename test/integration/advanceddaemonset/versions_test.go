package advanceddaemonset

import (
	"encoding/json"
	"fmt"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// betaDaemonSets are the namespace's Advanced DaemonSets read and written in v1beta1, the
// version the controller works on.
func (e *testEnv) betaDaemonSets() *framework.Objects[*appsv1beta1.DaemonSet] {
	return framework.NewObjects(e.Env, "DaemonSet", e.Namespace, e.Bosun.AppsV1beta1().DaemonSets(e.Namespace)).DescribedBy(betaDSString)
}

func betaDSString(ds *appsv1beta1.DaemonSet) string {
	if ds == nil {
		return "<none>"
	}
	spec, _ := json.Marshal(ds.Spec.ScaleStrategy)
	status, _ := json.Marshal(ds.Status)
	return fmt.Sprintf("generation %d scaleStrategy %s status %s", ds.Generation, spec, status)
}

// waitForPodsOf waits until the DaemonSet with uid runs exactly one active pod on each of
// nodes and none elsewhere, each with hash unless hash is empty, and returns them.
func (e *testEnv) waitForPodsOf(t *testing.T, uid types.UID, nodes []string, hash string) []corev1.Pod {
	t.Helper()
	pods := e.WaitForPods(t, fmt.Sprintf("one pod of DaemonSet %s on each of %v with hash %q", uid, nodes, hash), func(pods []corev1.Pod) bool {
		return onePerNode(daemonPods(pods, uid), nodes, hash)
	})
	return daemonPods(pods, uid)
}

// A DaemonSet written in v1beta1: spec.scaleStrategy.partitionedScaling holds creation back
// as the v1alpha1 annotation does, and turning it off lets every node get its pod. The
// revision the controller writes as status.updateRevision is what v1alpha1 readers see as
// status.daemonSetHash, and the pods' controller-revision-hash.
func TestV1beta1PartitionedScalingAndUpdateRevision(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	nodes := e.createNodes(t, "a", "b", "c", "d", "e")

	selector := map[string]string{"app": "agent"}
	ds := e.betaDaemonSets().Create(t, &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyMap(selector)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image1}}},
			},
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type:          appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Partition: ptr.To(intstr.FromInt32(2))},
			},
			ScaleStrategy: &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true},
		},
	})
	e.waitForPodsOf(t, ds.UID, nodes[:3], "")
	e.WaitForNoWrites(t, idlePeriod)
	pods := daemonPods(e.GetPods(t, nil), ds.UID)
	if !onePerNode(pods, nodes[:3], "") {
		t.Errorf("%s; want one pod on each of %v only", describePods(pods), nodes[:3])
	}

	beta := e.betaDaemonSets().WaitFor(t, ds.Name, "status.updateRevision for the current generation", func(ds *appsv1beta1.DaemonSet) bool {
		return ds.Status.ObservedGeneration == ds.Generation && ds.Status.UpdateRevision != "" && ds.Status.CurrentNumberScheduled == 3
	})
	alpha := e.daemonSets().Get(t, ds.Name)
	if alpha.Status.DaemonSetHash != beta.Status.UpdateRevision {
		t.Errorf("v1alpha1 status.daemonSetHash %q, want v1beta1 status.updateRevision %q", alpha.Status.DaemonSetHash, beta.Status.UpdateRevision)
	}
	if alpha.Annotations[appsv1alpha1.ProgressiveCreatePodAnnotation] != "true" {
		t.Errorf("v1alpha1 annotations %v, want %s: \"true\" carrying partitionedScaling", alpha.Annotations, appsv1alpha1.ProgressiveCreatePodAnnotation)
	}
	for _, pod := range pods {
		if hashOf(&pod) != beta.Status.UpdateRevision {
			t.Errorf("pod %s has hash %q, want status.updateRevision %q", pod.Name, hashOf(&pod), beta.Status.UpdateRevision)
		}
		if ref := metav1.GetControllerOf(&pod); ref == nil || ref.APIVersion != appsv1beta1.SchemeGroupVersion.String() || ref.Kind != kindDaemonSet || ref.UID != ds.UID {
			t.Errorf("pod %s: controller reference %+v, want the apps.kruise.io/v1beta1 DaemonSet", pod.Name, ref)
		}
	}

	// The field decides: false, with no annotation to say otherwise, creates on every node.
	e.betaDaemonSets().Update(t, ds.Name, func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.ScaleStrategy = &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: false}
	})
	e.waitForPodsOf(t, ds.UID, nodes, beta.Status.UpdateRevision)
}

// A takeover from a controller that names the DaemonSet in v1alpha1 in its children's owner
// references (OpenKruise before 1.9, earlier bosun releases): the pods and revisions are
// claimed as they are, never rewritten for the version, and a rollout replaces the pods.
func TestOlderOwnerReferencesAreKept(t *testing.T) {
	e := setup(t)
	e.startManager(t, "")
	e.startKubelet(t)
	nodes := e.createNodes(t, "a", "b")
	ds, pods := e.waitForSettled(t, e.daemonSets().Create(t, newDS("agent")).Name, nodes)
	h1 := ds.Status.DaemonSetHash

	toAlpha := func(refs []metav1.OwnerReference) {
		for i := range refs {
			refs[i].APIVersion = appsv1alpha1.SchemeGroupVersion.String()
		}
	}
	versions := map[string]string{}
	for _, pod := range pods {
		written := e.Pods().Update(t, pod.Name, func(p *corev1.Pod) { toAlpha(p.OwnerReferences) })
		versions[written.Name] = written.ResourceVersion
	}
	revision := e.revisions(t)[h1]
	toAlpha(revision.OwnerReferences)
	writtenRevision, err := e.Client.AppsV1().ControllerRevisions(e.Namespace).Update(e.Ctx, &revision, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing a v1alpha1 owner reference on ControllerRevision %s: %v", revision.Name, err)
	}

	e.WaitForNoWrites(t, idlePeriod)
	for _, pod := range daemonPods(e.GetPods(t, nil), ds.UID) {
		if pod.ResourceVersion != versions[pod.Name] {
			t.Errorf("pod %s was written after its owner reference named v1alpha1 (resourceVersion %s, want %s): %+v", pod.Name, pod.ResourceVersion, versions[pod.Name], pod.OwnerReferences)
		}
	}
	if got := daemonPods(e.GetPods(t, nil), ds.UID); !onePerNode(got, nodes, h1) {
		t.Errorf("%s; want the same pod on each of %v", describePods(got), nodes)
	}
	if rev := e.revisions(t)[h1]; rev.ResourceVersion != writtenRevision.ResourceVersion || len(e.revisions(t)) != 1 {
		t.Errorf("ControllerRevision %s rewritten (resourceVersion %s, want %s) or another revision made (%d revisions)",
			rev.Name, rev.ResourceVersion, writtenRevision.ResourceVersion, len(e.revisions(t)))
	}

	e.setImage(t, ds.Name, image2)
	h2 := e.waitForNewHash(t, ds.Name, h1)
	_, pods = e.waitForSettled(t, ds.Name, nodes)
	for _, pod := range pods {
		if hashOf(&pod) != h2 {
			t.Errorf("pod %s on hash %q after the rollout, want %q", pod.Name, hashOf(&pod), h2)
		}
	}
}
