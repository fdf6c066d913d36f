package hostpathprovisioner

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A claim handed to this provisioner gets a writable directory and a volume pre-bound to
// it, pinned to the selected node, with the claim's request and access modes and the
// class's name and reclaim policy; a repeated sync makes nothing twice.
func TestSyncClaimProvisionsAVolumeOnTheSelectedNode(t *testing.T) {
	f := newFixture(t)
	f.add(newClass(ProvisionerName, corev1.PersistentVolumeReclaimDelete))
	f.add(newNode())
	claim := newClaim("data")
	claim.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany}
	f.add(claim)

	f.syncClaim(claim)

	name := "pvc-uid-data"
	path := filepath.Join(f.dir, name)
	got, err := f.kube.CoreV1().PersistentVolumes().Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the volume was not created: %v", err)
	}
	want := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{AnnProvisionedBy: ProvisionerName}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany},
			ClaimRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: "ns", Name: "data", UID: "uid-data", ResourceVersion: "7"},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              testClass,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{testHostname},
				}}}},
			}},
		},
	}
	// The fake clientset's field manager writes managed fields and the type.
	got.ManagedFields, got.TypeMeta = nil, metav1.TypeMeta{}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("volume differs (-want +got):\n%s", cmp.Diff(want, got))
	}
	if st := stat(t, path); !st.IsDir() || st.Mode().Perm() != 0o777 {
		t.Errorf("the volume's directory has mode %v, want a directory with 0777", st.Mode())
	}
	f.expectEvent("Normal " + ReasonProvisioningSucceeded)

	// Synced again before the cache has seen the volume: the create is refused, nothing
	// else is written and no second event says it succeeded.
	f.kube.ClearActions()
	f.syncClaim(claim)
	if writes := f.writes(); len(writes) != 1 || writes[0].GetVerb() != "create" {
		t.Errorf("writes of a sync behind its own create = %v, want the one refused create", writes)
	}
	f.expectNoEvents()

	// Once the cache holds it, a sync writes nothing.
	if err := f.factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(got); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	f.syncClaim(claim)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes of a sync with the volume in the cache = %v, want none", writes)
	}
}

// A directory left by a sync whose create failed is reused, and made writable again.
func TestSyncClaimReusesTheDirectoryOfAnEarlierAttempt(t *testing.T) {
	f := newFixture(t)
	f.add(newClass(ProvisionerName, corev1.PersistentVolumeReclaimDelete))
	f.add(newNode())
	claim := newClaim("data")
	f.add(claim)
	path := filepath.Join(f.dir, "pvc-uid-data")
	if err := makeVolumeDir(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(path, "kept"))

	f.syncClaim(claim)

	if _, err := f.kube.CoreV1().PersistentVolumes().Get(f.ctx, "pvc-uid-data", metav1.GetOptions{}); err != nil {
		t.Fatalf("the volume was not created: %v", err)
	}
	if st := stat(t, path); st.Mode().Perm() != 0o777 {
		t.Errorf("the reused directory has mode %v, want 0777", st.Mode())
	}
	if !exists(t, filepath.Join(path, "kept")) {
		t.Error("the reused directory lost its content")
	}
}

// The class's reclaim policy and mount options carry over; the beta annotation alone
// hands the claim over as well.
func TestSyncClaimTakesReclaimPolicyAndMountOptionsFromTheClass(t *testing.T) {
	f := newFixture(t)
	class := newClass(ProvisionerName, corev1.PersistentVolumeReclaimRetain)
	class.MountOptions = []string{"noatime"}
	f.add(class)
	f.add(newNode())
	claim := newClaim("data")
	delete(claim.Annotations, AnnStorageProvisioner)
	f.add(claim)

	f.syncClaim(claim)

	got, err := f.kube.CoreV1().PersistentVolumes().Get(f.ctx, "pvc-uid-data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the volume was not created: %v", err)
	}
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
		!reflect.DeepEqual(got.Spec.MountOptions, []string{"noatime"}) {
		t.Errorf("reclaim policy %s, mount options %v; want Retain, [noatime]", got.Spec.PersistentVolumeReclaimPolicy, got.Spec.MountOptions)
	}
}

// Claims this provisioner is not asked for, or not yet, get nothing: no directory, no
// volume, no event.
func TestSyncClaimLeavesAloneClaimsItIsNotAskedFor(t *testing.T) {
	for name, tc := range map[string]struct {
		claim func(*corev1.PersistentVolumeClaim)
		class string // the class's provisioner
	}{
		"not handed to a provisioner": {claim: func(c *corev1.PersistentVolumeClaim) {
			delete(c.Annotations, AnnStorageProvisioner)
			delete(c.Annotations, AnnBetaStorageProvisioner)
		}},
		"handed to another provisioner": {claim: func(c *corev1.PersistentVolumeClaim) {
			c.Annotations[AnnStorageProvisioner] = "example.com/other"
			c.Annotations[AnnBetaStorageProvisioner] = "example.com/other"
		}},
		"of a class of another provisioner": {class: "example.com/other"},
		"bound already":                     {claim: func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" }},
		"being deleted": {claim: func(c *corev1.PersistentVolumeClaim) {
			c.DeletionTimestamp = ptr.To(metav1.Now())
			c.Finalizers = []string{"kubernetes.io/pvc-protection"}
		}},
		"without a selected node": {claim: func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, AnnSelectedNode) }},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			provisioner := ProvisionerName
			if tc.class != "" {
				provisioner = tc.class
			}
			f.add(newClass(provisioner, corev1.PersistentVolumeReclaimDelete))
			f.add(newNode())
			claim := newClaim("data")
			if tc.claim != nil {
				tc.claim(claim)
			}
			f.add(claim)
			f.kube.ClearActions()

			f.syncClaim(claim)

			if writes := f.writes(); len(writes) != 0 {
				t.Errorf("writes = %v, want none", writes)
			}
			if exists(t, f.dir) {
				t.Errorf("%s was made", f.dir)
			}
			f.expectNoEvents()
		})
	}
}

// What a directory cannot give is refused with a ProvisioningFailed event on the claim.
func TestSyncClaimRefusesWhatADirectoryCannotGive(t *testing.T) {
	for name, change := range map[string]func(*corev1.PersistentVolumeClaim){
		"block mode": func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) },
		"a selector": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		},
		"a data source": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "other"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.add(newClass(ProvisionerName, corev1.PersistentVolumeReclaimDelete))
			f.add(newNode())
			claim := newClaim("data")
			change(claim)
			f.add(claim)
			f.kube.ClearActions()

			f.syncClaim(claim)

			if writes := f.writes(); len(writes) != 0 {
				t.Errorf("writes = %v, want none", writes)
			}
			if exists(t, f.dir) {
				t.Errorf("%s was made", f.dir)
			}
			f.expectEvent("Warning " + ReasonProvisioningFailed)
		})
	}
}

// A selected node the cache does not know yet, or a missing class, is retried: the sync
// fails without writing anything.
func TestSyncClaimRetriesWhatTheCacheHasNotSeen(t *testing.T) {
	for name, setUp := range map[string]func(*fixture){
		"node":  func(f *fixture) { f.add(newClass(ProvisionerName, corev1.PersistentVolumeReclaimDelete)) },
		"class": func(f *fixture) { f.add(newNode()) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			setUp(f)
			claim := newClaim("data")
			f.add(claim)
			f.kube.ClearActions()

			if err := f.c.syncClaim(f.ctx, "ns/data"); err == nil {
				t.Error("syncClaim succeeded, want an error so that the claim is retried")
			}
			if writes := f.writes(); len(writes) != 0 {
				t.Errorf("writes = %v, want none", writes)
			}
			if exists(t, f.dir) {
				t.Errorf("%s was made", f.dir)
			}
		})
	}
}

// A claim that is gone is done.
func TestSyncClaimOfAGoneClaim(t *testing.T) {
	f := newFixture(t)
	f.syncClaim(newClaim("gone"))
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes = %v, want none", writes)
	}
}
