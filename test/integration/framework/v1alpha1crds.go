package framework

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// InstallV1alpha1OnlyCRDs installs the CustomResourceDefinitions under dir as a release
// that served only v1alpha1 had them: each keeps just its v1alpha1 version, served and
// stored, and has no spec.conversion. Objects created then are stored as v1alpha1 in
// etcd, which is what upgrade and storage-migration tests start from before they install
// the current CRDs over them with InstallCRDs (and, for the kinds that convert through a
// webhook, ServeConversion).
//
// It is meant for a control plane of the test's own: over CRDs that already have v1beta1
// in status.storedVersions the API server refuses to drop that version.
func InstallV1alpha1OnlyCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	crds, err := readCRDs(dir)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := keepOnlyV1alpha1(crd); err != nil {
			return err
		}
	}
	if err := installCRDObjects(ctx, cfg, crds); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Installed v1alpha1-only CRDs", "dir", dir, "count", len(crds))
	return nil
}

// keepOnlyV1alpha1 rewrites crd in place to serve and store v1alpha1 alone.
func keepOnlyV1alpha1(crd *unstructured.Unstructured) error {
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		return fmt.Errorf("reading the versions of CRD %s: %w", crd.GetName(), err)
	}
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if !ok || version["name"] != "v1alpha1" {
			continue
		}
		version["served"] = true
		version["storage"] = true
		if err := unstructured.SetNestedSlice(crd.Object, []any{version}, "spec", "versions"); err != nil {
			return fmt.Errorf("setting the versions of CRD %s: %w", crd.GetName(), err)
		}
		// With one version there is nothing to convert; a Webhook strategy would also
		// point the API server at a conversion server that need not be running.
		unstructured.RemoveNestedField(crd.Object, "spec", "conversion")
		return nil
	}
	return fmt.Errorf("CRD %s has no v1alpha1 version", crd.GetName())
}
