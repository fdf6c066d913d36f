package hostpathprovisioner

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// syncVolume deletes a volume this provisioner made once its claim is gone and its reclaim
// policy says Delete: the directory first, then the PersistentVolume, so that a failure in
// between leaves a Released volume that the next sync finishes. A volume deleted by someone
// else loses its directory too.
func (c *Controller) syncVolume(ctx context.Context, name string) error {
	volume, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return c.removeDirOfDeletedVolume(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("reading volume %s from the cache: %w", name, err)
	}
	if volume.Annotations[AnnProvisionedBy] != ProvisionerName ||
		volume.Status.Phase != corev1.VolumeReleased ||
		volume.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("volume", klog.KObj(volume))
	path := c.VolumePath(volume.Name)
	if volume.Spec.HostPath == nil || volume.Spec.HostPath.Path != path {
		// Not a directory this provisioner made: whatever it is, it is not removed here.
		c.recorder.Eventf(volume, corev1.EventTypeWarning, ReasonVolumeFailedDelete,
			"%s deletes only the directories it made, and this volume's is not %s", ProvisionerName, path)
		logger.Info("Not deleting a Released volume whose source is not its own directory", "want", path)
		return nil
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing the directory of Released volume %s: %w", volume.Name, err)
	}
	if volume.DeletionTimestamp != nil {
		// Deleted already, by an earlier sync or by someone else; the volume waits only
		// for its protection finalizer to go.
		return nil
	}
	err = c.client.CoreV1().PersistentVolumes().Delete(ctx, volume.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &volume.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Released volume %s: %w", volume.Name, err)
	}
	logger.Info("Deleted a Released volume and its directory", "path", path)
	return nil
}

// removeDirOfDeletedVolume removes the directory of a volume the cache no longer holds,
// once the API server confirms it is gone (the cache may lag a volume just made).
func (c *Controller) removeDirOfDeletedVolume(ctx context.Context, name string) error {
	path := c.VolumePath(name)
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		return nil
	}
	_, err := c.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return nil // the cache is behind; the volume's own events queue it again
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("checking that volume %s is gone: %w", name, err)
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing the directory of deleted volume %s: %w", name, err)
	}
	klog.FromContext(ctx).Info("Removed the directory of a deleted volume", "volume", name, "path", path)
	return nil
}
