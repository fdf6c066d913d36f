package imageref

import "testing"

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
	} {
		if r, err := Parse(ref); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", ref, r)
		}
	}
}
