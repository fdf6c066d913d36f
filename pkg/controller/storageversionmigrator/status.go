package storageversionmigrator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// trimStoredVersions sets crd's status.storedVersions to [v1beta1] after a clean pass.
// crd is the CRD as the pass started from it, and the write carries its resourceVersion:
// if the CRD changed since (its storage version, say), the API server refuses the write
// with a Conflict and the next sync makes a new pass on the new CRD.
func (c *Controller) trimStoredVersions(ctx context.Context, crd *unstructured.Unstructured, was []string, result passResult) error {
	trimmed := crd.DeepCopy()
	if err := unstructured.SetNestedStringSlice(trimmed.Object, []string{TargetVersion}, "status", "storedVersions"); err != nil {
		return fmt.Errorf("setting status.storedVersions of CRD %s: %w", crd.GetName(), err)
	}
	if _, err := c.client.Resource(CRDResource).UpdateStatus(ctx, trimmed, metav1.UpdateOptions{}); err != nil {
		if !apierrors.IsConflict(err) {
			errorsTotal.WithLabelValues(crd.GetName()).Inc()
			c.recorder.Eventf(crd, corev1.EventTypeWarning, FailedReason,
				"Every object is stored in %s, but setting status.storedVersions to [%s] failed: %v", TargetVersion, TargetVersion, err)
		}
		return fmt.Errorf("setting status.storedVersions of CRD %s to [%s]: %w", crd.GetName(), TargetVersion, err)
	}
	klog.FromContext(ctx).Info("Storage version migrated; status.storedVersions trimmed",
		"storedVersions", []string{TargetVersion}, "was", was, "rewritten", result.rewritten, "skipped", result.skipped)
	c.recorder.Eventf(crd, corev1.EventTypeNormal, MigratedReason,
		"Every object is stored in %s (%d rewritten, %d changed or deleted meanwhile); status.storedVersions is now [%s], was %v",
		TargetVersion, result.rewritten, result.skipped, TargetVersion, was)
	return nil
}
