package workload

import (
	"errors"
	"testing"

	kruiseappsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

var (
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
	replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	daemonSetKind  = kruiseappsv1beta1.SchemeGroupVersion.WithKind("DaemonSet")
	// daemonSetKindV1alpha1 is how owner references written before v1beta1 name it.
	daemonSetKindV1alpha1 = schema.GroupVersionKind{Group: kruiseappsv1beta1.GroupName, Version: "v1alpha1", Kind: "DaemonSet"}
)

func selector(labels map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: labels}
}

// getCluster holds one object of every kind Get reads.
func getCluster() cluster {
	deleted := metav1.Now()
	deletingRS := &appsv1.ReplicaSet{ObjectMeta: objectMeta("old", "uid-old", nil)}
	deletingRS.DeletionTimestamp = &deleted
	deletingWidget := liveObject(widgetKind, "leaving", "uid-leaving", nil)
	deletingWidget.DeletionTimestamp = &deleted
	return cluster{
		cached: []runtime.Object{
			&appsv1.ReplicaSet{
				ObjectMeta: objectMeta("web-1", "uid-web-1", controllerRef(deploymentKind, "web", "uid-web")),
				Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: selector(map[string]string{"app": "web", "hash": "1"})},
			},
			deletingRS,
			&appsv1.Deployment{
				ObjectMeta: objectMeta("web", "uid-web", nil),
				Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Selector: selector(map[string]string{"app": "web"})},
			},
			&appsv1.Deployment{
				ObjectMeta: objectMeta("defaulted", "uid-defaulted", nil),
				Spec:       appsv1.DeploymentSpec{Selector: selector(map[string]string{"app": "defaulted"})},
			},
			&appsv1.StatefulSet{
				ObjectMeta: objectMeta("db", "uid-db", nil),
				Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: selector(map[string]string{"app": "db"})},
			},
			&appsv1.StatefulSet{
				ObjectMeta: objectMeta("invalid", "uid-invalid", nil),
				Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}},
				}},
			},
			&corev1.ReplicationController{
				ObjectMeta: objectMeta("legacy", "uid-legacy", nil),
				Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](5), Selector: map[string]string{"app": "legacy"}},
			},
			&kruiseappsv1beta1.DaemonSet{
				ObjectMeta: objectMeta("agent", "uid-agent", nil),
				Spec:       kruiseappsv1beta1.DaemonSetSpec{Selector: selector(map[string]string{"app": "agent"})},
				Status:     kruiseappsv1beta1.DaemonSetStatus{DesiredNumberScheduled: 7},
			},
		},
		live: []*metav1.PartialObjectMetadata{
			liveObject(rolloutKind, "canary", "uid-canary", controllerRef(widgetKind, "platform", "uid-platform")),
			liveObject(rolloutKind, "unlabelled", "uid-unlabelled", nil),
			liveObject(rolloutKind, "bad-selector", "uid-bad-selector", nil),
			liveObject(widgetKind, "plain", "uid-plain", nil),
			liveObject(widgetKind, "not-allowed", "uid-not-allowed", nil),
			deletingWidget,
			liveObject(nodeKind, "node-1", "uid-node-1", nil),
		},
		scales: map[string]scaleAnswer{
			"rollouts/canary":       scaleOf(6, "app=canary,track in (stable,canary)"),
			"rollouts/unlabelled":   scaleOf(2, ""),
			"rollouts/bad-selector": scaleOf(2, "app in ("),
			"widgets/not-allowed":   {err: apierrors.NewMethodNotSupported(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "get")},
			"widgets/leaving":       scaleOf(1, "app=leaving"),
		},
	}
}

func ref(gvk schema.GroupVersionKind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: uid}
}

func TestGet(t *testing.T) {
	tests := []struct {
		name      string
		namespace string // ns when empty
		ref       metav1.OwnerReference
		opts      []Option
		want      *view
	}{
		{
			name: "ReplicaSet, with its controller",
			ref:  ref(replicaSetKind, "web-1", "uid-web-1"),
			want: &view{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: "web-1", UID: "uid-web-1",
				Replicas: 3, HasReplicas: true, Selector: "app=web,hash=1", Controller: controllerRef(deploymentKind, "web", "uid-web")},
		},
		{
			name: "ReplicaSet being deleted",
			ref:  ref(replicaSetKind, "old", ""),
			want: &view{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: "old", UID: "uid-old",
				Replicas: 1, HasReplicas: true, Selector: "<nil>", Deleting: true},
		},
		{
			name: "Deployment",
			ref:  ref(deploymentKind, "web", "uid-web"),
			want: &view{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", UID: "uid-web",
				Replicas: 4, HasReplicas: true, Selector: "app=web"},
		},
		{
			name: "Deployment named with an older version of its group",
			ref:  metav1.OwnerReference{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "web"},
			want: &view{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", UID: "uid-web",
				Replicas: 4, HasReplicas: true, Selector: "app=web"},
		},
		{
			name: "Deployment without spec.replicas has the default of 1",
			ref:  ref(deploymentKind, "defaulted", ""),
			want: &view{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "defaulted", UID: "uid-defaulted",
				Replicas: 1, HasReplicas: true, Selector: "app=defaulted"},
		},
		{
			name: "StatefulSet",
			ref:  metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "uid-db"},
			want: &view{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: "db", UID: "uid-db",
				Replicas: 2, HasReplicas: true, Selector: "app=db"},
		},
		{
			name: "StatefulSet whose selector is invalid has none",
			ref:  metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "invalid"},
			want: &view{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: "invalid", UID: "uid-invalid",
				Replicas: 2, HasReplicas: true, Selector: "<nil>"},
		},
		{
			name: "ReplicationController",
			ref:  metav1.OwnerReference{APIVersion: "v1", Kind: "ReplicationController", Name: "legacy", UID: "uid-legacy"},
			want: &view{APIVersion: "v1", Kind: "ReplicationController", Namespace: ns, Name: "legacy", UID: "uid-legacy",
				Replicas: 5, HasReplicas: true, Selector: "app=legacy"},
		},
		{
			name: "Advanced DaemonSet has no replica count by default",
			ref:  ref(daemonSetKind, "agent", "uid-agent"),
			want: &view{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Namespace: ns, Name: "agent", UID: "uid-agent",
				Selector: "app=agent"},
		},
		{
			name: "Advanced DaemonSet counts its desired scheduled pods with WithDaemonSetReplicas",
			ref:  ref(daemonSetKind, "agent", "uid-agent"),
			opts: []Option{WithDaemonSetReplicas(true)},
			want: &view{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Namespace: ns, Name: "agent", UID: "uid-agent",
				Replicas: 7, HasReplicas: true, Selector: "app=agent"},
		},
		{
			name: "Advanced DaemonSet with WithDaemonSetReplicas(false)",
			ref:  ref(daemonSetKind, "agent", "uid-agent"),
			opts: []Option{WithDaemonSetReplicas(false)},
			want: &view{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Namespace: ns, Name: "agent", UID: "uid-agent",
				Selector: "app=agent"},
		},
		{
			// Owner references written before v1beta1 (by bosun or OpenKruise) still name
			// the DaemonSet: kinds are matched by group, and the object is read in the
			// version bosun caches.
			name: "Advanced DaemonSet named by a v1alpha1 owner reference",
			ref:  ref(daemonSetKindV1alpha1, "agent", "uid-agent"),
			want: &view{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Namespace: ns, Name: "agent", UID: "uid-agent",
				Selector: "app=agent"},
		},
		{
			name: "v1alpha1 owner reference to a re-created Advanced DaemonSet",
			ref:  ref(daemonSetKindV1alpha1, "agent", "uid-earlier"),
		},
		{
			name: "apps DaemonSet is not the Advanced DaemonSet, and is not served here",
			ref:  metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"},
		},
		{
			name: "other kind, replicas and selector from its scale",
			ref:  ref(rolloutKind, "canary", "uid-canary"),
			want: &view{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Namespace: ns, Name: "canary", UID: "uid-canary",
				Replicas: 6, HasReplicas: true, Selector: "app=canary,track in (canary,stable)",
				Controller: controllerRef(widgetKind, "platform", "uid-platform")},
		},
		{
			name: "other kind whose scale publishes no selector",
			ref:  ref(rolloutKind, "unlabelled", ""),
			want: &view{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Namespace: ns, Name: "unlabelled", UID: "uid-unlabelled",
				Replicas: 2, HasReplicas: true, Selector: "<nil>"},
		},
		{
			name: "other kind whose scale selector does not parse",
			ref:  ref(rolloutKind, "bad-selector", ""),
			want: &view{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Namespace: ns, Name: "bad-selector", UID: "uid-bad-selector",
				Replicas: 2, HasReplicas: true, Selector: "<nil>"},
		},
		{
			name: "other kind without a scale subresource (NotFound)",
			ref:  ref(widgetKind, "plain", "uid-plain"),
			want: &view{APIVersion: "example.com/v1", Kind: "Widget", Namespace: ns, Name: "plain", UID: "uid-plain", Selector: "<nil>"},
		},
		{
			name: "other kind whose scale answers MethodNotSupported",
			ref:  ref(widgetKind, "not-allowed", ""),
			want: &view{APIVersion: "example.com/v1", Kind: "Widget", Namespace: ns, Name: "not-allowed", UID: "uid-not-allowed", Selector: "<nil>"},
		},
		{
			name: "other kind being deleted",
			ref:  ref(widgetKind, "leaving", ""),
			want: &view{APIVersion: "example.com/v1", Kind: "Widget", Namespace: ns, Name: "leaving", UID: "uid-leaving",
				Replicas: 1, HasReplicas: true, Selector: "app=leaving", Deleting: true},
		},
		{
			name: "other kind named with a version that is not served",
			ref:  metav1.OwnerReference{APIVersion: "example.com/v1beta1", Kind: "Widget", Name: "plain"},
			want: &view{APIVersion: "example.com/v1", Kind: "Widget", Namespace: ns, Name: "plain", UID: "uid-plain", Selector: "<nil>"},
		},
		{
			name: "cluster-scoped kind is read outside the namespace",
			ref:  metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "uid-node-1"},
			want: &view{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "uid-node-1", Selector: "<nil>"},
		},
		{name: "missing cached object", ref: ref(replicaSetKind, "nope", "")},
		{name: "missing live object", ref: ref(rolloutKind, "nope", "")},
		{name: "kind not served", ref: metav1.OwnerReference{APIVersion: "unknown.io/v1", Kind: "Thing", Name: "x"}},
		{name: "cached object re-created under the same name", ref: ref(deploymentKind, "web", "uid-earlier-web")},
		{name: "live object re-created under the same name", ref: ref(rolloutKind, "canary", "uid-earlier-canary")},
		{name: "object in another namespace", namespace: "other", ref: ref(replicaSetKind, "web-1", "uid-web-1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, getCluster(), tc.opts...)
			namespace := tc.namespace
			if namespace == "" {
				namespace = ns
			}
			got, err := f.finder.Get(f.ctx, namespace, tc.ref)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if diff := cmp.Diff(tc.want, viewOf(got)); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
		})
	}
}

// The kinds bosun caches anyway cost the API server nothing.
func TestGetCachedKindsMakeNoAPICalls(t *testing.T) {
	f := newFixture(t, getCluster(), WithDaemonSetReplicas(true))
	for _, r := range []metav1.OwnerReference{
		ref(replicaSetKind, "web-1", ""),
		ref(deploymentKind, "web", ""),
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
		{APIVersion: "v1", Kind: "ReplicationController", Name: "legacy"},
		ref(daemonSetKind, "agent", ""),
		ref(deploymentKind, "missing", ""),
	} {
		if _, err := f.finder.Get(f.ctx, ns, r); err != nil {
			t.Fatalf("Get %s %s: %v", r.Kind, r.Name, err)
		}
	}
	if actions := append(f.metadata.Actions(), f.scales.Actions()...); len(actions) != 0 {
		t.Errorf("API calls for cached kinds: %v", actions)
	}
}

// Without a DaemonSet lister (apps.kruise.io not cached) an Advanced DaemonSet is read like
// any other kind: it has no scale, so no replica count, whatever WithDaemonSetReplicas says.
func TestGetDaemonSetWithoutLister(t *testing.T) {
	c := cluster{
		live:              []*metav1.PartialObjectMetadata{liveObject(daemonSetKind, "agent", "uid-agent", nil)},
		noDaemonSetLister: true,
	}
	f := newFixture(t, c, WithDaemonSetReplicas(true))
	got, err := f.finder.Get(f.ctx, ns, ref(daemonSetKind, "agent", "uid-agent"))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := &view{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Namespace: ns, Name: "agent", UID: "uid-agent", Selector: "<nil>"}
	if diff := cmp.Diff(want, viewOf(got)); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	if len(f.metadata.Actions()) != 1 {
		t.Errorf("metadata calls = %v, want one GET", f.metadata.Actions())
	}
}

func TestGetErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		ref    metav1.OwnerReference
		breaks func(f *fixture)
		want   error // wrapped in the answer; nil: any error
	}{
		{
			name: "apiVersion does not parse",
			ref:  metav1.OwnerReference{APIVersion: "a/b/c", Kind: "Widget", Name: "plain"},
		},
		{
			name: "metadata GET fails",
			ref:  ref(widgetKind, "plain", ""),
			breaks: func(f *fixture) {
				f.metadata.PrependReactor("get", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, boom
				})
			},
			want: boom,
		},
		{
			name: "scale GET fails",
			ref:  ref(widgetKind, "plain", ""),
			breaks: func(f *fixture) {
				f.scales.PrependReactor("get", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, boom
				})
			},
			want: boom,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, getCluster())
			if tc.breaks != nil {
				tc.breaks(f)
			}
			got, err := f.finder.Get(f.ctx, ns, tc.ref)
			if err == nil || got != nil {
				t.Fatalf("Get = %v, %v; want an error", got, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Get error %q does not wrap %q", err, tc.want)
			}
		})
	}
}
