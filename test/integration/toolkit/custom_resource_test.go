package toolkit

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// TestMergePatcherClaimsCustomResources claims ImagePullJobs for an Advanced DaemonSet
// through the JSON merge patch patcher, which custom resources need because they reject
// strategic merge patches. A merge patch replaces the whole ownerReferences list, so the
// patch carries resourceVersion: a stale object must make it fail with a conflict instead
// of overwriting references someone else wrote meanwhile.
func TestMergePatcherClaimsCustomResources(t *testing.T) {
	ctx, cp, _, ns := setup(t)
	bosun := bosunclient.NewForConfigOrDie(cp.Config())
	metadataClient := metadata.NewForConfigOrDie(cp.Config())
	jobs := bosun.AppsV1alpha1().ImagePullJobs(ns)

	// newOwner creates an Advanced DaemonSet and the Manager a controller would build for
	// it, with a live recheck through the metadata client.
	newOwner := func(t *testing.T, name string) (*appsv1alpha1.DaemonSet, *refmanager.Manager, testRefs) {
		t.Helper()
		ds, err := bosun.AppsV1alpha1().DaemonSets(ns).Create(ctx, newAdvancedDaemonSet(ns, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		patcher := &refmanager.MergePatcher{ObjectKind: "ImagePullJob", Client: metadataClient, Resource: imagePullJobsGVR}
		m, err := newManager(ds, daemonSetGVK, ds.Spec.Selector, liveMetadata(metadataClient, daemonSetsGVR, ds), patcher)
		if err != nil {
			t.Fatal(err)
		}
		return ds, m, newTestRefs(ds, daemonSetGVK)
	}
	claim := func(m *refmanager.Manager, job *appsv1alpha1.ImagePullJob) (bool, error) {
		owned, err := refmanager.ClaimAll(ctx, m, []*appsv1alpha1.ImagePullJob{job}, nil)
		return len(owned) == 1, err
	}

	t.Run("strategic merge patch is unsupported", func(t *testing.T) {
		ds, _, _ := newOwner(t, "smp")
		job, err := jobs.Create(ctx, newImagePullJob(ns, "smp-job", selectorLabels("smp"), nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		body, err := refmanager.AdoptPatch(*metav1.NewControllerRef(ds, daemonSetGVK), job.UID)
		if err != nil {
			t.Fatal(err)
		}
		_, err = metadataClient.Resource(imagePullJobsGVR).Namespace(ns).Patch(ctx, job.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		if !apierrors.IsUnsupportedMediaType(err) {
			t.Errorf("strategic merge patch of an ImagePullJob: error %v, want 415 UnsupportedMediaType", err)
		}
	})

	cases := []struct {
		name        string
		labelsMatch bool
		refs        []refKind
		wantOwned   bool
		wantRefs    []refKind
	}{{
		name:        "orphan with matching labels is adopted",
		labelsMatch: true,
		wantOwned:   true,
		wantRefs:    []refKind{ownerController},
	}, {
		name:        "plain reference to the owner is upgraded in place",
		labelsMatch: true,
		refs:        []refKind{otherPlain, ownerPlain},
		wantOwned:   true,
		wantRefs:    []refKind{otherPlain, ownerController},
	}, {
		// The merge patcher appends, unlike a strategic merge.
		name:        "references to other objects are kept on adoption",
		labelsMatch: true,
		refs:        []refKind{otherPlain},
		wantOwned:   true,
		wantRefs:    []refKind{otherPlain, ownerController},
	}, {
		name:     "release removes only the owner's reference",
		refs:     []refKind{otherPlain, ownerController},
		wantRefs: []refKind{otherPlain},
	}, {
		name: "release of the only reference",
		refs: []refKind{ownerController},
	}, {
		name:        "another controller's object is left alone",
		labelsMatch: true,
		refs:        []refKind{otherController},
		wantRefs:    []refKind{otherController},
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("merge-%d", i)
			_, m, refs := newOwner(t, name)
			labels := strangerLabels
			if tc.labelsMatch {
				labels = selectorLabels(name)
			}
			job, err := jobs.Create(ctx, newImagePullJob(ns, name+"-job", labels, refs.get(tc.refs...)), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}

			owned, err := claim(m, job)
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if owned != tc.wantOwned {
				t.Errorf("claim returned owned=%v, want %v", owned, tc.wantOwned)
			}
			live, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(orNil(refs.get(tc.wantRefs...)), orNil(live.OwnerReferences)); diff != "" {
				t.Errorf("ownerReferences on the server (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(job.Spec, live.Spec); diff != "" {
				t.Errorf("the merge patch changed the spec (-before +after):\n%s", diff)
			}
		})
	}

	// A concurrent writer changes the object after the controller read it; the claim of
	// the stale copy must fail with 409 and leave the writer's change in place.
	staleCases := []struct {
		name        string
		labelsMatch bool
		refs        []refKind
		// concurrent is what another writer adds to the object's references.
		concurrent []refKind
	}{{
		name:        "stale adoption",
		labelsMatch: true,
		concurrent:  []refKind{otherPlain},
	}, {
		name:       "stale release",
		refs:       []refKind{ownerController},
		concurrent: []refKind{otherPlain},
	}}
	for i, tc := range staleCases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("stale-%d", i)
			_, m, refs := newOwner(t, name)
			labels := strangerLabels
			if tc.labelsMatch {
				labels = selectorLabels(name)
			}
			stale, err := jobs.Create(ctx, newImagePullJob(ns, name+"-job", labels, refs.get(tc.refs...)), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			changed := stale.DeepCopy()
			changed.OwnerReferences = append(changed.OwnerReferences, refs.get(tc.concurrent...)...)
			changed, err = jobs.Update(ctx, changed, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}

			// Claim directly: ClaimAll's aggregate hides the status from apierrors.
			owned, err := m.Claim(ctx, stale, m.SelectorMatches, m.Adopt, m.Release)
			if owned {
				t.Error("claim of the stale object reported it owned")
			}
			if !apierrors.IsConflict(err) {
				t.Errorf("claim error = %v, want a 409 Conflict", err)
			}
			live, err := jobs.Get(ctx, stale.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if live.ResourceVersion != changed.ResourceVersion {
				t.Errorf("the object was written after the concurrent update: resourceVersion %s -> %s", changed.ResourceVersion, live.ResourceVersion)
			}
			if diff := cmp.Diff(changed.OwnerReferences, live.OwnerReferences); diff != "" {
				t.Errorf("ownerReferences on the server (-concurrent writer's +got):\n%s", diff)
			}
		})
	}
}
