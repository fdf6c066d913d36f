package storageversionmigrator

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

const (
	// maxListRestarts is how often one pass starts its list over after a continue token
	// expired before it gives up and leaves the retry to the queue's backoff.
	maxListRestarts = 3
	// maxReportedErrors is how many failed rewrites a pass's error names; the rest are
	// counted.
	maxReportedErrors = 5
)

// passResult counts what a pass did with the objects it listed.
type passResult struct {
	// rewritten objects were written back by the pass.
	rewritten int
	// skipped objects changed (Conflict) or went (NotFound) between the list and the
	// write: whoever changed them wrote them in the storage version already.
	skipped int
}

// rewriteAll lists every object of resource (CRD crdName) in pages and writes each back
// unchanged through its status subresource, so that the API server stores it in the
// current storage version. It returns an error if a list failed or any object could not
// be written; the objects it did write stay written.
func (c *Controller) rewriteAll(ctx context.Context, crdName string, resource schema.GroupVersionResource) (passResult, error) {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() { passDuration.WithLabelValues(crdName).Observe(c.clock.Since(start).Seconds()) }()

	client := c.client.Resource(resource)
	var (
		result   passResult
		failures []error
		failed   int
		restarts int
		token    string
	)
	for {
		page, err := client.List(ctx, metav1.ListOptions{Limit: pageSize, Continue: token})
		if token != "" && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && restarts < maxListRestarts {
			// The snapshot the pages came from has been compacted away. Objects written
			// since were written in the storage version, and starting over only sends
			// the ones already rewritten again, which the API server does not store twice.
			restarts++
			logger.Info("Continue token expired; listing from the start again", "resource", resource.String(), "restart", restarts)
			token = ""
			continue
		}
		if err != nil {
			errorsTotal.WithLabelValues(crdName).Inc()
			return result, errors.Join(append(failures, fmt.Errorf("listing %s: %w", resource.String(), err))...)
		}
		for i := range page.Items {
			if err := ctx.Err(); err != nil {
				return result, err
			}
			obj := &page.Items[i]
			switch err := rewrite(ctx, client, obj); {
			case err == nil:
				result.rewritten++
				migratedTotal.WithLabelValues(crdName).Inc()
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				result.skipped++
			default:
				errorsTotal.WithLabelValues(crdName).Inc()
				failed++
				if len(failures) < maxReportedErrors {
					failures = append(failures, fmt.Errorf("rewriting %s: %w", klog.KObj(obj), err))
				}
			}
		}
		logger.V(4).Info("Rewrote a page", "resource", resource.String(), "objects", len(page.Items),
			"rewritten", result.rewritten, "skipped", result.skipped, "failed", failed)
		if token = page.GetContinue(); token == "" {
			break
		}
	}
	if failed > len(failures) {
		failures = append(failures, fmt.Errorf("and %d more objects failed", failed-len(failures)))
	}
	return result, errors.Join(failures...)
}

// rewrite sends obj back as it was listed, with its resourceVersion, through the status
// subresource.
func rewrite(ctx context.Context, client dynamic.NamespaceableResourceInterface, obj *unstructured.Unstructured) error {
	_, err := client.Namespace(obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	return err
}
