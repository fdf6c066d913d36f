package kubectlbosun

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"cloneset/web"}, want: "cloneset.apps.kruise.io/web"},
		{args: []string{"clone", "web"}, want: "cloneset.apps.kruise.io/web"},
		{args: []string{"CloneSets.apps.kruise.io/web"}, want: "cloneset.apps.kruise.io/web"},
		{args: []string{"ads/agent"}, want: "daemonset.apps.kruise.io/agent"},
		{args: []string{"daemonset/agent"}, want: "daemonset.apps.kruise.io/agent"},
		{args: []string{"deployment/web"}, wantErr: `unknown resource type "deployment"`},
		{args: []string{"cloneset/"}, wantErr: "no name"},
		{args: []string{"web"}, wantErr: "want one resource"},
		{args: []string{"cloneset/a", "cloneset/b"}, wantErr: `unknown resource type "cloneset/a"`},
	} {
		got, err := parseTarget(tt.args, "ns")
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseTarget(%q) error = %v, want %q", tt.args, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("parseTarget(%q) error = %v", tt.args, err)
		case got.String() != tt.want || got.namespace != "ns":
			t.Errorf("parseTarget(%q) = %s in %s, want %s in ns", tt.args, got, got.namespace, tt.want)
		}
	}
}

func TestCloneSetProgress(t *testing.T) {
	cs := func(generation int64, status appsv1beta1.CloneSetStatus, paused bool) cloneSet {
		return cloneSet{&appsv1beta1.CloneSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: generation},
			Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](3), UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{Paused: paused}}},
			Status: status,
		}}
	}
	for name, tt := range map[string]struct {
		cs   cloneSet
		want string
		done bool
	}{
		"spec not observed": {cs(2, appsv1beta1.CloneSetStatus{ObservedGeneration: 1}, false), "Waiting for CloneSet spec update to be observed...", false},
		"updating": {cs(2, appsv1beta1.CloneSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 1, ExpectedUpdatedReplicas: 3}, false),
			`Waiting for CloneSet "web" rollout to finish: 1 out of 3 new replicas have been updated...`, false},
		"paused": {cs(2, appsv1beta1.CloneSetStatus{ObservedGeneration: 2, Replicas: 3, ExpectedUpdatedReplicas: 3}, true),
			"0 out of 3 new replicas have been updated... (the update is paused", false},
		"surge left": {cs(2, appsv1beta1.CloneSetStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 3, ExpectedUpdatedReplicas: 3}, false),
			"1 old replicas are pending termination...", false},
		"not ready": {cs(2, appsv1beta1.CloneSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, UpdatedReadyReplicas: 2, ExpectedUpdatedReplicas: 3}, false),
			"2 of 3 updated replicas are ready...", false},
		"done": {cs(2, appsv1beta1.CloneSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, UpdatedReadyReplicas: 3, ExpectedUpdatedReplicas: 3}, false),
			`cloneset "web" successfully rolled out`, true},
		"partitioned": {cs(2, appsv1beta1.CloneSetStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 1, UpdatedReadyReplicas: 1, ExpectedUpdatedReplicas: 1}, false),
			"partitioned roll out complete: 1 new replicas have been updated...", true},
	} {
		got, done := tt.cs.progress()
		if !strings.Contains(got, tt.want) || done != tt.done {
			t.Errorf("%s: progress() = %q, %v; want %q, %v", name, got, done, tt.want, tt.done)
		}
	}
}

func TestAdvancedDaemonSetProgress(t *testing.T) {
	ds := func(partition *intstr.IntOrString, status appsv1beta1.DaemonSetStatus) advancedDaemonSet {
		return advancedDaemonSet{&appsv1beta1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Generation: 1},
			Spec: appsv1beta1.DaemonSetSpec{UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Partition: partition}}},
			Status: status,
		}}
	}
	for name, tt := range map[string]struct {
		ds   advancedDaemonSet
		want string
		done bool
	}{
		"updating": {ds(nil, appsv1beta1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 4, UpdatedNumberScheduled: 1, NumberAvailable: 4}),
			`Waiting for daemon set "agent" rollout to finish: 1 out of 4 new pods have been updated...`, false},
		"unavailable": {ds(nil, appsv1beta1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberAvailable: 3}),
			"3 of 4 updated pods are available...", false},
		// The controller rounds a percentage partition down: 50 % of 3 keeps 1 pod old and
		// updates 2, so one updated pod is not the end.
		"partition of half, one updated": {ds(ptr.To(intstr.FromString("50%")), appsv1beta1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberAvailable: 3}),
			`Waiting for daemon set "agent" rollout to finish: 1 out of 2 new pods have been updated...`, false},
		"partition of half, two updated": {ds(ptr.To(intstr.FromString("50%")), appsv1beta1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 2, NumberAvailable: 3}),
			"partitioned roll out complete: 2 new pods have been updated...", true},
		"done": {ds(nil, appsv1beta1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberAvailable: 4}),
			`daemon set "agent" successfully rolled out`, true},
	} {
		got, done := tt.ds.progress()
		if !strings.Contains(got, tt.want) || done != tt.done {
			t.Errorf("%s: progress() = %q, %v; want %q, %v", name, got, done, tt.want, tt.done)
		}
	}
}
