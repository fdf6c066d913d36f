package garbagecollector

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const reasonInvalidNamespace = "OwnerRefInvalidNamespace"

// Scenario 12: children that name an owner by the UID of an object in another namespace (an
// owner reference can only mean the child's own namespace) are deleted and marked with a
// Warning event; the owner's real children stay, and so does the owner in the graph. Run with
// the API server's watch cache on (the shared control plane) and off (its own).
func TestCrossNamespaceReferences(t *testing.T) {
	t.Run("with watch cache", func(t *testing.T) {
		testCrossNamespaceReferences(t, setup(t))
	})
	t.Run("without watch cache", func(t *testing.T) {
		cp := framework.StartTestControlPlane(t, framework.Options{APIServerArgs: []string{"--watch-cache=false"}})
		testCrossNamespaceReferences(t, setupOn(t, cp))
	})
}

func testCrossNamespaceReferences(t *testing.T, e *env) {
	const (
		workers       = 5 // as upstream's test: as many invalid children of each sort as its collector's workers
		validChildren = 10
		singleBadRef  = "single-bad-reference"
	)
	nsB, nsA := e.Namespace, e.newNamespace()
	parent := e.createConfigMap(nsB, newConfigMap("p"))
	for i := range validChildren {
		e.createSecret(nsB, fmt.Sprintf("child-%d", i), nil, cmRef(parent))
	}
	// In namespace a: the parent's UID as a Pod, alone or after 25 references to kinds that
	// do not exist.
	asPod := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "invalid", UID: parent.UID, Controller: ptr.To(false)}
	var invalidRefs []metav1.OwnerReference
	for i := range 25 {
		invalidRefs = append(invalidRefs, metav1.OwnerReference{APIVersion: "test/v1", Kind: fmt.Sprintf("invalid%d", i), Name: "invalid", UID: uuid.NewUUID()})
	}
	invalidRefs = append(invalidRefs, asPod)
	for i := range workers {
		e.createConfigMap(nsA, newConfigMap(fmt.Sprintf("invalid-child-%d", i), invalidRefs...))
		e.createSecret(nsA, fmt.Sprintf("invalid-child-a-%d", i), nil, invalidRefs...)
		e.createSecret(nsA, fmt.Sprintf("invalid-child-b-%d", i), map[string]string{singleBadRef: "true"}, asPod)
	}

	// Started with everything in place, as after a restart of the collector.
	e.startCollector(collectorOptions{})
	e.waitFor("the collector to delete the children referencing the parent as a Pod", waitTimeout, func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Secrets(nsA).List(ctx, metav1.ListOptions{LabelSelector: singleBadRef + "=true"})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
	e.observe()
	// The children that also name 25 kinds that do not exist are not checked: resolving
	// those kinds fails, and the collector retries them (quietly) rather than delete on an
	// error; what matters is that they hold up nothing else. Upstream keeps them too.
	if n := e.countExisting(nsA, "invalid-child-", "invalid-child-a-", workers); n > 0 {
		t.Logf("%d of the %d children that also name unknown kinds remain", n, 2*workers)
	}
	if list, err := e.Client.CoreV1().Secrets(nsB).List(e.Ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	} else if len(list.Items) != validChildren {
		t.Errorf("%d valid children remain in the parent's namespace, want %d", len(list.Items), validChildren)
	}
	if g, err := e.gc.graph(parent.UID); err != nil {
		t.Error(err)
	} else if !g.has(parent.UID) || g.flag(parent.UID, "virtual") || g.vertices[parent.UID]["kind"] != "ConfigMap" {
		t.Errorf("the parent is not an observed ConfigMap in the collector's graph:\n%s", g.text)
	}

	// The simplest form: a Secret in namespace a naming the parent, rightly as a ConfigMap,
	// but the parent's namespace is b.
	child := e.createSecret(nsA, "s", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: parent.Name, UID: parent.UID})
	want := fmt.Sprintf(`ownerRef [v1/ConfigMap, namespace: %s, name: %s, uid: %s] does not exist in namespace %q`, nsA, parent.Name, parent.UID, nsA)
	event := e.waitEvent(nsA, child.UID, reasonInvalidNamespace)
	if event.Type != corev1.EventTypeWarning || event.Message != want || event.Source.Component != controllerName {
		t.Errorf("event %s: type %q, message %q, source %q; want %q, %q, %q",
			reasonInvalidNamespace, event.Type, event.Message, event.Source.Component, corev1.EventTypeWarning, want, controllerName)
	}
	e.waitGone("Secret "+nsA+"/"+child.Name, func(ctx context.Context) error {
		_, err := e.Client.CoreV1().Secrets(nsA).Get(ctx, child.Name, metav1.GetOptions{})
		return err
	})

	// A new invalid child, now that the graph holds the parent.
	late := e.createSecret(nsA, "invalid-child-c", nil, asPod)
	e.waitGone("Secret "+nsA+"/"+late.Name, func(ctx context.Context) error {
		_, err := e.Client.CoreV1().Secrets(nsA).Get(ctx, late.Name, metav1.GetOptions{})
		return err
	})
}

// countExisting counts the ConfigMaps <cmPrefix><i> and Secrets <secretPrefix><i> (i < n) in ns.
func (e *env) countExisting(ns, cmPrefix, secretPrefix string, n int) int {
	e.t.Helper()
	count := 0
	for i := range n {
		if _, err := e.Client.CoreV1().ConfigMaps(ns).Get(e.Ctx, fmt.Sprintf("%s%d", cmPrefix, i), metav1.GetOptions{}); err == nil {
			count++
		}
		if _, err := e.Client.CoreV1().Secrets(ns).Get(e.Ctx, fmt.Sprintf("%s%d", secretPrefix, i), metav1.GetOptions{}); err == nil {
			count++
		}
	}
	return count
}

func (e *env) createSecret(ns, name string, labels map[string]string, refs ...metav1.OwnerReference) *corev1.Secret {
	e.t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: refs}}
	created, err := e.Client.CoreV1().Secrets(ns).Create(e.Ctx, secret, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating Secret %s/%s: %v", ns, name, err)
	}
	return created
}

// waitEvent waits for an Event with the given reason about the object uid in ns.
func (e *env) waitEvent(ns string, uid types.UID, reason string) corev1.Event {
	e.t.Helper()
	var found corev1.Event
	selector := fields.Set{"involvedObject.uid": string(uid), "reason": reason}.String()
	e.waitFor(fmt.Sprintf("an Event %s about %s", reason, uid), waitTimeout, func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		found = list.Items[0]
		return true, nil
	})
	return found
}

// Scenario 13: dependents of a cluster-scoped owner (a PersistentVolume) stay while it exists,
// even while the collector's watch of PersistentVolumes lags 30 s behind (it must then ask the
// API server rather than take the owner for absent); one whose owner is missing is deleted;
// one whose owner's kind does not exist is never deleted.
func TestClusterScopedOwners(t *testing.T) {
	e := setup(t)
	proxy := newAPIProxy(t, e.CP, proxyOptions{delayWatchOf: "persistentvolumes", delay: 30 * time.Second})
	e.startCollector(collectorOptions{kubeconfig: proxy.kubeconfig})
	// Once the collector works (it may wait up to its initial sync timeout for a monitor
	// whose first events are delayed), it has listed PersistentVolumes: the new one reaches
	// it only through the delayed watch.
	e.caughtUp()

	pvs := e.Client.CoreV1().PersistentVolumes()
	pv, err := pvs.Create(e.Ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-valid-"},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/foo"}},
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The pv-protection finalizer has no controller here to remove it.
		ctx := context.Background()
		_, _ = pvs.Patch(ctx, pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err := pvs.Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting PersistentVolume %s: %v", pv.Name, err)
		}
	})
	valid := e.createConfigMap(e.Namespace, newConfigMap("cm-valid", ref("v1", "PersistentVolume", pv, nil)))
	missing := e.createConfigMap(e.Namespace, newConfigMap("cm-missing", missingRef("v1", "PersistentVolume", "missing-name")))
	unknownKind := e.createConfigMap(e.Namespace, newConfigMap("cm-invalid", missingRef("unknown.group/v1", "UnknownType", "invalid-name")))

	e.waitFor("the dependent of the missing PersistentVolume to be deleted", stressTimeout, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Get(ctx, missing.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	e.observe()
	if gets := e.requests(e.byProcess(about("persistentvolumes", "", pv.Name))); len(gets) == 0 {
		t.Errorf("the collector never asked the API server about PersistentVolume %s, which its lagging watch had not shown it yet", pv.Name)
	}
	for _, cm := range []*corev1.ConfigMap{valid, unknownKind} {
		got, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Get(e.Ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", cm.Name, err)
			continue
		}
		if got.DeletionTimestamp != nil || !slices.Equal(ownerUIDs(got), ownerUIDs(cm)) {
			t.Errorf("%s was changed: deletionTimestamp %v, owners %v", cm.Name, got.DeletionTimestamp, got.OwnerReferences)
		}
	}
}

// Scenario 14: a cluster-scoped object naming a namespaced kind (a ConfigMap) as its owner is
// never deleted, whether a ConfigMap with that UID exists or not, and the collector does not
// retry it in a loop: once it has looked at the object, it sends no further request about it.
func TestClusterScopedChildOfNamespacedOwner(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{})
	owner := e.createConfigMap(e.Namespace, newConfigMap("owner"))
	roles := e.Client.RbacV1().ClusterRoles()
	create := func(suffix string, owner metav1.OwnerReference) *rbacv1.ClusterRole {
		role, err := roles.Create(e.Ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
			Name:            e.Namespace + "-" + suffix,
			OwnerReferences: []metav1.OwnerReference{owner},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := roles.Delete(context.Background(), role.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: deleting ClusterRole %s: %v", role.Name, err)
			}
		})
		return role
	}
	children := []*rbacv1.ClusterRole{
		create("existing-owner", cmRef(owner)),
		create("missing-owner", missingRef("v1", "ConfigMap", "missing")),
	}
	requestsAbout := func(role *rbacv1.ClusterRole) []auditv1.Event {
		return e.requests(e.byProcess(about("clusterroles", "", role.Name)))
	}

	// The collector looks at the child whose owner's UID it knows (it is suspect).
	e.waitFor("the collector's first look at "+children[0].Name, waitTimeout, func(context.Context) (bool, error) {
		return len(requestsAbout(children[0])) > 0, nil
	})
	e.caughtUp() // its first attempt is over
	first := map[string][]auditv1.Event{}
	for _, role := range children {
		first[role.Name] = requestsAbout(role)
	}
	e.observe()
	for _, role := range children {
		before, after := first[role.Name], requestsAbout(role)
		if len(after) != len(before) {
			t.Errorf("the collector keeps sending requests about %s: %d in its first attempt, %d since:%s",
				role.Name, len(before), len(after)-len(before), describe(after))
		}
		if len(before) > 3 {
			t.Errorf("the collector's first attempt at %s took %d requests:%s", role.Name, len(before), describe(before))
		}
		got, err := roles.Get(e.Ctx, role.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", role.Name, err)
			continue
		}
		if got.DeletionTimestamp != nil || got.ResourceVersion != role.ResourceVersion {
			t.Errorf("%s was changed: deletionTimestamp %v, resourceVersion %s, created as %s", role.Name, got.DeletionTimestamp, got.ResourceVersion, role.ResourceVersion)
		}
	}
}
