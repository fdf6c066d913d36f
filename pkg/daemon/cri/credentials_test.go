package cri

import (
	"encoding/base64"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func dockerConfigJSONSecret(config string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kruise-daemon-config", Name: "reg"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)},
	}
}

func TestCredentialsFromSecret(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("alice:pw:with:colons"))
	credentials, err := CredentialsFromSecret(dockerConfigJSONSecret(`{"auths": {
		"https://index.docker.io/v1/": {"auth": "` + auth + `"},
		"reg.io/team": {"username": "bob", "password": "b"},
		"reg.io": {"username": "carol", "password": "c", "identitytoken": "tok"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var registries []string
	for _, c := range credentials {
		registries = append(registries, c.Registry)
	}
	// Longer (more specific) keys first.
	if want := []string{"reg.io/team", "https://index.docker.io/v1/", "reg.io"}; !slices.Equal(registries, want) {
		t.Errorf("order %v, want %v", registries, want)
	}
	if c := credentials[1]; c.Username != "alice" || c.Password != "pw:with:colons" || c.Auth != auth {
		t.Errorf("decoded auth: %+v", c)
	}
	if c := credentials[2]; c.IdentityToken != "tok" {
		t.Errorf("identity token: %+v", c)
	}

	legacy := &corev1.Secret{
		Type: corev1.SecretTypeDockercfg,
		Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"reg.io:5000": {"username": "dan", "password": "d"}}`)},
	}
	credentials, err = CredentialsFromSecret(legacy)
	if err != nil || len(credentials) != 1 || credentials[0].Registry != "reg.io:5000" || credentials[0].Username != "dan" {
		t.Errorf("dockercfg: %+v, %v", credentials, err)
	}

	if credentials, err := CredentialsFromSecret(&corev1.Secret{Type: corev1.SecretTypeOpaque}); err != nil || credentials != nil {
		t.Errorf("opaque secret: %+v, %v", credentials, err)
	}
	if _, err := CredentialsFromSecret(dockerConfigJSONSecret(`{"auths": `)); err == nil {
		t.Error("malformed secret accepted")
	}
	if _, err := CredentialsFromSecret(dockerConfigJSONSecret(`{"auths": {"reg.io": {"auth": "bm9jb2xvbg=="}}}`)); err == nil {
		t.Error("auth without a colon accepted")
	}
}

func TestMatchCredentials(t *testing.T) {
	credentials := []RegistryCredential{
		{Registry: "https://index.docker.io/v1/", Username: "hub"},
		{Registry: "reg.io/team", Username: "team"},
		{Registry: "reg.io", Username: "reg"},
		{Registry: "reg.io:5000", Username: "port"},
		{Registry: "*.mirror.io", Username: "wildcard"},
		{Registry: "http://REG.io/", Username: "reg"}, // duplicate of "reg.io": tried once
	}
	for image, want := range map[string][]string{
		"nginx":                  {"hub"},
		"docker.io/library/app":  {"hub"},
		"index.docker.io/x/y":    {"hub"},
		"reg.io/team/app":        {"team", "reg"},
		"reg.io/teamx/app":       {"reg"},
		"reg.io/app":             {"reg"},
		"reg.io:5000/team/app":   {"port"},
		"reg.io:6000/app":        nil,
		"eu.mirror.io/app":       {"wildcard"},
		"mirror.io/app":          nil,
		"a.eu.mirror.io/app":     nil,
		"quay.io/prometheus/app": nil,
	} {
		var got []string
		for _, auth := range MatchCredentials(credentials, image) {
			got = append(got, auth.Username)
		}
		if !slices.Equal(got, want) {
			t.Errorf("MatchCredentials(%q) = %v, want %v", image, got, want)
		}
	}
	// containerd would drop or refuse a server address that is not the URL of the host
	// it contacts.
	if auths := MatchCredentials(credentials, "nginx"); auths[0].ServerAddress != "" {
		t.Errorf("server address %q, want none", auths[0].ServerAddress)
	}
}
