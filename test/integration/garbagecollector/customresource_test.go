package garbagecollector

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Scenario 9 (upstream's TestCustomResourceCascadingDeletion and TestMixedRelationships):
// custom resources own and are owned like built-in objects. A Widget owning a Widget and a
// Widget owning a ConfigMap, deleted in the foreground, and a ConfigMap owning a Widget,
// deleted in the background: each dependent is deleted. A Widget that also has a solid owner
// only loses the deleted owner's reference (custom resources take no strategic merge patch).
func TestCustomResourceCascadingDeletion(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	widgets := e.Dynamic.Resource(widgetGVR).Namespace(e.Namespace)
	configMaps := e.Client.CoreV1().ConfigMaps(e.Namespace)

	customOwner := e.createWidget(newWidget("custom-owner"))
	customDependent := e.createWidget(newWidget("custom-dependent", widgetRef(customOwner)))
	coreDependent := e.createConfigMap(e.Namespace, newConfigMap("core-dependent", widgetRef(customOwner)))
	solid := e.createConfigMap(e.Namespace, newConfigMap("solid"))
	shared := e.createWidget(newWidget("shared-dependent", widgetRef(customOwner), cmRef(solid)))
	coreOwner := e.createConfigMap(e.Namespace, newConfigMap("core-owner"))
	customOfCore := e.createWidget(newWidget("custom-of-core", cmRef(coreOwner)))

	if err := widgets.Delete(e.Ctx, customOwner.GetName(), foreground); err != nil {
		t.Fatal(err)
	}
	e.waitGone("custom owner "+customOwner.GetName(), func(ctx context.Context) error {
		_, err := widgets.Get(ctx, customOwner.GetName(), metav1.GetOptions{})
		return err
	})
	e.waitGone("custom dependent "+customDependent.GetName(), func(ctx context.Context) error {
		_, err := widgets.Get(ctx, customDependent.GetName(), metav1.GetOptions{})
		return err
	})
	e.waitGone("core dependent "+coreDependent.Name, func(ctx context.Context) error {
		_, err := configMaps.Get(ctx, coreDependent.Name, metav1.GetOptions{})
		return err
	})
	e.waitFor("the shared dependent to keep only the solid owner's reference", waitTimeout, func(ctx context.Context) (bool, error) {
		got, err := widgets.Get(ctx, shared.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Equal(ownerUIDs(got), []types.UID{solid.UID}), nil
	})

	if err := configMaps.Delete(e.Ctx, coreOwner.Name, background); err != nil {
		t.Fatal(err)
	}
	e.waitGone("custom dependent "+customOfCore.GetName(), func(ctx context.Context) error {
		_, err := widgets.Get(ctx, customOfCore.GetName(), metav1.GetOptions{})
		return err
	})
	if got, err := widgets.Get(e.Ctx, shared.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("the dependent with a solid owner: %v", err)
	} else if got.GetDeletionTimestamp() != nil {
		t.Errorf("the dependent with a solid owner is being deleted")
	}
}

// Scenario 10: deleting a CRD deletes its instances (the API server does that), and then the
// collector deletes what they owned.
func TestCRDDeletionCascading(t *testing.T) {
	const crdName = "gadgets.gc.integration.bosun.dev"
	gadgetGVR := schema.GroupVersionResource{Group: "gc.integration.bosun.dev", Version: "v1", Resource: "gadgets"}
	e := setup(t)
	crds := e.Dynamic.Resource(crdGVR)
	if err := framework.InstallCRDs(e.Ctx, e.CP.Config(), "testdata/crd-deletion"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := crds.Delete(context.Background(), crdName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting CRD %s: %v", crdName, err)
		}
	})
	// Installed before the collector starts, so its first discovery lists gadgets.
	e.startCollector(collectorOptions{})

	gadget := &unstructured.Unstructured{}
	gadget.SetAPIVersion(gadgetGVR.GroupVersion().String())
	gadget.SetKind("Gadget")
	gadget.SetName("owner")
	owner, err := e.Dynamic.Resource(gadgetGVR).Namespace(e.Namespace).Create(e.Ctx, gadget, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent := e.createConfigMap(e.Namespace, newConfigMap("dependent", ref(gadgetGVR.GroupVersion().String(), "Gadget", owner, nil)))
	e.waitInGraph(dependent.UID, owner.GetUID())

	if err := crds.Delete(e.Ctx, crdName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The CRD goes once the API server has deleted its instances.
	e.waitGone("CRD "+crdName, func(ctx context.Context) error {
		_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		return err
	})
	e.waitGone("the Gadget's dependent ConfigMap", func(ctx context.Context) error {
		_, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Get(ctx, dependent.Name, metav1.GetOptions{})
		return err
	})
}

// Scenario 11: a custom resource whose objects cannot be listed (their conversion webhook
// fails, so the collector's monitor of it never syncs) does not stop the collector: a
// background cascade of a built-in owner still happens. On a control plane of its own, since
// the broken resource would slow down every later collector's start.
func TestCascadingDeleteOnCRDConversionFailure(t *testing.T) {
	sprocketsV1 := schema.GroupVersionResource{Group: "gc.integration.bosun.dev", Version: "v1", Resource: "sprockets"}
	sprocketsV2 := schema.GroupVersionResource{Group: "gc.integration.bosun.dev", Version: "v2", Resource: "sprockets"}

	cp := framework.StartTestControlPlane(t, framework.Options{})
	e := setupOn(t, cp)

	// The conversion webhook: a real TLS server that fails every conversion.
	var conversions atomic.Int64
	webhook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conversions.Add(1)
		http.Error(w, "this conversion webhook is broken on purpose", http.StatusInternalServerError)
	}))
	webhook.StartTLS()
	t.Cleanup(webhook.Close)
	template, err := os.ReadFile("testdata/conversion/sprockets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: webhook.Certificate().Raw})
	crd := strings.NewReplacer(
		"WEBHOOK_URL", webhook.URL+"/convert",
		"WEBHOOK_CA_BUNDLE", base64.StdEncoding.EncodeToString(caPEM),
	).Replace(string(template))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sprockets.yaml"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := framework.InstallCRDs(e.Ctx, cp.Config(), dir); err != nil {
		t.Fatal(err)
	}

	// Stored as v1, which needs no conversion; discovery prefers v2, which does.
	sprocket := &unstructured.Unstructured{}
	sprocket.SetAPIVersion(sprocketsV1.GroupVersion().String())
	sprocket.SetKind("Sprocket")
	sprocket.SetName("stored-as-v1")
	if _, err := e.Dynamic.Resource(sprocketsV1).Namespace(e.Namespace).Create(e.Ctx, sprocket, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dynamic.Resource(sprocketsV2).List(e.Ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("listing sprockets as v2 succeeded; the scenario needs the conversion to fail")
	}
	before := conversions.Load()
	if before == 0 {
		t.Fatal("listing sprockets as v2 failed without calling the conversion webhook")
	}

	e.startCollector(collectorOptions{})
	rc := e.ReplicationControllers().Create(e.t, newRC("owner"))
	pod := e.Pods().Create(e.t, newPod("dependent", rcRef(rc, nil)))
	e.ReplicationControllers().DeleteWith(e.t, rc.Name, background)
	// The collector may first wait for its monitors, up to its initial sync timeout (30 s).
	e.Pods().WaitForGone(e.t, pod.Name)
	if conversions.Load() == before {
		t.Errorf("the collector never listed sprockets, so the scenario did not test a monitor that cannot sync")
	}
}
