package storageversionmigrator

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

// The trim is one update of the CRD's status subresource: the CRD the pass started from,
// its resourceVersion included, with storedVersions [v1beta1] and nothing else changed.
func TestTrimWritesOnlyStoredVersionsOnTheCRDThePassStartedFrom(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	crd := newCRD(dsCRD)
	f.addCRD(crd)
	f.addObjects(dsCRD, 2)

	if err := f.sync(dsCRD); err != nil {
		t.Fatal(err)
	}
	if got, want := f.writes(CRDResource), []string{"update/status " + dsCRD + "@" + crdResourceVersion}; !slices.Equal(got, want) {
		t.Fatalf("writes to the CRD %v, want %v", got, want)
	}
	want := crd.DeepCopy()
	setStoredVersions(want, "v1beta1")
	for _, a := range f.client.Actions() {
		if a.GetResource() == CRDResource && a.GetVerb() == "update" {
			if sent := a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured); !reflect.DeepEqual(sent.Object, want.Object) {
				t.Errorf("sent CRD %v, want the cached one with storedVersions [v1beta1]: %v", sent.Object, want.Object)
			}
		}
	}
}

// A CRD changed since the pass started refuses the trim with a Conflict: the sync waits
// (a normal wait, no event) and the next one makes a new pass and trims.
func TestTrimConflictWaitsForANewPass(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	f.addCRD(newCRD(dsCRD))
	ds := kinds[dsCRD].resource
	keys := f.addObjects(dsCRD, 2)
	conflicted := false
	f.client.PrependReactor("update", "customresourcedefinitions", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || conflicted {
			return false, nil, nil
		}
		conflicted = true
		return true, nil, apierrors.NewConflict(CRDResource.GroupResource(), dsCRD, errors.New("the object has been modified"))
	})
	failuresBefore := failures(t, dsCRD)

	err := f.sync(dsCRD)
	if reason, wait := queue.IsNormalWait(err); !wait || reason != queue.WaitConflict {
		t.Fatalf("sync returned %v, want a Conflict wait", err)
	}
	if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("storedVersions %v after the conflict, want them kept", got)
	}
	if e := f.events(); len(e) != 0 {
		t.Errorf("events %v after the conflict, want none", e)
	}
	if got := failures(t, dsCRD) - failuresBefore; got != 0 {
		t.Errorf("errors counted %v for a conflict, want none", got)
	}

	f.client.ClearActions()
	if err := f.sync(dsCRD); err != nil {
		t.Fatalf("sync after the conflict: %v", err)
	}
	if got := f.statusUpdates(ds); !slices.Equal(got, keys) {
		t.Errorf("status updates of %v in the new pass, want %v", got, keys)
	}
	if got := f.storedVersions(dsCRD); !slices.Equal(got, []string{"v1beta1"}) {
		t.Errorf("storedVersions %v, want [v1beta1]", got)
	}
	if e := f.events(); !hasEvent(e, "Normal "+MigratedReason) {
		t.Errorf("events %v, want a Normal %s", e, MigratedReason)
	}
}

// A trim refused for another reason is a failure: Warning event, error counted.
func TestTrimFailureIsReported(t *testing.T) {
	f := newFixture(t, WithSettleDelay(0))
	f.addCRD(newCRD(niCRD))
	f.addObjects(niCRD, 1)
	f.client.PrependReactor("update", "customresourcedefinitions", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(CRDResource.GroupResource(), niCRD, errors.New("RBAC says no"))
	})
	failuresBefore := failures(t, niCRD)

	err := f.sync(niCRD)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("sync returned %v, want the Forbidden", err)
	}
	if _, wait := queue.IsNormalWait(err); wait {
		t.Errorf("sync error %v is a normal wait, want a failure", err)
	}
	if e := f.events(); !hasEvent(e, "Warning "+FailedReason, "RBAC says no") || hasEvent(e, "Normal "+MigratedReason) {
		t.Errorf("events %v, want only a Warning %s with the error", e, FailedReason)
	}
	if got := failures(t, niCRD) - failuresBefore; got != 1 {
		t.Errorf("errors counted %v, want 1", got)
	}
}
