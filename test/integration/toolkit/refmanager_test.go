package toolkit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/bosun-dev/bosun/pkg/controller/podcontrol"
	"github.com/bosun-dev/bosun/pkg/controller/refmanager"
)

// TestClaimAdoptsOrphans checks the strategic merge adopt patch against the API server's
// merge of ownerReferences by uid: an orphan gets exactly one controller reference that
// blocks owner deletion, a plain reference to the same owner is upgraded where it is,
// and references to other objects are kept.
func TestClaimAdoptsOrphans(t *testing.T) {
	ctx, _, client, ns := setup(t)

	cases := []struct {
		name           string
		labelsMatch    bool
		refs           []refKind
		finalizers     []string // on the object before the claim
		mgrFinalizers  []string // the Manager adds these on adoption
		wantOwned      bool
		wantRefs       []refKind
		wantFinalizers []string
	}{{
		name:        "orphan with matching labels",
		labelsMatch: true,
		wantOwned:   true,
		wantRefs:    []refKind{ownerController},
	}, {
		// Second in the list, so that "in place" differs from "added first".
		name:        "plain reference to the owner is upgraded in place",
		labelsMatch: true,
		refs:        []refKind{otherPlain, ownerPlain},
		wantOwned:   true,
		wantRefs:    []refKind{otherPlain, ownerController},
	}, {
		// A strategic merge puts the items a patch adds to a list before the old ones.
		name:        "references to other objects are kept",
		labelsMatch: true,
		refs:        []refKind{otherPlain},
		wantOwned:   true,
		wantRefs:    []refKind{ownerController, otherPlain},
	}, {
		name:           "adoption adds the manager's finalizers to the object's",
		labelsMatch:    true,
		finalizers:     []string{keepFinalizer},
		mgrFinalizers:  []string{holdFinalizer},
		wantOwned:      true,
		wantRefs:       []refKind{ownerController},
		wantFinalizers: []string{holdFinalizer, keepFinalizer},
	}, {
		name:     "orphan with other labels is left alone",
		refs:     []refKind{ownerPlain},
		wantRefs: []refKind{ownerPlain},
	}}
	for _, kind := range builtinKinds {
		for i, tc := range cases {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				name := fmt.Sprintf("adopt-%s-%d", strings.ToLower(kind.name), i)
				owner, m, patcher := newOwnerAndManager(ctx, t, client, kind, ns, name, tc.mgrFinalizers...)
				refs := newTestRefs(owner, kind.ownerGVK)
				labels := strangerLabels
				if tc.labelsMatch {
					labels = selectorLabels(name)
				}
				obj, err := kind.create(ctx, client, ns, name+"-child", labels, refs.get(tc.refs...), tc.finalizers)
				if err != nil {
					t.Fatal(err)
				}

				owned, err := kind.claim(ctx, m, obj)
				if err != nil {
					t.Fatalf("claim: %v", err)
				}
				if owned != tc.wantOwned {
					t.Errorf("claim returned owned=%v, want %v", owned, tc.wantOwned)
				}
				live, err := kind.get(ctx, client, ns, obj.GetName())
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(orNil(refs.get(tc.wantRefs...)), orNil(live.GetOwnerReferences())); diff != "" {
					t.Errorf("ownerReferences on the server (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(orNil(tc.wantFinalizers), orNil(live.GetFinalizers())); diff != "" {
					t.Errorf("finalizers on the server (-want +got):\n%s", diff)
				}
				if !tc.wantOwned && (patcher.adopts != 0 || live.GetResourceVersion() != obj.GetResourceVersion()) {
					t.Errorf("an object that is not adopted was written: %d adopt patches, resourceVersion %s -> %s",
						patcher.adopts, obj.GetResourceVersion(), live.GetResourceVersion())
				}
			})
		}
	}
}

// TestAdoptionRejectsReplacedObject deletes an object and re-creates it under the same
// name between the list and the adoption: the adopt patch carries the listed object's
// uid, which the API server refuses to change (422), so the stranger is not adopted.
func TestAdoptionRejectsReplacedObject(t *testing.T) {
	ctx, _, client, ns := setup(t)

	for _, kind := range builtinKinds {
		t.Run(kind.name, func(t *testing.T) {
			name := "replaced-" + strings.ToLower(kind.name)
			owner, m, _ := newOwnerAndManager(ctx, t, client, kind, ns, name)
			stale, err := kind.create(ctx, client, ns, name+"-child", selectorLabels(name), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := kind.delete(ctx, client, ns, stale.GetName()); err != nil {
				t.Fatal(err)
			}
			replacement, err := kind.create(ctx, client, ns, stale.GetName(), selectorLabels(name), nil, nil)
			if err != nil {
				t.Fatalf("re-creating %s: %v", stale.GetName(), err)
			}

			owned, err := m.Claim(ctx, stale, m.SelectorMatches, m.Adopt, m.Release)
			if owned {
				t.Error("claim of the stale object reported it owned")
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.uid") {
				t.Errorf("claim error = %v, want a 422 Invalid about metadata.uid", err)
			}
			live, err := kind.get(ctx, client, ns, stale.GetName())
			if err != nil {
				t.Fatal(err)
			}
			if live.GetUID() != replacement.GetUID() {
				t.Fatalf("the server holds uid %s, want the replacement's %s", live.GetUID(), replacement.GetUID())
			}
			if refs := live.GetOwnerReferences(); len(refs) != 0 {
				t.Errorf("the replacement got ownerReferences %+v; %s %s must not adopt it", refs, kind.ownerGVK.Kind, owner.GetName())
			}
		})
	}
}

// TestClaimLeavesObjectsOfAnotherController checks row 1 of the claim table (no write at
// all) and that the API server itself refuses a second controller reference, which is
// what protects an object when two owners race to adopt it.
func TestClaimLeavesObjectsOfAnotherController(t *testing.T) {
	ctx, _, client, ns := setup(t)

	for _, kind := range builtinKinds {
		t.Run(kind.name, func(t *testing.T) {
			name := "taken-" + strings.ToLower(kind.name)
			owner, m, patcher := newOwnerAndManager(ctx, t, client, kind, ns, name)
			refs := newTestRefs(owner, kind.ownerGVK)
			obj, err := kind.create(ctx, client, ns, name+"-child", selectorLabels(name), refs.get(otherController), nil)
			if err != nil {
				t.Fatal(err)
			}

			owned, err := kind.claim(ctx, m, obj)
			if owned || err != nil {
				t.Errorf("claim = (%v, %v), want (false, nil)", owned, err)
			}
			if patcher.adopts != 0 || patcher.releases != 0 {
				t.Errorf("claim sent %d adopt and %d release patches, want none", patcher.adopts, patcher.releases)
			}

			// The same adoption sent without the table's check.
			body, err := refmanager.AdoptPatch(*metav1.NewControllerRef(owner, kind.ownerGVK), obj.GetUID())
			if err != nil {
				t.Fatal(err)
			}
			err = kind.patch(ctx, client, ns, obj.GetName(), types.StrategicMergePatchType, body)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Only one reference can have Controller set to true") {
				t.Errorf("raw adopt patch error = %v, want a 422 Invalid about a second controller", err)
			}

			live, err := kind.get(ctx, client, ns, obj.GetName())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(refs.get(otherController), live.GetOwnerReferences()); diff != "" {
				t.Errorf("ownerReferences on the server (-want +got):\n%s", diff)
			}
			if live.GetResourceVersion() != obj.GetResourceVersion() {
				t.Errorf("the object was written: resourceVersion %s -> %s", obj.GetResourceVersion(), live.GetResourceVersion())
			}
		})
	}
}

// TestClaimReleasesObjectsThatNoLongerMatch checks the release patch: it deletes only the
// owner's reference (and the manager's finalizers), and an object that is gone (404) or
// was replaced under the same name (422) counts as released, with the replacement left
// untouched.
func TestClaimReleasesObjectsThatNoLongerMatch(t *testing.T) {
	ctx, _, client, ns := setup(t)

	cases := []struct {
		name       string
		refs       []refKind
		finalizers []string
		// replace deletes the object and, when recreate is set, re-creates it with refs
		// and finalizers before the claim runs on the stale copy.
		replace, recreate bool
		// wantRawErr checks the API's answer to the release patch sent directly.
		wantRawErr     func(error) bool
		wantRefs       []refKind // on the object the server has afterwards
		wantFinalizers []string
	}{{
		name:           "labels no longer match",
		refs:           []refKind{ownerController, otherPlain},
		finalizers:     []string{holdFinalizer, keepFinalizer},
		wantRefs:       []refKind{otherPlain},
		wantFinalizers: []string{keepFinalizer},
	}, {
		name:       "object already gone",
		refs:       []refKind{ownerController},
		replace:    true,
		wantRawErr: apierrors.IsNotFound,
	}, {
		name:       "object replaced under the same name",
		refs:       []refKind{ownerController},
		replace:    true,
		recreate:   true,
		wantRawErr: apierrors.IsInvalid,
		wantRefs:   []refKind{ownerController},
	}}
	for _, kind := range builtinKinds {
		for i, tc := range cases {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				name := fmt.Sprintf("release-%s-%d", strings.ToLower(kind.name), i)
				owner, m, patcher := newOwnerAndManager(ctx, t, client, kind, ns, name, holdFinalizer)
				refs := newTestRefs(owner, kind.ownerGVK)
				childName := name + "-child"
				obj, err := kind.create(ctx, client, ns, childName, strangerLabels, refs.get(tc.refs...), tc.finalizers)
				if err != nil {
					t.Fatal(err)
				}
				var replacement metav1.Object
				if tc.replace {
					if err := kind.delete(ctx, client, ns, childName); err != nil {
						t.Fatal(err)
					}
					if tc.recreate {
						if replacement, err = kind.create(ctx, client, ns, childName, strangerLabels, refs.get(tc.refs...), tc.finalizers); err != nil {
							t.Fatal(err)
						}
					}
				}

				owned, err := kind.claim(ctx, m, obj)
				if owned || err != nil {
					t.Errorf("claim = (%v, %v), want (false, nil)", owned, err)
				}
				if patcher.releases != 1 {
					t.Errorf("claim sent %d release patches, want 1", patcher.releases)
				}
				if err := m.Release(ctx, obj); err != nil {
					t.Errorf("releasing again: %v, want success", err)
				}
				if tc.wantRawErr != nil {
					body, err := refmanager.ReleasePatch(obj.GetUID(), []types.UID{owner.GetUID()})
					if err != nil {
						t.Fatal(err)
					}
					if err := kind.patch(ctx, client, ns, childName, types.StrategicMergePatchType, body); !tc.wantRawErr(err) {
						t.Errorf("raw release patch error = %v, which the test case does not expect", err)
					}
				}

				live, err := kind.get(ctx, client, ns, childName)
				if tc.replace && !tc.recreate {
					if !apierrors.IsNotFound(err) {
						t.Errorf("get after release = %v, want NotFound", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if replacement != nil && live.GetResourceVersion() != replacement.GetResourceVersion() {
					t.Errorf("the replacement was written: resourceVersion %s -> %s", replacement.GetResourceVersion(), live.GetResourceVersion())
				}
				if diff := cmp.Diff(orNil(refs.get(tc.wantRefs...)), orNil(live.GetOwnerReferences())); diff != "" {
					t.Errorf("ownerReferences on the server (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(orNil(tc.wantFinalizers), orNil(live.GetFinalizers())); diff != "" {
					t.Errorf("finalizers on the server (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestRecheckDeletionTimestampBlocksAdoption runs the live deletion recheck that guards
// every adoption against a cached owner that is stale: being deleted, replaced under the
// same name, or gone. It runs with both the typed and the metadata-only live GET.
func TestRecheckDeletionTimestampBlocksAdoption(t *testing.T) {
	ctx, cp, client, ns := setup(t)
	metadataClient := metadata.NewForConfigOrDie(cp.Config())

	getters := []struct {
		name string
		live func(owner metav1.Object) refmanager.GetLiveFunc
	}{
		{"typed", func(owner metav1.Object) refmanager.GetLiveFunc { return refmanager.LiveReplicaSet(client, owner) }},
		{"metadata", func(owner metav1.Object) refmanager.GetLiveFunc {
			return liveMetadata(metadataClient, replicaSetsGVR, owner)
		}},
	}
	cases := []struct {
		name            string
		ownerFinalizers []string
		// change alters the owner on the server after the controller cached it and
		// returns the canAdopt error the recheck must report ("" for none).
		change func(t *testing.T, cached *appsv1.ReplicaSet) string
	}{{
		name:   "owner unchanged",
		change: func(t *testing.T, cached *appsv1.ReplicaSet) string { return "" },
	}, {
		name:            "owner being deleted",
		ownerFinalizers: []string{holdFinalizer},
		change: func(t *testing.T, cached *appsv1.ReplicaSet) string {
			rsClient := client.AppsV1().ReplicaSets(ns)
			if err := rsClient.Delete(ctx, cached.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			live, err := rsClient.Get(ctx, cached.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if live.DeletionTimestamp == nil {
				t.Fatal("the owner has no deletionTimestamp despite its finalizer")
			}
			return fmt.Sprintf("ReplicaSet %s/%s is being deleted (since %v)", ns, cached.Name, live.DeletionTimestamp.Time)
		},
	}, {
		name: "owner re-created under the same name",
		change: func(t *testing.T, cached *appsv1.ReplicaSet) string {
			rsClient := client.AppsV1().ReplicaSets(ns)
			if err := rsClient.Delete(ctx, cached.Name, deleteAtOnce); err != nil {
				t.Fatal(err)
			}
			recreated, err := rsClient.Create(ctx, newReplicaSet(ns, cached.Name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("ReplicaSet %s/%s was replaced by a new object of the same name (uid %s, not %s)", ns, cached.Name, recreated.UID, cached.UID)
		},
	}, {
		name: "owner gone",
		change: func(t *testing.T, cached *appsv1.ReplicaSet) string {
			if err := client.AppsV1().ReplicaSets(ns).Delete(ctx, cached.Name, deleteAtOnce); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf(`reading the owner live before adopting: replicasets.apps "%s" not found`, cached.Name)
		},
	}}
	for _, getter := range getters {
		for i, tc := range cases {
			t.Run(getter.name+"/"+tc.name, func(t *testing.T) {
				name := fmt.Sprintf("recheck-%s-%d", getter.name, i)
				rs := newReplicaSet(ns, name)
				rs.Finalizers = tc.ownerFinalizers
				cached, err := client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				pod, err := client.CoreV1().Pods(ns).Create(ctx, newPod(ns, name+"-pod", selectorLabels(name), nil, nil), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				m, err := newManager(cached, replicaSetGVK, cached.Spec.Selector, getter.live(cached), refmanager.PodControlPatcher(&podcontrol.Real{Client: client}))
				if err != nil {
					t.Fatal(err)
				}
				wantCause := tc.change(t, cached)

				owned, err := m.Claim(ctx, pod, m.SelectorMatches, m.Adopt, m.Release)
				live, getErr := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
				if getErr != nil {
					t.Fatal(getErr)
				}
				if wantCause == "" {
					if !owned || err != nil {
						t.Fatalf("claim = (%v, %v), want (true, nil)", owned, err)
					}
					if diff := cmp.Diff([]metav1.OwnerReference{*metav1.NewControllerRef(cached, replicaSetGVK)}, live.OwnerReferences); diff != "" {
						t.Errorf("ownerReferences on the server (-want +got):\n%s", diff)
					}
					return
				}
				want := fmt.Sprintf("not adopting Pod %s/%s (uid %s): %s", ns, pod.Name, pod.UID, wantCause)
				if err == nil || err.Error() != want {
					t.Errorf("claim error:\n got: %v\nwant: %s", err, want)
				}
				if owned {
					t.Error("claim reported the pod owned")
				}
				if len(live.OwnerReferences) != 0 || live.ResourceVersion != pod.ResourceVersion {
					t.Errorf("the pod was written (ownerReferences %+v); adoption must be refused", live.OwnerReferences)
				}
			})
		}
	}
}
