package refmanager

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// GetLiveFunc reads the owner straight from the API server.
type GetLiveFunc func(ctx context.Context) (metav1.Object, error)

// RecheckDeletionTimestamp returns the CanAdoptFunc every bosun controller uses: a live
// GET of the owner (never from the informer cache, which may not yet show a deletion;
// kubernetes issue #42639) that blocks adoption when the owner is gone, was replaced by
// another object of the same name, or is being deleted. cached is the owner as the
// controller knows it and kind its kind, for messages.
func RecheckDeletionTimestamp(cached metav1.Object, kind string, getLive GetLiveFunc) CanAdoptFunc {
	return func(ctx context.Context) error {
		live, err := getLive(ctx)
		if err != nil {
			return fmt.Errorf("reading the owner live before adopting: %w", err)
		}
		if live.GetUID() != cached.GetUID() {
			return fmt.Errorf("%s %s/%s was replaced by a new object of the same name (uid %s, not %s)",
				kind, cached.GetNamespace(), cached.GetName(), live.GetUID(), cached.GetUID())
		}
		if ts := live.GetDeletionTimestamp(); ts != nil {
			return fmt.Errorf("%s %s/%s is being deleted (since %v)", kind, live.GetNamespace(), live.GetName(), ts.Time)
		}
		return nil
	}
}

// LiveReplicaSet returns a GetLiveFunc reading owner, a ReplicaSet, through client.
func LiveReplicaSet(client kubernetes.Interface, owner metav1.Object) GetLiveFunc {
	return func(ctx context.Context) (metav1.Object, error) {
		rs, err := client.AppsV1().ReplicaSets(owner.GetNamespace()).Get(ctx, owner.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return rs, nil
	}
}

// LiveDeployment returns a GetLiveFunc reading owner, a Deployment, through client.
func LiveDeployment(client kubernetes.Interface, owner metav1.Object) GetLiveFunc {
	return func(ctx context.Context) (metav1.Object, error) {
		d, err := client.AppsV1().Deployments(owner.GetNamespace()).Get(ctx, owner.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}
