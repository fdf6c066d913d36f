package conversion

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// migrationTimeout bounds the whole migration of 500 objects. It is shorter than the
	// migrator's default settle delay (2 min), so that a manager that ignored
	// --storage-version-migration-delay=0s fails the test.
	migrationTimeout = 90 * time.Second
	// createWorkers is how many objects the test creates at once.
	createWorkers = 16
)

// migrationKind is one kind whose objects the storage migration test stores as v1alpha1.
type migrationKind struct {
	kind, crd string
	count     int
	// etcdPrefix is where the API server keeps the namespace's objects of the kind.
	etcdPrefix func(namespace string) string
	create     func(ctx context.Context, e *testEnv, i int) (name string, generation int64, err error)
	// alphaViews lists the namespace's objects in v1alpha1, as identity by name.
	alphaViews func(ctx context.Context, e *testEnv) (map[string]alphaView, error)
	// betaGenerations lists metadata.generation of the namespace's objects, read in v1beta1.
	betaGenerations func(ctx context.Context, e *testEnv) (map[string]int64, error)
}

// alphaView is what a v1alpha1 reader sees of an object and a migration must not change.
type alphaView struct {
	UID         string
	Generation  int64
	Labels      map[string]string
	Annotations map[string]string
	Spec        any
}

func (v alphaView) equal(w alphaView) bool {
	return v.UID == w.UID && v.Generation == w.Generation && maps.Equal(v.Labels, w.Labels) &&
		maps.Equal(v.Annotations, w.Annotations) && apiequality.Semantic.DeepEqual(v.Spec, w.Spec)
}

func viewOf(meta metav1.ObjectMeta, spec any) alphaView {
	return alphaView{UID: string(meta.UID), Generation: meta.Generation, Labels: meta.Labels, Annotations: meta.Annotations, Spec: spec}
}

// migrationKinds are the kinds that convert through the webhook, with 500 objects between them,
// some carrying the annotations that become v1beta1 fields.
var migrationKinds = []migrationKind{
	{
		kind: "DaemonSet", crd: dsCRD, count: 200,
		etcdPrefix: func(ns string) string { return "/registry/apps.kruise.io/daemonsets/" + ns + "/" },
		create: func(ctx context.Context, e *testEnv, i int) (string, int64, error) {
			ds := alphaDaemonSet(fmt.Sprintf("ds-%03d", i))
			if i%2 == 0 {
				ds.Annotations = map[string]string{progressiveCreatePodKey: "true"}
			}
			created, err := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).Create(ctx, ds, metav1.CreateOptions{})
			if err != nil {
				return ds.Name, 0, err
			}
			return created.Name, created.Generation, nil
		},
		alphaViews: func(ctx context.Context, e *testEnv) (map[string]alphaView, error) {
			list, err := e.Bosun.AppsV1alpha1().DaemonSets(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return viewsOf(list.Items, func(ds *appsv1alpha1.DaemonSet) alphaView { return viewOf(ds.ObjectMeta, ds.Spec) }), nil
		},
		betaGenerations: func(ctx context.Context, e *testEnv) (map[string]int64, error) {
			list, err := e.Bosun.AppsV1beta1().DaemonSets(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := map[string]int64{}
			for _, ds := range list.Items {
				out[ds.Name] = ds.Generation
			}
			return out, nil
		},
	},
	{
		kind: "PodUnavailableBudget", crd: pubCRD, count: 150,
		etcdPrefix: func(ns string) string { return "/registry/policy.kruise.io/podunavailablebudgets/" + ns + "/" },
		create: func(ctx context.Context, e *testEnv, i int) (string, int64, error) {
			pub := alphaBudget(fmt.Sprintf("pub-%03d", i))
			if i%3 == 0 {
				pub.Annotations = map[string]string{protectTotalReplicasKey: "3", protectOperationsKey: "EVICT,DELETE"}
			}
			created, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).Create(ctx, pub, metav1.CreateOptions{})
			if err != nil {
				return pub.Name, 0, err
			}
			return created.Name, created.Generation, nil
		},
		alphaViews: func(ctx context.Context, e *testEnv) (map[string]alphaView, error) {
			list, err := e.Bosun.PolicyV1alpha1().PodUnavailableBudgets(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return viewsOf(list.Items, func(p *policyv1alpha1.PodUnavailableBudget) alphaView { return viewOf(p.ObjectMeta, p.Spec) }), nil
		},
		betaGenerations: func(ctx context.Context, e *testEnv) (map[string]int64, error) {
			list, err := e.Bosun.PolicyV1beta1().PodUnavailableBudgets(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := map[string]int64{}
			for _, p := range list.Items {
				out[p.Name] = p.Generation
			}
			return out, nil
		},
	},
	{
		kind: "ContainerRecreateRequest", crd: crrCRD, count: 150,
		etcdPrefix: func(ns string) string { return "/registry/apps.kruise.io/containerrecreaterequests/" + ns + "/" },
		create: func(ctx context.Context, e *testEnv, i int) (string, int64, error) {
			crr := alphaRequest(fmt.Sprintf("crr-%03d", i), fmt.Sprintf("pod-%03d", i), "app")
			created, err := e.Bosun.AppsV1alpha1().ContainerRecreateRequests(e.Namespace).Create(ctx, crr, metav1.CreateOptions{})
			if err != nil {
				return crr.Name, 0, err
			}
			return created.Name, created.Generation, nil
		},
		alphaViews: func(ctx context.Context, e *testEnv) (map[string]alphaView, error) {
			list, err := e.Bosun.AppsV1alpha1().ContainerRecreateRequests(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return viewsOf(list.Items, func(r *appsv1alpha1.ContainerRecreateRequest) alphaView { return viewOf(r.ObjectMeta, r.Spec) }), nil
		},
		betaGenerations: func(ctx context.Context, e *testEnv) (map[string]int64, error) {
			list, err := e.Bosun.AppsV1beta1().ContainerRecreateRequests(e.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := map[string]int64{}
			for _, r := range list.Items {
				out[r.Name] = r.Generation
			}
			return out, nil
		},
	},
}

// viewsOf returns the alphaView of each item, by name.
func viewsOf[T any, P interface {
	*T
	metav1.Object
}](items []T, view func(P) alphaView) map[string]alphaView {
	out := map[string]alphaView{}
	for i := range items {
		item := P(&items[i])
		out[item.GetName()] = view(item)
	}
	return out
}

// createAll creates kind's objects, createWorkers at a time, and returns their generations.
func (e *testEnv) createAll(t *testing.T, k migrationKind) map[string]int64 {
	t.Helper()
	var mu sync.Mutex
	generations := map[string]int64{}
	var errs []error
	next := make(chan int)
	var wg sync.WaitGroup
	for range createWorkers {
		wg.Go(func() {
			for i := range next {
				name, generation, err := k.create(e.Ctx, e, i)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("creating %s %s: %w", k.kind, name, err))
				} else {
					generations[name] = generation
				}
				mu.Unlock()
			}
		})
	}
	for i := range k.count {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d creations failed, the first: %v", len(errs), errs[0])
	}
	return generations
}

// expectStoredAs checks that etcd holds exactly want objects of k in the namespace, every one
// stored in apiVersion.
func (e *testEnv) expectStoredAs(t *testing.T, k migrationKind, want int, apiVersion string) {
	t.Helper()
	versions := e.storedAPIVersions(t, k.etcdPrefix(e.Namespace))
	if len(versions) != want {
		t.Errorf("etcd holds %d %s objects under %s, want %d", len(versions), k.kind, k.etcdPrefix(e.Namespace), want)
	}
	var wrong []string
	for key, v := range versions {
		if v != apiVersion {
			wrong = append(wrong, fmt.Sprintf("%s (%s)", key, v))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Errorf("%d of %d %s objects are not stored as %s, for example %s", len(wrong), len(versions), k.kind, apiVersion, wrong[0])
	}
}

// Objects an earlier release stored in v1alpha1: after the CRDs of this release are applied
// the storage version migrator (settle delay off) rewrites every one of them, so that etcd
// holds them in v1beta1, with the same identity, generation and v1alpha1 view, and trims
// status.storedVersions of all six CRDs to [v1beta1], saying so with an event on each.
func TestStorageVersionMigration(t *testing.T) {
	e := setupOwnControlPlane(t)
	dir := crdDir(t)
	if err := framework.InstallV1alpha1OnlyCRDs(e.Ctx, e.CP.Config(), dir); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	generations := map[string]map[string]int64{}
	total := 0
	for _, k := range migrationKinds {
		generations[k.kind] = e.createAll(t, k)
		total += k.count
	}
	t.Logf("created %d objects in v1alpha1 in %v", total, time.Since(began).Round(time.Millisecond))

	if err := framework.InstallCRDs(e.Ctx, e.CP.Config(), dir); err != nil {
		t.Fatal(err)
	}
	e.serveConversion(t)
	for _, name := range bosunCRDs {
		if got := storedVersions(e.crd(t, name)); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
			t.Fatalf("CRD %s has status.storedVersions %v after the upgrade, want [v1alpha1 v1beta1]", name, got)
		}
	}
	views := map[string]map[string]alphaView{}
	for _, k := range migrationKinds {
		e.expectStoredAs(t, k, k.count, k.group()+"/v1alpha1")
		var err error
		if views[k.kind], err = k.alphaViews(e.Ctx, e); err != nil {
			t.Fatalf("listing %s objects in v1alpha1: %v", k.kind, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	began = time.Now()
	framework.StartBosunControllerManager(t, e.CP, framework.ControllerManagerOptions{
		Controllers: "storageversionmigrator", ExtraArgs: []string{"--storage-version-migration-delay=0s"},
	})
	e.waitForStoredVersions(t, migrationTimeout, bosunCRDs, "v1beta1")
	t.Logf("migrated %d objects and trimmed storedVersions in %v", total, time.Since(began).Round(time.Millisecond))

	for _, k := range migrationKinds {
		e.expectStoredAs(t, k, k.count, k.group()+"/v1beta1")
		got, err := k.betaGenerations(e.Ctx, e)
		if err != nil {
			t.Fatalf("listing %s objects in v1beta1: %v", k.kind, err)
		}
		if !maps.Equal(got, generations[k.kind]) {
			t.Errorf("%s generations changed by the migration: %s", k.kind, generationChanges(generations[k.kind], got))
		}
		after, err := k.alphaViews(e.Ctx, e)
		if err != nil {
			t.Fatalf("listing %s objects in v1alpha1 after the migration: %v", k.kind, err)
		}
		var changed []string
		for name, before := range views[k.kind] {
			if now, ok := after[name]; !ok || !before.equal(now) {
				changed = append(changed, fmt.Sprintf("%s: %s, now %s", name, toJSON(before), toJSON(now)))
			}
		}
		if len(changed) > 0 || len(after) != len(views[k.kind]) {
			slices.Sort(changed)
			t.Errorf("%d of %d %s objects read differently in v1alpha1 after the migration (%d now), for example %v",
				len(changed), len(views[k.kind]), k.kind, len(after), changed[:min(len(changed), 1)])
		}
	}
	for _, name := range bosunCRDs {
		e.WaitForEvent(t, "", "CustomResourceDefinition", name, "a Normal StorageVersionMigrated event", func(ev *corev1.Event) bool {
			return ev.Type == corev1.EventTypeNormal && ev.Reason == "StorageVersionMigrated"
		})
	}
}

// group is the API group of the kind's objects.
func (k migrationKind) group() string {
	_, group, _ := strings.Cut(k.crd, ".")
	return group
}

// generationChanges lists the objects whose generation differs between before and after.
func generationChanges(before, after map[string]int64) string {
	var changes []string
	for name, g := range before {
		if a, ok := after[name]; !ok || a != g {
			changes = append(changes, fmt.Sprintf("%s %d→%d", name, g, a))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			changes = append(changes, name+" appeared")
		}
	}
	slices.Sort(changes)
	if len(changes) > 5 {
		changes = append(changes[:5], fmt.Sprintf("… %d in all", len(changes)))
	}
	return strings.Join(changes, ", ")
}
