package v1alpha1

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/bosun-dev/api/internal/wiretest"
)

// These tests pin the wire form of the types: every field of an OpenKruise v1alpha1 object
// must decode into a known field (no unknown-field loss) and encode back unchanged, and
// zero values must emit exactly the keys OpenKruise's types emit (the fields without
// omitempty). A change of a json name, of omitempty or of pointer-ness breaks one of them.

// roundTrip decodes doc strictly into obj and checks that encoding obj gives doc back.
func roundTrip(t *testing.T, doc string, obj any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		t.Fatalf("decoding an OpenKruise document strictly: %v", err)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	var want, got any
	if err := json.Unmarshal([]byte(doc), &want); err != nil {
		t.Fatalf("test document is not JSON: %v", err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("re-decoding: %v", err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("round trip changed the document\nwant: %s\ngot:  %s", doc, out)
	}
}

// emittedKeys returns the sorted top-level keys of v's JSON encoding.
func emittedKeys(t *testing.T, v any) []string {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestOpenKruiseDocumentsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		obj  any
	}{{
		name: "DaemonSet",
		obj:  &DaemonSet{},
		doc: `{
		  "apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
		  "metadata": {"name": "agent", "namespace": "kube-system",
		    "annotations": {"daemonset.kruise.io/progressive-create-pod": "true"}},
		  "spec": {
		    "selector": {"matchLabels": {"app": "agent"}},
		    "template": {"metadata": {"labels": {"app": "agent"}},
		      "spec": {"containers": [{"name": "agent", "image": "agent:v1", "resources": {}}]}},
		    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
		      "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": "10%", "maxSurge": 0,
		      "selector": {"matchLabels": {"canary": "true"}}, "partition": "50%", "paused": false}},
		    "minReadySeconds": 5,
		    "burstReplicas": 250,
		    "revisionHistoryLimit": 10,
		    "lifecycle": {
		      "preDelete": {"labelsHandler": {"hold": "true"}, "finalizersHandler": ["example.com/hold"], "markPodNotReady": true},
		      "inPlaceUpdate": {"labelsHandler": {"a": "b"}},
		      "preNormal": {"finalizersHandler": ["example.com/ready"]}}
		  },
		  "status": {
		    "currentNumberScheduled": 3, "numberMisscheduled": 1, "desiredNumberScheduled": 3,
		    "numberReady": 2, "observedGeneration": 4, "updatedNumberScheduled": 1,
		    "numberAvailable": 2, "numberUnavailable": 1, "collisionCount": 1,
		    "conditions": [{"type": "Progressing", "status": "True", "lastTransitionTime": "2025-01-02T03:04:05Z",
		      "reason": "Rolling", "message": "m"}],
		    "daemonSetHash": "5f7d8b9c6"
		  }
		}`,
	}, {
		name: "DaemonSet with an OpenKruise <= 1.8 integer partition",
		obj:  &DaemonSet{},
		doc: `{"metadata": {"name": "agent"}, "spec": {"selector": null,
		  "template": {"metadata": {}, "spec": {"containers": null}},
		  "updateStrategy": {"rollingUpdate": {"partition": 2}}},
		  "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
		    "numberReady": 0, "updatedNumberScheduled": 0, "daemonSetHash": ""}}`,
	}, {
		name: "ContainerRecreateRequest",
		obj:  &ContainerRecreateRequest{},
		doc: `{
		  "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
		  "metadata": {"name": "r", "namespace": "default", "labels": {
		    "crr.apps.kruise.io/pod-uid": "u", "crr.apps.kruise.io/node-name": "n", "crr.apps.kruise.io/active": "true"}},
		  "spec": {
		    "podName": "web-0",
		    "containers": [{"name": "app",
		      "preStop": {"exec": {"command": ["sleep", "1"]}, "httpGet": {"path": "/q", "port": "http"}, "tcpSocket": {"port": 80}},
		      "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
		      "statusContext": {"containerID": "containerd://abc", "restartCount": 2}}],
		    "strategy": {"failurePolicy": "Ignore", "orderedRecreate": true, "forceRecreate": true,
		      "terminationGracePeriodSeconds": 30, "unreadyGracePeriodSeconds": 3, "minStartedSeconds": 10},
		    "activeDeadlineSeconds": 300,
		    "ttlSecondsAfterFinished": 60
		  },
		  "status": {"phase": "Completed", "completionTime": "2025-01-02T03:04:05Z", "message": "pod has gone",
		    "containerRecreateStates": [{"name": "app", "phase": "Failed", "message": "kill container error", "isKilled": true}]}
		}`,
	}, {
		name: "NodeImage",
		obj:  &NodeImage{},
		doc: `{
		  "apiVersion": "apps.kruise.io/v1alpha1", "kind": "NodeImage",
		  "metadata": {"name": "node-1", "labels": {"apps.kruise.io/fake-nodeimage": "true"}},
		  "spec": {"images": {"nginx": {
		    "pullSecrets": [{"namespace": "kruise-daemon-config", "name": "reg-abcdef", "mode": "batch"},
		      {"namespace": "default", "name": "reg"}],
		    "tags": [{"tag": "1.25", "createdAt": "2025-01-02T03:04:05Z",
		      "pullPolicy": {"timeoutSeconds": 600, "backoffLimit": 3, "ttlSecondsAfterFinished": 300, "activeDeadlineSeconds": 1800},
		      "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ImagePullJob", "name": "j", "namespace": "default", "uid": "u"}],
		      "version": 1, "imagePullPolicy": "IfNotPresent"}],
		    "sandboxConfig": {"labels": {"a": "b"}, "annotations": {"c": "d"}}}}},
		  "status": {"desired": 1, "succeeded": 1, "failed": 0, "pulling": 0, "waiting": 0,
		    "imageStatuses": {"nginx": {"tags": [{"tag": "1.25", "phase": "Succeeded", "progress": 100,
		      "startTime": "2025-01-02T03:04:05Z", "completionTime": "2025-01-02T03:04:06Z", "version": 1,
		      "imageID": "nginx@sha256:abc", "message": "ok"}]}},
		    "firstSyncStatus": {"syncAt": "2025-01-02T03:04:06Z", "status": "Succeeded", "message": "done"}}
		}`,
	}, {
		name: "ImagePullJob",
		obj:  &ImagePullJob{},
		doc: `{
		  "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ImagePullJob",
		  "metadata": {"name": "j", "namespace": "default", "finalizers": ["apps.kruise.io/deletion-protection"]},
		  "spec": {
		    "image": "nginx:1.25",
		    "pullSecrets": ["reg"],
		    "selector": {"names": ["node-1"], "matchLabels": {"a": "b"},
		      "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]},
		    "podSelector": {"matchLabels": {"app": "web"}},
		    "parallelism": "2",
		    "pullPolicy": {"timeoutSeconds": 60, "backoffLimit": 1},
		    "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 1200, "ttlSecondsAfterFinished": 5},
		    "sandboxConfig": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
		    "imagePullPolicy": "Always"
		  },
		  "status": {"startTime": "2025-01-02T03:04:05Z", "completionTime": "2025-01-02T03:05:05Z",
		    "desired": 3, "active": 0, "succeeded": 2, "failed": 1, "message": "job has completed",
		    "failedNodes": ["node-3"]}
		}`,
	}, {
		name: "ImageListPullJob",
		obj:  &ImageListPullJob{},
		doc: `{
		  "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ImageListPullJob",
		  "metadata": {"name": "warm", "namespace": "default", "labels": {"controller-revision-hash": "7c9d5f"}},
		  "spec": {
		    "images": ["nginx:1.25", "busybox:1.36"],
		    "pullSecrets": ["reg"],
		    "selector": {"matchLabels": {"pool": "a"}},
		    "parallelism": "50%",
		    "pullPolicy": {"timeoutSeconds": 600, "backoffLimit": 3},
		    "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 1200, "ttlSecondsAfterFinished": 300},
		    "sandboxConfig": {"annotations": {"c": "d"}},
		    "imagePullPolicy": "Always"
		  },
		  "status": {"startTime": "2025-01-02T03:04:05Z", "desired": 2, "active": 1, "completed": 1, "succeeded": 0,
		    "failedImageStatuses": [{"imagePullJob": "warm-x7k2p", "name": "nginx:1.25",
		      "message": "see kubectl get ImagePullJob warm-x7k2p"}]}
		}`,
	}, {
		name: "CloneSet",
		obj:  &CloneSet{},
		doc: `{
		  "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		  "metadata": {"name": "web", "namespace": "default",
		    "labels": {"apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"},
		    "annotations": {"apps.kruise.io/image-predownload-parallelism": "2"}},
		  "spec": {
		    "replicas": 5,
		    "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
		    "template": {"metadata": {"labels": {"app": "web"}},
		      "spec": {"containers": [{"name": "app", "image": "web:1", "resources": {}}]}},
		    "volumeClaimTemplates": [{"metadata": {"name": "data"},
		      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}, "status": {}}],
		    "scaleStrategy": {"podsToDelete": ["web-x2k9p"], "maxUnavailable": "10%", "disablePVCReuse": true},
		    "updateStrategy": {"type": "InPlaceIfPossible", "partition": "20%", "maxUnavailable": 2, "maxSurge": 0,
		      "paused": true,
		      "priorityStrategy": {"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"tier": "a"}}}],
		        "orderPriority": [{"orderedKey": "rank"}]},
		      "scatterStrategy": [{"key": "zone", "value": "z1"}],
		      "inPlaceUpdateStrategy": {"gracePeriodSeconds": 10, "imagePreDownloadParallelism": 1,
		        "imagePreDownloadTimeoutSeconds": 600, "imagePreDownloadMinUpdatedReadyPods": 1}},
		    "revisionHistoryLimit": 10,
		    "minReadySeconds": 5,
		    "lifecycle": {
		      "preDelete": {"labelsHandler": {"hold": "true"}, "markPodNotReady": true},
		      "inPlaceUpdate": {"finalizersHandler": ["example.com/drain"]},
		      "preNormal": {"finalizersHandler": ["example.com/ready"]}},
		    "progressDeadlineSeconds": 600
		  },
		  "status": {
		    "observedGeneration": 3, "replicas": 5, "readyReplicas": 4, "availableReplicas": 4,
		    "updatedReplicas": 2, "updatedReadyReplicas": 2, "updatedAvailableReplicas": 2, "expectedUpdatedReplicas": 4,
		    "updateRevision": "web-7c9d5f", "currentRevision": "web-5b8c4d", "collisionCount": 1,
		    "conditions": [{"type": "Progressing", "status": "True", "lastUpdateTime": "2025-01-02T03:04:05Z",
		      "lastTransitionTime": "2025-01-02T03:04:05Z", "reason": "CloneSetUpdated", "message": "CloneSet is progressing"}],
		    "labelSelector": "app=web,tier in (a)"
		  }
		}`,
	}, {
		name: "CloneSet with a condition OpenKruise wrote without times",
		obj:  &CloneSet{},
		doc: `{"metadata": {"name": "web"}, "spec": {"selector": null,
		  "template": {"metadata": {}, "spec": {"containers": null}},
		  "scaleStrategy": {}, "updateStrategy": {"type": "OnDelete"}},
		  "status": {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "updatedReplicas": 0,
		    "updatedReadyReplicas": 0,
		    "conditions": [{"type": "FailedScale", "status": "True", "lastUpdateTime": null, "lastTransitionTime": null,
		      "message": "failed to create pod"}]}}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.doc, tc.obj) })
	}
}

// TestAlwaysEmittedKeys pins which fields are written even when zero. Clients (kubectl
// patches, OpenKruise's own controllers) see exactly these keys in objects bosun writes.
func TestAlwaysEmittedKeys(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want []string
	}{
		{"DaemonSetSpec", DaemonSetSpec{}, []string{"selector", "template", "updateStrategy"}},
		{"DaemonSetStatus", DaemonSetStatus{}, []string{
			"currentNumberScheduled", "daemonSetHash", "desiredNumberScheduled", "numberMisscheduled",
			"numberReady", "updatedNumberScheduled"}},
		{"RollingUpdateDaemonSet", RollingUpdateDaemonSet{}, []string{}},
		{"ContainerRecreateRequestSpec", ContainerRecreateRequestSpec{}, []string{"containers", "podName"}},
		{"ContainerRecreateRequestStrategy", ContainerRecreateRequestStrategy{}, []string{}},
		{"ContainerRecreateRequestContainerContext", ContainerRecreateRequestContainerContext{}, []string{"containerID", "restartCount"}},
		{"ContainerRecreateRequestStatus", ContainerRecreateRequestStatus{}, []string{"phase"}},
		{"ContainerRecreateRequestContainerRecreateState", ContainerRecreateRequestContainerRecreateState{}, []string{"name", "phase"}},
		{"ContainerRecreateRequestSyncContainerStatus", ContainerRecreateRequestSyncContainerStatus{}, []string{"name", "ready", "restartCount"}},
		{"NodeImageSpec", NodeImageSpec{}, []string{}},
		{"ImageSpec", ImageSpec{}, []string{"tags"}},
		{"ReferenceObject", ReferenceObject{}, []string{}},
		{"ImageTagSpec", ImageTagSpec{}, []string{"tag"}},
		{"NodeImageStatus", NodeImageStatus{}, []string{"desired", "failed", "pulling", "succeeded", "waiting"}},
		{"ImageTagStatus", ImageTagStatus{}, []string{"phase", "tag"}},
		{"ImagePullJobSpec", ImagePullJobSpec{}, []string{"completionPolicy", "image"}},
		{"ImagePullJobStatus", ImagePullJobStatus{}, []string{"active", "desired", "failed", "succeeded"}},
		{"ImagePullJobNodeSelector", ImagePullJobNodeSelector{}, []string{}},
		{"ImageListPullJobSpec", ImageListPullJobSpec{}, []string{"completionPolicy", "images"}},
		{"ImageListPullJobStatus", ImageListPullJobStatus{}, []string{"active", "completed", "desired", "succeeded"}},
		{"FailedImageStatus", FailedImageStatus{}, []string{}},
		{"LifecycleHook", LifecycleHook{}, []string{}},
		{"CloneSetSpec", CloneSetSpec{}, []string{"scaleStrategy", "selector", "template", "updateStrategy"}},
		{"CloneSetUpdateStrategy", CloneSetUpdateStrategy{}, []string{}},
		{"CloneSetStatus", CloneSetStatus{}, []string{
			"availableReplicas", "readyReplicas", "replicas", "updatedReadyReplicas", "updatedReplicas"}},
		{"CloneSetScaleStrategy", CloneSetScaleStrategy{}, []string{}},
		{"CloneSetCondition", CloneSetCondition{}, []string{"lastTransitionTime", "lastUpdateTime", "status", "type"}},
		{"InPlaceUpdateStrategy", InPlaceUpdateStrategy{}, []string{}},
		{"UpdatePriorityStrategy", UpdatePriorityStrategy{}, []string{}},
		{"UpdatePriorityOrderTerm", UpdatePriorityOrderTerm{}, []string{"orderedKey"}},
		{"UpdatePriorityWeightTerm", UpdatePriorityWeightTerm{}, []string{"matchSelector", "weight"}},
		{"UpdateScatterTerm", UpdateScatterTerm{}, []string{"key", "value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := emittedKeys(t, tc.v)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("zero %s emits keys %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

// TestCloneSetFieldsMatchOpenKruiseSchema compares every property the CloneSet's spec and
// status can hold, with its type, to the schema of OpenKruise's CRD for this version:
// neither side has a field the other lacks.
func TestCloneSetFieldsMatchOpenKruiseSchema(t *testing.T) {
	want, err := wiretest.ReadPaths("testdata/openkruise-cloneset-schema.txt")
	if err != nil {
		t.Fatal(err)
	}
	// Stored schemaless, as in OpenKruise's CRD.
	schemaless := map[string]bool{"spec.template": true, "spec.volumeClaimTemplates": true}
	got := append(wiretest.SchemaPaths(reflect.TypeOf(CloneSetSpec{}), "spec", schemaless),
		wiretest.SchemaPaths(reflect.TypeOf(CloneSetStatus{}), "status", nil)...)
	missing, extra := wiretest.Diff(want, got)
	for _, p := range missing {
		t.Errorf("OpenKruise's schema has %s, the Go types do not", p)
	}
	for _, p := range extra {
		t.Errorf("the Go types have %s, OpenKruise's schema does not", p)
	}
}
