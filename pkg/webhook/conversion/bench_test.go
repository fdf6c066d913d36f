package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// benchDaemonSet is a v1alpha1 Advanced DaemonSet of about 20 KiB of compact JSON, as the
// API server sends it, most of it pod template, with the carrier annotation and a status.
func benchDaemonSet(b *testing.B, i int) string {
	var containers []string
	for c := range 24 {
		containers = append(containers, fmt.Sprintf(`{"name":"container-%d","image":"registry.example.com/team/agent-%d:1.2.3",
			"args":["--verbose","--port=%d","--config=/etc/agent/config.yaml","--log-format=json","--metrics-bind-address=:9%03d"],
			"env":[{"name":"NODE_NAME","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}},{"name":"LEVEL","value":"info"},
				{"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}}],
			"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"512Mi"}},
			"volumeMounts":[{"name":"config","mountPath":"/etc/agent"},{"name":"data","mountPath":"/var/lib/agent"}],
			"readinessProbe":{"httpGet":{"path":"/healthz","port":%d},"periodSeconds":10},
			"securityContext":{"privileged":false,"readOnlyRootFilesystem":true,"capabilities":{"drop":["ALL"]}}}`,
			c, c, 8000+c, c, 8000+c))
	}
	obj := fmt.Sprintf(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet",
		"metadata":{"name":"agent-%d","namespace":"kube-system","uid":"00000000-0000-0000-0000-%012d","resourceVersion":"%d",
			"generation":4,"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"agent","index":"%d"},
			"annotations":{"daemonset.kruise.io/progressive-create-pod":"true","deprecated.daemonset.template.generation":"4"}},
		"spec":{"selector":{"matchLabels":{"app":"agent"}},
			"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[%s],
				"volumes":[{"name":"config","configMap":{"name":"agent"}},{"name":"data","hostPath":{"path":"/var/lib/agent"}}],
				"tolerations":[{"operator":"Exists"}],"priorityClassName":"system-node-critical"}},
			"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"rollingUpdateType":"Standard","maxUnavailable":1,"partition":0}},
			"revisionHistoryLimit":10},
		"status":{"currentNumberScheduled":100,"numberMisscheduled":0,"desiredNumberScheduled":100,"numberReady":100,
			"observedGeneration":4,"updatedNumberScheduled":100,"numberAvailable":100,"daemonSetHash":"agent-5d8f7c"}}`,
		i, i, 1000+i, i, strings.Join(containers, ","))
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(obj)); err != nil {
		b.Fatal(err)
	}
	return compact.String()
}

// BenchmarkConvertDaemonSets answers one review of 500 DaemonSets of about 20 KiB each,
// from body to response, up to v1beta1 and down to v1alpha1.
func BenchmarkConvertDaemonSets(b *testing.B) {
	h := newTestHandler(b)
	objects := make([]string, 500)
	for i := range objects {
		objects[i] = benchDaemonSet(b, i)
	}
	if size := len(objects[0]); size < 18<<10 || size > 24<<10 {
		b.Fatalf("a DaemonSet of %d bytes, want about 20 KiB", size)
	}
	up := reviewBody(b, "uid-bench", appsBeta, objects...)
	converted := convertOK(b, h, appsBeta, objects...)
	betas := make([]string, len(converted))
	for i, obj := range converted {
		betas[i] = string(obj)
	}
	down := reviewBody(b, "uid-bench", appsAlpha, betas...)

	for _, bench := range []struct {
		name string
		body []byte
	}{{"up", up}, {"down", down}} {
		b.Run(bench.name, func(b *testing.B) {
			b.SetBytes(int64(len(bench.body)))
			for b.Loop() {
				if w := post(b.Context(), h, bench.body); w.Code != http.StatusOK {
					b.Fatalf("HTTP status %d", w.Code)
				}
			}
		})
	}
}
