package hash

import (
	"hash/fnv"
	"strconv"
)

// ControllerRevisionHash returns the hash that names a ControllerRevision after its data:
// FNV-1 (32 bit, not FNV-1a) over data followed by the decimal text of collisionCount when
// it is non-nil, rendered in decimal and safe-encoded. It is the hash of upstream's
// controller history, which OpenKruise's CloneSet names its revisions with, so a revision
// bosun writes carries the name OpenKruise would give it and neither replaces the other's.
//
// Unlike ComputeHash it depends only on the bytes given, never on a Go struct layout.
func ControllerRevisionHash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	_, _ = h.Write(data)
	if collisionCount != nil {
		_, _ = h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return SafeEncode(strconv.FormatUint(uint64(h.Sum32()), 10))
}
