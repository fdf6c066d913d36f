package framework

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdEntry is one key as etcd holds it: the value kube-apiserver stored, whichever version
// a client asks for, and the revision of its last write.
type EtcdEntry struct {
	Key         string
	Value       []byte
	ModRevision int64
}

// ReadEtcd returns every key etcd holds under prefix, by key, read through etcd's JSON
// gateway.
func (cp *ControlPlane) ReadEtcd(ctx context.Context, prefix string) (map[string]EtcdEntry, error) {
	end := []byte(prefix)
	end[len(end)-1]++ // every key starting with prefix sorts before it
	body, err := json.Marshal(map[string]string{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end),
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cp.EtcdURL()+"/v3/kv/range", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s from etcd: %w", prefix, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading %s from etcd: status %d, %v: %s", prefix, resp.StatusCode, err, raw)
	}
	var answer struct {
		KVs []struct {
			Key         []byte `json:"key"` // base64 in JSON, decoded by encoding/json
			Value       []byte `json:"value"`
			ModRevision int64  `json:"mod_revision,string"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, fmt.Errorf("decoding etcd's answer for %s: %w", prefix, err)
	}
	out := make(map[string]EtcdEntry, len(answer.KVs))
	for _, kv := range answer.KVs {
		out[string(kv.Key)] = EtcdEntry{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision}
	}
	return out, nil
}

// StoredAPIVersion returns the apiVersion the entry's object is stored in. Only custom
// resources are stored as JSON; the built-in kinds are stored as protobuf and give an error.
func (e EtcdEntry) StoredAPIVersion() (string, error) {
	var typeMeta metav1.TypeMeta
	if err := json.Unmarshal(e.Value, &typeMeta); err != nil {
		return "", fmt.Errorf("etcd key %s does not hold JSON: %w: %.200q", e.Key, err, e.Value)
	}
	return typeMeta.APIVersion, nil
}
