package deploymentutil

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func withCPU(t corev1.PodTemplateSpec, q string) corev1.PodTemplateSpec {
	t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	return t
}

func withLabels(t corev1.PodTemplateSpec, labels map[string]string) corev1.PodTemplateSpec {
	t.Labels = labels
	return t
}

func TestEqualIgnoreHash(t *testing.T) {
	hashed := map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"}
	tests := []struct {
		name string
		a, b corev1.PodTemplateSpec
		want bool
	}{
		{name: "identical", a: template("v1"), b: template("v1"), want: true},
		{name: "hash label on one side", a: withLabels(template("v1"), hashed), b: template("v1"), want: true},
		{name: "different hashes", a: withLabels(template("v1"), hashed), b: withLabels(template("v1"), map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "xyz"}), want: true},
		{name: "only the hash label vs no labels", a: withLabels(template("v1"), map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "abc"}), b: withLabels(template("v1"), nil), want: true},
		{name: "nil and empty label maps", a: withLabels(template("v1"), nil), b: withLabels(template("v1"), map[string]string{}), want: true},
		{name: "quantities by value", a: withCPU(template("v1"), "1000m"), b: withCPU(template("v1"), "1"), want: true},
		{name: "different quantities", a: withCPU(template("v1"), "500m"), b: withCPU(template("v1"), "1"), want: false},
		{name: "different image", a: template("v1"), b: template("v2"), want: false},
		{name: "different other label", a: withLabels(template("v1"), map[string]string{"app": "api"}), b: template("v1"), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			aBefore, bBefore := tc.a.DeepCopy(), tc.b.DeepCopy()
			if got := EqualIgnoreHash(&tc.a, &tc.b); got != tc.want {
				t.Errorf("EqualIgnoreHash(a, b) = %v, want %v", got, tc.want)
			}
			if got := EqualIgnoreHash(&tc.b, &tc.a); got != tc.want {
				t.Errorf("EqualIgnoreHash(b, a) = %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(aBefore, &tc.a); diff != "" {
				t.Errorf("a was modified:\n%s", diff)
			}
			if diff := cmp.Diff(bBefore, &tc.b); diff != "" {
				t.Errorf("b was modified:\n%s", diff)
			}
		})
	}
}

func TestFindNewReplicaSet(t *testing.T) {
	d := rolling(3, pct25, pct25) // template v2
	v2Hashed := withLabels(template("v2"), map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "h2"})
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		rsList []*appsv1.ReplicaSet
		want   string
	}{
		{
			name:   "match by template ignoring the hash label",
			d:      d,
			rsList: []*appsv1.ReplicaSet{replicaSet("web-h1", 0, 3), replicaSet("web-h2", 10, 3, withTemplate(v2Hashed))},
			want:   "web-h2",
		},
		{
			name:   "never by name",
			d:      d,
			rsList: []*appsv1.ReplicaSet{replicaSet("web-h2", 0, 3), replicaSet("renamed", 10, 3, withTemplate(v2Hashed))},
			want:   "renamed",
		},
		{
			name: "quantities compared by value",
			d: func() *appsv1.Deployment {
				d := rolling(3, pct25, pct25)
				d.Spec.Template = withCPU(template("v2"), "1")
				return d
			}(),
			rsList: []*appsv1.ReplicaSet{replicaSet("web-h2", 0, 3, withTemplate(withCPU(template("v2"), "1000m")))},
			want:   "web-h2",
		},
		{
			name: "several matches: the oldest",
			d:    d,
			rsList: []*appsv1.ReplicaSet{
				replicaSet("younger", 20, 3, withTemplate(template("v2"))),
				replicaSet("older", 10, 3, withTemplate(v2Hashed)),
			},
			want: "older",
		},
		{
			name: "several matches created together: lowest name",
			d:    d,
			rsList: []*appsv1.ReplicaSet{
				replicaSet("web-b", 10, 3, withTemplate(template("v2"))),
				replicaSet("web-a", 10, 3, withTemplate(v2Hashed)),
			},
			want: "web-a",
		},
		{
			name:   "no match",
			d:      d,
			rsList: []*appsv1.ReplicaSet{replicaSet("web-h1", 0, 3), nil},
			want:   "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			order := names(nonNil(tc.rsList))
			got := FindNewReplicaSet(tc.d, tc.rsList)
			gotName := ""
			if got != nil {
				gotName = got.Name
			}
			if gotName != tc.want {
				t.Errorf("new ReplicaSet = %q, want %q", gotName, tc.want)
			}
			if diff := cmp.Diff(order, names(nonNil(tc.rsList))); diff != "" {
				t.Errorf("input reordered:\n%s", diff)
			}
		})
	}
}

func TestFindOldReplicaSets(t *testing.T) {
	a, b, c := replicaSet("a", 0, 1), replicaSet("b", 1, 0), replicaSet("c", 2, 1)
	// The controller swaps objects for the API's answers: same UID, different pointer.
	cUpdated := c.DeepCopy()
	tests := []struct {
		name  string
		newRS *appsv1.ReplicaSet
		want  []string
	}{
		{name: "without new ReplicaSet every one is old", newRS: nil, want: []string{"a", "b", "c"}},
		{name: "new ReplicaSet excluded", newRS: b, want: []string{"a", "c"}},
		{name: "new ReplicaSet matched by UID", newRS: cUpdated, want: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FindOldReplicaSets([]*appsv1.ReplicaSet{a, b, nil, c}, tc.newRS)
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("old ReplicaSets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterActive(t *testing.T) {
	nilReplicas := replicaSet("nil", 0, 0)
	nilReplicas.Spec.Replicas = nil
	got := FilterActive([]*appsv1.ReplicaSet{replicaSet("a", 0, 2), replicaSet("b", 0, 0), nil, nilReplicas, replicaSet("c", 0, 1)})
	if diff := cmp.Diff([]string{"a", "c"}, names(got)); diff != "" {
		t.Errorf("active (-want +got):\n%s", diff)
	}
}

func TestReplicaSetName(t *testing.T) {
	const hash = "5d4f8b7c9x"
	long := strings.Repeat("a", 253)
	dotAtCut := strings.Repeat("a", 241) + "." + strings.Repeat("b", 11)
	tests := []struct {
		name, deployment, want string
	}{
		{name: "short name", deployment: "web", want: "web-" + hash},
		{name: "exactly fits", deployment: strings.Repeat("a", 242), want: strings.Repeat("a", 242) + "-" + hash},
		{name: "too long is truncated", deployment: long, want: strings.Repeat("a", 242) + "-" + hash},
		{name: "a dot left at the cut is dropped", deployment: dotAtCut, want: strings.Repeat("a", 241) + "-" + hash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReplicaSetName(tc.deployment, hash)
			if got != tc.want {
				t.Errorf("ReplicaSetName = %q, want %q", got, tc.want)
			}
			if len(got) > 253 {
				t.Errorf("name has %d characters", len(got))
			}
		})
	}
}

func TestReplicaCounts(t *testing.T) {
	nilReplicas := replicaSet("nil", 0, 0, status(1, 1, 1))
	nilReplicas.Spec.Replicas = nil
	rsList := []*appsv1.ReplicaSet{
		replicaSet("a", 0, 3, status(4, 3, 2)),
		nil,
		nilReplicas,
		replicaSet("b", 0, 5, status(2, 1, 0)),
	}
	if got := ReplicaCount(rsList); got != 8 {
		t.Errorf("ReplicaCount = %d, want 8", got)
	}
	if got := ActualReplicaCount(rsList); got != 7 {
		t.Errorf("ActualReplicaCount = %d, want 7", got)
	}
	if got := ReadyReplicaCount(rsList); got != 5 {
		t.Errorf("ReadyReplicaCount = %d, want 5", got)
	}
	if got := AvailableReplicaCount(rsList); got != 3 {
		t.Errorf("AvailableReplicaCount = %d, want 3", got)
	}
}

func TestSortByCreation(t *testing.T) {
	rsList := []*appsv1.ReplicaSet{replicaSet("c", 5, 1), replicaSet("b", 0, 1), replicaSet("z", 2, 1), replicaSet("a", 5, 1)}
	SortByCreation(rsList)
	if diff := cmp.Diff([]string{"b", "z", "a", "c"}, names(rsList)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestSortByRevision(t *testing.T) {
	rsList := []*appsv1.ReplicaSet{
		replicaSet("r10", 0, 0, revision("10")),
		replicaSet("r2", 9, 0, revision("2")),
		replicaSet("r9", 1, 0, revision("9")),
		replicaSet("dup-b", 3, 0, revision("5")),
		replicaSet("dup-a", 3, 0, revision("5")),
	}
	SortByRevision(rsList)
	if diff := cmp.Diff([]string{"r2", "dup-a", "dup-b", "r9", "r10"}, names(rsList)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	// Unparsable revisions fall back to creation order.
	rsList = []*appsv1.ReplicaSet{replicaSet("young", 9, 0, revision("x")), replicaSet("old", 1, 0, revision("y"))}
	SortByRevision(rsList)
	if diff := cmp.Diff([]string{"old", "young"}, names(rsList)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
