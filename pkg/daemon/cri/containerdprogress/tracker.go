package containerdprogress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	contentapi "github.com/containerd/containerd/api/services/content/v1"

	"github.com/bosun-dev/bosun/pkg/controller/imageref"
)

const (
	// distributionSourceLabelPrefix starts the label containerd puts on every blob it
	// fetches: the key ends with the registry's host name (without the port), the value
	// lists the repositories the blob came from, comma-separated.
	distributionSourceLabelPrefix = "containerd.io/distribution.source."
	// maxManifestSize is the largest manifest or index containerd accepts; larger blobs
	// are layers and are never read.
	maxManifestSize = 4 << 20
	// maxPending is the highest progress of a pull that has not returned: what is left
	// after the last byte (unpacking, the image record) is done only when PullImage returns.
	maxPending = 99
)

// tracker measures one pull. Only the watching goroutine uses it, but for shared.
type tracker struct {
	content contentapi.ContentClient
	// host and repository locate the image ("127.0.0.1:5000", "bosun/webserver");
	// digest is set when the pull names a digest instead of a tag.
	host, repository, digest string
	// since is when the pull started: a manifest committed earlier is not this pull's.
	since    time.Time
	platform platform
	// shared is set when another pull of the repository overlaps this one.
	shared atomic.Bool

	// blobs are the config and layers of the pull's manifest once it is known, and total
	// the sum of their sizes.
	blobs []descriptor
	total int64
	// committed are the blobs found in the content store.
	committed map[string]bool
	// documents are the blobs read, by digest: their manifest or index, or nil for those
	// that are neither.
	documents map[string]*document
	// percent is the highest progress measured.
	percent int32
}

func newTracker(content contentapi.ContentClient, image string, since time.Time, p platform) *tracker {
	name, _, digest := imageref.Split(image)
	host, repository := imageref.SplitName(name)
	return &tracker{
		content:    content,
		host:       host,
		repository: repository,
		digest:     digest,
		since:      since,
		platform:   p,
		committed:  map[string]bool{},
		documents:  map[string]*document{},
	}
}

// repositoryKey tells apart the repositories containerd's labels tell apart.
func (t *tracker) repositoryKey() string { return t.sourceLabel() + "=" + t.repository }

// poll measures the pull's progress: 0 until its manifest is known.
func (t *tracker) poll(ctx context.Context) (int32, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, namespaceHeader, Namespace)
	if t.blobs == nil {
		found, err := t.findManifest(ctx)
		if err != nil || !found {
			return t.percent, err
		}
	}
	statuses, err := t.content.ListStatuses(ctx, &contentapi.ListStatusesRequest{})
	if err != nil {
		return t.percent, fmt.Errorf("listing containerd's active downloads: %w", err)
	}
	var done int64
	for _, blob := range t.blobs {
		if t.committed[blob.Digest] {
			done += blob.Size
			continue
		}
		if offset, ok := ingestOffset(statuses.GetStatuses(), blob.Digest); ok {
			done += min(offset, blob.Size)
			continue
		}
		exists, err := t.exists(ctx, blob.Digest)
		if err != nil {
			return t.percent, err
		}
		if exists {
			t.committed[blob.Digest] = true
			done += blob.Size
		}
	}
	if t.total > 0 {
		t.percent = max(t.percent, int32(min(done*100/t.total, maxPending)))
	}
	return t.percent, nil
}

// ingestOffset returns how much of the blob dgst an active download has written.
// containerd names a download after the blob's digest, with a kind prefix
// ("layer-sha256:…") and possibly more in front.
func ingestOffset(statuses []*contentapi.Status, dgst string) (int64, bool) {
	for _, s := range statuses {
		if s.GetExpected() == dgst || strings.HasSuffix(s.GetRef(), dgst) {
			return s.GetOffset(), true
		}
	}
	return 0, false
}

// findManifest looks for the manifest the pull fetched and records its blobs.
func (t *tracker) findManifest(ctx context.Context) (bool, error) {
	var manifest *document
	var err error
	if t.digest != "" {
		manifest, err = t.manifestOf(ctx, t.digest)
	} else {
		manifest, err = t.newManifest(ctx)
	}
	if err != nil || manifest == nil {
		return false, err
	}
	t.blobs = []descriptor{}
	for _, blob := range manifest.blobs() {
		t.blobs = append(t.blobs, blob)
		t.total += blob.Size
	}
	return true, nil
}

// newManifest returns the manifest of the repository this pull fetched, nil while it cannot
// tell. Of several new ones, a pull that just finished left one complete: the pull still
// fetching is the one with content missing.
func (t *tracker) newManifest(ctx context.Context) (*document, error) {
	if t.shared.Load() {
		return nil, nil
	}
	roots, err := t.newRoots(ctx)
	if err != nil || len(roots) == 0 {
		return nil, err
	}
	if len(roots) == 1 {
		return t.manifestOf(ctx, roots[0])
	}
	var incomplete []*document
	for _, root := range roots {
		m, err := t.manifestOf(ctx, root)
		if err != nil {
			return nil, err
		}
		// An index whose manifest is not fetched yet is being pulled.
		complete := m != nil
		if m != nil {
			if complete, err = t.complete(ctx, m); err != nil {
				return nil, err
			}
		}
		if !complete {
			incomplete = append(incomplete, m)
		}
	}
	if len(incomplete) != 1 {
		// More than one pull of the repository: another reading may tell.
		return nil, nil
	}
	return incomplete[0], nil
}

// manifestOf returns the manifest root names: root itself, or of an index the manifest
// for the tracker's platform; nil while the content store does not hold it.
func (t *tracker) manifestOf(ctx context.Context, root string) (*document, error) {
	doc, err := t.document(ctx, root)
	if err != nil || doc == nil {
		return nil, err
	}
	if doc.isIndex() {
		manifest, err := t.platformManifest(ctx, doc)
		if err != nil || manifest == "" {
			return nil, err
		}
		if doc, err = t.document(ctx, manifest); err != nil || doc == nil {
			return nil, err
		}
	}
	if !doc.isManifest() {
		return nil, nil
	}
	return doc, nil
}

// complete tells whether the content store holds every blob of manifest.
func (t *tracker) complete(ctx context.Context, manifest *document) (bool, error) {
	for _, blob := range manifest.blobs() {
		exists, err := t.exists(ctx, blob.Digest)
		if err != nil || !exists {
			return false, err
		}
	}
	return true, nil
}

// newRoots returns the manifests and indexes of the repository committed since the pull
// started, leaving out the manifests of those indexes.
func (t *tracker) newRoots(ctx context.Context) ([]string, error) {
	stream, err := t.content.List(ctx, &contentapi.ListContentRequest{Filters: []string{t.sourceFilter()}})
	if err != nil {
		return nil, fmt.Errorf("listing the blobs of %s: %w", t.repositoryKey(), err)
	}
	var infos []*contentapi.Info
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing the blobs of %s: %w", t.repositoryKey(), err)
		}
		infos = append(infos, resp.GetInfo()...)
	}
	found := map[string]*document{}
	for _, info := range infos {
		if info.GetSize() > maxManifestSize || info.GetCreatedAt().AsTime().Before(t.since) ||
			!listsRepository(info.GetLabels()[t.sourceLabel()], t.repository) {
			continue
		}
		doc, err := t.document(ctx, info.GetDigest())
		if err != nil {
			return nil, err
		}
		if doc != nil && (doc.isManifest() || doc.isIndex()) {
			found[info.GetDigest()] = doc
		}
	}
	children := map[string]bool{}
	for _, doc := range found {
		for _, m := range doc.Manifests {
			children[m.Digest] = true
		}
	}
	var roots []string
	for dgst := range found {
		if !children[dgst] {
			roots = append(roots, dgst)
		}
	}
	return roots, nil
}

// sourceLabel is the key of the label that lists the repositories of the image's registry
// a blob came from. containerd leaves the port out: registries of one host on different
// ports share the label.
func (t *tracker) sourceLabel() string {
	host := t.host
	if u, err := url.Parse("dummy://" + t.host); err == nil {
		host = u.Hostname()
	}
	return distributionSourceLabelPrefix + host
}

// sourceFilter selects the blobs that came from the image's repository, in containerd's
// filter syntax (values in Go string syntax). The pattern may match more (other
// repositories of which it is a part); the label is checked again on each blob.
func (t *tracker) sourceFilter() string {
	return "labels." + strconv.Quote(t.sourceLabel()) + "~=" + strconv.Quote(regexp.QuoteMeta(t.repository))
}

// listsRepository tells whether a distribution source label value names repository.
func listsRepository(value, repository string) bool {
	for r := range strings.SplitSeq(value, ",") {
		if r == repository {
			return true
		}
	}
	return false
}

// platformManifest returns the index's manifest for the tracker's platform that containerd
// has fetched, or "" while it has fetched none.
func (t *tracker) platformManifest(ctx context.Context, index *document) (string, error) {
	for _, m := range index.Manifests {
		if m.Platform == nil || m.Platform.OS != t.platform.OS || m.Platform.Architecture != t.platform.Architecture {
			continue
		}
		exists, err := t.exists(ctx, m.Digest)
		if err != nil || exists {
			return m.Digest, err
		}
	}
	return "", nil
}

// exists tells whether the content store holds the blob dgst.
func (t *tracker) exists(ctx context.Context, dgst string) (bool, error) {
	_, err := t.content.Info(ctx, &contentapi.InfoRequest{Digest: dgst})
	switch {
	case err == nil:
		return true, nil
	case status.Code(err) == codes.NotFound:
		return false, nil
	default:
		return false, fmt.Errorf("reading the info of blob %s: %w", dgst, err)
	}
}

// document returns the blob dgst as a manifest or index; nil when it is neither or when
// the content store does not hold it (yet). Each blob is read once.
func (t *tracker) document(ctx context.Context, dgst string) (*document, error) {
	if doc, ok := t.documents[dgst]; ok {
		return doc, nil
	}
	// A JSON document starts with '{': one byte tells a layer from it.
	head, err := t.read(ctx, dgst, 1)
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc *document
	if len(head) == 1 && head[0] == '{' {
		data, err := t.read(ctx, dgst, 0)
		if err != nil {
			return nil, err
		}
		doc = parseDocument(data)
	}
	t.documents[dgst] = doc
	return doc, nil
}

// read returns the first size bytes of the blob dgst (all of it when size is 0), never
// more than maxManifestSize.
func (t *tracker) read(ctx context.Context, dgst string, size int64) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := t.content.Read(ctx, &contentapi.ReadContentRequest{Digest: dgst, Size: size})
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", dgst, err)
	}
	var data []byte
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if status.Code(err) == codes.NotFound {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("reading blob %s: %w", dgst, err)
		}
		data = append(data, resp.GetData()...)
		if len(data) > maxManifestSize {
			return nil, fmt.Errorf("blob %s is larger than a manifest can be", dgst)
		}
	}
}
