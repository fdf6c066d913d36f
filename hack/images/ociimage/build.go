// Package ociimage builds small single-layer OCI images from in-memory files and
// pushes them to a registry over the Docker Registry HTTP API v2.
//
// The local cluster of bosun's end-to-end tests may not pull anything from the
// internet, so its test images (the webserver, the pause binary) are statically
// linked Go binaries packed by this package and pushed to a registry on loopback.
// No container tooling is needed: the whole job is a tar, a gzip, two JSON
// documents and a handful of HTTP requests.
//
// Builds are reproducible: the same files and config always give the same layer,
// config and manifest digests, so re-running a build changes nothing in the
// registry and a pushed image can be recognised by its digest alone.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Media types of the documents and blobs this package produces.
const (
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// epoch is the fixed time stamped on every layer entry and on the config, so
// that nothing about the moment of the build leaks into the digests.
var epoch = time.Unix(0, 0).UTC()

// File is one regular file of the image.
type File struct {
	// Path is absolute in the image, for example "/webserver". Parent
	// directories are created as needed, with mode 0755.
	Path string
	// Mode holds the permission bits (including setuid, setgid and sticky), for
	// example 0o755 for an executable. Zero means 0o644.
	Mode int64
	// Data is the file's content.
	Data []byte
	// Link, when set, makes the entry a symbolic link to Link instead of a regular
	// file: Data must then be empty and Mode is ignored. Multi-call binaries such as
	// busybox need one link per command they answer to.
	Link string
}

// Config is the run-time configuration of the image: the "config" object of
// the OCI image configuration.
type Config struct {
	Entrypoint []string
	Cmd        []string
	// Env entries are "NAME=value".
	Env []string
	// ExposedPorts entries are "port/protocol", for example "8080/tcp"; a bare
	// port means TCP.
	ExposedPorts []string
	User         string
	WorkingDir   string
	Labels       map[string]string
}

// Blob is a content-addressed piece of an image.
type Blob struct {
	MediaType string
	// Digest is "sha256:" followed by the hex SHA-256 of Data.
	Digest string
	Size   int64
	Data   []byte
}

// Image is a built image, ready to be pushed.
type Image struct {
	// Manifest is the OCI image manifest, as pushed byte for byte.
	Manifest []byte
	// Digest is the digest of Manifest: the image's identity in the registry,
	// usable as "<repository>@<Digest>".
	Digest string
	// Config is the OCI image configuration blob.
	Config Blob
	// Layer is the one gzip-compressed tar layer.
	Layer Blob
	// DiffID is the digest of the uncompressed layer tar, as listed in the
	// config's rootfs.diff_ids.
	DiffID string
}

// Blobs returns the blobs a registry must hold before it accepts the
// manifest, in the order they are pushed.
func (img *Image) Blobs() []Blob {
	return []Blob{img.Layer, img.Config}
}

// Build packs files into a single gzip-compressed tar layer and describes it
// with an image configuration for linux on the running architecture
// (runtime.GOARCH) and an OCI image manifest.
func Build(files []File, cfg Config) (*Image, error) {
	layerTar, err := buildTar(files)
	if err != nil {
		return nil, fmt.Errorf("building layer: %w", err)
	}
	diffID := digestOf(layerTar)
	layerGzip, err := compress(layerTar)
	if err != nil {
		return nil, fmt.Errorf("compressing layer: %w", err)
	}
	layer := newBlob(MediaTypeLayer, layerGzip)

	configJSON, err := buildConfig(cfg, diffID)
	if err != nil {
		return nil, fmt.Errorf("building image config: %w", err)
	}
	config := newBlob(MediaTypeConfig, configJSON)

	manifest, err := json.Marshal(ociManifest{
		SchemaVersion: 2,
		MediaType:     MediaTypeManifest,
		Config:        descriptorOf(config),
		Layers:        []ociDescriptor{descriptorOf(layer)},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}

	return &Image{
		Manifest: manifest,
		Digest:   digestOf(manifest),
		Config:   config,
		Layer:    layer,
		DiffID:   diffID,
	}, nil
}

// tarEntry is one member of the layer tar: a file, a symbolic link (link set), or a
// directory (data nil).
type tarEntry struct {
	name string // relative to the root, without a leading or trailing slash
	dir  bool
	link string
	mode int64
	data []byte
}

// buildTar returns the uncompressed layer: the files and the directories above
// them, sorted by name so that parents precede their children and the order
// never depends on the caller's.
func buildTar(files []File) ([]byte, error) {
	entries := map[string]tarEntry{}
	for _, f := range files {
		name, err := entryName(f.Path)
		if err != nil {
			return nil, err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if f.Link != "" {
			if len(f.Data) != 0 {
				return nil, fmt.Errorf("file %s: a symbolic link has no data", f.Path)
			}
			mode = 0o777
		}
		if mode&^0o7777 != 0 {
			return nil, fmt.Errorf("file %s: mode %#o has bits beyond the permission bits", f.Path, f.Mode)
		}
		if prev, ok := entries[name]; ok {
			if prev.dir {
				return nil, fmt.Errorf("file %s: is also a parent directory of another file", f.Path)
			}
			return nil, fmt.Errorf("file %s: given twice", f.Path)
		}
		entries[name] = tarEntry{name: name, mode: mode, data: f.Data, link: f.Link}

		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if prev, ok := entries[dir]; ok {
				if !prev.dir {
					return nil, fmt.Errorf("file %s: its parent /%s is also given as a file", f.Path, dir)
				}
				continue
			}
			entries[dir] = tarEntry{name: dir, dir: true, mode: 0o755}
		}
	}

	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	// A parent's name is a prefix of its children's, so it sorts before them.
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		e := entries[name]
		hdr := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     0,
			Gid:     0,
			ModTime: epoch,
		}
		switch {
		case e.dir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case e.link != "":
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.link
		default:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing tar header for /%s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("writing /%s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// entryName turns an absolute image path into a tar member name.
func entryName(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("file %q: path must be absolute", p)
	}
	if clean := path.Clean(p); clean != p {
		return "", fmt.Errorf("file %q: path must be clean (%q)", p, clean)
	}
	if p == "/" {
		return "", fmt.Errorf("file %q: path names the root directory", p)
	}
	return strings.TrimPrefix(p, "/"), nil
}

// compress gzips data with an empty header (no name, zero mtime), so the
// compressed bytes depend on data alone.
func compress(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ociImageConfig is the subset of the OCI image configuration this package writes.
type ociImageConfig struct {
	Created      string             `json:"created,omitempty"`
	Architecture string             `json:"architecture"`
	OS           string             `json:"os"`
	Config       ociContainerConfig `json:"config"`
	RootFS       ociRootFS          `json:"rootfs"`
}

type ociContainerConfig struct {
	User         string              `json:"User,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
}

type ociRootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type ociManifest struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Config        ociDescriptor   `json:"config"`
	Layers        []ociDescriptor `json:"layers"`
}

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// buildConfig encodes the image configuration. encoding/json writes map keys
// sorted, so the maps in it do not make the encoding vary.
func buildConfig(cfg Config, diffID string) ([]byte, error) {
	for _, env := range cfg.Env {
		if name, _, ok := strings.Cut(env, "="); !ok || name == "" {
			return nil, fmt.Errorf("env entry %q: want NAME=value", env)
		}
	}
	var ports map[string]struct{}
	for _, p := range cfg.ExposedPorts {
		port, err := normalizePort(p)
		if err != nil {
			return nil, err
		}
		if ports == nil {
			ports = map[string]struct{}{}
		}
		ports[port] = struct{}{}
	}
	return json.Marshal(ociImageConfig{
		Created:      epoch.Format(time.RFC3339),
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Config: ociContainerConfig{
			User:         cfg.User,
			ExposedPorts: ports,
			Env:          cfg.Env,
			Entrypoint:   cfg.Entrypoint,
			Cmd:          cfg.Cmd,
			WorkingDir:   cfg.WorkingDir,
			Labels:       cfg.Labels,
		},
		RootFS: ociRootFS{Type: "layers", DiffIDs: []string{diffID}},
	})
}

// normalizePort checks an exposed port and spells it "port/protocol", the form
// the image spec requires; like Docker, a bare port means TCP.
func normalizePort(p string) (string, error) {
	port, proto, hasProto := strings.Cut(p, "/")
	if !hasProto {
		proto = "tcp"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("exposed port %q: want a port from 1 to 65535, optionally followed by /tcp, /udp or /sctp", p)
	}
	switch proto {
	case "tcp", "udp", "sctp":
	default:
		return "", fmt.Errorf("exposed port %q: unknown protocol %q, want tcp, udp or sctp", p, proto)
	}
	return port + "/" + proto, nil
}

func newBlob(mediaType string, data []byte) Blob {
	return Blob{MediaType: mediaType, Digest: digestOf(data), Size: int64(len(data)), Data: data}
}

func descriptorOf(b Blob) ociDescriptor {
	return ociDescriptor{MediaType: b.MediaType, Digest: b.Digest, Size: b.Size}
}

// digestOf returns the OCI digest of data.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
