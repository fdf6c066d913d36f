package cloneset

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/features"
)

// envFromLabel is an in-place CloneSet whose container's env TEST_ENV reads the pod label
// test-env, set to value in the template.
func envFromLabel(value string) *appsv1beta1.CloneSet {
	cs := newCS(1)
	inPlace(cs)
	cs.Spec.Template.Labels = map[string]string{"app": "cs", "test-env": value}
	cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{
		Name: "TEST_ENV", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['test-env']"}},
	}}
	return cs
}

// envRollout is envFromLabel's CloneSet with one pod at test-env=foo whose template now
// says bar.
func envRollout(t *testing.T) (cs *appsv1beta1.CloneSet, current, update *appsv1.ControllerRevision, pod *corev1.Pod) {
	t.Helper()
	old := envFromLabel("foo")
	current = revisionOf(t, old, 1)
	cs = envFromLabel("bar")
	cs.Status.CurrentRevision = current.Name
	update = revisionOf(t, cs, 2)
	return cs, current, update, newPod(old, "aaaaa", current)
}

// A template label that a container's env reads changes: the pod is updated in place (not
// recreated), the label is written onto it and the state says the env waits for the node
// agent.
func TestInPlaceUpdateOfEnvFromMetadata(t *testing.T) {
	for _, gateOn := range []bool{true, false} {
		t.Run(map[bool]string{true: "gate on", false: "gate off"}[gateOn], func(t *testing.T) {
			cs, current, update, pod := envRollout(t)
			f := newFixture(t, fixtureOption{gates: map[featuregate.Feature]bool{features.InPlaceUpdateEnvFromMetadata: gateOn}}, cs, current, update, pod)
			f.sync(cs)
			if recreated := f.recreated(); len(recreated) != 0 {
				t.Fatalf("labelled %v for recreation", recreated)
			}
			updates := f.actions("update", "pods")
			if len(updates) != 1 {
				t.Fatalf("%d pod updates, want 1", len(updates))
			}
			updated := updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
			if updated.Labels["test-env"] != "bar" || updated.Spec.Containers[0].Image != "img:v1" ||
				updated.Labels[appsv1beta1.ControllerRevisionHashLabelKey] != update.Name {
				t.Errorf("updated pod: labels %v image %s", updated.Labels, updated.Spec.Containers[0].Image)
			}
			state, err := kruisepod.ReadInPlaceUpdateState(updated)
			if err != nil || state == nil {
				t.Fatalf("state %+v, %v", state, err)
			}
			if state.UpdateEnvFromMetadata != gateOn || state.UpdateImages {
				t.Errorf("state %s, want updateEnvFromMetadata %v and no images", updated.Annotations[appsv1beta1.InPlaceUpdateStateKey], gateOn)
			}
		})
	}
}

// With KruiseDaemon off there is no node agent to restart the container: the label is
// plain metadata, as in OpenKruise.
func TestEnvFromMetadataNeedsKruiseDaemon(t *testing.T) {
	cs, current, update, pod := envRollout(t)
	f := newFixture(t, fixtureOption{gates: map[featuregate.Feature]bool{features.KruiseDaemon: false}}, cs, current, update, pod)
	f.sync(cs)
	updates := f.actions("update", "pods")
	if len(updates) != 1 {
		t.Fatalf("%d pod updates, want 1", len(updates))
	}
	state, _ := kruisepod.ReadInPlaceUpdateState(updates[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod))
	if state == nil || state.UpdateEnvFromMetadata {
		t.Errorf("state %+v, want no env from metadata", state)
	}
}

// The update waits for the node agent's report that the container runs with the new value;
// then InPlaceUpdateReady turns True and the pod is Normal again.
func TestEnvFromMetadataUpdateCompletesOnTheAgentsReport(t *testing.T) {
	cs, current, update, _ := envRollout(t)
	pod := newPod(cs, "aaaaa", update)
	pod.Labels[appsv1beta1.LifecycleStateKey] = string(appsv1beta1.LifecycleStateUpdating)
	pod.Annotations[appsv1beta1.InPlaceUpdateStateKey] = `{"revision":"` + update.Name + `","updateTimestamp":"2026-03-01T11:00:00Z","lastContainerStatuses":null,"updateEnvFromMetadata":true}`
	kruisepod.SetPodCondition(pod, corev1.PodCondition{Type: appsv1beta1.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	pod.Status.ContainerStatuses[0].ContainerID = "containerd://c1"

	reportWith := func(id, labelValue string) *corev1.Pod {
		p := pod.DeepCopy()
		report := kruisepod.RuntimeContainerMetaSet{Containers: []kruisepod.RuntimeContainerMeta{{
			Name: "c", ContainerID: id,
			Hashes: kruisepod.RuntimeContainerHashes{
				PlainHash:                    kruisepod.ContainerHash(&p.Spec.Containers[0]),
				ExtractedEnvFromMetadataHash: kruisepod.ExpectedEnvFromMetadataHash(&p.Spec.Containers[0], map[string]string{"test-env": labelValue}, nil),
			},
		}}}
		encoded, _ := json.Marshal(report)
		p.Annotations[appsv1beta1.RuntimeContainersMetaKey] = string(encoded)
		return p
	}
	for name, waiting := range map[string]*corev1.Pod{
		"no report":                  pod,
		"the old env reported":       reportWith("containerd://c1", "foo"),
		"another container reported": reportWith("containerd://c0", "bar"),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOption{}, cs, current, update, waiting)
			f.sync(cs)
			if len(f.podStatusUpdates()) != 0 || len(f.podPatches()) != 0 {
				t.Errorf("touched a pod whose container does not run with the new env: %v %v", f.podStatusUpdates(), f.podPatches())
			}
		})
	}

	f := newFixture(t, fixtureOption{}, cs, current, update, reportWith("containerd://c1", "bar"))
	f.sync(cs)
	f.wantInPlaceUpdateDone(t)
}
