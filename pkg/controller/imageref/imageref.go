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

	// maxNameLength is the longest a repository name, registry included, may be.
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
	parts := split(ref)
	r := Reference{Tag: parts.tag, Digest: parts.digest}
	if parts.hasDigest {
		if !digestRegexp.MatchString(r.Digest) {
			return Reference{}, fmt.Errorf("invalid digest %q", r.Digest)
		}
		if algorithm, hex, _ := strings.Cut(r.Digest, ":"); algorithm == "sha256" && len(hex) != 64 {
			return Reference{}, fmt.Errorf("invalid digest %q: sha256 needs 64 hexadecimal digits", r.Digest)
		}
	}
	if parts.hasTag && !tagRegexp.MatchString(r.Tag) {
		return Reference{}, fmt.Errorf("invalid tag %q", r.Tag)
	}
	name := parts.name
	if name == "" {
		return Reference{}, errors.New("image reference has no repository name")
	}
	if hex64Regexp.MatchString(name) {
		return Reference{}, fmt.Errorf("invalid repository name %q: a 64-character hexadecimal string is an image ID, not a name", name)
	}
	if first, _, found := strings.Cut(name, "/"); found && looksLikeDomain(first) && !domainRegexp.MatchString(first) {
		return Reference{}, fmt.Errorf("invalid registry %q", first)
	}
	r.Domain, r.Path = splitDomain(name, isLegacyDockerHubDomain)
	// Measured in full, as container runtimes measure it once they have added the
	// registry: "nginx" is "docker.io/library/nginx" to them.
	if len(r.Domain)+1+len(r.Path) > maxNameLength {
		return Reference{}, fmt.Errorf("repository name must not be longer than %d characters", maxNameLength)
	}
	if !pathRegexp.MatchString(r.Path) {
		if strings.ToLower(r.Path) != r.Path {
			return Reference{}, fmt.Errorf("invalid repository name %q: it must be lower case", name)
		}
		return Reference{}, fmt.Errorf("invalid repository name %q", name)
	}
	return r, nil
}

// FamiliarName is the shortest name that means the same repository: Docker Hub's domain,
// and the "library/" of its official images, are left out where that changes nothing.
func (r Reference) FamiliarName() string {
	if r.Domain != DockerHubDomain {
		return r.Domain + "/" + r.Path
	}
	// An official image named like an image ID keeps "library/": Parse refuses the ID.
	if rest, ok := strings.CutPrefix(r.Path, officialRepoPrefix); ok && !strings.Contains(rest, "/") && !hex64Regexp.MatchString(rest) {
		return rest
	}
	// A path whose first component reads as a registry keeps the domain: "a.b/c" alone
	// would name repository c on registry a.b, not a.b/c on Docker Hub.
	if first, _, _ := strings.Cut(r.Path, "/"); looksLikeDomain(first) {
		return r.Domain + "/" + r.Path
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
