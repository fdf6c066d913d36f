package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// envFromLabelCloneSet is a CloneSet of one web server updated in place, whose env
// TEST_ENV reads the pod label test-env, set to value in the template.
func envFromLabelCloneSet(name, value string) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	template := webserverPod("v1", map[string]string{"app": name, "test-env": value}, corev1.EnvVar{
		Name: "TEST_ENV", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['test-env']"}},
	})
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas:       ptr.To[int32](1),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			Template:       template,
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
	}
}

// waitForEnvPod waits until the CloneSet's only pod is Ready and Normal with its in-place
// update (if any) complete, its container started restarts times, and bosun-daemon's
// report names that container; with uid set, it must be that pod.
func waitForEnvPod(t *testing.T, namespace, name string, restarts int32, uid string) *corev1.Pod {
	t.Helper()
	client := clientset(t)
	var found *corev1.Pod
	waitFor(t, daemonSetTimeout, fmt.Sprintf("the pod of CloneSet %s to run with %d restarts", name, restarts), func(ctx context.Context) (bool, error) {
		pods, err := listPods(ctx, client, namespace, "app="+name)
		if err != nil || len(pods) != 1 {
			return false, err
		}
		pod := &pods[0]
		if (uid != "" && string(pod.UID) != uid) || !podReady(pod) || !hasCondition(pod, appsv1alpha1.InPlaceUpdateReady) ||
			pod.Labels[appsv1alpha1.LifecycleStateKey] != string(appsv1alpha1.LifecycleStateNormal) || len(pod.Status.ContainerStatuses) != 1 {
			return false, nil
		}
		status := pod.Status.ContainerStatuses[0]
		if !status.Ready || status.State.Running == nil || status.RestartCount != restarts {
			return false, nil
		}
		report, err := kruisepod.ReadRuntimeContainerMeta(pod)
		if err != nil || report == nil {
			return false, err
		}
		if meta := report.Container("webserver"); meta == nil || meta.ContainerID != status.ContainerID {
			return false, nil
		}
		found = pod
		return true, nil
	})
	return found
}

// containerEnv returns the environment the runtime started container id (a pod status ID)
// with, from the runtime spec of its verbose status, as "NAME=value" lines.
func containerEnv(ctx context.Context, t *testing.T, id string) []string {
	t.Helper()
	_, runtimeID, _ := strings.Cut(id, "://")
	resp, err := runtimeService(t).ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: runtimeID, Verbose: true})
	if err != nil {
		t.Fatalf("reading the status of container %s over CRI: %v", id, err)
	}
	var info struct {
		RuntimeSpec struct {
			Process struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
		t.Fatalf("decoding the verbose status of container %s: %v", id, err)
	}
	return info.RuntimeSpec.Process.Env
}

// Env from a label (acceptance scenario 17) on the real node. A CloneSet's template label
// that the container's env reads changes: the pod is kept and relabelled, bosun-daemon
// stops the container (event Killing), the kubelet starts it again with the label's new
// value, and the in-place update, recorded with updateEnvFromMetadata, completes once
// bosun-daemon reports the new container in runtime-containers-meta.
func TestCloneSetUpdatesEnvFromLabelInPlace(t *testing.T) {
	requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	bosun := bosunClientset(t)
	client := clientset(t)

	if _, err := bosun.AppsV1alpha1().CloneSets(ns).Create(ctx, envFromLabelCloneSet("envs", "foo"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitForEnvPod(t, ns, "envs", 0, "")
	oldID := before.Status.ContainerStatuses[0].ContainerID
	if env := containerEnv(ctx, t, oldID); !slices.Contains(env, "TEST_ENV=foo") {
		t.Errorf("the container runs with %q, want TEST_ENV=foo", env)
	}

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cs, err := bosun.AppsV1alpha1().CloneSets(ns).Get(ctx, "envs", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs.Spec.Template.Labels["test-env"] = "bar"
		_, err = bosun.AppsV1alpha1().CloneSets(ns).Update(ctx, cs, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after := waitForEnvPod(t, ns, "envs", 1, string(before.UID))
	status := after.Status.ContainerStatuses[0]
	if status.ContainerID == oldID {
		t.Errorf("container %s still runs", oldID)
	}
	if after.Labels["test-env"] != "bar" || status.Image != cluster.WebserverImage("v1") {
		t.Errorf("pod after the update: label test-env %q, image %s; want bar and the same image", after.Labels["test-env"], status.Image)
	}
	if env := containerEnv(ctx, t, status.ContainerID); !slices.Contains(env, "TEST_ENV=bar") {
		t.Errorf("the new container runs with %q, want TEST_ENV=bar", env)
	}

	state, err := kruisepod.ReadInPlaceUpdateState(after)
	if err != nil || state == nil || !state.UpdateEnvFromMetadata || state.UpdateImages {
		t.Errorf("in-place update state %q (%v), want updateEnvFromMetadata and no images", after.Annotations[appsv1alpha1.InPlaceUpdateStateKey], err)
	}
	report, _ := kruisepod.ReadRuntimeContainerMeta(after)
	if meta := report.Container("webserver"); meta.RestartCount != 1 ||
		meta.Hashes.ExtractedEnvFromMetadataHash != kruisepod.ExpectedEnvFromMetadataHash(&after.Spec.Containers[0], after.Labels, after.Annotations) {
		t.Errorf("report %+v, want the new container with the env hash of test-env=bar", meta)
	}

	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + after.Name + ",reason=Killing"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Source.Component == "containermeta-agent" }) {
		t.Errorf("no Killing event of bosun-daemon on the pod: %+v", events.Items)
	}
	waitFor(t, daemonSetTimeout, "CloneSet envs to count its pod updated and ready", func(ctx context.Context) (bool, error) {
		cs, err := bosun.AppsV1alpha1().CloneSets(ns).Get(ctx, "envs", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cs.Status.ObservedGeneration == cs.Generation && cs.Status.UpdatedReadyReplicas == 1 &&
			cs.Status.UpdateRevision == cs.Status.CurrentRevision, nil
	})
}
