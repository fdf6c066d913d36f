package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
)

// builtinPrefixes hold what a takeover must leave alone of the built-in kinds: pods,
// PersistentVolumeClaims and ControllerRevisions (kube-apiserver's default --etcd-prefix),
// which etcd holds as protobuf.
var builtinPrefixes = []string{"/registry/pods/", "/registry/persistentvolumeclaims/", "/registry/controllerrevisions/"}

// etcdPrefixes hold everything a takeover must leave alone or only rewrite: the objects of
// the seven kinds and builtinPrefixes.
func etcdPrefixes() []string {
	prefixes := slices.Clone(builtinPrefixes)
	for _, k := range takenOverKinds {
		prefixes = append(prefixes, "/registry/"+k.Group+"/"+k.Resource+"/")
	}
	return prefixes
}

// etcdEntry is one key as etcd holds it.
type etcdEntry struct {
	modRevision int64
	apiVersion  string // of custom resources, which are stored as JSON; "" for the others
}

// readEtcd returns every key under prefixes, read through etcd's JSON gateway: what the API
// server stored, whatever version a client would ask for, and when it last wrote it.
func (e *env) readEtcd(ctx context.Context) (map[string]etcdEntry, error) {
	out := map[string]etcdEntry{}
	for _, prefix := range etcdPrefixes() {
		entries, err := e.c.ControlPlane().ReadEtcd(ctx, prefix)
		if err != nil {
			return nil, err
		}
		for key, kv := range entries {
			entry := etcdEntry{modRevision: kv.ModRevision}
			if !slices.Contains(builtinPrefixes, prefix) {
				if entry.apiVersion, err = kv.StoredAPIVersion(); err != nil {
					return nil, err
				}
			}
			out[key] = entry
		}
	}
	return out, nil
}

// storedAs lists, sorted, the keys of custom resources stored in version.
func storedAs(entries map[string]etcdEntry, version string) []string {
	var keys []string
	for key, entry := range entries {
		if strings.HasSuffix(entry.apiVersion, "/"+version) {
			keys = append(keys, strings.TrimPrefix(key, "/registry/"))
		}
	}
	sort.Strings(keys)
	return keys
}

// changedKeys lists the keys written, added or removed between two reads of etcd.
func changedKeys(before, after map[string]etcdEntry) []string {
	var keys []string
	for key, b := range before {
		if a, ok := after[key]; !ok || a.modRevision != b.modRevision {
			keys = append(keys, key)
		}
	}
	for key := range after {
		if _, ok := before[key]; !ok {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}

// setStorageVersion makes version the storage version of the seven CRDs, keeping both
// versions served. With v1alpha1 the cluster stores new objects as OpenKruise up to 1.8 did;
// setting v1beta1 back is what applying OpenKruise 1.9's CRDs does to such a cluster.
func (e *env) setStorageVersion(ctx context.Context, version string) error {
	crds := e.dyn.Resource(crdResource)
	for _, k := range takenOverKinds {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crds.Get(ctx, k.crdName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			found := false
			for _, v := range versions {
				v := v.(map[string]any)
				v["storage"] = v["name"] == version
				found = found || v["name"] == version
			}
			if !found {
				return fmt.Errorf("CRD %s does not serve %s", k.crdName(), version)
			}
			if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
				return err
			}
			_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("making %s the storage version of CRD %s: %w", version, k.crdName(), err)
		}
	}
	return nil
}

// storedVersions returns status.storedVersions of the seven CRDs, by CRD name.
func (e *env) storedVersions(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for _, k := range takenOverKinds {
		crd, err := e.dyn.Resource(crdResource).Get(ctx, k.crdName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out[k.crdName()], _, _ = unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	}
	return out, nil
}
