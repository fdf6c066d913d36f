package storageversionmigrator

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What the sync reads from a CRD. The CRD is unstructured: a field of the wrong type reads
// as absent, which keeps the controller waiting rather than acting on a guess.

// isManaged reports whether bosun manages crd.
func isManaged(crd *unstructured.Unstructured) bool {
	return crd.GetLabels()[ManagedByLabel] == ManagedByValue
}

// storedVersions returns crd's status.storedVersions.
func storedVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return versions
}

// needsMigration reports whether stored names any version but TargetVersion: etcd may
// hold objects in it.
func needsMigration(stored []string) bool {
	return slices.ContainsFunc(stored, func(v string) bool { return v != TargetVersion })
}

// storesTarget reports whether TargetVersion is crd's storage version and is served: new
// writes are stored in it, and the pass can list in it.
func storesTarget(crd *unstructured.Unstructured) bool {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(version, "name")
		storage, _, _ := unstructured.NestedBool(version, "storage")
		served, _, _ := unstructured.NestedBool(version, "served")
		if storage {
			return name == TargetVersion && served
		}
	}
	return false
}

// isEstablished reports whether crd's Established condition is True: the API server
// serves its resource.
func isEstablished(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		condition, ok := c.(map[string]any)
		if !ok {
			continue
		}
		conditionType, _, _ := unstructured.NestedString(condition, "type")
		status, _, _ := unstructured.NestedString(condition, "status")
		if conditionType == "Established" {
			return status == "True"
		}
	}
	return false
}

// conversionConfigured reports whether the API server can convert crd's objects between
// versions: always with strategy None (or none given), and with strategy Webhook once the
// client configuration carries the CA bundle that makes the webhook's certificate trusted.
func conversionConfigured(crd *unstructured.Unstructured) bool {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if strategy != "Webhook" {
		return true
	}
	caBundle, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	return caBundle != ""
}

// migratedResource returns the resource of crd's objects in TargetVersion.
func migratedResource(crd *unstructured.Unstructured) schema.GroupVersionResource {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	return schema.GroupVersionResource{Group: group, Version: TargetVersion, Resource: plural}
}
