package containerdprogress

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	contentapi "github.com/containerd/containerd/api/services/content/v1"
)

const (
	testHost  = "127.0.0.1:5102"
	testImage = testHost + "/bosun/webserver:big"
)

var (
	// since is when the tracked pull started.
	since     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	afterPull = since.Add(time.Second)
	amd64     = platform{OS: "linux", Architecture: "amd64"}
)

// fromRepository labels a blob as containerd does when it fetched it from repositories of
// host (a host name: containerd leaves the port out).
func fromRepository(host, repositories string) map[string]string {
	return map[string]string{distributionSourceLabelPrefix + host: repositories}
}

var fromWebserver = fromRepository("127.0.0.1", "bosun/webserver")

func newTestTracker(conn grpc.ClientConnInterface, image string) *tracker {
	return newTracker(contentapi.NewContentClient(conn), image, since, amd64)
}

// expectPoll polls t and checks the progress.
func expectPoll(t *testing.T, tr *tracker, want int32) {
	t.Helper()
	got, err := tr.poll(context.Background())
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	if got != want {
		t.Fatalf("progress %d, want %d", got, want)
	}
}

func percentOf(done, total int) int32 { return int32(done * 100 / total) }

func TestProgressCountsCommittedBlobsAndActiveDownloads(t *testing.T) {
	fake, conn := startFakeContent(t)
	config, layer1, layer2 := imageConfig("amd64"), layer(1, 4000), layer(2, 6000)
	manifest := manifestOf(config, layer1, layer2)
	total := len(config) + len(layer1) + len(layer2)
	// A manifest of the repository an earlier pull fetched is not this pull's.
	fake.commit("", manifestOf(imageConfig("amd64"), layer(9, 100)), since.Add(-time.Hour), fromWebserver)
	tr := newTestTracker(conn, testImage)

	// Nothing known before the manifest is committed.
	expectPoll(t, tr, 0)
	fake.ingest("manifest-"+digestOf(manifest), manifest, 10)
	expectPoll(t, tr, 0)

	fake.commit("manifest-"+digestOf(manifest), manifest, afterPull, fromWebserver)
	expectPoll(t, tr, 0)

	// The config is committed, a quarter of the first layer downloaded.
	fake.commit("config-"+digestOf(config), config, afterPull, fromWebserver)
	fake.ingest("layer-"+digestOf(layer1), layer1, 1000)
	expectPoll(t, tr, percentOf(len(config)+1000, total))

	// Download refs may carry more in front of the digest.
	fake.ingest("k8s.io/1/layer-"+digestOf(layer2), layer2, 3000)
	expectPoll(t, tr, percentOf(len(config)+1000+3000, total))

	// A download that starts over does not take progress back.
	fake.ingest("layer-"+digestOf(layer1), layer1, 10)
	expectPoll(t, tr, percentOf(len(config)+1000+3000, total))

	fake.commit("layer-"+digestOf(layer1), layer1, afterPull, fromWebserver)
	expectPoll(t, tr, percentOf(len(config)+len(layer1)+3000, total))

	// Everything downloaded is still not done: only the pull's return is.
	fake.commit("k8s.io/1/layer-"+digestOf(layer2), layer2, afterPull, fromWebserver)
	expectPoll(t, tr, 99)

	// Layers are never read.
	if n := fake.readOf(digestOf(layer1)) + fake.readOf(digestOf(layer2)); n != 0 {
		t.Errorf("read %d bytes of layers", n)
	}
}

func TestIndexFollowsTheManifestOfThePlatform(t *testing.T) {
	fake, conn := startFakeContent(t)
	configAMD, layerAMD := imageConfig("amd64"), layer(1, 1000)
	configARM, layerARM := imageConfig("arm64"), layer(2, 1000)
	manifestAMD, manifestARM := manifestOf(configAMD, layerAMD), manifestOf(configARM, layerARM)
	index := indexOf(map[string][]byte{"linux/amd64": manifestAMD, "linux/arm64": manifestARM})
	tr := newTestTracker(conn, testImage)

	fake.commit("index-"+digestOf(index), index, afterPull, fromWebserver)
	expectPoll(t, tr, 0)
	// Another platform's manifest and blobs, new and of the repository, are not this
	// pull's: an index's manifests are not taken for another image.
	fake.commit("", manifestARM, afterPull, fromWebserver)
	fake.commit("", configARM, afterPull, fromWebserver)
	fake.commit("", layerARM, afterPull, fromWebserver)
	expectPoll(t, tr, 0)

	fake.commit("manifest-"+digestOf(manifestAMD), manifestAMD, afterPull, fromWebserver)
	expectPoll(t, tr, 0)
	fake.commit("config-"+digestOf(configAMD), configAMD, afterPull, fromWebserver)
	fake.ingest("layer-"+digestOf(layerAMD), layerAMD, 500)
	expectPoll(t, tr, percentOf(len(configAMD)+500, len(configAMD)+len(layerAMD)))
}

func TestDigestReferenceNeedsNeitherLabelNorNewManifest(t *testing.T) {
	fake, conn := startFakeContent(t)
	config, layer1, layer2 := imageConfig("amd64"), layer(1, 1000), layer(2, 3000)
	manifest := manifestOf(config, layer1, layer2)
	// Fetched long ago, without a source label.
	fake.commit("", manifest, since.Add(-time.Hour), nil)
	fake.commit("", config, since.Add(-time.Hour), nil)
	fake.commit("", layer1, since.Add(-time.Hour), nil)
	fake.ingest("layer-"+digestOf(layer2), layer2, 1500)
	tr := newTestTracker(conn, testHost+"/bosun/webserver@"+digestOf(manifest))

	expectPoll(t, tr, percentOf(len(config)+len(layer1)+1500, len(config)+len(layer1)+len(layer2)))
	if f := fake.listFilters(); len(f) != 0 {
		t.Errorf("a digest pull listed the content store with %q", f)
	}
}

func TestOnlyNewManifestsOfTheRepositoryAreCandidates(t *testing.T) {
	fake, conn := startFakeContent(t)
	config, layer1 := imageConfig("amd64"), layer(1, 1000)
	// New, but of another repository, or of the same repository path on another
	// registry; the repository's new config and layer blobs are no manifests.
	fake.commit("", manifestOf(config, layer(3, 10)), afterPull, fromRepository("127.0.0.1", "bosun/other"))
	fake.commit("", manifestOf(config, layer(4, 10)), afterPull, fromRepository("registry.example", "bosun/webserver"))
	fake.commit("", manifestOf(config, layer(5, 10)), afterPull, fromRepository("127.0.0.1", "bosun/webserver-debug"))
	fake.commit("", config, afterPull, fromWebserver)
	fake.commit("", layer1, afterPull, fromWebserver)
	tr := newTestTracker(conn, testImage)

	expectPoll(t, tr, 0)
	if n := fake.readOf(digestOf(layer1)); n != 1 {
		t.Errorf("read %d bytes of a layer to tell it from a manifest, want 1", n)
	}
	want := []string{`labels."containerd.io/distribution.source.127.0.0.1"~="bosun/webserver"`}
	if f := fake.listFilters(); len(f) == 0 || len(f[0]) != 1 || f[0][0] != want[0] {
		t.Errorf("List filters %q, want %q", f, want)
	}

	// A blob fetched from several repositories lists them all.
	manifest := manifestOf(config, layer1, layer(2, 1000))
	fake.commit("", manifest, afterPull, fromRepository("127.0.0.1", "bosun/other,bosun/webserver"))
	expectPoll(t, tr, percentOf(len(config)+1000, len(config)+2000))
}

func TestTwoNewManifestsOfTheRepositoryAreAmbiguous(t *testing.T) {
	fake, conn := startFakeContent(t)
	config := imageConfig("amd64")
	fake.commit("", config, afterPull, fromWebserver)
	fake.commit("", manifestOf(config, layer(1, 1000)), afterPull, fromWebserver)
	fake.commit("", manifestOf(config, layer(2, 1000)), afterPull, fromWebserver)
	tr := newTestTracker(conn, testImage)

	expectPoll(t, tr, 0)
}

func TestAPullThatJustFinishedDoesNotHideThisOne(t *testing.T) {
	fake, conn := startFakeContent(t)
	// Another tag of the repository, pulled completely just before this pull started.
	configV1, layerV1 := imageConfig("amd64"), layer(1, 1000)
	fake.commit("", configV1, since.Add(-100*time.Millisecond), fromWebserver)
	fake.commit("", layerV1, since.Add(-100*time.Millisecond), fromWebserver)
	fake.commit("", manifestOf(configV1, layerV1), since.Add(-100*time.Millisecond), fromWebserver)
	tr := newTestTracker(conn, testImage)
	tr.since = since.Add(-startSlack)

	// This pull's manifest: its layer is still being fetched.
	config, layer2 := mustJSON(map[string]any{"config": map[string]any{}, "architecture": "amd64", "os": "linux", "v": 2}), layer(2, 3000)
	manifest := manifestOf(config, layer2)
	fake.commit("", manifest, afterPull, fromWebserver)
	fake.commit("", config, afterPull, fromWebserver)
	fake.ingest("layer-"+digestOf(layer2), layer2, 1500)
	expectPoll(t, tr, percentOf(len(config)+1500, len(config)+len(layer2)))
}

func TestOverlappingTagPullsOfARepositoryReportNothing(t *testing.T) {
	fake, conn := startFakeContent(t)
	config := imageConfig("amd64")
	manifest := manifestOf(config, layer(1, 1000))
	fake.commit("", manifest, afterPull, fromWebserver)
	fake.commit("", config, afterPull, fromWebserver)
	client := contentapi.NewContentClient(conn)
	w := NewWatcher()
	w.platform = amd64
	begin := func(image string) *tracker {
		tr := w.begin(client, image)
		tr.since = since
		return tr
	}

	v1, other := begin(testImage), begin(testHost+"/bosun/other:v1")
	v2 := begin(testHost + "/bosun/webserver:v2")
	byDigest := begin(testHost + "/bosun/webserver@" + digestOf(manifest))
	if !v1.shared.Load() || !v2.shared.Load() || other.shared.Load() {
		t.Fatalf("shared: v1 %v, v2 %v, other repository %v", v1.shared.Load(), v2.shared.Load(), other.shared.Load())
	}
	// The one new manifest may be either's.
	expectPoll(t, v1, 0)
	expectPoll(t, v2, 0)
	// A digest names its manifest.
	want := percentOf(len(config), len(config)+1000)
	expectPoll(t, byDigest, want)

	// Once the others ended, a new pull of the repository is alone.
	for _, tr := range []*tracker{v1, v2, byDigest} {
		w.end(tr)
	}
	alone := begin(testImage)
	if alone.shared.Load() {
		t.Fatal("a pull after the others ended is shared")
	}
	expectPoll(t, alone, want)
	w.end(alone)
	w.end(other)
	if len(w.active) != 0 {
		t.Errorf("active pulls left: %v", w.active)
	}
}
