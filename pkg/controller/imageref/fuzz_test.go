package imageref

import (
	"strings"
	"testing"
)

// canonical writes r out in full, registry and path as Parse returned them: the form with
// nothing left to defaults.
func canonical(r Reference) string {
	s := r.Domain + "/" + r.Path
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// familiar writes r out the way users do, with its FamiliarName.
func familiar(r Reference) string {
	s := r.FamiliarName()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// FuzzParse feeds arbitrary strings to the strict parser and the lenient helpers. None may
// panic; a reference that parses must come back the same from each way of writing it out
// (in full, familiar, as an ImagePullJob's NodeImage entry joins it), and the lenient
// helpers, which the node agent uses on references admission already accepted, must take
// it apart as the parser did.
func FuzzParse(f *testing.F) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, ref := range []string{
		// Valid, in the forms of the unit tests and the samples.
		"nginx", "nginx:1.25", "library/nginx:1.25", "docker.io/library/nginx:1.25", "index.docker.io/nginx",
		"docker.io/team/app:v1", "team/app", "reg.io/team/app:v1", "reg.io:5000/team/app", "localhost/app:dev",
		"localhost:5000/a/b/c:1", "[::1]:5000/app:1", "nginx@" + digest, "nginx:1.25@" + digest,
		"my_app-x.y__z---w:TAG_1.0-rc", "registry-1.docker.io/bitnami/redis:7", "Upper/app:v1",
		"registry.example/log-agent:1.4", "registry.example/web:2.0", "quay.io/prometheus/node-exporter:v1.7",
		"127.0.0.1:5000/bosun/webserver", "busybox@sha512:" + strings.Repeat("ab", 64),
		// Invalid.
		"", " nginx", "Nginx", "reg.io/Team/app", "nginx:", "nginx:-bad", "nginx@sha256:abc", "nginx@md5",
		":tag", "/nginx", "nginx/", "a//b", "a_-b", "reg-.io:5000/app", "reg.io:port/app",
		strings.Repeat("0123456789abcdef", 4), "nginx:1.0:2.0", "nginx@" + digest + "@x", "a@b:c/d@e", "a:b/c",
		strings.Repeat("a", 256), "[::1/app", "nginx\x00:1",
	} {
		f.Add(ref)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		// The lenient helpers take anything. What they make of a reference that does not
		// parse is not specified ("::@0" normalizes to one that normalizes further): they
		// only ever see references that were accepted.
		name, tag, digest := Split(ref)
		SplitName(name)
		normalized := Normalize(ref)
		WithDefaultTag(ref)

		r, err := Parse(ref)
		if err != nil {
			return
		}
		if tag != r.Tag || digest != r.Digest {
			t.Errorf("Split(%q) = %q, %q, %q; Parse gave tag %q, digest %q", ref, name, tag, digest, r.Tag, r.Digest)
		}
		for _, form := range []string{canonical(r), familiar(r)} {
			again, err := Parse(form)
			if err != nil {
				t.Fatalf("Parse(%q) = %+v, written out as %q, which does not parse: %v", ref, r, form, err)
			}
			if again != r {
				t.Fatalf("Parse(%q) = %+v, written out as %q, which parses as %+v", ref, r, form, again)
			}
		}
		// What an ImagePullJob puts in NodeImages, and the daemon pulls, means the same image.
		name, key, err := NameAndTag(ref)
		if err != nil {
			t.Fatalf("NameAndTag(%q) failed where Parse did not: %v", ref, err)
		}
		pulled, err := Parse(Join(name, key))
		if err != nil {
			t.Fatalf("NameAndTag(%q) = %q, %q, joined as %q, which does not parse: %v", ref, name, key, Join(name, key), err)
		}
		if pulled.Domain != r.Domain || pulled.Path != r.Path || pulled.TagOrDigest() != r.TagOrDigest() {
			t.Fatalf("NameAndTag(%q) = %q, %q, joined as %q, which parses as %+v, not %+v", ref, name, key, Join(name, key), pulled, r)
		}
		// The node agent compares by Normalize: it must agree with the parser, up to the
		// registry API's host, which only Normalize folds.
		if IsDockerHubHost(r.Domain) {
			r.Domain = DockerHubDomain
			if !strings.Contains(r.Path, "/") {
				r.Path = officialRepoPrefix + r.Path
			}
		}
		if tag == "" && digest == "" {
			r.Tag = DefaultTag
		}
		if want := canonical(r); normalized != want {
			t.Errorf("Normalize(%q) = %q, want %q as parsed", ref, normalized, want)
		}
		if again := Normalize(normalized); again != normalized {
			t.Errorf("Normalize(%q) = %q, which normalizes to %q", ref, normalized, again)
		}
	})
}
