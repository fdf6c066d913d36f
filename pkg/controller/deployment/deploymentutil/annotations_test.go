package deploymentutil

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestRevisions(t *testing.T) {
	tests := []struct {
		name           string
		rsList         []*appsv1.ReplicaSet
		wantMax, wantL int64
	}{
		{name: "none", rsList: nil, wantMax: 0, wantL: 0},
		{name: "one", rsList: []*appsv1.ReplicaSet{replicaSet("a", 0, 1, revision("4"))}, wantMax: 4, wantL: 0},
		{
			name: "unordered with missing and unparsable",
			rsList: []*appsv1.ReplicaSet{
				replicaSet("a", 0, 1, revision("3")),
				replicaSet("b", 0, 1, revision("junk")),
				replicaSet("c", 0, 1, revision("7")),
				replicaSet("d", 0, 1),
				nil,
				replicaSet("e", 0, 1, revision("5")),
			},
			wantMax: 7, wantL: 5,
		},
		{
			name:    "shared highest revision",
			rsList:  []*appsv1.ReplicaSet{replicaSet("a", 0, 1, revision("6")), replicaSet("b", 0, 1, revision("6")), replicaSet("c", 0, 1, revision("2"))},
			wantMax: 6, wantL: 6,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MaxRevision(tc.rsList); got != tc.wantMax {
				t.Errorf("MaxRevision = %d, want %d", got, tc.wantMax)
			}
			if got := LastRevision(tc.rsList); got != tc.wantL {
				t.Errorf("LastRevision = %d, want %d", got, tc.wantL)
			}
		})
	}

	if v, err := Revision(replicaSet("a", 0, 1)); v != 0 || err != nil {
		t.Errorf("missing revision: got %d, %v; want 0, nil", v, err)
	}
	if _, err := Revision(replicaSet("a", 0, 1, revision("1.5"))); err == nil {
		t.Error("unparsable revision: want an error")
	}
	if v, err := Revision(&appsv1.Deployment{}); v != 0 || err != nil {
		t.Errorf("Deployment without annotations: got %d, %v", v, err)
	}
}

func TestSetNewReplicaSetRevision(t *testing.T) {
	// 400 four-digit entries: 1999 characters.
	entries := make([]string, 400)
	for i := range entries {
		entries[i] = strconv.Itoa(1000 + i)
	}
	fullHistory := strings.Join(entries, ",")
	// 1994 characters, so that ",99999" lands exactly on the limit.
	historyAtLimit := strings.Repeat("7", 1994)

	tests := []struct {
		name        string
		annotations map[string]string
		newRevision string
		wantChanged bool
		want        map[string]string
	}{
		{
			name: "fresh ReplicaSet", newRevision: "1", wantChanged: true,
			want: map[string]string{RevisionAnnotation: "1"},
		},
		{
			name:        "reused ReplicaSet records its old revision",
			annotations: map[string]string{RevisionAnnotation: "1"}, newRevision: "3", wantChanged: true,
			want: map[string]string{RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"},
		},
		{
			name:        "history is appended to",
			annotations: map[string]string{RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"}, newRevision: "5", wantChanged: true,
			want: map[string]string{RevisionAnnotation: "5", RevisionHistoryAnnotation: "1,3"},
		},
		{
			name:        "same revision is left alone",
			annotations: map[string]string{RevisionAnnotation: "3", "other": "x"}, newRevision: "3", wantChanged: false,
			want: map[string]string{RevisionAnnotation: "3", "other": "x"},
		},
		{
			name:        "a higher revision is never lowered",
			annotations: map[string]string{RevisionAnnotation: "8"}, newRevision: "3", wantChanged: false,
			want: map[string]string{RevisionAnnotation: "8"},
		},
		{
			name:        "unparsable existing revision is left alone",
			annotations: map[string]string{RevisionAnnotation: "eight"}, newRevision: "3", wantChanged: false,
			want: map[string]string{RevisionAnnotation: "eight"},
		},
		{
			name:        "unparsable new revision changes nothing",
			annotations: map[string]string{RevisionAnnotation: "1"}, newRevision: "x", wantChanged: false,
			want: map[string]string{RevisionAnnotation: "1"},
		},
		{
			name:        "empty existing revision counts as 0 and is not recorded",
			annotations: map[string]string{RevisionAnnotation: ""}, newRevision: "2", wantChanged: true,
			want: map[string]string{RevisionAnnotation: "2"},
		},
		{
			name:        "history over 2000 characters drops its oldest entry",
			annotations: map[string]string{RevisionAnnotation: "99999", RevisionHistoryAnnotation: fullHistory}, newRevision: "100000", wantChanged: true,
			want: map[string]string{RevisionAnnotation: "100000", RevisionHistoryAnnotation: strings.Join(append(entries[1:], "99999"), ",")},
		},
		{
			name:        "history landing exactly on 2000 characters keeps every entry",
			annotations: map[string]string{RevisionAnnotation: "99999", RevisionHistoryAnnotation: historyAtLimit}, newRevision: "100000", wantChanged: true,
			want: map[string]string{RevisionAnnotation: "100000", RevisionHistoryAnnotation: historyAtLimit + ",99999"},
		},
		{
			name:        "a single oversized entry is dropped",
			annotations: map[string]string{RevisionAnnotation: "99999", RevisionHistoryAnnotation: historyAtLimit + "7,1"}, newRevision: "100000", wantChanged: true,
			want: map[string]string{RevisionAnnotation: "100000", RevisionHistoryAnnotation: "1,99999"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := replicaSet("rs", 0, 1, annotated(flatten(tc.annotations)...))
			if got := SetNewReplicaSetRevision(rs, tc.newRevision); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, rs.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if h := rs.Annotations[RevisionHistoryAnnotation]; len(h) > RevisionHistoryMaxChars {
				t.Errorf("history has %d characters", len(h))
			}
		})
	}
}

func TestAppendRevisionHistoryRevisionTooLong(t *testing.T) {
	if got, ok := appendRevisionHistory("1,2", strings.Repeat("9", RevisionHistoryMaxChars+1)); ok {
		t.Errorf("got %q, want no append", got)
	}
}

func flatten(m map[string]string) []string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k, v)
	}
	return kv
}

func TestSkipCopyAnnotation(t *testing.T) {
	for key, want := range map[string]bool{
		corev1.LastAppliedConfigAnnotation: true,
		RevisionAnnotation:                 true,
		RevisionHistoryAnnotation:          true,
		DesiredReplicasAnnotation:          true,
		MaxReplicasAnnotation:              true,
		RollbackToAnnotation:               true,
		"kubernetes.io/change-cause":       false,
		"example.com/team":                 false,
	} {
		if got := SkipCopyAnnotation(key); got != want {
			t.Errorf("SkipCopyAnnotation(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestCopyDeploymentAnnotationsToReplicaSet(t *testing.T) {
	d := rolling(3, pct25, pct25)
	d.Annotations = map[string]string{
		"test":                             "should-copy-to-replica-set",
		"kubernetes.io/change-cause":       "image v2",
		corev1.LastAppliedConfigAnnotation: "{}",
		RevisionAnnotation:                 "9",
		RevisionHistoryAnnotation:          "1",
		DesiredReplicasAnnotation:          "3",
		MaxReplicasAnnotation:              "4",
		RollbackToAnnotation:               "1",
	}
	rs := replicaSet("rs", 0, 1, annotated(RevisionAnnotation, "2", "own", "kept", "kubernetes.io/change-cause", "image v1"))
	if !CopyDeploymentAnnotationsToReplicaSet(d, rs) {
		t.Error("first copy: changed = false, want true")
	}
	want := map[string]string{
		RevisionAnnotation:           "2",
		"own":                        "kept",
		"test":                       "should-copy-to-replica-set",
		"kubernetes.io/change-cause": "image v2",
	}
	if diff := cmp.Diff(want, rs.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if CopyDeploymentAnnotationsToReplicaSet(d, rs) {
		t.Error("second copy: changed = true, want false")
	}

	bare := replicaSet("bare", 0, 1)
	if CopyDeploymentAnnotationsToReplicaSet(&appsv1.Deployment{}, bare) || bare.Annotations != nil {
		t.Errorf("nothing to copy: changed or annotations %v", bare.Annotations)
	}
}

func TestReplicasAnnotations(t *testing.T) {
	rs := replicaSet("rs", 0, 1)
	if !ReplicasAnnotationsNeedUpdate(rs, 3, 4) {
		t.Error("missing annotations: need update = false")
	}
	if !SetReplicasAnnotations(rs, 3, 4) {
		t.Error("first set: changed = false")
	}
	if rs.Annotations[DesiredReplicasAnnotation] != "3" || rs.Annotations[MaxReplicasAnnotation] != "4" {
		t.Errorf("annotations = %v", rs.Annotations)
	}
	if ReplicasAnnotationsNeedUpdate(rs, 3, 4) || SetReplicasAnnotations(rs, 3, 4) {
		t.Error("same values: reported a change")
	}
	if !ReplicasAnnotationsNeedUpdate(rs, 3, 5) {
		t.Error("max changed: need update = false")
	}
	if !SetReplicasAnnotations(rs, 3, 5) || rs.Annotations[MaxReplicasAnnotation] != "5" {
		t.Errorf("max changed: annotations = %v", rs.Annotations)
	}
	if v, ok := DesiredReplicasFromAnnotation(rs); !ok || v != 3 {
		t.Errorf("DesiredReplicasFromAnnotation = %d, %v", v, ok)
	}
	if v, ok := MaxReplicasFromAnnotation(rs); !ok || v != 5 {
		t.Errorf("MaxReplicasFromAnnotation = %d, %v", v, ok)
	}
	if _, ok := DesiredReplicasFromAnnotation(replicaSet("x", 0, 1, annotated(DesiredReplicasAnnotation, "99999999999"))); ok {
		t.Error("value beyond int32 accepted")
	}
}

func TestSetDeploymentRevision(t *testing.T) {
	d := &appsv1.Deployment{}
	if !SetDeploymentRevision(d, "1") || d.Annotations[RevisionAnnotation] != "1" {
		t.Fatalf("first set: annotations %v", d.Annotations)
	}
	if SetDeploymentRevision(d, "1") {
		t.Error("same revision: changed = true")
	}
	if !SetDeploymentRevision(d, "2") || d.Annotations[RevisionAnnotation] != "2" {
		t.Errorf("second set: annotations %v", d.Annotations)
	}
}

func TestSetDeploymentAnnotationsTo(t *testing.T) {
	d := rolling(3, pct25, pct25)
	d.Annotations = map[string]string{
		RevisionAnnotation:                 "3",
		corev1.LastAppliedConfigAnnotation: "{}",
		"kubernetes.io/change-cause":       "image v3",
		"only-on-deployment":               "dropped",
	}
	rs := replicaSet("rs", 0, 1, annotated(
		RevisionAnnotation, "1",
		DesiredReplicasAnnotation, "3",
		"kubernetes.io/change-cause", "image v1",
		"only-on-rs", "added",
	))
	SetDeploymentAnnotationsTo(d, rs)
	want := map[string]string{
		RevisionAnnotation:                 "3",
		corev1.LastAppliedConfigAnnotation: "{}",
		"kubernetes.io/change-cause":       "image v1",
		"only-on-rs":                       "added",
	}
	if diff := cmp.Diff(want, d.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}
