package hash

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestControllerRevisionHash(t *testing.T) {
	// OpenKruise's revision data for a template with labels a=1, b=2 and one container "c"
	// running img:v1 (the same bytes kruisepod's revision-data golden test holds).
	const data = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"image":"img:v1","name":"c","resources":{}}]}}}}`
	// The expected values were computed outside Go, with a few lines of Python implementing
	// FNV-1 32 (offset basis 0x811c9dc5, prime 0x01000193, multiply then xor) over the data
	// followed by the decimal collision count, then mapping every decimal digit d to
	// "bcdfghjklmnpqrstvwxz2456789"[(d+48) % 27]: 207318743 for count 0 becomes 64c75dc87.
	for _, tc := range []struct {
		name  string
		count *int32
		want  string
	}{
		{"no count", nil, "c8cff9b57"},
		{"count 0", ptr.To[int32](0), "64c75dc87"},
		{"count 1", ptr.To[int32](1), "64c75dc86"},
		{"count 7", ptr.To[int32](7), "64c75dc7b"},
	} {
		if got := ControllerRevisionHash([]byte(data), tc.count); got != tc.want {
			t.Errorf("%s: ControllerRevisionHash = %s, want %s", tc.name, got, tc.want)
		}
	}
}
