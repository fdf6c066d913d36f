package cri

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/bosun-dev/bosun/pkg/controller/imageref"
)

// RegistryCredential is one entry of a pull secret: the registry it is for, as written in
// the secret, and what to log in with.
type RegistryCredential struct {
	// Registry is the entry's key: a host, optionally with port, scheme and path
	// ("https://index.docker.io/v1/", "reg.io:5000", "reg.io/team", "*.reg.io").
	Registry string

	Username      string
	Password      string
	Auth          string
	IdentityToken string
	RegistryToken string
}

// dockerConfigEntry is one registry's entry in a .dockercfg or .dockerconfigjson secret.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// CredentialsFromSecret returns the registry credentials of a pull secret of type
// kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg, most specific registry key
// first. A secret of another type has none; one whose data does not parse is an error.
func CredentialsFromSecret(secret *corev1.Secret) ([]RegistryCredential, error) {
	var entries map[string]dockerConfigEntry
	switch secret.Type {
	case corev1.SecretTypeDockerConfigJson:
		var config struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &config); err != nil {
			return nil, fmt.Errorf("parsing %s of secret %s/%s: %w", corev1.DockerConfigJsonKey, secret.Namespace, secret.Name, err)
		}
		entries = config.Auths
	case corev1.SecretTypeDockercfg:
		if err := json.Unmarshal(secret.Data[corev1.DockerConfigKey], &entries); err != nil {
			return nil, fmt.Errorf("parsing %s of secret %s/%s: %w", corev1.DockerConfigKey, secret.Namespace, secret.Name, err)
		}
	default:
		return nil, nil
	}

	credentials := make([]RegistryCredential, 0, len(entries))
	for registry, entry := range entries {
		credential := RegistryCredential{
			Registry:      registry,
			Username:      entry.Username,
			Password:      entry.Password,
			Auth:          entry.Auth,
			IdentityToken: entry.IdentityToken,
			RegistryToken: entry.RegistryToken,
		}
		// Runtimes accept either form, but a user name and password are what every one
		// understands, so "auth" (base64 of "user:password") is decoded too.
		if credential.Username == "" && credential.Password == "" && entry.Auth != "" {
			decoded, err := base64.StdEncoding.DecodeString(entry.Auth)
			if err != nil {
				return nil, fmt.Errorf("decoding the auth of registry %q in secret %s/%s: %w", registry, secret.Namespace, secret.Name, err)
			}
			user, password, ok := strings.Cut(string(decoded), ":")
			if !ok {
				return nil, fmt.Errorf("the auth of registry %q in secret %s/%s is not user:password", registry, secret.Namespace, secret.Name)
			}
			credential.Username, credential.Password = user, password
		}
		credentials = append(credentials, credential)
	}
	// Map order is random; most specific first (longer key), then by key, keeps the order in
	// which credentials are tried stable.
	slices.SortFunc(credentials, func(a, b RegistryCredential) int {
		ka, kb := parseRegistryKey(a.Registry), parseRegistryKey(b.Registry)
		if d := len(kb.host+kb.path) - len(ka.host+ka.path); d != 0 {
			return d
		}
		return strings.Compare(a.Registry, b.Registry)
	})
	return credentials, nil
}

// registryKey is a credential's registry key taken apart.
type registryKey struct {
	// host is lower case, may hold '*' wildcards, Docker Hub aliases folded.
	host string
	port string
	// path is a repository path prefix, without the registry API's "/v1/" or "/v2/".
	path string
}

func parseRegistryKey(key string) registryKey {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	hostPort, keyPath, _ := strings.Cut(key, "/")
	keyPath = strings.Trim(keyPath, "/")
	if keyPath == "v1" || keyPath == "v2" {
		keyPath = ""
	}
	host, port := hostPort, ""
	if h, p, err := net.SplitHostPort(hostPort); err == nil {
		host, port = h, p
	}
	host = strings.ToLower(host)
	if imageref.IsDockerHubHost(host) {
		host = imageref.DockerHubDomain
	}
	return registryKey{host: host, port: port, path: keyPath}
}

// matches tells whether the key covers an image of the registry domain (host[:port]) at
// repository path repoPath.
func (k registryKey) matches(domain, repoPath string) bool {
	host, port := domain, ""
	if h, p, err := net.SplitHostPort(domain); err == nil {
		host, port = h, p
	}
	if port != k.port || !hostMatches(k.host, strings.ToLower(host)) {
		return false
	}
	if k.path == "" {
		return true
	}
	return repoPath == k.path || strings.HasPrefix(repoPath, k.path+"/")
}

// hostMatches compares host names label by label; a pattern label may use shell globs
// ("*.reg.io" covers "eu.reg.io" but not "reg.io" or "a.eu.reg.io").
func hostMatches(pattern, host string) bool {
	if pattern == host {
		return true
	}
	patternLabels, hostLabels := strings.Split(pattern, "."), strings.Split(host, ".")
	if len(patternLabels) != len(hostLabels) {
		return false
	}
	for i := range patternLabels {
		if ok, err := path.Match(patternLabels[i], hostLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// MatchCredentials returns, in order, the credentials whose registry covers the image
// repository name (no tag), as CRI auth configs; identical ones are returned once.
func MatchCredentials(credentials []RegistryCredential, name string) []*runtimeapi.AuthConfig {
	domain, repoPath := imageref.SplitName(name)
	var matched []*runtimeapi.AuthConfig
	seen := map[RegistryCredential]bool{}
	for _, credential := range credentials {
		if !parseRegistryKey(credential.Registry).matches(domain, repoPath) {
			continue
		}
		identity := credential
		identity.Registry = ""
		if seen[identity] {
			continue
		}
		seen[identity] = true
		// No ServerAddress: the credential is already matched to the image's registry, and
		// containerd reads the field as a URL whose host must equal the host it contacts
		// ("127.0.0.1:5000" fails the pull, "reg.io" drops the credential, and Docker Hub
		// is contacted as registry-1.docker.io), as the kubelet leaves it empty too.
		matched = append(matched, &runtimeapi.AuthConfig{
			Username:      credential.Username,
			Password:      credential.Password,
			Auth:          credential.Auth,
			IdentityToken: credential.IdentityToken,
			RegistryToken: credential.RegistryToken,
		})
	}
	return matched
}
