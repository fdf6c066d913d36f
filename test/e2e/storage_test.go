package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/e2e/cluster/hostpathprovisioner"
)

// volumeTimeout bounds the release of a volume: the pod's grace period, the claim's
// protection finalizer, the PersistentVolume controller's Released mark and the
// provisioner's deletion.
const volumeTimeout = time.Minute

// A claim that names no StorageClass gets the cluster's default one, as on kind: once a pod
// using it is scheduled, the provisioner makes a directory on the node and a volume bound
// to the claim; what an init container writes there, the pod's web server reads back, and
// it is on the node's disk. Deleting the pod and the claim removes the volume and its
// directory.
func TestDefaultStorageClassProvisionsAVolumeOnTheNode(t *testing.T) {
	c := requireCluster(t)
	client := clientset(t)
	ns := newNamespace(t)
	ctx := testContext(t)

	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the claim: %v", err)
	}
	if got := ptr.Deref(claim.Spec.StorageClassName, ""); got != cluster.DefaultStorageClass {
		t.Fatalf("the claim was given StorageClass %q, want the default %q", got, cluster.DefaultStorageClass)
	}

	template := webserverPod("v1", map[string]string{"app": "storage"}, corev1.EnvVar{Name: "HOOK_LOG", Value: "/data/hooks.log"})
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	template.Spec.Containers[0].VolumeMounts = mounts
	template.Spec.InitContainers = []corev1.Container{{
		Name:         "write",
		Image:        template.Spec.Containers[0].Image,
		Command:      []string{"/webserver", "hook", "provisioned"},
		Env:          template.Spec.Containers[0].Env,
		VolumeMounts: mounts,
	}}
	template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name},
	}}}
	pod := startReadyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: template.Labels}, Spec: template.Spec})

	// The claim is bound to a volume the provisioner made for the scheduler's node.
	claim, err = client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" {
		t.Fatalf("claim of a running pod: phase %s, volume %q; want Bound to a volume", claim.Status.Phase, claim.Spec.VolumeName)
	}
	if got := claim.Annotations[hostpathprovisioner.AnnSelectedNode]; got != c.NodeName() {
		t.Errorf("the claim's selected node is %q, want %q (the class binds on first consumer)", got, c.NodeName())
	}
	volume, err := client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.VolumeDir(), volume.Name)
	node, err := client.CoreV1().Nodes().Get(ctx, c.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case volume.Annotations[hostpathprovisioner.AnnProvisionedBy] != hostpathprovisioner.ProvisionerName:
		t.Errorf("volume %s was provisioned by %q, want %q", volume.Name, volume.Annotations[hostpathprovisioner.AnnProvisionedBy], hostpathprovisioner.ProvisionerName)
	case volume.Spec.HostPath == nil || volume.Spec.HostPath.Path != path:
		t.Errorf("volume %s has source %+v, want hostPath %s", volume.Name, volume.Spec.PersistentVolumeSource, path)
	case volume.Spec.StorageClassName != cluster.DefaultStorageClass || volume.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete:
		t.Errorf("volume %s: class %q, reclaim policy %s; want %q, Delete", volume.Name, volume.Spec.StorageClassName, volume.Spec.PersistentVolumeReclaimPolicy, cluster.DefaultStorageClass)
	case !volume.Spec.Capacity.Storage().Equal(resource.MustParse("64Mi")):
		t.Errorf("volume %s has capacity %s, want the claim's 64Mi", volume.Name, volume.Spec.Capacity.Storage())
	case !pinnedTo(volume, node):
		t.Errorf("volume %s has node affinity %v, want it pinned to node %s", volume.Name, volume.Spec.NodeAffinity, node.Name)
	}

	// What the init container wrote, the web server serves, and the node's disk holds.
	body, err := client.CoreV1().Pods(ns).ProxyGet("http", pod.Name, fmt.Sprint(cluster.WebserverPort), "/hooks", nil).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /hooks of pod %s: %v", pod.Name, err)
	}
	if string(body) != "provisioned\n" {
		t.Errorf("the web server read %q from the volume, want the init container's line", body)
	}
	onDisk, err := os.ReadFile(filepath.Join(path, "hooks.log"))
	if err != nil || string(onDisk) != "provisioned\n" {
		t.Errorf("the node's %s holds %q (%v), want the init container's line", filepath.Join(path, "hooks.log"), onDisk, err)
	}

	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, volumeTimeout, "volume "+volume.Name+" and its directory to go with the claim", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, volume.Name, metav1.GetOptions{})
		if err == nil {
			return false, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		_, err = os.Lstat(path)
		if err == nil {
			return false, nil
		}
		return os.IsNotExist(err), nil
	})
}

// pinnedTo reports whether the volume's node affinity requires exactly the node's hostname
// label, the one term a node-local volume needs.
func pinnedTo(volume *corev1.PersistentVolume, node *corev1.Node) bool {
	if volume.Spec.NodeAffinity == nil || volume.Spec.NodeAffinity.Required == nil {
		return false
	}
	terms := volume.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || len(terms[0].MatchFields) != 0 {
		return false
	}
	req := terms[0].MatchExpressions[0]
	return req.Key == corev1.LabelHostname && req.Operator == corev1.NodeSelectorOpIn &&
		slices.Equal(req.Values, []string{node.Labels[corev1.LabelHostname]})
}
