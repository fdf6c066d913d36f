// Package imageref parses container image references the way registries and container
// runtimes read them, strictly, and splits them into the familiar repository name and the
// tag that NodeImages are keyed by.
//
// A reference is NAME[:TAG][@DIGEST], where NAME is [DOMAIN/]PATH:
//
//   - DOMAIN is dot-separated host components of letters, digits and inner hyphens, with
//     an optional :PORT, or a bracketed IPv6 address; the first part of NAME is a domain
//     only when it contains "." or ":", is "localhost", or has an upper-case letter;
//   - PATH is slash-separated components of lower-case letters and digits, joined inside a
//     component by ".", "_", "__" or any run of "-";
//   - TAG is a word character followed by up to 127 word characters, "." or "-";
//   - DIGEST is ALGORITHM:HEX (sha256 needs 64 hex digits, any algorithm at least 32).
//
// Docker Hub references are normalised: "nginx", "library/nginx", "docker.io/nginx" and
// "index.docker.io/library/nginx" are all the familiar name "nginx".
package imageref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

const (
	// DefaultTag is the tag of a reference that names neither a tag nor a digest.
	DefaultTag = "latest"

	dockerHubDomain       = "docker.io"
	legacyDockerHubDomain = "index.docker.io"
	officialRepoPrefix    = "library/"

	// maxNameLength is the longest a repository name (domain included) may be.
	maxNameLength = 255
)

var (
	pathComponent   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	ipv6Address     = `\[(?:[a-fA-F0-9:]+)\]`
	domainPattern   = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|` + ipv6Address + `)(?::[0-9]+)?`

	pathRegexp   = regexp.MustCompile(`^` + pathComponent + `(?:/` + pathComponent + `)*$`)
	domainRegexp = regexp.MustCompile(`^` + domainPattern + `$`)
	tagRegexp    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRegexp = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
	hex64Regexp  = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// Reference is a parsed image reference.
type Reference struct {
	// Domain is the registry, "docker.io" for Docker Hub.
	Domain string
	// Path is the repository path within the registry ("library/nginx" on Docker Hub).
	Path string
	// Tag is the tag, empty when the reference has none.
	Tag string
	// Digest is "algorithm:hex", empty when the reference has none.
	Digest string
}

// Parse parses ref strictly. It returns an error saying what is wrong for anything that is
// not a complete, valid reference.
func Parse(ref string) (Reference, error) {
	if ref == "" {
		return Reference{}, errors.New("image reference is empty")
	}
	if strings.TrimSpace(ref) != ref {
		return Reference{}, errors.New("image reference has leading or trailing whitespace")
	}
	rest := ref
	var r Reference
	if at := strings.Index(rest, "@"); at >= 0 {
		r.Digest = rest[at+1:]
		rest = rest[:at]
		if !digestRegexp.MatchString(r.Digest) {
			return Reference{}, fmt.Errorf("invalid digest %q", r.Digest)
		}
		if algorithm, hex, _ := strings.Cut(r.Digest, ":"); algorithm == "sha256" && len(hex) != 64 {
			return Reference{}, fmt.Errorf("invalid digest %q: sha256 needs 64 hexadecimal digits", r.Digest)
		}
	}
	// A colon after the last slash starts the tag; one before it belongs to a port.
	if colon := strings.LastIndex(rest, ":"); colon > strings.LastIndex(rest, "/") {
		r.Tag = rest[colon+1:]
		rest = rest[:colon]
		if !tagRegexp.MatchString(r.Tag) {
			return Reference{}, fmt.Errorf("invalid tag %q", r.Tag)
		}
	}
	name := rest
	if name == "" {
		return Reference{}, errors.New("image reference has no repository name")
	}
	if len(name) > maxNameLength {
		return Reference{}, fmt.Errorf("repository name must not be longer than %d characters", maxNameLength)
	}
	if hex64Regexp.MatchString(name) {
		return Reference{}, fmt.Errorf("invalid repository name %q: a 64-character hexadecimal string is an image ID, not a name", name)
	}
	if first, _, found := strings.Cut(name, "/"); found && looksLikeDomain(first) && !domainRegexp.MatchString(first) {
		return Reference{}, fmt.Errorf("invalid registry %q", first)
	}
	r.Domain, r.Path = splitDomain(name)
	if !pathRegexp.MatchString(r.Path) {
		if strings.ToLower(r.Path) != r.Path {
			return Reference{}, fmt.Errorf("invalid repository name %q: it must be lower case", name)
		}
		return Reference{}, fmt.Errorf("invalid repository name %q", name)
	}
	return r, nil
}

// splitDomain splits a repository name into its registry and path, normalising Docker
// Hub's spellings.
func splitDomain(name string) (domain, path string) {
	slash := strings.Index(name, "/")
	if slash < 0 || !looksLikeDomain(name[:slash]) {
		domain, path = dockerHubDomain, name
	} else {
		domain, path = name[:slash], name[slash+1:]
	}
	if domain == legacyDockerHubDomain {
		domain = dockerHubDomain
	}
	if domain == dockerHubDomain && !strings.Contains(path, "/") {
		path = officialRepoPrefix + path
	}
	return domain, path
}

// looksLikeDomain reports whether the first component of a name is a registry rather than
// the first part of a Docker Hub path.
func looksLikeDomain(first string) bool {
	return strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first
}

// FamiliarName is the shortest name that means the same repository: Docker Hub's domain,
// and the "library/" of its official images, are left out.
func (r Reference) FamiliarName() string {
	if r.Domain != dockerHubDomain {
		return r.Domain + "/" + r.Path
	}
	if rest, ok := strings.CutPrefix(r.Path, officialRepoPrefix); ok && !strings.Contains(rest, "/") {
		return rest
	}
	return r.Path
}

// TagOrDigest is what a NodeImage keys the reference's tag by: the digest when there is
// one (it pins the content, whatever the tag says), else the tag, else DefaultTag.
func (r Reference) TagOrDigest() string {
	switch {
	case r.Digest != "":
		return r.Digest
	case r.Tag != "":
		return r.Tag
	}
	return DefaultTag
}

// NameAndTag parses ref and returns its familiar name and TagOrDigest.
func NameAndTag(ref string) (name, tag string, err error) {
	r, err := Parse(ref)
	if err != nil {
		return "", "", err
	}
	return r.FamiliarName(), r.TagOrDigest(), nil
}
