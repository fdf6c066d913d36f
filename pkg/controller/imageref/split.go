package imageref

import "strings"

// parts is a reference taken apart as written. The has flags tell a separator written
// with nothing after it ("nginx:", "nginx@") from one that is absent.
type parts struct {
	name, tag, digest string
	hasTag, hasDigest bool
}

// split takes ref apart without judging the parts: the digest follows the first "@"; of
// what precedes it, a ":" after the last "/" starts the tag, while one before that "/"
// belongs to a registry port.
func split(ref string) parts {
	var p parts
	p.name, p.digest, p.hasDigest = strings.Cut(ref, "@")
	if colon := strings.LastIndex(p.name, ":"); colon > strings.LastIndex(p.name, "/") {
		p.name, p.tag, p.hasTag = p.name[:colon], p.name[colon+1:], true
	}
	return p
}

// Split takes ref apart as Parse does, without validating or normalising anything, so
// that it never fails: it is for references that others already accepted. A tag or
// digest that ref does not name is empty.
func Split(ref string) (name, tag, digest string) {
	p := split(ref)
	return p.name, p.tag, p.digest
}

// WithDefaultTag returns ref with ":" DefaultTag appended when it names neither a tag nor
// a digest, the way a runtime reads an untagged reference; any other ref is returned as
// it is, its registry and path as written.
func WithDefaultTag(ref string) string {
	if p := split(ref); p.hasTag || p.hasDigest {
		return ref
	}
	return ref + ":" + DefaultTag
}
