package api

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// object is what every generated type is: an API object with metadata.
type object interface {
	metav1.Object
	runtime.Object
}

// typedClient is the part of a generated typed client that every kind of bosun's API
// has; the generic test below runs against it so each kind gets the same checks.
type typedClient[T object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// crudCase describes one kind for exerciseClient.
type crudCase[T object, L runtime.Object] struct {
	client typedClient[T, L]
	obj    T
	// changeSpec edits the object's spec in place.
	changeSpec func(T)
	// changeStatus edits the object's status in place.
	changeStatus func(T)
}

func TestClientsetWorksOnEveryKind(t *testing.T) {
	cp := framework.SharedControlPlane(t)
	ns := framework.CreateTestNamespace(t, cp.Clientset(t)).Name
	client := bosunclient.NewForConfigOrDie(cp.Config())
	apps := client.AppsV1alpha1()

	t.Run("DaemonSet", func(t *testing.T) {
		exerciseClient(t, crudCase[*appsv1alpha1.DaemonSet, *appsv1alpha1.DaemonSetList]{
			client: apps.DaemonSets(ns),
			obj:    newDaemonSet(ns, "agent"),
			changeSpec: func(ds *appsv1alpha1.DaemonSet) {
				ds.Spec.Template.Spec.Containers[0].Image = "registry.example/agent:2.0"
			},
			changeStatus: func(ds *appsv1alpha1.DaemonSet) {
				ds.Status.DesiredNumberScheduled = 3
				ds.Status.DaemonSetHash = "5d8f7c9b4"
			},
		})
	})
	t.Run("PodUnavailableBudget", func(t *testing.T) {
		exerciseClient(t, crudCase[*policyv1alpha1.PodUnavailableBudget, *policyv1alpha1.PodUnavailableBudgetList]{
			client: client.PolicyV1alpha1().PodUnavailableBudgets(ns),
			obj:    newPodUnavailableBudget(ns, "web"),
			changeSpec: func(pub *policyv1alpha1.PodUnavailableBudget) {
				pub.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			changeStatus: func(pub *policyv1alpha1.PodUnavailableBudget) {
				pub.Status.TotalReplicas = 10
				pub.Status.UnavailableAllowed = 2
				pub.Status.DisruptedPods = map[string]metav1.Time{"web-1": metav1.NewTime(time.Now().Truncate(time.Second))}
			},
		})
	})
	t.Run("ContainerRecreateRequest", func(t *testing.T) {
		exerciseClient(t, crudCase[*appsv1alpha1.ContainerRecreateRequest, *appsv1alpha1.ContainerRecreateRequestList]{
			client:     apps.ContainerRecreateRequests(ns),
			obj:        newContainerRecreateRequest(ns, "web-0-restart"),
			changeSpec: func(crr *appsv1alpha1.ContainerRecreateRequest) { crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](300) },
			changeStatus: func(crr *appsv1alpha1.ContainerRecreateRequest) {
				crr.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
			},
		})
	})
	t.Run("NodeImage", func(t *testing.T) {
		// NodeImage is cluster scoped: the name must not collide with other tests.
		exerciseClient(t, crudCase[*appsv1alpha1.NodeImage, *appsv1alpha1.NodeImageList]{
			client: apps.NodeImages(),
			obj:    newNodeImage(ns + "-node"),
			changeSpec: func(ni *appsv1alpha1.NodeImage) {
				ni.Spec.Images["registry.example/other"] = appsv1alpha1.ImageSpec{Tags: []appsv1alpha1.ImageTagSpec{{Tag: "v1", Version: 1}}}
			},
			changeStatus: func(ni *appsv1alpha1.NodeImage) {
				ni.Status.Desired = 2
				ni.Status.Pulling = 1
			},
		})
	})
	t.Run("ImagePullJob", func(t *testing.T) {
		exerciseClient(t, crudCase[*appsv1alpha1.ImagePullJob, *appsv1alpha1.ImagePullJobList]{
			client:     apps.ImagePullJobs(ns),
			obj:        newImagePullJob(ns, "prefetch"),
			changeSpec: func(job *appsv1alpha1.ImagePullJob) { job.Spec.PullSecrets = []string{"registry-credentials"} },
			changeStatus: func(job *appsv1alpha1.ImagePullJob) {
				job.Status.Desired = 4
				job.Status.Active = 2
			},
		})
	})
}

// exerciseClient creates, reads, lists, updates (spec and status), watches and deletes
// one object, checking at each step what the API server stored and that the status
// subresource separates spec from status as it does for built-in kinds.
func exerciseClient[T object, L runtime.Object](t *testing.T, c crudCase[T, L]) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	list, err := c.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing before the test: %v", err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.client.Watch(ctx, metav1.ListOptions{ResourceVersion: listMeta.GetResourceVersion()})
	if err != nil {
		t.Fatalf("starting a watch: %v", err)
	}
	defer w.Stop()

	// Create: the spec comes back as sent; a status in the create request is dropped
	// because status belongs to the subresource.
	toCreate := c.obj.DeepCopyObject().(T)
	c.changeStatus(toCreate)
	created, err := c.client.Create(ctx, toCreate, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating: %v", err)
	}
	if !reflect.DeepEqual(field(t, created, "spec"), field(t, c.obj, "spec")) {
		t.Errorf("created spec differs from the one sent:\n got %v\nwant %v", field(t, created, "spec"), field(t, c.obj, "spec"))
	}
	if got, empty := field(t, created, "status"), field(t, c.obj, "status"); !reflect.DeepEqual(got, empty) {
		t.Errorf("create must not set status; got %v", got)
	}
	if created.GetGeneration() != 1 {
		t.Errorf("generation after create = %d, want 1", created.GetGeneration())
	}

	got, err := c.client.Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting: %v", err)
	}
	if got.GetUID() != created.GetUID() {
		t.Errorf("get returned uid %s, want %s", got.GetUID(), created.GetUID())
	}

	// Update of the main resource: spec changes, generation grows, status is ignored.
	toUpdate := got.DeepCopyObject().(T)
	c.changeSpec(toUpdate)
	c.changeStatus(toUpdate)
	updated, err := c.client.Update(ctx, toUpdate, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating: %v", err)
	}
	if updated.GetGeneration() != 2 {
		t.Errorf("generation after a spec update = %d, want 2", updated.GetGeneration())
	}
	if !reflect.DeepEqual(field(t, updated, "spec"), field(t, toUpdate, "spec")) {
		t.Errorf("updated spec was not stored:\n got %v\nwant %v", field(t, updated, "spec"), field(t, toUpdate, "spec"))
	}
	if !reflect.DeepEqual(field(t, updated, "status"), field(t, got, "status")) {
		t.Errorf("an update of the main resource changed status to %v", field(t, updated, "status"))
	}

	// Update of the status subresource: status changes, spec edits are ignored,
	// generation stays.
	toUpdateStatus := updated.DeepCopyObject().(T)
	c.changeStatus(toUpdateStatus)
	withStatus := toUpdateStatus.DeepCopyObject().(T)
	toUpdateStatus.SetLabels(map[string]string{"ignored-by": "status"})
	statusUpdated, err := c.client.UpdateStatus(ctx, toUpdateStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating status: %v", err)
	}
	if !reflect.DeepEqual(field(t, statusUpdated, "status"), field(t, withStatus, "status")) {
		t.Errorf("status was not stored:\n got %v\nwant %v", field(t, statusUpdated, "status"), field(t, withStatus, "status"))
	}
	if statusUpdated.GetGeneration() != 2 {
		t.Errorf("generation after a status update = %d, want 2", statusUpdated.GetGeneration())
	}
	if len(statusUpdated.GetLabels()) != 0 {
		t.Errorf("a status update changed metadata labels to %v", statusUpdated.GetLabels())
	}

	list, err = c.client.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + created.GetName()})
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 {
		t.Errorf("list by name found %d objects, want 1", len(items))
	}

	if err := c.client.Delete(ctx, created.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting: %v", err)
	}
	if _, err := c.client.Get(ctx, created.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: err = %v, want NotFound", err)
	}

	// The watch saw every write, in order, on this object.
	want := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}
	var seen []watch.EventType
	for len(seen) < len(want) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", seen)
			}
			obj, ok := ev.Object.(T)
			if !ok {
				t.Fatalf("watch event %s carries %T", ev.Type, ev.Object)
			}
			if obj.GetUID() == created.GetUID() {
				seen = append(seen, ev.Type)
			}
		case <-ctx.Done():
			t.Fatalf("watch saw %v, want %v", seen, want)
		}
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("watch events = %v, want %v", seen, want)
	}
}

// field returns a top-level field of obj as the API server would serialize it.
func field(t *testing.T, obj runtime.Object, name string) any {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("converting %T: %v", obj, err)
	}
	return u[name]
}
