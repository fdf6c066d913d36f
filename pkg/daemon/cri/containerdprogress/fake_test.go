package containerdprogress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	contentapi "github.com/containerd/containerd/api/services/content/v1"

	"github.com/bosun-dev/bosun/pkg/daemon/cri/crifake"
)

// fakeContent is containerd's content service as far as the tracker uses it, in the
// k8s.io namespace only: committed blobs with their creation times and labels, and active
// ingests.
type fakeContent struct {
	contentapi.UnimplementedContentServer

	mu      sync.Mutex
	blobs   map[string]*fakeBlob
	ingests map[string]*contentapi.Status
	// filters are the filters of every List call; readBytes the bytes sent by Read, by
	// digest.
	filters   [][]string
	readBytes map[string]int
}

type fakeBlob struct {
	data    []byte
	created time.Time
	labels  map[string]string
}

// startFakeContent serves a fake content service on a unix socket and returns it with a
// connection to it.
func startFakeContent(t *testing.T) (*fakeContent, *grpc.ClientConn) {
	t.Helper()
	fake := &fakeContent{blobs: map[string]*fakeBlob{}, ingests: map[string]*contentapi.Status{}, readBytes: map[string]int{}}
	server := grpc.NewServer()
	contentapi.RegisterContentServer(server, fake)
	return fake, serve(t, server)
}

// serve runs server on a unix socket until the test ends and returns a connection to it.
func serve(t *testing.T, server *grpc.Server) *grpc.ClientConn {
	t.Helper()
	socket := filepath.Join(crifake.ShortTempDir(t), "containerd.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// checkNamespace fails calls outside the CRI plugin's namespace, as containerd fails calls
// without one.
func checkNamespace(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if ns := md.Get(namespaceHeader); len(ns) != 1 || ns[0] != Namespace {
		return status.Errorf(codes.FailedPrecondition, "namespace %q: want exactly %q", ns, Namespace)
	}
	return nil
}

func (f *fakeContent) Info(ctx context.Context, req *contentapi.InfoRequest) (*contentapi.InfoResponse, error) {
	if err := checkNamespace(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	blob, ok := f.blobs[req.Digest]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "content digest %s: not found", req.Digest)
	}
	return &contentapi.InfoResponse{Info: blob.info(req.Digest)}, nil
}

func (b *fakeBlob) info(dgst string) *contentapi.Info {
	return &contentapi.Info{Digest: dgst, Size: int64(len(b.data)), CreatedAt: timestamppb.New(b.created), Labels: b.labels}
}

// List answers every blob, whatever the filters: the tracker must check what it gets.
func (f *fakeContent) List(req *contentapi.ListContentRequest, stream contentapi.Content_ListServer) error {
	if err := checkNamespace(stream.Context()); err != nil {
		return err
	}
	f.mu.Lock()
	f.filters = append(f.filters, req.Filters)
	var infos []*contentapi.Info
	for dgst, blob := range f.blobs {
		infos = append(infos, blob.info(dgst))
	}
	f.mu.Unlock()
	// Two messages, as containerd sends its answer in batches.
	half := len(infos) / 2
	for _, batch := range [][]*contentapi.Info{infos[:half], infos[half:]} {
		if err := stream.Send(&contentapi.ListContentResponse{Info: batch}); err != nil {
			return err
		}
	}
	return nil
}

// Read sends the requested part of a blob in chunks of 3 bytes, to exercise reassembly.
func (f *fakeContent) Read(req *contentapi.ReadContentRequest, stream contentapi.Content_ReadServer) error {
	if err := checkNamespace(stream.Context()); err != nil {
		return err
	}
	f.mu.Lock()
	blob, ok := f.blobs[req.Digest]
	f.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "content digest %s: not found", req.Digest)
	}
	data := blob.data[min(req.Offset, int64(len(blob.data))):]
	if req.Size > 0 {
		data = data[:min(req.Size, int64(len(data)))]
	}
	f.mu.Lock()
	f.readBytes[req.Digest] += len(data)
	f.mu.Unlock()
	for offset := 0; offset < len(data); offset += 3 {
		chunk := data[offset:min(offset+3, len(data))]
		if err := stream.Send(&contentapi.ReadContentResponse{Offset: req.Offset + int64(offset), Data: chunk}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeContent) ListStatuses(ctx context.Context, _ *contentapi.ListStatusesRequest) (*contentapi.ListStatusesResponse, error) {
	if err := checkNamespace(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &contentapi.ListStatusesResponse{}
	for _, s := range f.ingests {
		resp.Statuses = append(resp.Statuses, &contentapi.Status{Ref: s.Ref, Offset: s.Offset, Total: s.Total})
	}
	return resp, nil
}

// ingest records an active download of blob under ref, offset bytes written.
func (f *fakeContent) ingest(ref string, blob []byte, offset int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ingests[ref] = &contentapi.Status{Ref: ref, Offset: int64(offset), Total: int64(len(blob))}
}

// commit ends the download under ref (if any) and stores data, created at created with
// labels.
func (f *fakeContent) commit(ref string, data []byte, created time.Time, labels map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ingests, ref)
	dgst := digestOf(data)
	f.blobs[dgst] = &fakeBlob{data: data, created: created, labels: labels}
	return dgst
}

func (f *fakeContent) readOf(dgst string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readBytes[dgst]
}

func (f *fakeContent) listFilters() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.filters...)
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// layer is a gzip-looking blob of n bytes, distinct for each seed.
func layer(seed byte, n int) []byte {
	data := make([]byte, n)
	data[0], data[1] = 0x1f, 0x8b
	for i := 2; i < n; i++ {
		data[i] = seed
	}
	return data
}

// imageConfig is an image configuration blob, JSON with a "config" object of its own.
func imageConfig(arch string) []byte {
	return mustJSON(map[string]any{"architecture": arch, "os": "linux", "config": map[string]any{"Entrypoint": []string{"/app"}},
		"rootfs": map[string]any{"type": "layers"}})
}

// manifestOf is an OCI manifest of config and layers.
func manifestOf(config []byte, layers ...[]byte) []byte {
	var descriptors []map[string]any
	for _, l := range layers {
		descriptors = append(descriptors, map[string]any{
			"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digestOf(l), "size": len(l),
		})
	}
	return mustJSON(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digestOf(config), "size": len(config)},
		"layers":        descriptors,
	})
}

// indexOf is an OCI index of manifests by "os/arch".
func indexOf(manifests map[string][]byte) []byte {
	var descriptors []map[string]any
	for p, m := range manifests {
		os, arch, _ := strings.Cut(p, "/")
		descriptors = append(descriptors, map[string]any{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digestOf(m), "size": len(m),
			"platform": map[string]string{"os": os, "architecture": arch},
		})
	}
	return mustJSON(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": descriptors})
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
