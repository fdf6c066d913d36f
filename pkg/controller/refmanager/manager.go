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

// Claim decides whether the owner owns obj, adopting or releasing it as needed; see the
// package documentation for the decision table.
func (m *Manager) Claim(ctx context.Context, obj metav1.Object, match func(metav1.Object) bool, adopt, release func(context.Context, metav1.Object) error) (bool, error) {
	ownerBeingDeleted := m.owner.GetDeletionTimestamp() != nil

	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.owner.GetUID() {
			return false, nil // 1: someone else's
		}
		if match(obj) {
			return true, nil // 2: ours
		}
		if ownerBeingDeleted {
			return false, nil // 3: a deleting owner releases nothing
		}
		if err := release(ctx, obj); err != nil { // 4
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			// Someone else released it, or a transient error: the controller retries.
			return false, err
		}
		return false, nil
	}

	// An orphan.
	switch {
	case ownerBeingDeleted || !match(obj): // 5
		return false, nil
	case obj.GetDeletionTimestamp() != nil: // 6
		return false, nil
	case m.owner.GetNamespace() != "" && m.owner.GetNamespace() != obj.GetNamespace(): // 7
		return false, nil
	}
	if err := adopt(ctx, obj); err != nil { // 8
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Adopt makes the owner obj's controller, after checking CanAdopt.
func (m *Manager) Adopt(ctx context.Context, obj metav1.Object) error {
	if err := m.CanAdopt(ctx); err != nil {
		// %v, not %w: canAdopt's error is about the owner, and a NotFound for the owner
		// must not unwrap to the NotFound that Claim reads as "the object is gone".
		return fmt.Errorf("can't adopt %s %s/%s (%s): %v", m.patcher.Kind(), obj.GetNamespace(), obj.GetName(), obj.GetUID(), err)
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
