package conversion

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// kruiseControllers are the controllers of the kinds that convert through the webhook.
	kruiseControllers = "advanceddaemonset,podunavailablebudget,containerrecreaterequest"
	// notSyncedWindow is how long informers that must not sync are watched not syncing; with
	// the conversion webhook up they sync in well under a second here.
	notSyncedWindow = 5 * time.Second
	// conversionFailure is how the API server reports a DaemonSet it could not convert.
	conversionFailure = "conversion webhook for apps.kruise.io/v1beta1, Kind=DaemonSet failed"
)

// expectAlphaReadFails waits until a v1alpha1 read of DaemonSet name fails for want of a
// conversion webhook (the API server needs a moment to use a changed clientConfig), with
// the API server's error.
func (e *testEnv) expectAlphaReadFails(t *testing.T, name string) {
	t.Helper()
	var lastErr error
	e.Await(t, "a v1alpha1 read of DaemonSet "+name+" to fail on the conversion webhook", func(ctx context.Context) (bool, error) {
		_, lastErr = e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		return lastErr != nil && strings.Contains(lastErr.Error(), conversionFailure), nil
	}, func() string { return fmt.Sprintf("error %v", lastErr) })
	if code := framework.StatusCode(lastErr); code != http.StatusInternalServerError {
		t.Errorf("a v1alpha1 read without conversion webhook answered HTTP %d (%v), want 500", code, lastErr)
	}
}

// expectInformersNotSynced waits until cm's informer-sync readiness check fails naming the
// informers of kinds (the check passes until the informers are started), then checks that
// it keeps failing for notSyncedWindow.
func (e *testEnv) expectInformersNotSynced(t *testing.T, cm *framework.ControllerManager, kinds ...string) {
	t.Helper()
	var code int
	var body string
	e.Await(t, "informer-sync to fail naming the informers of "+strings.Join(kinds, ", "), func(context.Context) (bool, error) {
		code, body = e.readyCheck(cm, "informer-sync")
		if code == http.StatusOK {
			return false, nil
		}
		for _, kind := range kinds {
			if !strings.Contains(body, kind) {
				return false, nil
			}
		}
		return true, nil
	}, func() string { return fmt.Sprintf("%d %s", code, body) })
	for deadline := time.Now().Add(notSyncedWindow); time.Now().Before(deadline); time.Sleep(framework.PollInterval) {
		if code, body = e.readyCheck(cm, "informer-sync"); code == http.StatusOK {
			t.Fatalf("informer-sync passed although objects stored in v1alpha1 cannot be converted:\n%s", body)
		}
	}
}

// expectInformersSynced waits until cm's informer-sync readiness check passes. It is awaited,
// not read once, even after other controllers' writes: for a second or so after a CRD's
// clientConfig changes, the API server rebuilds that CRD's watch cache and answers an
// informer's first list with 429 and Retry-After: 1, so informers of different CRDs sync
// about a second apart.
func (e *testEnv) expectInformersSynced(t *testing.T, cm *framework.ControllerManager) {
	t.Helper()
	var code int
	var body string
	e.Await(t, "informer-sync to pass without conversion webhook", func(context.Context) (bool, error) {
		code, body = e.readyCheck(cm, "informer-sync")
		return code == http.StatusOK, nil
	}, func() string { return fmt.Sprintf("%d %s", code, body) })
}

// Without any conversion webhook answering, a v1alpha1 read of a DaemonSet stored in v1beta1
// fails on it, while the v1beta1 read works; the controllers, which use v1beta1 only, cannot
// sync their informers while objects stored in v1alpha1 remain, and can once the storage
// migration has rewritten them all; and once conversion is back, v1alpha1 readers get what
// they got before.
func TestConversionWebhookDown(t *testing.T) {
	e := setupOwnControlPlane(t)
	dir := crdDir(t)
	if err := framework.InstallV1alpha1OnlyCRDs(e.Ctx, e.CP.Config(), dir); err != nil {
		t.Fatal(err)
	}
	// Written by the previous release, stored in v1alpha1.
	e.DaemonSets().Create(t, alphaDaemonSet("stored-alpha"))
	e.PodUnavailableBudgets().Create(t, alphaBudget("stored-alpha"))
	e.ContainerRecreateRequests().Create(t, alphaRequest("stored-alpha", "web", "app"))
	if err := framework.InstallCRDs(e.Ctx, e.CP.Config(), dir); err != nil {
		t.Fatal(err)
	}
	e.serveConversion(t)
	// Written after the upgrade, stored in v1beta1.
	storedBeta := e.betaDaemonSets().Create(t, betaDaemonSet("stored-beta"))
	alphaBefore := map[string]*appsv1alpha1.DaemonSet{}
	for _, name := range []string{"stored-alpha", "stored-beta"} {
		alphaBefore[name] = e.DaemonSets().Get(t, name)
	}

	// Every replica stopped: nothing answers the conversion webhook.
	e.pointConversionAt(t, unreachableURL(t))
	e.expectAlphaReadFails(t, "stored-beta")
	beta, err := e.Bosun.AppsV1beta1().DaemonSets(e.Namespace).Get(e.Ctx, "stored-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a v1beta1 read of a DaemonSet stored in v1beta1 failed without conversion webhook: %v", err)
	}
	if !sameBetaDaemonSet(beta, storedBeta) {
		t.Errorf("v1beta1 read without conversion webhook = %s, want %s", toJSON(beta), toJSON(storedBeta))
	}
	if _, err := e.Bosun.AppsV1beta1().DaemonSets(e.Namespace).List(e.Ctx, metav1.ListOptions{}); err == nil ||
		!strings.Contains(err.Error(), "conversion webhook") {
		t.Errorf("a v1beta1 list holding a DaemonSet stored in v1alpha1 answered %v, want a conversion webhook failure", err)
	}

	// Before the migration the controllers' informers cannot list what is stored in v1alpha1.
	before := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: kruiseControllers})
	e.expectInformersNotSynced(t, before, "DaemonSet", "PodUnavailableBudget", "ContainerRecreateRequest")
	before.Stop(framework.DefaultStopGracePeriod)

	// The migration, with conversion back.
	e.serveConversion(t)
	migrator := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Controllers: "storageversionmigrator", ExtraArgs: []string{"--storage-version-migration-delay=0s"},
	})
	e.waitForStoredVersions(t, migrationTimeout, webhookCRDs, "v1beta1")
	migrator.Stop(framework.DefaultStopGracePeriod)

	// Down again, but the controllers no longer need it.
	e.pointConversionAt(t, unreachableURL(t))
	e.expectAlphaReadFails(t, "stored-alpha")
	after := framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{Controllers: kruiseControllers})
	// The controllers sync only once their caches have: their status writes show they did.
	for _, name := range []string{"stored-alpha", "stored-beta"} {
		e.betaDaemonSets().WaitFor(t, name, "status of the current generation from the controller", func(ds *appsv1beta1.DaemonSet) bool {
			return ds.Status.ObservedGeneration == ds.Generation
		})
	}
	framework.NewObjects(e.Env, "PodUnavailableBudget", e.Namespace, e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace)).
		WaitFor(t, "stored-alpha", "status of the current generation from the controller", func(pub *policyv1beta1.PodUnavailableBudget) bool {
			return pub.Status.ObservedGeneration == pub.Generation
		})
	framework.NewObjects(e.Env, "ContainerRecreateRequest", e.Namespace, e.Bosun.AppsV1beta1().ContainerRecreateRequests(e.Namespace)).
		WaitFor(t, "stored-alpha", "completed by the controller, its pod being gone", func(r *appsv1beta1.ContainerRecreateRequest) bool {
			return r.Status.CompletionTime != nil
		})
	e.expectInformersSynced(t, after)
	after.Stop(framework.DefaultStopGracePeriod)

	// Conversion back: v1alpha1 readers see what they saw before.
	e.serveConversion(t)
	for name, want := range alphaBefore {
		var got *appsv1alpha1.DaemonSet
		e.Await(t, "a v1alpha1 read of DaemonSet "+name+" with conversion back", func(ctx context.Context) (bool, error) {
			var err error
			got, err = e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Get(ctx, name, metav1.GetOptions{})
			return err == nil, err
		}, nil)
		if got.UID != want.UID || got.Generation != want.Generation || !maps.Equal(got.Labels, want.Labels) ||
			!maps.Equal(got.Annotations, want.Annotations) || !apiequality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("v1alpha1 read of DaemonSet %s after the outage = %s, want %s", name, toJSON(got), toJSON(want))
		}
	}
}

// sameBetaDaemonSet compares what a client wrote of two reads of one DaemonSet.
func sameBetaDaemonSet(a, b *appsv1beta1.DaemonSet) bool {
	return a.UID == b.UID && a.ResourceVersion == b.ResourceVersion && maps.Equal(a.Labels, b.Labels) &&
		maps.Equal(a.Annotations, b.Annotations) && apiequality.Semantic.DeepEqual(a.Spec, b.Spec)
}
