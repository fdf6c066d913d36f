package refmanager

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
)

// CanAdoptFunc reports whether the owner may adopt objects right now; a non-nil error
// blocks adoption.
type CanAdoptFunc func(ctx context.Context) error

// Manager claims objects of one kind for one owner. Build a new one for every sync: the
// canAdopt result is remembered for the Manager's lifetime.
type Manager struct {
	owner      metav1.Object
	ownerGVK   schema.GroupVersionKind
	selector   labels.Selector
	patcher    Patcher
	finalizers []string

	canAdoptFunc CanAdoptFunc
	canAdoptOnce sync.Once
	canAdoptErr  error
}

// New returns a Manager for owner (of kind ownerGVK) whose selector picks the objects it
// should own. canAdopt may be nil (always allowed). Adoption adds finalizers, and release
// removes them, when given.
func New(owner metav1.Object, ownerGVK schema.GroupVersionKind, selector labels.Selector, canAdopt CanAdoptFunc, patcher Patcher, finalizers ...string) *Manager {
	return &Manager{
		owner:        owner,
		ownerGVK:     ownerGVK,
		selector:     selector,
		patcher:      patcher,
		finalizers:   finalizers,
		canAdoptFunc: canAdopt,
	}
}

// CanAdopt runs canAdopt on first use and returns its remembered result afterwards.
func (m *Manager) CanAdopt(ctx context.Context) error {
	m.canAdoptOnce.Do(func() {
		if m.canAdoptFunc != nil {
			m.canAdoptErr = m.canAdoptFunc(ctx)
		}
	})
	return m.canAdoptErr
}

// SelectorMatches reports whether obj's labels match the owner's selector.
func (m *Manager) SelectorMatches(obj metav1.Object) bool {
	return m.selector.Matches(labels.Set(obj.GetLabels()))
}

// Claim decides whether the owner owns obj, adopting or releasing it as needed, by the
// decision table in the package documentation. A NotFound from adopt or release means obj
// is gone, so the owner simply does not own it.
func (m *Manager) Claim(ctx context.Context, obj metav1.Object, match func(metav1.Object) bool, adopt, release func(context.Context, metav1.Object) error) (bool, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return m.claimControlled(ctx, obj, ref, match, release)
	}
	return m.claimOrphan(ctx, obj, match, adopt)
}

// claimControlled decides for an object that has a controller (rows 1 to 4 of the table).
func (m *Manager) claimControlled(ctx context.Context, obj metav1.Object, ref *metav1.OwnerReference, match func(metav1.Object) bool,
	release func(context.Context, metav1.Object) error) (bool, error) {
	switch {
	case ref.UID != m.owner.GetUID():
		return false, nil
	case match(obj):
		// Owned and still wanted, even by an owner that is being deleted.
		return true, nil
	case m.ownerIsDeleting():
		// A deleting owner lets go of nothing: the garbage collector takes its children.
		return false, nil
	}
	// Owned but no longer matching. If someone else released it meanwhile, the error
	// retries the sync, which then sees the change.
	return false, ignoreNotFound(release(ctx, obj))
}

// claimOrphan decides for an object without a controller (rows 5 to 8 of the table).
func (m *Manager) claimOrphan(ctx context.Context, obj metav1.Object, match func(metav1.Object) bool,
	adopt func(context.Context, metav1.Object) error) (bool, error) {
	otherNamespace := m.owner.GetNamespace() != "" && m.owner.GetNamespace() != obj.GetNamespace()
	if m.ownerIsDeleting() || !match(obj) || obj.GetDeletionTimestamp() != nil || otherNamespace {
		return false, nil
	}
	if err := adopt(ctx, obj); err != nil {
		return false, ignoreNotFound(err)
	}
	return true, nil
}

func (m *Manager) ownerIsDeleting() bool {
	return m.owner.GetDeletionTimestamp() != nil
}

// ignoreNotFound returns err unless it says that the object is gone.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Adopt makes the owner obj's controller, after checking CanAdopt.
func (m *Manager) Adopt(ctx context.Context, obj metav1.Object) error {
	if err := m.CanAdopt(ctx); err != nil {
		// %v, not %w: canAdopt's error is about the owner, and a NotFound for the owner
		// must not unwrap to the NotFound that Claim reads as "the object is gone".
		return fmt.Errorf("not adopting %s %s/%s (uid %s): %v", m.patcher.Kind(), obj.GetNamespace(), obj.GetName(), obj.GetUID(), err)
	}
	klog.FromContext(ctx).V(2).Info("Adopting orphan", "kind", m.patcher.Kind(), "object", klog.KObj(obj),
		"owner", klog.KObj(m.owner), "ownerKind", m.ownerGVK.Kind)
	ref := metav1.NewControllerRef(m.owner, m.ownerGVK)
	if err := m.patcher.Adopt(ctx, obj, *ref, m.finalizers); err != nil {
		return fmt.Errorf("adopting %s %s/%s: %w", m.patcher.Kind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// Release removes the owner's reference from obj. NotFound (the object is gone) and
// Invalid (the object was replaced, or no longer carries the reference) count as success.
func (m *Manager) Release(ctx context.Context, obj metav1.Object) error {
	klog.FromContext(ctx).V(2).Info("Releasing object", "kind", m.patcher.Kind(), "object", klog.KObj(obj),
		"owner", klog.KObj(m.owner), "ownerKind", m.ownerGVK.Kind)
	err := m.patcher.Release(ctx, obj, m.owner.GetUID(), m.finalizers)
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return fmt.Errorf("releasing %s %s/%s: %w", m.patcher.Kind(), obj.GetNamespace(), obj.GetName(), err)
}

// ClaimAll claims each of objs with Manager.Claim, using match (nil means the owner's
// selector), Adopt and Release. It continues past errors and returns the owned objects
// together with an aggregate of every error.
func ClaimAll[T metav1.Object](ctx context.Context, m *Manager, objs []T, match func(T) bool) ([]T, error) {
	matchObj := m.SelectorMatches
	if match != nil {
		matchObj = func(obj metav1.Object) bool { return match(obj.(T)) }
	}
	var (
		owned []T
		errs  []error
	)
	for _, obj := range objs {
		ok, err := m.Claim(ctx, obj, matchObj, m.Adopt, m.Release)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			owned = append(owned, obj)
		}
	}
	return owned, utilerrors.NewAggregate(errs)
}

// ClaimPods claims pods: a pod matches when the owner's selector matches its labels and
// then every filter passes.
func (m *Manager) ClaimPods(ctx context.Context, pods []*corev1.Pod, filters ...func(*corev1.Pod) bool) ([]*corev1.Pod, error) {
	return ClaimAll(ctx, m, pods, func(pod *corev1.Pod) bool {
		if !m.SelectorMatches(pod) {
			return false
		}
		for _, filter := range filters {
			if !filter(pod) {
				return false
			}
		}
		return true
	})
}

// ClaimReplicaSets claims ReplicaSets whose labels match the owner's selector.
func (m *Manager) ClaimReplicaSets(ctx context.Context, replicaSets []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, error) {
	return ClaimAll(ctx, m, replicaSets, nil)
}
