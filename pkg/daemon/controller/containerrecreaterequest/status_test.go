package containerrecreaterequest

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// The agent reads the copied pod statuses from the status field and, on a request that has
// only the v1alpha1 annotation, from the annotation.
func TestSyncedStatuses(t *testing.T) {
	fresh := appsv1beta1.ContainerRecreateRequestSyncContainerStatus{Name: "app", Ready: true, RestartCount: 1, ContainerID: "containerd://new"}
	stale := `[{"name":"app","ready":false,"restartCount":0,"containerID":"containerd://old"}]`
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		field       []appsv1beta1.ContainerRecreateRequestSyncContainerStatus
		want        map[string]appsv1beta1.ContainerRecreateRequestSyncContainerStatus
	}{
		{name: "none"},
		{name: "the field", field: []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{fresh},
			want: map[string]appsv1beta1.ContainerRecreateRequestSyncContainerStatus{"app": fresh}},
		{name: "the annotation alone",
			annotations: map[string]string{appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey: `[{"name":"app","ready":true,"restartCount":1,"containerID":"containerd://new"}]`},
			want:        map[string]appsv1beta1.ContainerRecreateRequestSyncContainerStatus{"app": fresh}},
		{name: "the field over a disagreeing annotation", field: []appsv1beta1.ContainerRecreateRequestSyncContainerStatus{fresh},
			annotations: map[string]string{appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey: stale},
			want:        map[string]appsv1beta1.ContainerRecreateRequestSyncContainerStatus{"app": fresh}},
		{name: "an annotation that does not parse", annotations: map[string]string{appsv1beta1.ContainerRecreateRequestSyncContainerStatusesKey: "{"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			crr := &appsv1beta1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations},
				Status: appsv1beta1.ContainerRecreateRequestStatus{ContainerStatusSnapshot: tt.field}}
			if got := syncedStatuses(crr); !maps.Equal(got, tt.want) {
				t.Errorf("synced statuses %+v, want %+v", got, tt.want)
			}
		})
	}
}
