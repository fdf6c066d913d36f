package containermeta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/daemon/containerstop"
	"github.com/bosun-dev/bosun/pkg/daemon/cri"
)

const (
	// runtimeCallTimeout bounds the CRI calls that read containers and their environment.
	runtimeCallTimeout = time.Minute
	// envRetryDelay is when a pod whose container's environment could not be read is looked
	// at again.
	envRetryDelay = 3 * time.Second
	// defaultGraceSeconds is the grace period of a pod that sets none, the API's default.
	defaultGraceSeconds = 30
)

// syncPod brings the report on the pod key ("<namespace>/<name>") up to date and restarts
// the containers whose env from metadata is out of date during an in-place update.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx).WithValues("pod", key)
	ctx = klog.NewContext(ctx, logger)
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	// Read before the pod is: a report shown in between would meet its expectation and
	// leave this sync with the copy from before it. (A pod that is gone meets it too.)
	if wait, pending := c.written.Pending(key); pending {
		// The update event of the write normally arrives within moments and queues the pod;
		// the delayed requeue makes sure it is looked at again even if it never does.
		logger.V(4).Info("Waiting for the informer to show this agent's last report", "wait", wait)
		c.queue.AddAfter(key, wait)
		return nil
	}
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.written.Forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	if pod.DeletionTimestamp != nil || len(pod.Status.ContainerStatuses) == 0 || !reportedOn(pod) {
		return nil
	}
	rt := c.runtime.Runtime()
	if rt == nil {
		return fmt.Errorf("the container runtime is not available")
	}
	if scheme, ok := runtimeOf(pod); !ok {
		return nil
	} else if scheme != rt.Name {
		logger.V(2).Info("Pod's containers run in another runtime than this agent's; not reporting", "runtime", scheme, "agentRuntime", rt.Name)
		return nil
	}

	readCtx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	defer cancel()
	containers, err := rt.PodContainers(readCtx, string(pod.UID))
	if err != nil {
		return err
	}
	previous, err := kruisepod.ReadRuntimeContainerMeta(pod)
	if err != nil {
		logger.Error(err, "Pod carries an unreadable report; writing it anew")
		previous = nil
	}
	seen := c.observe(readCtx, rt, pod, previous, containers)
	if seen.envUnread {
		c.queue.AddAfter(key, envRetryDelay)
	}

	var errs []error
	if previous == nil || !slices.Equal(previous.Containers, seen.report.Containers) {
		if err := c.writeReport(ctx, key, pod, seen.report); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range seen.restart {
		if err := c.restart(ctx, rt, pod, name, containers[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runtimeOf returns the runtime name in the scheme of the pod's first container ID
// ("<runtime>://<id>"); false while no container has an ID, or when it is malformed.
func runtimeOf(pod *corev1.Pod) (string, bool) {
	for _, status := range pod.Status.ContainerStatuses {
		if status.ContainerID == "" {
			continue
		}
		scheme, _, ok := strings.Cut(status.ContainerID, "://")
		return scheme, ok && scheme != ""
	}
	return "", false
}

// observation is what one look at a pod and its containers found.
type observation struct {
	// report is the pod's report as it should read now.
	report *kruisepod.RuntimeContainerMetaSet
	// restart names the running containers to stop for their env from metadata.
	restart []string
	// envUnread says that the environment of a running container could not be read.
	envUnread bool
}

// observe builds the report on pod from the containers the runtime runs, one entry per
// container status in pod status order, keeping the entry of a container the previous
// report names under the same ID; reads the env of a running container that has no env
// hash yet; and, while an in-place update is under way (InPlaceUpdateReady False), names
// the running containers whose env hash is not the one the pod's metadata gives now.
func (c *Controller) observe(ctx context.Context, rt *cri.Runtime, pod *corev1.Pod, previous *kruisepod.RuntimeContainerMetaSet, containers map[string]cri.Container) observation {
	logger := klog.FromContext(ctx)
	seen := observation{report: &kruisepod.RuntimeContainerMetaSet{Containers: make([]kruisepod.RuntimeContainerMeta, 0, len(pod.Status.ContainerStatuses))}}
	updating := false
	if cond := kruisepod.PodCondition(pod, appsv1beta1.InPlaceUpdateReady); cond != nil && cond.Status == corev1.ConditionFalse {
		updating = true
	}
	for _, status := range pod.Status.ContainerStatuses {
		container, found := containers[status.Name]
		spec := specContainer(pod, status.Name)
		if !found || spec == nil {
			continue
		}
		id := cri.KubeContainerID(rt.Name, container.ID)
		var entry kruisepod.RuntimeContainerMeta
		if previous != nil {
			if i := slices.IndexFunc(previous.Containers, func(m kruisepod.RuntimeContainerMeta) bool { return m.ContainerID == id }); i >= 0 {
				entry = previous.Containers[i]
			}
		}
		if entry.ContainerID == "" {
			entry = kruisepod.RuntimeContainerMeta{
				Name: container.Name, ContainerID: id, RestartCount: container.RestartCount,
				Hashes: kruisepod.RuntimeContainerHashes{PlainHash: container.Hash},
			}
		}
		if c.envFromMetadata {
			isRunning := container.State == runtimeapi.ContainerState_CONTAINER_RUNNING
			if entry.Hashes.ExtractedEnvFromMetadataHash == 0 && isRunning {
				hash, err := kruisepod.RunningEnvFromMetadataHash(spec, envReader(ctx, rt, container.ID))
				if err != nil {
					logger.Error(err, "Cannot read the environment of a container; trying again later", "container", status.Name, "containerID", id)
					seen.envUnread = true
				} else {
					entry.Hashes.ExtractedEnvFromMetadataHash = hash
				}
			}
			if updating && isRunning && entry.Hashes.ExtractedEnvFromMetadataHash != 0 &&
				entry.Hashes.ExtractedEnvFromMetadataHash != kruisepod.ExpectedEnvFromMetadataHash(spec, pod.Labels, pod.Annotations) {
				seen.restart = append(seen.restart, status.Name)
			}
		}
		seen.report.Containers = append(seen.report.Containers, entry)
	}
	return seen
}

// envReader returns a lookup of the env vars of container id that reads the container's
// environment from the runtime on its first use only: containers whose env reads no pod
// metadata are never asked.
func envReader(ctx context.Context, rt *cri.Runtime, id string) func(string) (string, error) {
	var (
		env  map[string]string
		read bool
	)
	return func(name string) (string, error) {
		if !read {
			var err error
			if env, err = rt.ContainerEnv(ctx, id); err != nil {
				return "", err
			}
			read = true
		}
		return env[name], nil
	}
}

// writeReport writes report into pod's runtime-containers-meta annotation, through the
// status subresource (the kubelet's view of the pod), and remembers the written version.
func (c *Controller) writeReport(ctx context.Context, key string, pod *corev1.Pod, report *kruisepod.RuntimeContainerMetaSet) error {
	encoded, err := json.Marshal(report)
	if err != nil {
		return fmt.Errorf("encoding the report on pod %s: %w", key, err)
	}
	// The UID makes the patch fail on another pod of the same name.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         pod.UID,
		"annotations": map[string]string{appsv1beta1.RuntimeContainersMetaKey: string(encoded)},
	}})
	if err != nil {
		return fmt.Errorf("encoding the report patch of pod %s: %w", key, err)
	}
	written, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing the runtime containers meta of pod %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Reported the pod's runtime containers", "report", string(encoded), "resourceVersion", written.ResourceVersion)
	c.written.Expect(key, written)
	return nil
}

// restart stops pod's running container called name so that the kubelet starts it again
// with the env the pod's labels and annotations give it now: event Killing on the pod,
// the container's preStop hook within the pod's grace period, then the stop.
func (c *Controller) restart(ctx context.Context, rt *cri.Runtime, pod *corev1.Pod, name string, container cri.Container) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("container", name))
	spec := specContainer(pod, name)
	grace := int64(defaultGraceSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: fmt.Sprintf("spec.containers{%s}", name),
	}
	klog.FromContext(ctx).V(2).Info("Restarting container: its env from the pod's metadata is out of date", "containerID", container.ID)
	c.recorder.Event(ref, corev1.EventTypeNormal, KillingReason,
		fmt.Sprintf("Stopping container %s: its env from the pod's labels or annotations changed", name))
	stop := containerstop.Container{
		PodUID: string(pod.UID), ID: container.ID, GraceSeconds: grace,
		HookFailed: func(error) {
			// As the kubelet: the event does not carry the hook's output, which may hold secrets.
			c.recorder.Event(ref, corev1.EventTypeWarning, FailedPreStopHookReason, "PreStopHook failed")
		},
	}
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
		stop.PreStop, stop.Ports = spec.Lifecycle.PreStop, spec.Ports
	}
	if err := c.stopper.Stop(ctx, rt, stop); err != nil {
		return fmt.Errorf("stopping container %s of pod %s for its env: %w", name, klog.KObj(pod), err)
	}
	return nil
}
