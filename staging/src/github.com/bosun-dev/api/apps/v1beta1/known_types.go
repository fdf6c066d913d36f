package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// addKnownTypes registers this group version's kinds, and the shared meta types (options,
// watch events, status) that every served group version needs, with a scheme.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&DaemonSet{},
		&DaemonSetList{},
		&ContainerRecreateRequest{},
		&ContainerRecreateRequestList{},
		&NodeImage{},
		&NodeImageList{},
		&ImagePullJob{},
		&ImagePullJobList{},
		&ImageListPullJob{},
		&ImageListPullJobList{},
		&CloneSet{},
		&CloneSetList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
