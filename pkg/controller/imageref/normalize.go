package imageref

import "strings"

// Normalize returns ref in the fully qualified form container runtimes list images by:
// registry (SplitName's, Docker Hub's host names folded), full path, the tag, DefaultTag
// when ref has neither a tag nor a digest, and the digest. "nginx:1.25" becomes
// "docker.io/library/nginx:1.25". Like Split it validates nothing and never fails.
func Normalize(ref string) string {
	name, tag, digest := Split(ref)
	domain, path := SplitName(name)
	out := domain + "/" + path
	if tag == "" && digest == "" {
		tag = DefaultTag
	}
	if tag != "" {
		out += ":" + tag
	}
	if digest != "" {
		out += "@" + digest
	}
	return out
}

// Join is the reference to tag of the repository name, where tag is a tag or a digest as
// TagOrDigest returns it: "name:tag", or "name@tag" when tag is a digest, which unlike a
// tag contains ":".
func Join(name, tag string) string {
	if strings.Contains(tag, ":") {
		return name + "@" + tag
	}
	return name + ":" + tag
}
