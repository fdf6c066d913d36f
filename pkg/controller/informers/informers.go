// Package informers holds the settings every informer factory in bosun's binaries shares:
// a transform that drops metadata.managedFields before objects are cached, and the
// randomised default resync period; and what controllers do to the shared informers:
// register handlers (AddHandlers) and add indexes (AddIndex).
//
// managedFields is often the largest part of an object's metadata and no controller reads
// it, so dropping it before caching saves a large share of informer memory. The resync
// period is randomised per factory so that the factories of many processes (or of one
// process restarted) do not resync in lockstep.
//
// Typed factories come from NewSharedInformerFactory and metadata-only factories (used by
// the garbage collector for resources no controller watches) from
// NewMetadataInformerFactory. bosun's generated factory is wired the same way by its
// binary: WithTransform(StripManagedFields) and ResyncPeriod(minResyncPeriod).
package informers

import (
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// DefaultMinResyncPeriod is the default of --min-resync-period.
const DefaultMinResyncPeriod = 12 * time.Hour

// StripManagedFields is a cache.TransformFunc that sets metadata.managedFields to nil and
// leaves everything else untouched. Objects without object metadata (for example deletion
// tombstones) pass through unchanged. The informer hands the transform a freshly decoded
// object it owns, so changing it in place is safe.
func StripManagedFields(obj any) (any, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	if accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = StripManagedFields

// ResyncPeriod returns minResync × (1 + r) for a random r in [0, 1): with the 12 h default,
// a period between 12 h and 24 h. Call it once per factory.
func ResyncPeriod(minResync time.Duration) time.Duration {
	return scaleResync(minResync, rand.Float64())
}

// scaleResync is ResyncPeriod with the random factor supplied, for tests.
func scaleResync(minResync time.Duration, r float64) time.Duration {
	return time.Duration(float64(minResync.Nanoseconds()) * (1 + r))
}

// NewSharedInformerFactory returns a typed factory with StripManagedFields and a default
// resync of ResyncPeriod(minResync). Further options are applied after those.
func NewSharedInformerFactory(client kubernetes.Interface, minResync time.Duration, opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
	opts = append([]informers.SharedInformerOption{informers.WithTransform(StripManagedFields)}, opts...)
	return informers.NewSharedInformerFactoryWithOptions(client, ResyncPeriod(minResync), opts...)
}

// NewMetadataInformerFactory returns a metadata-only factory with StripManagedFields and
// the given resync period. The garbage collector's monitors pass 0 (no resync).
func NewMetadataInformerFactory(client metadata.Interface, resync time.Duration) metadatainformer.SharedInformerFactory {
	return metadatainformer.NewSharedInformerFactoryWithOptions(client, resync, metadatainformer.WithTransform(StripManagedFields))
}
