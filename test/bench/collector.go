package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// What a garbage collector logs once it has waited for its monitors: upstream's Run logs
// "Garbage collector: all resource monitors have synced", or, when its initial-sync timeout
// (30 s) ran out first, "Garbage collector: not all resource monitors could be synced,
// proceeding anyways"; bosun's collector logs the same texts. They are matched case-insensitively and anywhere in the line.
const (
	syncedMessage = "all resource monitors have synced"
	gaveUpMessage = "not all resource monitors could be synced"
)

// graphChangesQueue is the work queue a collector's single graph builder drains (the same
// name in upstream's collector and bosun's); its workqueue_depth gauge on /metrics is zero
// once every initially listed object is in the graph.
const graphChangesQueue = "garbage_collector_graph_changes"

// syncState is what a collector's log line says about its monitors.
type syncState int

const (
	syncUnknown syncState = iota
	syncDone
	syncGaveUp
)

// classifySyncLine tells whether a log line is a collector's report about its monitors.
func classifySyncLine(line string) syncState {
	lower := strings.ToLower(line)
	switch {
	case strings.Contains(lower, gaveUpMessage):
		return syncGaveUp
	case strings.Contains(lower, syncedMessage):
		return syncDone
	}
	return syncUnknown
}

// logScanner reads the complete lines a process appended to its log since the last call.
type logScanner struct {
	path    string
	offset  int64
	partial []byte
}

// next returns the lines completed since the previous call (without their newlines).
func (s *logScanner) next() ([]string, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	s.offset += int64(len(data))
	data = append(s.partial, data...)
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		s.partial = data
		return nil, nil
	}
	s.partial = append([]byte(nil), data[end+1:]...)
	return strings.Split(string(data[:end]), "\n"), nil
}

// logLineTime returns when a log line was written, from its own timestamp: klog's text
// header ("I1123 19:58:41.123456 ...", local time, no year: the year is the one that puts
// it closest before ref, a day of clock skew allowed) or the "ts" field (seconds since the
// epoch) of the JSON format. It reports false for a line with neither.
func logLineTime(line string, ref time.Time) (time.Time, bool) {
	if strings.HasPrefix(line, "{") {
		var entry struct {
			TS *float64 `json:"ts"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.TS == nil {
			return time.Time{}, false
		}
		sec, frac := math.Modf(*entry.TS)
		return time.Unix(int64(sec), int64(frac*1e9)), true
	}
	const layout = "0102 15:04:05.000000"
	if len(line) < 1+len(layout) || !strings.ContainsRune("IWEF", rune(line[0])) {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation(layout, line[1:1+len(layout)], ref.Location())
	if err != nil {
		return time.Time{}, false
	}
	t = t.AddDate(ref.Year()-t.Year(), 0, 0)
	if t.After(ref.Add(24 * time.Hour)) {
		t = t.AddDate(-1, 0, 0)
	}
	return t, true
}

// metricValue returns the value of the series of metric name whose labels include all of
// want, from a Prometheus text exposition. It reports false when no such series exists.
func metricValue(exposition, name string, want map[string]string) (float64, bool) {
	for line := range strings.Lines(exposition) {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, name)
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		labels := map[string]string{}
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			var err error
			if labels, err = parseLabels(rest[1:end]); err != nil {
				continue
			}
			rest = rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // a longer metric name with this one as prefix
		}
		if !hasLabels(labels, want) {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		value, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		return value, true
	}
	return 0, false
}

func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// parseLabels parses `a="x",b="y\"z"`, the inside of a series' braces.
func parseLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		name, rest, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return nil, fmt.Errorf("malformed labels %q", s)
		}
		var value strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					value.WriteByte('\n')
					continue
				}
			}
			value.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return nil, fmt.Errorf("unterminated label value in %q", s)
		}
		labels[strings.TrimSpace(name)] = value.String()
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest[i+1:]), ","))
	}
	return labels, nil
}

// heapMemStat returns a "# <key> = <n>" line of a heap profile in text form
// (/debug/pprof/heap?debug=1 ends with runtime.MemStats in that form), in bytes.
func heapMemStat(profile, key string) (uint64, error) {
	prefix := "# " + key + " = "
	for line := range strings.Lines(profile) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %q line in the heap profile", strings.TrimSpace(prefix))
}

// graphResources are the resources a garbage collector watches, so the objects its graph
// holds: discovery's preferred version of every resource that supports delete, list and
// watch, less the events of both groups (upstream's GetDeletableResources and ignored
// resources; bosun's collector watches the same set).
func graphResources(lists []*metav1.APIResourceList) []schema.GroupVersionResource {
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, lists)
	gvrs, _ := discovery.GroupVersionResources(deletable)
	var out []schema.GroupVersionResource
	for gvr := range gvrs {
		if gvr.Resource == "events" && (gvr.Group == "" || gvr.Group == "events.k8s.io") {
			continue
		}
		out = append(out, gvr)
	}
	return out
}

// The large cluster's objects: the owned ConfigMaps and Secrets get data of a size drawn
// uniformly from [minDataSize, maxDataSize], from a generator seeded with dataSeed and the
// object's index, so every run and both collectors see the same cluster.
const (
	minDataSize = 1 << 10
	maxDataSize = 4 << 10
	dataSeed    = 0x6a72_6263 // arbitrary, fixed
)

// dependentData returns the data of owned object i: printable text (base64's alphabet) for
// a ConfigMap, arbitrary bytes for a Secret.
func dependentData(i int, text bool) []byte {
	rng := rand.New(rand.NewPCG(dataSeed, uint64(i)))
	data := make([]byte, minDataSize+rng.IntN(maxDataSize-minDataSize+1))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for j := range data {
		b := byte(rng.Uint32())
		if text {
			b = alphabet[b%byte(len(alphabet))]
		}
		data[j] = b
	}
	return data
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int) int {
	return (a + b - 1) / b
}
