package hostpathprovisioner

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// volumeDirMode lets a container of any user write into its volume, as local-path does.
const volumeDirMode os.FileMode = 0o777

// VolumeName is the name of the volume made for claim: from its UID, so that every sync of
// the claim, before or after a restart, names the same volume.
func VolumeName(claim *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(claim.UID)
}

// syncClaim makes the volume a claim asks this provisioner for: its directory, then the
// PersistentVolume pre-bound to the claim. The PersistentVolume controller binds them.
func (c *Controller) syncClaim(ctx context.Context, key string) error {
	namespace, name, err := queue.SplitKey(key)
	if err != nil {
		return err
	}
	claim, err := c.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading claim %s from the cache: %w", key, err)
	}
	if !asksThisProvisioner(claim) {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim))
	className := ptr.Deref(claim.Spec.StorageClassName, "")
	class, err := c.classes.Get(className)
	if err != nil {
		// The PersistentVolume controller named this provisioner from the class, so the
		// class exists; the cache has not seen it yet, or it was deleted since.
		return fmt.Errorf("reading StorageClass %q of claim %s: %w", className, key, err)
	}
	if class.Provisioner != ProvisionerName {
		return nil
	}
	volumeName := VolumeName(claim)
	if _, err := c.volumes.Get(volumeName); err == nil {
		return nil // made already; binding is the PersistentVolume controller's part
	}
	nodeName := claim.Annotations[AnnSelectedNode]
	if nodeName == "" {
		// The class binds on first consumer: the scheduler writes the node on the claim
		// when it places a pod, which updates the claim and queues it again.
		logger.V(4).Info("Waiting for the scheduler to select a node for the claim")
		return nil
	}
	if reason := unsupported(claim); reason != "" {
		c.recorder.Eventf(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, "%s cannot provision this claim: %s", ProvisionerName, reason)
		logger.V(2).Info("Not provisioning the claim", "reason", reason)
		return nil
	}
	node, err := c.nodes.Get(nodeName)
	if err != nil {
		return fmt.Errorf("reading node %s, selected for claim %s: %w", nodeName, key, err)
	}
	hostname := node.Labels[corev1.LabelHostname]
	if hostname == "" {
		return fmt.Errorf("node %s, selected for claim %s, has no %s label to pin the volume to", nodeName, key, corev1.LabelHostname)
	}

	path := c.VolumePath(volumeName)
	if err := makeVolumeDir(path); err != nil {
		return fmt.Errorf("making the directory of volume %s for claim %s: %w", volumeName, key, err)
	}
	volume := newVolume(claim, class, volumeName, path, hostname)
	if _, err := c.client.CoreV1().PersistentVolumes().Create(ctx, volume, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// An earlier sync made it; the cache is behind.
			return nil
		}
		return fmt.Errorf("creating volume %s for claim %s: %w", volumeName, key, err)
	}
	logger.Info("Provisioned a volume", "volume", volumeName, "node", nodeName, "path", path,
		"capacity", volume.Spec.Capacity.Storage().String())
	c.recorder.Eventf(claim, corev1.EventTypeNormal, ReasonProvisioningSucceeded,
		"Successfully provisioned volume %s: %s on node %s", volumeName, path, nodeName)
	return nil
}

// asksThisProvisioner reports whether the PersistentVolume controller waits for this
// provisioner to make a volume for claim.
func asksThisProvisioner(claim *corev1.PersistentVolumeClaim) bool {
	if claim.DeletionTimestamp != nil || claim.Spec.VolumeName != "" {
		return false
	}
	return claim.Annotations[AnnStorageProvisioner] == ProvisionerName ||
		claim.Annotations[AnnBetaStorageProvisioner] == ProvisionerName
}

// unsupported says what of claim a directory on the node cannot give, or "".
func unsupported(claim *corev1.PersistentVolumeClaim) string {
	switch {
	case ptr.Deref(claim.Spec.VolumeMode, corev1.PersistentVolumeFilesystem) != corev1.PersistentVolumeFilesystem:
		return fmt.Sprintf("volume mode %s is not supported, only %s", *claim.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
	case claim.Spec.Selector != nil:
		return "a claim with a selector is not supported"
	case claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil:
		return "a claim with a data source is not supported"
	}
	if _, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		return "the claim requests no storage"
	}
	return ""
}

// makeVolumeDir creates the directory of a volume, or finds it made by an earlier sync,
// and gives it volumeDirMode whatever the process's umask.
func makeVolumeDir(path string) error {
	if err := os.MkdirAll(path, volumeDirMode); err != nil {
		return err
	}
	return os.Chmod(path, volumeDirMode)
}

// newVolume is the PersistentVolume of claim: its request and access modes, the class's
// name, reclaim policy and mount options, the directory at path, and node affinity to the
// node whose hostname label is hostname.
func newVolume(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, name, path, hostname string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{AnnProvisionedBy: ProvisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes: claim.Spec.AccessModes,
			ClaimRef: &corev1.ObjectReference{
				APIVersion:      "v1",
				Kind:            "PersistentVolumeClaim",
				Namespace:       claim.Namespace,
				Name:            claim.Name,
				UID:             claim.UID,
				ResourceVersion: claim.ResourceVersion,
			},
			PersistentVolumeReclaimPolicy: ptr.Deref(class.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete),
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			// The directory exists before the volume does; if it is gone, a pod fails to
			// start rather than write into a fresh empty directory.
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
			},
			// On the node label, not the node's name: the scheduler checks a volume's
			// affinity against the node's labels only.
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname},
				}}}},
			}},
		},
	}
}
