// Tests for Build: reproducibility, the layer's content and the config and
// manifest that describe it.

package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testFiles() []File {
	return []File{
		{Path: "/webserver", Mode: 0o755, Data: []byte("#!binary\n")},
		{Path: "/etc/bosun/message", Data: []byte("hello\n")},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/:/webserver\n")},
	}
}

func testConfig() Config {
	return Config{
		Entrypoint:   []string{"/webserver"},
		Cmd:          []string{"--port", "8080"},
		Env:          []string{"PATH=/", "READY_AFTER=1s"},
		ExposedPorts: []string{"8080/tcp", "9090"},
		User:         "65532:65532",
		WorkingDir:   "/",
		Labels:       map[string]string{"b": "2", "a": "1"},
	}
}

func mustBuild(t *testing.T, files []File, cfg Config) *Image {
	t.Helper()
	img, err := Build(files, cfg)
	if err != nil {
		t.Fatalf("Build() error = %v", err)
	}
	return img
}

func TestBuildIsReproducible(t *testing.T) {
	first := mustBuild(t, testFiles(), testConfig())

	// Same input in another order, built a moment later: nothing may change.
	time.Sleep(1100 * time.Millisecond)
	files := testFiles()
	files[0], files[2] = files[2], files[0]
	second := mustBuild(t, files, testConfig())

	if first.Digest != second.Digest {
		t.Errorf("manifest digests differ: %s vs %s", first.Digest, second.Digest)
	}
	if first.Layer.Digest != second.Layer.Digest || !bytes.Equal(first.Layer.Data, second.Layer.Data) {
		t.Errorf("layers differ: %s vs %s", first.Layer.Digest, second.Layer.Digest)
	}
	if first.Config.Digest != second.Config.Digest {
		t.Errorf("configs differ:\n%s\n%s", first.Config.Data, second.Config.Data)
	}

	// A change of content must show in the digests, or they would mean nothing.
	files[0].Data = []byte("changed")
	third := mustBuild(t, files, testConfig())
	if third.Layer.Digest == first.Layer.Digest || third.Digest == first.Digest {
		t.Error("changing a file's content did not change the digests")
	}
}

type tarMember struct {
	Name     string
	Typeflag byte
	Mode     int64
	Uid, Gid int
	ModTime  int64
	Data     string
	Linkname string
}

// readLayer returns the members of img's layer, checking that it is gzip with an empty header.
func readLayer(t *testing.T, img *Image) []tarMember {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(img.Layer.Data))
	if err != nil {
		t.Fatalf("layer is not gzip: %v", err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "" {
		t.Errorf("gzip header carries name %q, mtime %v, comment %q; want none", zr.Name, zr.ModTime, zr.Comment)
	}

	var members []tarMember
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return members
		}
		if err != nil {
			t.Fatalf("reading layer tar: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", hdr.Name, err)
		}
		members = append(members, tarMember{
			Name:     hdr.Name,
			Typeflag: hdr.Typeflag,
			Mode:     hdr.Mode,
			Uid:      hdr.Uid,
			Gid:      hdr.Gid,
			ModTime:  hdr.ModTime.Unix(),
			Data:     string(data),
			Linkname: hdr.Linkname,
		})
	}
}

func TestLayerContent(t *testing.T) {
	got := readLayer(t, mustBuild(t, testFiles(), testConfig()))

	want := []tarMember{
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "etc/bosun/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "etc/bosun/message", Typeflag: tar.TypeReg, Mode: 0o644, Data: "hello\n"},
		{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Data: "root:x:0:0:root:/:/webserver\n"},
		{Name: "webserver", Typeflag: tar.TypeReg, Mode: 0o755, Data: "#!binary\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer members (-want +got):\n%s", diff)
	}
}

func TestConfigDescribesLayer(t *testing.T) {
	img := mustBuild(t, testFiles(), testConfig())

	zr, err := gzip.NewReader(bytes.NewReader(img.Layer.Data))
	if err != nil {
		t.Fatal(err)
	}
	uncompressed, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if got := digestOf(uncompressed); got != img.DiffID {
		t.Errorf("DiffID = %s, but the uncompressed layer hashes to %s", img.DiffID, got)
	}
	if img.DiffID == img.Layer.Digest {
		t.Error("DiffID equals the compressed layer's digest; it must be the uncompressed tar's")
	}

	var cfg struct {
		Created      string `json:"created"`
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			User         string
			ExposedPorts map[string]struct{}
			Env          []string
			Entrypoint   []string
			Cmd          []string
			WorkingDir   string
			Labels       map[string]string
		} `json:"config"`
		RootFS struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(img.Config.Data, &cfg); err != nil {
		t.Fatalf("config is not JSON: %v\n%s", err, img.Config.Data)
	}
	if cfg.Architecture != runtime.GOARCH || cfg.OS != "linux" {
		t.Errorf("platform = %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if cfg.Created != "1970-01-01T00:00:00Z" {
		t.Errorf("created = %q, want the Unix epoch", cfg.Created)
	}
	if cfg.RootFS.Type != "layers" || len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != img.DiffID {
		t.Errorf("rootfs = %+v, want layers [%s]", cfg.RootFS, img.DiffID)
	}
	in := testConfig()
	if diff := cmp.Diff(in.Entrypoint, cfg.Config.Entrypoint); diff != "" {
		t.Errorf("Entrypoint (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in.Cmd, cfg.Config.Cmd); diff != "" {
		t.Errorf("Cmd (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in.Env, cfg.Config.Env); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in.Labels, cfg.Config.Labels); diff != "" {
		t.Errorf("Labels (-want +got):\n%s", diff)
	}
	wantPorts := map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}}
	if diff := cmp.Diff(wantPorts, cfg.Config.ExposedPorts); diff != "" {
		t.Errorf("ExposedPorts (-want +got):\n%s", diff)
	}
	if cfg.Config.User != in.User || cfg.Config.WorkingDir != in.WorkingDir {
		t.Errorf("User, WorkingDir = %q, %q, want %q, %q", cfg.Config.User, cfg.Config.WorkingDir, in.User, in.WorkingDir)
	}
}

func TestManifestReferencesBlobs(t *testing.T) {
	img := mustBuild(t, testFiles(), Config{Entrypoint: []string{"/webserver"}})

	if got := digestOf(img.Manifest); got != img.Digest {
		t.Errorf("Digest = %s, but the manifest hashes to %s", img.Digest, got)
	}
	for _, b := range img.Blobs() {
		if got := digestOf(b.Data); got != b.Digest || b.Size != int64(len(b.Data)) {
			t.Errorf("blob %s: data hashes to %s with size %d, blob says size %d", b.Digest, got, len(b.Data), b.Size)
		}
	}

	var m struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Config        ociDescriptor   `json:"config"`
		Layers        []ociDescriptor `json:"layers"`
	}
	if err := json.Unmarshal(img.Manifest, &m); err != nil {
		t.Fatalf("manifest is not JSON: %v\n%s", err, img.Manifest)
	}
	if m.SchemaVersion != 2 || m.MediaType != MediaTypeManifest {
		t.Errorf("schemaVersion, mediaType = %d, %q", m.SchemaVersion, m.MediaType)
	}
	wantConfig := ociDescriptor{MediaType: MediaTypeConfig, Digest: img.Config.Digest, Size: img.Config.Size}
	if m.Config != wantConfig {
		t.Errorf("config descriptor = %+v, want %+v", m.Config, wantConfig)
	}
	wantLayer := ociDescriptor{MediaType: MediaTypeLayer, Digest: img.Layer.Digest, Size: img.Layer.Size}
	if len(m.Layers) != 1 || m.Layers[0] != wantLayer {
		t.Errorf("layers = %+v, want [%+v]", m.Layers, wantLayer)
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		files   []File
		cfg     Config
		wantErr string
	}{
		{name: "relative path", files: []File{{Path: "webserver"}}, wantErr: "absolute"},
		{name: "unclean path", files: []File{{Path: "/etc/../webserver"}}, wantErr: "clean"},
		{name: "trailing slash", files: []File{{Path: "/etc/"}}, wantErr: "clean"},
		{name: "root", files: []File{{Path: "/"}}, wantErr: "root"},
		{name: "duplicate", files: []File{{Path: "/a"}, {Path: "/a"}}, wantErr: "twice"},
		{name: "file above file", files: []File{{Path: "/a"}, {Path: "/a/b"}}, wantErr: "given as a file"},
		{name: "file below file", files: []File{{Path: "/a/b"}, {Path: "/a"}}, wantErr: "parent directory"},
		{name: "file type in mode", files: []File{{Path: "/a", Mode: 0o100755}}, wantErr: "permission bits"},
		{name: "env without =", cfg: Config{Env: []string{"PATH"}}, wantErr: "NAME=value"},
		{name: "bad port", cfg: Config{ExposedPorts: []string{"http"}}, wantErr: "exposed port"},
		{name: "port out of range", cfg: Config{ExposedPorts: []string{"70000/tcp"}}, wantErr: "exposed port"},
		{name: "bad protocol", cfg: Config{ExposedPorts: []string{"53/dns"}}, wantErr: "protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.files, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Build() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestBuildEmpty(t *testing.T) {
	// An image without files is odd but valid: an empty layer tar.
	img := mustBuild(t, nil, Config{})
	if img.Layer.Size == 0 || img.DiffID == "" {
		t.Errorf("empty build gave layer size %d, diff ID %q", img.Layer.Size, img.DiffID)
	}
}

func TestSymbolicLinks(t *testing.T) {
	img := mustBuild(t, []File{
		{Path: "/bin/busybox", Mode: 0o755, Data: []byte("#!binary\n")},
		{Path: "/bin/sh", Link: "busybox"},
	}, Config{})
	want := []tarMember{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Data: "#!binary\n"},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Mode: 0o777, Linkname: "busybox"},
	}
	if diff := cmp.Diff(want, readLayer(t, img)); diff != "" {
		t.Errorf("layer members (-want +got):\n%s", diff)
	}

	if _, err := Build([]File{{Path: "/bin/sh", Link: "busybox", Data: []byte("x")}}, Config{}); err == nil {
		t.Error("Build accepted a symbolic link with data")
	}
}
