package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2/ktesting"
)

const (
	appsAlpha   = "apps.kruise.io/v1alpha1"
	appsBeta    = "apps.kruise.io/v1beta1"
	policyAlpha = "policy.kruise.io/v1alpha1"
	policyBeta  = "policy.kruise.io/v1beta1"
)

// kindFixture is one convertible kind as the API server would send it, in both versions,
// with the fields that differ between them set; want* are fields of the conversion's
// result (path → JSON), so that a converter that changed nothing could not pass.
type kindFixture struct {
	kind              string
	alpha, beta       string
	wantUp, wantDown  map[string]string
	alphaVer, betaVer string
}

func kindFixtures() []kindFixture {
	return []kindFixture{{
		kind: "DaemonSet", alphaVer: appsAlpha, betaVer: appsBeta,
		alpha: `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet",
			"metadata":{"name":"agent","namespace":"kube-system","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f001",
				"resourceVersion":"42","generation":3,"creationTimestamp":"2026-01-02T03:04:05Z",
				"labels":{"app":"agent","tier":"node"},
				"annotations":{"daemonset.kruise.io/progressive-create-pod":"true","note":"kept"}},
			"spec":{"selector":{"matchLabels":{"app":"agent"}},
				"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"agent","image":"registry.example/agent:1.0"}]}},
				"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"rollingUpdateType":"Surging","partition":1}},
				"minReadySeconds":5,"burstReplicas":"10%","revisionHistoryLimit":10},
			"status":{"currentNumberScheduled":3,"numberMisscheduled":0,"desiredNumberScheduled":3,"numberReady":3,
				"observedGeneration":3,"updatedNumberScheduled":3,"numberAvailable":3,"daemonSetHash":"agent-5d8f7"}}`,
		wantUp: map[string]string{
			"spec.scaleStrategy.partitionedScaling":               `true`,
			"spec.updateStrategy.rollingUpdate.rollingUpdateType": `"Standard"`,
			"spec.updateStrategy.rollingUpdate.maxSurge":          `1`,
			"status.updateRevision":                               `"agent-5d8f7"`,
		},
		beta: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet",
			"metadata":{"name":"agent","namespace":"kube-system","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f002",
				"resourceVersion":"43","generation":2,"labels":{"app":"agent"}},
			"spec":{"selector":{"matchLabels":{"app":"agent"}},
				"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"agent","image":"registry.example/agent:2.0"}]}},
				"scaleStrategy":{"partitionedScaling":true},
				"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"rollingUpdateType":"InPlaceIfPossible","maxUnavailable":2}}},
			"status":{"currentNumberScheduled":1,"numberMisscheduled":0,"desiredNumberScheduled":1,"numberReady":1,
				"updatedNumberScheduled":1,"updateRevision":"agent-7c9b"}}`,
		wantDown: map[string]string{
			"metadata.annotations.daemonset\\.kruise\\.io/progressive-create-pod": `"true"`,
			"status.daemonSetHash": `"agent-7c9b"`,
		},
	}, {
		kind: "ContainerRecreateRequest", alphaVer: appsAlpha, betaVer: appsBeta,
		alpha: `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ContainerRecreateRequest",
			"metadata":{"name":"restart-app","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f003",
				"labels":{"crr.apps.kruise.io/pod-name":"web-0"},
				"annotations":{"crr.apps.kruise.io/sync-container-statuses":"[{\"name\":\"app\",\"ready\":true,\"restartCount\":1,\"containerID\":\"containerd://abc\"}]",
					"crr.apps.kruise.io/unready-acquired":"2026-01-02T03:04:05Z"}},
			"spec":{"podName":"web-0","containers":[{"name":"app"}],"strategy":{"failurePolicy":"Fail","unreadyGracePeriodSeconds":10},"ttlSecondsAfterFinished":300},
			"status":{"phase":"Recreating","containerRecreateStates":[{"name":"app","phase":"Recreating"}]}}`,
		wantUp: map[string]string{
			"status.containerStatusSnapshot": `[{"name":"app","ready":true,"restartCount":1,"containerID":"containerd://abc"}]`,
			"status.conditions":              `[{"type":"PreRecreateGrace","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"PreRecreateGrace","message":""}]`,
		},
		beta: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ContainerRecreateRequest",
			"metadata":{"name":"restart-app","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f004","labels":{"crr.apps.kruise.io/pod-name":"web-0"}},
			"spec":{"podName":"web-0","containers":[{"name":"app"}]},
			"status":{"phase":"Completed","containerStatusSnapshot":[{"name":"app","ready":false,"restartCount":2}],
				"conditions":[{"type":"PreRecreateGrace","status":"True","lastTransitionTime":"2026-03-04T05:06:07Z","reason":"PreRecreateGrace","message":""}]}}`,
		wantDown: map[string]string{
			"metadata.annotations.crr\\.apps\\.kruise\\.io/sync-container-statuses": `"[{\"name\":\"app\",\"ready\":false,\"restartCount\":2}]"`,
			"metadata.annotations.crr\\.apps\\.kruise\\.io/unready-acquired":        `"2026-03-04T05:06:07Z"`,
		},
	}, {
		kind: "NodeImage", alphaVer: appsAlpha, betaVer: appsBeta,
		alpha: `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"NodeImage",
			"metadata":{"name":"node-1","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f005","labels":{"kubernetes.io/hostname":"node-1"}},
			"spec":{"images":{"nginx":{"pullSecrets":[{"namespace":"default","name":"regcred","mode":"batch"}],
				"tags":[{"tag":"1.25","version":1,"pullPolicy":{"timeoutSeconds":600,"backoffLimit":3}}]}}},
			"status":{"desired":1,"succeeded":1,"failed":0,"pulling":0,"waiting":0,
				"imageStatuses":{"nginx":{"tags":[{"tag":"1.25","phase":"Succeeded","version":1}]}}}}`,
		wantUp: map[string]string{"spec.images.nginx.pullSecrets": `[{"namespace":"default","name":"regcred","mode":"batch"}]`},
		beta: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"NodeImage",
			"metadata":{"name":"node-2","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f006","labels":{"kubernetes.io/hostname":"node-2"}},
			"spec":{"images":{"busybox":{"tags":[{"tag":"1.36","version":2}]}}},
			"status":{"desired":1,"succeeded":0,"failed":0,"pulling":1,"waiting":0}}`,
		wantDown: map[string]string{"spec.images.busybox.tags": `[{"tag":"1.36","version":2}]`},
	}, {
		kind: "ImagePullJob", alphaVer: appsAlpha, betaVer: appsBeta,
		alpha: `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImagePullJob",
			"metadata":{"name":"pull-nginx","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f007","labels":{"team":"web"}},
			"spec":{"image":"nginx:1.25","parallelism":2,"pullPolicy":{"timeoutSeconds":600,"backoffLimit":3},
				"completionPolicy":{"type":"Always","ttlSecondsAfterFinished":600},"selector":{"names":["node-1"]}},
			"status":{"desired":1,"succeeded":1}}`,
		wantUp: map[string]string{"spec.image": `"nginx:1.25"`, "spec.parallelism": `2`},
		beta: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ImagePullJob",
			"metadata":{"name":"pull-busybox","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f008","labels":{"team":"ops"}},
			"spec":{"image":"busybox:1.36","parallelism":"50%","completionPolicy":{"type":"Never"},"imagePullPolicy":"Always"}}`,
		wantDown: map[string]string{"spec.parallelism": `"50%"`, "spec.imagePullPolicy": `"Always"`},
	}, {
		kind: "ImageListPullJob", alphaVer: appsAlpha, betaVer: appsBeta,
		alpha: `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImageListPullJob",
			"metadata":{"name":"warm-up","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f009","labels":{"team":"web"}},
			"spec":{"images":["nginx:1.25","busybox:1.36"],"parallelism":3,"completionPolicy":{"type":"Always"}},
			"status":{"desired":2,"completed":1,"succeeded":1}}`,
		wantUp: map[string]string{"spec.images": `["nginx:1.25","busybox:1.36"]`},
		beta: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"ImageListPullJob",
			"metadata":{"name":"warm-up-2","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f00a"},
			"spec":{"images":["redis:7"],"completionPolicy":{"type":"Never"}}}`,
		wantDown: map[string]string{"spec.images": `["redis:7"]`},
	}, {
		kind: "PodUnavailableBudget", alphaVer: policyAlpha, betaVer: policyBeta,
		alpha: `{"apiVersion":"policy.kruise.io/v1alpha1","kind":"PodUnavailableBudget",
			"metadata":{"name":"web","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f00b","labels":{"app":"web"},
				"annotations":{"kruise.io/pub-protect-operations":"DELETE,EVICT","pub.kruise.io/protect-total-replicas":"3"}},
			"spec":{"selector":{"matchLabels":{"app":"web"}},"maxUnavailable":"25%"},
			"status":{"observedGeneration":1,"unavailableAllowed":1,"currentAvailable":3,"desiredAvailable":2,"totalReplicas":3}}`,
		wantUp: map[string]string{"spec.protectOperations": `["DELETE","EVICT"]`, "spec.protectTotalReplicas": `3`},
		beta: `{"apiVersion":"policy.kruise.io/v1beta1","kind":"PodUnavailableBudget",
			"metadata":{"name":"db","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f00c","labels":{"app":"db"}},
			"spec":{"targetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db"},"minAvailable":2,
				"protectOperations":["EVICT"],"protectTotalReplicas":5,"ignoredPodSelector":{"matchLabels":{"canary":"true"}}},
			"status":{"unavailableAllowed":0,"currentAvailable":2,"desiredAvailable":2,"totalReplicas":3}}`,
		wantDown: map[string]string{
			"metadata.annotations.kruise\\.io/pub-protect-operations":       `"EVICT"`,
			"metadata.annotations.pub\\.kruise\\.io/protect-total-replicas": `"5"`,
		},
	}, {
		kind: "CloneSet", alphaVer: appsAlpha, betaVer: appsBeta,
		alpha: `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet",
			"metadata":{"name":"web","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f00d",
				"resourceVersion":"7","generation":2,
				"labels":{"app":"web","apps.kruise.io/cloneset-scaling-exclude-preparing-delete":"true"},
				"annotations":{"apps.kruise.io/image-predownload-parallelism":"2"}},
			"spec":{"replicas":4,"selector":{"matchLabels":{"app":"web"}},
				"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"registry.example/web:1"}]}},
				"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}],
				"scaleStrategy":{"podsToDelete":["web-x2k9p"]},
				"updateStrategy":{"type":"OnDelete","partition":2,"maxUnavailable":"20%"}},
			"status":{"observedGeneration":2,"replicas":4,"readyReplicas":4,"availableReplicas":4,"updatedReplicas":2,
				"updatedReadyReplicas":2,"updateRevision":"web-7c9d5f","currentRevision":"web-5b8c4d","labelSelector":"app=web"}}`,
		wantUp: map[string]string{
			"spec.updateStrategy.type":                                `"OnDelete"`,
			"spec.updateStrategy.rollingUpdate.partition":             `2`,
			"spec.scaleStrategy.enablePVCReuse":                       `true`,
			"spec.scaleStrategy.excludePreparingDelete":               `true`,
			"spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy": `{"imagePreDownloadParallelism":2}`,
		},
		beta: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"CloneSet",
			"metadata":{"name":"api","namespace":"default","uid":"6b1f9a52-0d3e-4d7a-9d43-52b9c1a1f00e",
				"labels":{"app":"api","apps.kruise.io/cloneset-scaling-exclude-preparing-delete":"true"}},
			"spec":{"replicas":3,"selector":{"matchLabels":{"app":"api"}},
				"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"name":"app","image":"registry.example/api:2"}]}},
				"scaleStrategy":{"excludePreparingDelete":true},
				"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"podUpdatePolicy":"InPlaceIfPossible","maxSurge":0,
					"inPlaceUpdateStrategy":{"gracePeriodSeconds":10,"imagePreDownloadTimeoutSeconds":600}}}},
			"status":{"replicas":3,"readyReplicas":3,"availableReplicas":3,"updatedReplicas":3,"updatedReadyReplicas":3,
				"updatedAvailableReplicas":3,"updateRevision":"api-6f7d8c"}}`,
		wantDown: map[string]string{
			"spec.updateStrategy.type":                                                  `"InPlaceIfPossible"`,
			"spec.updateStrategy.maxSurge":                                              `0`,
			"spec.updateStrategy.inPlaceUpdateStrategy":                                 `{"gracePeriodSeconds":10}`,
			"spec.scaleStrategy.disablePVCReuse":                                        `true`,
			"metadata.annotations.apps\\.kruise\\.io/image-predownload-timeout-seconds": `"600"`,
		},
	}}
}

func newTestHandler(t testing.TB) *Handler {
	t.Helper()
	h, err := NewHandler()
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	return h
}

func testContext(t testing.TB) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

// reviewBody is the body of a ConversionReview asking for objects in desired.
func reviewBody(t testing.TB, uid, desired string, objects ...string) []byte {
	t.Helper()
	raws := make([]json.RawMessage, len(objects))
	for i, o := range objects {
		raws[i] = json.RawMessage(o)
	}
	body, err := json.Marshal(conversionReview{
		APIVersion: reviewAPIVersion, Kind: reviewKind,
		Request: &conversionRequest{UID: types.UID(uid), DesiredAPIVersion: desired, Objects: raws},
	})
	if err != nil {
		t.Fatalf("encoding the review: %v", err)
	}
	return body
}

// post sends body to h as the API server would.
func post(ctx context.Context, h http.Handler, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// readReview checks that w holds a well-formed review answering uid and returns its
// response.
func readReview(t testing.TB, w *httptest.ResponseRecorder, uid string) *conversionResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP status %d, want 200; body: %s", w.Code, w.Body)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q, want application/json", got)
	}
	return parseReview(t, w.Body.Bytes(), uid)
}

func parseReview(t testing.TB, body []byte, uid string) *conversionResponse {
	t.Helper()
	var review conversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatalf("decoding the response review: %v; body: %s", err, body)
	}
	if review.APIVersion != reviewAPIVersion || review.Kind != reviewKind {
		t.Errorf("response review is %s %s, want %s %s", review.APIVersion, review.Kind, reviewAPIVersion, reviewKind)
	}
	if review.Request != nil {
		t.Errorf("response review carries a request")
	}
	if review.Response == nil {
		t.Fatalf("response review carries no response: %s", body)
	}
	if string(review.Response.UID) != uid {
		t.Errorf("response uid %q, want %q", review.Response.UID, uid)
	}
	return review.Response
}

// convertOK converts objects into desired through h and returns the converted objects,
// failing the test unless the review succeeded with as many objects as it sent.
func convertOK(t testing.TB, h http.Handler, desired string, objects ...string) []json.RawMessage {
	t.Helper()
	resp := readReview(t, post(testContext(t), h, reviewBody(t, "uid-ok", desired, objects...)), "uid-ok")
	if resp.Result.Status != "Success" {
		t.Fatalf("converting into %s failed: %+v", desired, resp.Result)
	}
	if len(resp.ConvertedObjects) != len(objects) {
		t.Fatalf("%d objects converted, %d sent", len(resp.ConvertedObjects), len(objects))
	}
	return resp.ConvertedObjects
}

// convertFails converts objects into desired through h and returns the failure's message,
// failing the test unless the review failed with 422 and no objects.
func convertFails(t testing.TB, h http.Handler, desired string, objects ...string) string {
	t.Helper()
	resp := readReview(t, post(testContext(t), h, reviewBody(t, "uid-fail", desired, objects...)), "uid-fail")
	if resp.Result.Status != "Failure" || resp.Result.Code != http.StatusUnprocessableEntity {
		t.Fatalf("converting into %s: result %+v, want a Failure with code 422", desired, resp.Result)
	}
	if len(resp.ConvertedObjects) != 0 {
		t.Errorf("a failed review returned %d objects", len(resp.ConvertedObjects))
	}
	return resp.Result.Message
}

// typed decodes raw into the Go type its apiVersion and kind name.
func typed(t testing.TB, scheme *runtime.Scheme, raw []byte) runtime.Object {
	t.Helper()
	var head objectHead
	if err := json.Unmarshal(raw, &head); err != nil {
		t.Fatalf("reading the object %s: %v", raw, err)
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := scheme.New(gv.WithKind(head.Kind))
	if err != nil {
		t.Fatal(err)
	}
	if err := utiljson.Unmarshal(raw, obj); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return obj
}

// field returns the JSON of the field at path in the object raw ("" when absent); dots
// separate names, "\." is a dot within a name.
func field(t testing.TB, raw []byte, path string) string {
	t.Helper()
	var value any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&value); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	for _, name := range splitPath(path) {
		m, ok := value.(map[string]any)
		if !ok {
			return ""
		}
		if value, ok = m[name]; !ok {
			return ""
		}
	}
	out, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// splitPath splits a path of field names separated by dots, "\." being a dot within a name.
func splitPath(path string) []string {
	names := strings.Split(strings.ReplaceAll(path, `\.`, "\x00"), ".")
	for i := range names {
		names[i] = strings.ReplaceAll(names[i], "\x00", ".")
	}
	return names
}

// sameJSON reports whether a and b are the same JSON document.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding %s: %v", data, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// setField returns the object raw with the field at path (as field's) set to the JSON
// value, or removed when value is "".
func setField(t testing.TB, raw string, path string, value string) string {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	names := splitPath(path)
	m := obj
	for _, name := range names[:len(names)-1] {
		next, ok := m[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[name] = next
		}
		m = next
	}
	last := names[len(names)-1]
	if value == "" {
		delete(m, last)
	} else {
		var v any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			t.Fatalf("decoding %s: %v", value, err)
		}
		m[last] = v
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// conversionMetrics are the values of the handler's metrics.
type conversionMetrics struct {
	// requests is bosun_conversion_requests_total by "kind desired_version code".
	requests map[string]float64
	// dropped is bosun_conversion_dropped_total by kind.
	dropped map[string]float64
	// durations is the number of bosun_conversion_duration_seconds samples.
	durations uint64
}

func readMetrics(t testing.TB) conversionMetrics {
	t.Helper()
	m := conversionMetrics{requests: map[string]float64{}, dropped: map[string]float64{}}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch family.GetName() {
			case "bosun_conversion_requests_total":
				m.requests[fmt.Sprintf("%s %s %s", labels["kind"], labels["desired_version"], labels["code"])] = metric.GetCounter().GetValue()
			case "bosun_conversion_dropped_total":
				m.dropped[labels["kind"]] = metric.GetCounter().GetValue()
			case "bosun_conversion_duration_seconds":
				m.durations += metric.GetHistogram().GetSampleCount()
			}
		}
	}
	return m
}

// minus is what m counts beyond before, without the values that did not change.
func (m conversionMetrics) minus(before conversionMetrics) conversionMetrics {
	subtract := func(now, then map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range now {
			if d := v - then[k]; d != 0 {
				out[k] = d
			}
		}
		return out
	}
	return conversionMetrics{
		requests:  subtract(m.requests, before.requests),
		dropped:   subtract(m.dropped, before.dropped),
		durations: m.durations - before.durations,
	}
}
