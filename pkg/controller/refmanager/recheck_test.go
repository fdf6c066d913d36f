package refmanager

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRecheckDeletionTimestamp(t *testing.T) {
	cached := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: "uid-1"}}
	live := func(uid string, deleting bool) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: "uid-1"}}
		rs.UID = types.UID(uid)
		if deleting {
			rs.DeletionTimestamp = deletedAt
		}
		return rs
	}
	tests := []struct {
		name    string
		get     GetLiveFunc
		wantErr string
	}{
		{name: "alive", get: func(context.Context) (metav1.Object, error) { return live("uid-1", false), nil }},
		{
			name:    "GET fails",
			get:     func(context.Context) (metav1.Object, error) { return nil, errors.New("connection refused") },
			wantErr: "reading the owner live before adopting: connection refused",
		},
		{
			name:    "replaced under the same name",
			get:     func(context.Context) (metav1.Object, error) { return live("uid-2", false), nil },
			wantErr: "ReplicaSet ns/rs was replaced by a new object of the same name (uid uid-2, not uid-1)",
		},
		{
			name:    "being deleted",
			get:     func(context.Context) (metav1.Object, error) { return live("uid-1", true), nil },
			wantErr: "ReplicaSet ns/rs is being deleted (since 2025-01-02 03:04:05 +0000 UTC)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := RecheckDeletionTimestamp(cached, "ReplicaSet", tc.get)(context.Background())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestLiveGettersReadFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", UID: "uid-1"}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "uid-d"}}
	client := fake.NewClientset(rs, d)
	if err := RecheckDeletionTimestamp(rs, "ReplicaSet", LiveReplicaSet(client, rs))(ctx); err != nil {
		t.Errorf("LiveReplicaSet: %v", err)
	}
	if err := RecheckDeletionTimestamp(d, "Deployment", LiveDeployment(client, d))(ctx); err != nil {
		t.Errorf("LiveDeployment: %v", err)
	}
	missing := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "missing"}}
	if _, err := LiveReplicaSet(client, missing)(ctx); !apierrors.IsNotFound(err) {
		t.Errorf("missing ReplicaSet: err = %v, want NotFound", err)
	}
}
