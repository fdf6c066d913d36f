// Package hash computes the pod-template hash that names ReplicaSets and labels their pods
// (pod-template-hash).
//
// The hash is FNV-1a (32 bit) over a complete, deterministic text dump of the
// PodTemplateSpec, optionally followed by the collision count, rendered in decimal and
// mapped onto a vowel-free alphabet so that it can never spell words. The dump is
// k8s.io/utils/dump.ForHash (spew-style %#v with sorted map keys, methods, pointer
// addresses and capacities disabled), the same dump upstream uses, so bosun's values equal
// upstream's when both are built against the same k8s.io/api version.
//
// The value is stable for a given build: independent of map iteration order, pointer
// addresses, process or restart. It may change when k8s.io/api adds fields. Nothing may
// depend on it for correctness: the Deployment controller finds its new ReplicaSet by
// template equality, not by name.
//
// ControllerRevisionHash (revision.go) is the toolkit's other hash: the one that names
// ControllerRevisions after their data bytes, as upstream's controller history does.
package hash

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/dump"
)

// alphabet has no vowels (nor 0, 1 and 3, which read like vowels) so that generated names
// cannot spell words. Indexed by byte value modulo 27, the digits '0'..'9' become
// 4 5 6 7 8 9 b c d f.
const alphabet = "bcdfghjklmnpqrstvwxz2456789"

// ComputeHash returns the hash of template and, when collisionCount is non-nil, of the
// collision count, which the Deployment controller bumps to step away from a name clash.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	writeTemplate(h, template)
	if collisionCount != nil {
		// 8 bytes: the count as a little-endian uint32 followed by four zero bytes.
		var b [8]byte
		binary.LittleEndian.PutUint32(b[:4], uint32(*collisionCount))
		_, _ = h.Write(b[:])
	}
	return SafeEncode(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// writeTemplate writes the dump of the template value (not the pointer) to w.
func writeTemplate(w io.Writer, template *corev1.PodTemplateSpec) {
	_, _ = fmt.Fprintf(w, "%v", dump.ForHash(*template))
}

// SafeEncode maps every byte b of s to alphabet[b % 27].
func SafeEncode(s string) string {
	out := make([]byte, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = alphabet[int(s[i])%len(alphabet)]
	}
	return string(out)
}
