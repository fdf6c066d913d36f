package imageref

import (
	"strings"
	"testing"
)

func TestNameAndTag(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		ref, name, tag string
	}{
		{"nginx", "nginx", "latest"},
		{"nginx:1.25", "nginx", "1.25"},
		{"library/nginx:1.25", "nginx", "1.25"},
		{"docker.io/library/nginx:1.25", "nginx", "1.25"},
		{"index.docker.io/nginx", "nginx", "latest"},
		{"docker.io/team/app:v1", "team/app", "v1"},
		{"team/app", "team/app", "latest"},
		{"reg.io/team/app:v1", "reg.io/team/app", "v1"},
		{"reg.io:5000/team/app", "reg.io:5000/team/app", "latest"},
		{"localhost/app:dev", "localhost/app", "dev"},
		{"localhost:5000/a/b/c:1", "localhost:5000/a/b/c", "1"},
		{"[::1]:5000/app:1", "[::1]:5000/app", "1"},
		{"nginx@" + digest, "nginx", digest},
		{"nginx:1.25@" + digest, "nginx", digest},
		{"my_app-x.y__z---w:TAG_1.0-rc", "my_app-x.y__z---w", "TAG_1.0-rc"},
		// Parse keeps the registry API's host as written; Normalize folds it.
		{"registry-1.docker.io/bitnami/redis:7", "registry-1.docker.io/bitnami/redis", "7"},
		{"Upper/app:v1", "Upper/app", "v1"},
		// A Docker Hub path whose first component reads as a registry keeps the domain,
		// or the name would send the daemon to that registry (found by FuzzParse).
		{"docker.io/0.0/0", "docker.io/0.0/0", "latest"},
		{"index.docker.io/team.a/app:v1", "docker.io/team.a/app", "v1"},
		{"docker.io/localhost/app", "docker.io/localhost/app", "latest"},
		{"docker.io/library/a.b", "a.b", "latest"},
		{"library/" + digest[len("sha256:"):], "library/" + digest[len("sha256:"):], "latest"},
	} {
		name, tag, err := NameAndTag(tc.ref)
		if err != nil {
			t.Errorf("NameAndTag(%q): %v", tc.ref, err)
			continue
		}
		if name != tc.name || tag != tc.tag {
			t.Errorf("NameAndTag(%q) = %q, %q; want %q, %q", tc.ref, name, tag, tc.name, tc.tag)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, ref := range []string{
		"",
		" nginx",
		"Nginx",
		"reg.io/Team/app",
		"nginx:",
		"nginx:-bad",
		"nginx:" + string(make([]byte, 129)),
		"nginx@sha256:abc",
		"nginx@sha256:" + "0123456789abcdef0123456789abcdef",
		"nginx@md5",
		":tag",
		"/nginx",
		"nginx/",
		"a//b",
		"a_-b",
		"reg-.io:5000/app",
		"reg.io:port/app",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"nginx:1.0:2.0",
		"nginx@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef@x",
		// 238 characters, 256 with the registry and "library/" that runtimes add (found by
		// FuzzParse: written out in full, it did not parse).
		strings.Repeat("0", 238),
	} {
		if r, err := Parse(ref); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", ref, r)
		}
	}
}

func TestSplit(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		ref, name, tag, digest string
	}{
		{"nginx", "nginx", "", ""},
		{"nginx:1.25", "nginx", "1.25", ""},
		{"nginx@" + digest, "nginx", "", digest},
		{"nginx:1.25@" + digest, "nginx", "1.25", digest},
		{"reg.io:5000/app", "reg.io:5000/app", "", ""},
		{"reg.io:5000/app:v1@sha256:abc", "reg.io:5000/app", "v1", "sha256:abc"},
		{"[::1]:5000/app:1", "[::1]:5000/app", "1", ""},
		// An image ID reads as repository "sha256" with the hex as its tag.
		{digest, "sha256", digest[len("sha256:"):], ""},
		{"nginx:", "nginx", "", ""},
		{"nginx@", "nginx", "", ""},
		{"a@b:c/d@e", "a", "", "b:c/d@e"},
		{"a:b/c", "a:b/c", "", ""},
		{"", "", "", ""},
	} {
		name, tag, digest := Split(tc.ref)
		if name != tc.name || tag != tc.tag || digest != tc.digest {
			t.Errorf("Split(%q) = %q, %q, %q; want %q, %q, %q", tc.ref, name, tag, digest, tc.name, tc.tag, tc.digest)
		}
	}
}

func TestWithDefaultTag(t *testing.T) {
	id := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for ref, want := range map[string]string{
		"main":                           "main:latest",
		"main:latest":                    "main:latest",
		"main:v2":                        "main:v2",
		"team/app":                       "team/app:latest",
		"docker.io/library/nginx:latest": "docker.io/library/nginx:latest",
		"reg.io:5000/app":                "reg.io:5000/app:latest",
		"reg.io:5000/app:v1":             "reg.io:5000/app:v1",
		"nginx@sha256:abc":               "nginx@sha256:abc",
		"reg.io:5000/app@sha256:abc":     "reg.io:5000/app@sha256:abc",
		id:                               id,
		// A separator written with nothing after it counts as naming the part.
		"nginx:": "nginx:",
		"nginx@": "nginx@",
		"":       ":latest",
	} {
		if got := WithDefaultTag(ref); got != want {
			t.Errorf("WithDefaultTag(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for ref, want := range map[string]string{
		"nginx":                                 "docker.io/library/nginx:latest",
		"nginx:1.25":                            "docker.io/library/nginx:1.25",
		"library/nginx:1.25":                    "docker.io/library/nginx:1.25",
		"docker.io/nginx:1.25":                  "docker.io/library/nginx:1.25",
		"index.docker.io/library/nginx:1.25":    "docker.io/library/nginx:1.25",
		"registry-1.docker.io/redis":            "docker.io/library/redis:latest",
		"registry-1.docker.io/bitnami/redis:7":  "docker.io/bitnami/redis:7",
		"docker.io/library/nginx:1.25":          "docker.io/library/nginx:1.25",
		"team/app:v1":                           "docker.io/team/app:v1",
		"reg.io/team/app:v1":                    "reg.io/team/app:v1",
		"reg.io:5000/app":                       "reg.io:5000/app:latest",
		"[::1]:5000/app":                        "[::1]:5000/app:latest",
		"localhost/app:v1":                      "localhost/app:v1",
		"localhost:5000/app":                    "localhost:5000/app:latest",
		"nginx@sha256:abc":                      "docker.io/library/nginx@sha256:abc",
		"reg.io:5000/app:v1@sha256:abc":         "reg.io:5000/app:v1@sha256:abc",
		"Upper/app:v1":                          "Upper/app:v1",
		"quay.io/prometheus/node-exporter:v1.7": "quay.io/prometheus/node-exporter:v1.7",
		// Nothing is validated: an image ID and empty separators still come out whole.
		"sha256:abc": "docker.io/library/sha256:abc",
		"nginx:":     "docker.io/library/nginx:latest",
		"nginx@":     "docker.io/library/nginx:latest",
	} {
		if got := Normalize(ref); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestSplitName(t *testing.T) {
	for _, tc := range []struct {
		name, domain, path string
	}{
		{"nginx", "docker.io", "library/nginx"},
		{"team/app", "docker.io", "team/app"},
		{"index.docker.io/nginx", "docker.io", "library/nginx"},
		{"registry-1.docker.io/team/app", "docker.io", "team/app"},
		{"reg.io:5000/team/app", "reg.io:5000", "team/app"},
		{"127.0.0.1:5000/bosun/webserver", "127.0.0.1:5000", "bosun/webserver"},
		{"localhost/app", "localhost", "app"},
		{"Upper/app", "Upper", "app"},
	} {
		if domain, path := SplitName(tc.name); domain != tc.domain || path != tc.path {
			t.Errorf("SplitName(%q) = %q, %q; want %q, %q", tc.name, domain, path, tc.domain, tc.path)
		}
	}
}

func TestIsDockerHubHost(t *testing.T) {
	for host, want := range map[string]bool{
		"docker.io": true, "index.docker.io": true, "registry-1.docker.io": true,
		"quay.io": false, "docker.io:443": false, "registry-2.docker.io": false,
	} {
		if got := IsDockerHubHost(host); got != want {
			t.Errorf("IsDockerHubHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		name, tag, want string
	}{
		{"nginx", "1.25", "nginx:1.25"},
		{"reg.io:5000/app", "v1", "reg.io:5000/app:v1"},
		{"reg.io:5000/app", "sha256:abc", "reg.io:5000/app@sha256:abc"},
	} {
		if got := Join(tc.name, tc.tag); got != tc.want {
			t.Errorf("Join(%q, %q) = %q, want %q", tc.name, tc.tag, got, tc.want)
		}
	}
}
