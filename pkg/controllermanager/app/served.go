package app

import (
	"fmt"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
)

// The OpenKruise-compatible controllers work on v1beta1, the version their CRDs store, and
// nothing older: a cluster that still has the CRDs of a release that served only v1alpha1
// gets its controllers once the new CRDs are applied, without a restart.
var (
	appsHub   = appsv1beta1.SchemeGroupVersion
	policyHub = policyv1beta1.SchemeGroupVersion
)

// requireServed returns nil when the API server serves every resource of gv (the hub
// version of its group); NotYetServed when it serves one of them only in another version
// of the group, so that the manager waits for the new CRDs; and NotBuilt when one is not
// served at all: a cluster without bosun's CRDs has nothing for the controller to do.
func requireServed(client discovery.DiscoveryInterface, gv schema.GroupVersion, resources ...string) error {
	for _, resource := range resources {
		served, err := servesResource(client, gv.String(), resource)
		if err != nil {
			return fmt.Errorf("looking up %s %s in discovery: %w", gv, resource, err)
		}
		if served {
			continue
		}
		older, err := servedInOtherVersion(client, gv, resource)
		if err != nil {
			return err
		}
		if older != "" {
			return registry.NotYetServed(fmt.Sprintf("the API server serves %s %s but not %s: apply bosun's CRDs (config/crd)", older, resource, gv.Version))
		}
		return registry.NotBuilt(fmt.Sprintf("the API server does not serve %s %s; install bosun's CRDs (config/crd) and restart", gv, resource))
	}
	return nil
}

// servedInOtherVersion returns a version of gv's group other than gv's in which the API
// server serves resource, or "".
func servedInOtherVersion(client discovery.DiscoveryInterface, gv schema.GroupVersion, resource string) (string, error) {
	groups, err := client.ServerGroups()
	if err != nil {
		return "", fmt.Errorf("listing API groups in discovery: %w", err)
	}
	for _, group := range groups.Groups {
		if group.Name != gv.Group {
			continue
		}
		for _, version := range group.Versions {
			if version.Version == gv.Version {
				continue
			}
			served, err := servesResource(client, version.GroupVersion, resource)
			if err != nil {
				return "", fmt.Errorf("looking up %s %s in discovery: %w", version.GroupVersion, resource, err)
			}
			if served {
				return version.GroupVersion, nil
			}
		}
	}
	return "", nil
}

// informerIfServed returns the informer newInformer makes when the API server serves
// resource in gv, and nil when it does not: an informer of a resource that is not served
// would never sync, and the manager would never become ready. This is the one way an
// optional informer reaches its controller: a NewController argument that is nil when the
// resource is not served.
func informerIfServed[I any](client discovery.DiscoveryInterface, gv schema.GroupVersion, resource string, newInformer func() I) (I, error) {
	var none I
	served, err := servesResource(client, gv.String(), resource)
	if err != nil {
		return none, fmt.Errorf("looking up %s %s in discovery: %w", gv, resource, err)
	}
	if !served {
		return none, nil
	}
	return newInformer(), nil
}

// servesResource reports whether the API server serves resource in groupVersion.
func servesResource(client discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	resources, err := client.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range resources.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
