package imageref

import "strings"

const (
	// DockerHubDomain is the registry of a reference that names none, and the name every
	// other spelling of Docker Hub is folded into.
	DockerHubDomain = "docker.io"

	// legacyDockerHubDomain is Docker Hub's old index host, which references still use.
	legacyDockerHubDomain = "index.docker.io"
	// dockerHubRegistryHost is the host Docker Hub's registry API answers on.
	dockerHubRegistryHost = "registry-1.docker.io"

	// officialRepoPrefix is the path Docker Hub keeps its official images under.
	officialRepoPrefix = "library/"
)

// IsDockerHubHost reports whether host is one of Docker Hub's host names: its domain, its
// legacy index host, or the host its registry API answers on.
func IsDockerHubHost(host string) bool {
	return host == DockerHubDomain || host == legacyDockerHubDomain || host == dockerHubRegistryHost
}

func isLegacyDockerHubDomain(host string) bool { return host == legacyDockerHubDomain }

// SplitName splits a repository name (no tag or digest) into its registry, with port, and
// its path, with every one of Docker Hub's host names folded into DockerHubDomain and
// "library/" added to the path of its official images. Nothing is validated.
func SplitName(name string) (domain, path string) {
	return splitDomain(name, IsDockerHubHost)
}

// splitDomain splits a repository name into its registry and path: a first component that
// does not look like a host is the start of a Docker Hub path. Registries that isDockerHub
// accepts become DockerHubDomain.
func splitDomain(name string, isDockerHub func(string) bool) (domain, path string) {
	first, rest, found := strings.Cut(name, "/")
	if !found || !looksLikeDomain(first) {
		domain, path = DockerHubDomain, name
	} else {
		domain, path = first, rest
	}
	if isDockerHub(domain) {
		domain = DockerHubDomain
	}
	if domain == DockerHubDomain && !strings.Contains(path, "/") {
		path = officialRepoPrefix + path
	}
	return domain, path
}

// looksLikeDomain reports whether the first component of a name is a registry rather than
// the first part of a Docker Hub path.
func looksLikeDomain(first string) bool {
	return strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first
}
