package gcgraph

import "k8s.io/utils/lru"

// AbsentOwnerCacheSize is the number of identities the garbage collector remembers as
// verified absent.
const AbsentOwnerCacheSize = 500

// AbsentOwnerCache remembers identities verified not to exist, so that dependents of a
// deleted owner do not each cost a live GET of it. It is an LRU: a hit refreshes the
// entry, and the least recently used identity is evicted when full. Safe for concurrent
// use.
type AbsentOwnerCache struct {
	cache *lru.Cache
}

// NewAbsentOwnerCache returns a cache holding up to size identities.
func NewAbsentOwnerCache(size int) *AbsentOwnerCache {
	return &AbsentOwnerCache{cache: lru.New(size)}
}

// Add records id as absent.
func (c *AbsentOwnerCache) Add(id Identity) {
	c.cache.Add(id, nil)
}

// Has reports whether id is recorded as absent.
func (c *AbsentOwnerCache) Has(id Identity) bool {
	_, ok := c.cache.Get(id)
	return ok
}

// Len returns the number of identities held.
func (c *AbsentOwnerCache) Len() int {
	return c.cache.Len()
}
