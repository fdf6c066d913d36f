package hostpathprovisioner

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// provisionedVolume is a volume this provisioner made, with its directory holding a file,
// in phase.
func (f *fixture) provisionedVolume(name string, phase corev1.PersistentVolumePhase, reclaim corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	f.t.Helper()
	path := filepath.Join(f.dir, name)
	if err := makeVolumeDir(path); err != nil {
		f.t.Fatal(err)
	}
	writeFile(f.t, filepath.Join(path, "data"))
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "volume-" + "1",
			Annotations: map[string]string{AnnProvisionedBy: ProvisionerName}},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              testClass,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
			},
		},
		Status: corev1.PersistentVolumeStatus{Phase: phase},
	}
}

// A Released volume whose policy is Delete loses its directory, then is deleted itself,
// on the condition that it is still the same volume.
func TestSyncVolumeDeletesAReleasedVolumeAndItsDirectory(t *testing.T) {
	f := newFixture(t)
	volume := f.provisionedVolume("pvc-1", corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete)
	f.add(volume)
	f.kube.ClearActions()

	f.syncVolume("pvc-1")

	if exists(t, filepath.Join(f.dir, "pvc-1")) {
		t.Error("the directory of the Released volume is still there")
	}
	writes := f.writes()
	if len(writes) != 1 {
		t.Fatalf("writes = %v, want one delete", writes)
	}
	del, ok := writes[0].(clienttesting.DeleteActionImpl)
	if !ok || del.GetName() != "pvc-1" || del.DeleteOptions.Preconditions == nil ||
		ptr.Deref(del.DeleteOptions.Preconditions.UID, "") != volume.UID {
		t.Errorf("write = %#v, want the volume deleted with its UID as precondition", writes[0])
	}
	if _, err := f.kube.CoreV1().PersistentVolumes().Get(f.ctx, "pvc-1", metav1.GetOptions{}); err == nil {
		t.Error("the volume is still on the server")
	}

	// Synced again before the cache has seen the deletion: nothing left to do, no error.
	f.syncVolume("pvc-1")
}

// A Released volume already being deleted only loses its directory: no second delete.
func TestSyncVolumeOfAVolumeBeingDeletedOnlyRemovesTheDirectory(t *testing.T) {
	f := newFixture(t)
	volume := f.provisionedVolume("pvc-1", corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete)
	volume.DeletionTimestamp = ptr.To(metav1.Now())
	volume.Finalizers = []string{"kubernetes.io/pv-protection"}
	f.add(volume)
	f.kube.ClearActions()

	f.syncVolume("pvc-1")

	if exists(t, filepath.Join(f.dir, "pvc-1")) {
		t.Error("the directory of the volume is still there")
	}
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes = %v, want none", writes)
	}
}

// Volumes that are in use, kept by their policy, or another provisioner's are left alone
// with their directories.
func TestSyncVolumeKeepsWhatIsNotReleasedForDeletion(t *testing.T) {
	for name, tc := range map[string]struct {
		phase       corev1.PersistentVolumePhase
		reclaim     corev1.PersistentVolumeReclaimPolicy
		provisioner string
	}{
		"bound":                  {phase: corev1.VolumeBound, reclaim: corev1.PersistentVolumeReclaimDelete},
		"available":              {phase: corev1.VolumeAvailable, reclaim: corev1.PersistentVolumeReclaimDelete},
		"released, kept":         {phase: corev1.VolumeReleased, reclaim: corev1.PersistentVolumeReclaimRetain},
		"another's, released":    {phase: corev1.VolumeReleased, reclaim: corev1.PersistentVolumeReclaimDelete, provisioner: "example.com/other"},
		"not provisioned at all": {phase: corev1.VolumeReleased, reclaim: corev1.PersistentVolumeReclaimDelete, provisioner: "-"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			volume := f.provisionedVolume("pvc-1", tc.phase, tc.reclaim)
			switch tc.provisioner {
			case "":
			case "-":
				delete(volume.Annotations, AnnProvisionedBy)
			default:
				volume.Annotations[AnnProvisionedBy] = tc.provisioner
			}
			f.add(volume)
			f.kube.ClearActions()

			f.syncVolume("pvc-1")

			if writes := f.writes(); len(writes) != 0 {
				t.Errorf("writes = %v, want none", writes)
			}
			if !exists(t, filepath.Join(f.dir, "pvc-1", "data")) {
				t.Error("the volume's directory was removed")
			}
			f.expectNoEvents()
		})
	}
}

// A Released volume whose hostPath is not the directory this provisioner would have made
// for it is neither emptied nor deleted; an event says why.
func TestSyncVolumeNeverRemovesADirectoryItDidNotMake(t *testing.T) {
	f := newFixture(t)
	volume := f.provisionedVolume("pvc-1", corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete)
	elsewhere := filepath.Join(t.TempDir(), "precious")
	if err := makeVolumeDir(elsewhere); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(elsewhere, "data"))
	volume.Spec.HostPath.Path = elsewhere
	f.add(volume)
	f.kube.ClearActions()

	f.syncVolume("pvc-1")

	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes = %v, want none", writes)
	}
	if !exists(t, filepath.Join(elsewhere, "data")) || !exists(t, filepath.Join(f.dir, "pvc-1", "data")) {
		t.Error("a directory was removed")
	}
	f.expectEvent("Warning " + ReasonVolumeFailedDelete)
}

// A volume deleted by someone else loses its directory once the API server says it is
// gone; while the server still has it (the cache is behind), the directory stays.
func TestSyncVolumeRemovesTheDirectoryOfADeletedVolume(t *testing.T) {
	f := newFixture(t)
	volume := f.provisionedVolume("pvc-1", corev1.VolumeBound, corev1.PersistentVolumeReclaimDelete)
	f.addToServer(volume)

	f.syncVolume("pvc-1")
	if !exists(t, filepath.Join(f.dir, "pvc-1", "data")) {
		t.Fatal("the directory of a volume the server still has was removed")
	}

	if err := f.kube.CoreV1().PersistentVolumes().Delete(f.ctx, "pvc-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncVolume("pvc-1")
	if exists(t, filepath.Join(f.dir, "pvc-1")) {
		t.Error("the directory of a deleted volume is still there")
	}
	f.syncVolume("pvc-1") // nothing left: no error
}
