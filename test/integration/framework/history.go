package framework

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/watch"
)

// Version is one state of an object as etcd stored it: Type is watch.Added or
// watch.Modified with the object written, or watch.Deleted with the object as it last was.
type Version[T any] struct {
	Type     watch.EventType
	Revision int64
	Object   T
}

// History records every version of the objects stored under one etcd prefix, in the order
// they were written, by watching etcd itself from a given revision. A watch of kube-apiserver
// would not do for a test that restarts it: a new server's watch cache begins at its start,
// so a client cannot resume from a resourceVersion of before the restart, and a relist skips
// the versions written meanwhile. A test reads the history to check how an object changed
// over time, for example that a field once set was never rewritten. Only objects stored as
// JSON can be decoded: custom resources, in their storage version.
type History[T any] struct {
	prefix string

	mu       sync.Mutex
	versions map[string][]Version[T]
	err      error
}

// WatchEtcdHistory starts recording, until the test ends, the versions of the objects under
// the etcd key prefix (for example "/registry/apps.kruise.io/nodeimages/") written after
// revision (a resourceVersion kube-apiserver returned, say that of a list made just before).
// Objects are named by their key after the prefix ("<name>", or "<namespace>/<name>").
func WatchEtcdHistory[T any](t testing.TB, ctx context.Context, cp *ControlPlane, prefix string, revision int64) *History[T] {
	t.Helper()
	h := &History[T]{prefix: prefix, versions: map[string][]Version[T]{}}
	end := []byte(prefix)
	end[len(end)-1]++
	body, err := json.Marshal(map[string]any{"create_request": map[string]any{
		"key":            base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end":      base64.StdEncoding.EncodeToString(end),
		"start_revision": fmt.Sprint(revision + 1),
		"prev_kv":        false,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cp.EtcdURL()+"/v3/watch", bytes.NewReader(body))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("watching %s in etcd: %v (status %v)", prefix, err, resp)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		defer resp.Body.Close()
		scanner := bufio.NewScanner(resp.Body)
		scanner.Buffer(make([]byte, 1<<20), 64<<20)
		for scanner.Scan() {
			if err := h.record(scanner.Bytes()); err != nil {
				h.fail(err)
				return
			}
		}
		if err := scanner.Err(); err != nil && ctx.Err() == nil {
			h.fail(fmt.Errorf("watching %s in etcd: %w", prefix, err))
		}
	}()
	return h
}

// record decodes one message of etcd's watch stream and records its events.
func (h *History[T]) record(line []byte) error {
	var msg struct {
		Result struct {
			Canceled     bool   `json:"canceled"`
			CancelReason string `json:"cancel_reason"`
			Events       []struct {
				Type string `json:"type"` // "PUT" is left out as the default
				KV   struct {
					Key         []byte `json:"key"`
					Value       []byte `json:"value"`
					ModRevision int64  `json:"mod_revision,string"`
				} `json:"kv"`
			} `json:"events"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		return fmt.Errorf("decoding etcd's watch message %.200q: %w", line, err)
	}
	if msg.Error != nil {
		return fmt.Errorf("watching %s in etcd: %s", h.prefix, msg.Error.Message)
	}
	if msg.Result.Canceled {
		return fmt.Errorf("etcd cancelled the watch of %s: %s", h.prefix, msg.Result.CancelReason)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range msg.Result.Events {
		name := strings.TrimPrefix(string(ev.KV.Key), h.prefix)
		versions := h.versions[name]
		v := Version[T]{Type: watch.Modified, Revision: ev.KV.ModRevision}
		switch {
		case ev.Type == "DELETE":
			v.Type = watch.Deleted
			if len(versions) > 0 {
				v.Object = versions[len(versions)-1].Object
			}
		default:
			if len(versions) == 0 || versions[len(versions)-1].Type == watch.Deleted {
				v.Type = watch.Added
			}
			if err := json.Unmarshal(ev.KV.Value, &v.Object); err != nil {
				return fmt.Errorf("decoding %s at revision %d: %w", ev.KV.Key, ev.KV.ModRevision, err)
			}
		}
		h.versions[name] = append(versions, v)
	}
	return nil
}

func (h *History[T]) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

// Versions returns the versions of the object named name (see WatchEtcdHistory) seen so
// far, oldest first; the test fails if the watch broke.
func (h *History[T]) Versions(t testing.TB, name string) []Version[T] {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		t.Fatal(h.err)
	}
	return append([]Version[T](nil), h.versions[name]...)
}
