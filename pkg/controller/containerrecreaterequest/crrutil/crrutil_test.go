package crrutil

import (
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	snapshotKey = "crr.apps.kruise.io/sync-container-statuses"
	unreadyKey  = "crr.apps.kruise.io/unready-acquired"
)

func request(annotations map[string]string, status appsv1beta1.ContainerRecreateRequestStatus) *appsv1beta1.ContainerRecreateRequest {
	return &appsv1beta1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "shop", Annotations: annotations}, Status: status}
}

func TestContainerStatusSnapshot(t *testing.T) {
	field := []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "app", Ready: true, RestartCount: 1, ContainerID: "containerd://new"}}
	carried := []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "app", RestartCount: 3, ContainerID: "containerd://other"}}
	carrier := `[{"name":"app","ready":false,"restartCount":3,"containerID":"containerd://other"}]`
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		field       []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
		want        []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
	}{
		{name: "neither"},
		{name: "field only", field: field, want: field},
		{name: "carrier only", annotations: map[string]string{snapshotKey: carrier}, want: carried},
		{name: "both, disagreeing: the field wins", annotations: map[string]string{snapshotKey: carrier}, field: field, want: field},
		{name: "an empty field leaves the carrier in force", annotations: map[string]string{snapshotKey: carrier},
			field: []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{}, want: carried},
		{name: "invalid carrier: no statuses yet", annotations: map[string]string{snapshotKey: `{"name":`}},
		{name: "invalid carrier beside the field", annotations: map[string]string{snapshotKey: "garbage"}, field: field, want: field},
		{name: "empty carrier", annotations: map[string]string{snapshotKey: ""}},
		{name: "carrier written for no statuses", annotations: map[string]string{snapshotKey: "null"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ContainerStatusSnapshot(request(tt.annotations, appsv1beta1.ContainerRecreateRequestStatus{ContainerStatusSnapshot: tt.field}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("snapshot (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseContainerStatusSnapshot(t *testing.T) {
	got, err := ParseContainerStatusSnapshot(`[{"name":"app","ready":true,"restartCount":2}]`)
	want := []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{{Name: "app", Ready: true, RestartCount: 2}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("parse = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ParseContainerStatusSnapshot(`[{"name":1}]`); err == nil {
		t.Error("a list of the wrong shape parsed")
	}
}

func TestUnreadyAcquired(t *testing.T) {
	conditionTime := time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)
	carrierTime := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	grace := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{
			{Type: "Other", Status: metav1.ConditionTrue, Reason: "Other", LastTransitionTime: metav1.NewTime(carrierTime.Add(-time.Hour))},
			{Type: "PreRecreateGrace", Status: status, Reason: "PreRecreateGrace", LastTransitionTime: metav1.NewTime(conditionTime)},
		}
	}
	carrier := map[string]string{unreadyKey: carrierTime.Format(time.RFC3339)}
	for _, tt := range []struct {
		name         string
		annotations  map[string]string
		conditions   []metav1.Condition
		want         time.Time
		wantRecorded bool
		wantErr      bool
	}{
		{name: "neither"},
		{name: "condition only", conditions: grace(metav1.ConditionTrue), want: conditionTime, wantRecorded: true},
		{name: "carrier only", annotations: carrier, want: carrierTime, wantRecorded: true},
		{name: "both, disagreeing: the condition wins", annotations: carrier, conditions: grace(metav1.ConditionTrue), want: conditionTime, wantRecorded: true},
		{name: "a condition not True leaves the carrier in force", annotations: carrier, conditions: grace(metav1.ConditionFalse), want: carrierTime, wantRecorded: true},
		{name: "a condition not True alone records nothing", conditions: grace(metav1.ConditionFalse)},
		{name: "invalid carrier", annotations: map[string]string{unreadyKey: "yesterday"}, wantRecorded: true, wantErr: true},
		{name: "invalid carrier beside the condition", annotations: map[string]string{unreadyKey: "yesterday"},
			conditions: grace(metav1.ConditionTrue), want: conditionTime, wantRecorded: true},
		{name: "empty carrier", annotations: map[string]string{unreadyKey: ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at, recorded, err := UnreadyAcquired(request(tt.annotations, appsv1beta1.ContainerRecreateRequestStatus{Conditions: tt.conditions}))
			if (err != nil) != tt.wantErr || recorded != tt.wantRecorded || !at.Equal(tt.want) {
				t.Errorf("UnreadyAcquired = %v, %v, %v; want %v, %v, error %v", at, recorded, err, tt.want, tt.wantRecorded, tt.wantErr)
			}
		})
	}
}

// The condition the manager writes reads back as the annotation a v1alpha1 client knows:
// only type, status, reason and the time in whole seconds, UTC.
func TestPreRecreateGraceCondition(t *testing.T) {
	at := time.Date(2026, 3, 1, 13, 0, 1, 900_000_000, time.FixedZone("CET", 3600))
	got := PreRecreateGraceCondition(at)
	want := metav1.Condition{Type: "PreRecreateGrace", Status: metav1.ConditionTrue, Reason: "PreRecreateGrace",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("condition (-want +got):\n%s", diff)
	}
	r := request(nil, appsv1beta1.ContainerRecreateRequestStatus{Conditions: []metav1.Condition{got}})
	if acquired, recorded, err := UnreadyAcquired(r); err != nil || !recorded || acquired.Format(time.RFC3339) != "2026-03-01T12:00:01Z" {
		t.Errorf("read back as %v, %v, %v", acquired, recorded, err)
	}
}
