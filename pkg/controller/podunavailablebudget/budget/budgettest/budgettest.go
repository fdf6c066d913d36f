// Package budgettest provides a fake bosun clientset whose PodUnavailableBudgets behave like
// the API server's where the budget package depends on it: every write gets a new numeric
// resourceVersion, and a status update carrying a stale one fails with 409 Conflict. The
// generated fake clientset does neither, so tests of concurrent budget spending need this.
package budgettest

import (
	"fmt"
	"strconv"
	"sync"

	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	"github.com/bosun-dev/client-go/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

// Server is the fake clientset with its budget store.
type Server struct {
	*fake.Clientset

	mu      sync.Mutex
	version uint64
	budgets map[types.NamespacedName]*policyv1beta1.PodUnavailableBudget
	// conflicts is how many of the next status updates fail as if another writer had
	// just written the budget.
	conflicts int
	// statusWrites counts successful status updates; conflictsAnswered failed ones.
	statusWrites, conflictsAnswered, gets int
}

// NewServer returns a server holding copies of budgets, each given a fresh resourceVersion.
func NewServer(budgets ...*policyv1beta1.PodUnavailableBudget) *Server {
	s := &Server{Clientset: fake.NewClientset(), version: 100, budgets: map[types.NamespacedName]*policyv1beta1.PodUnavailableBudget{}}
	for _, pub := range budgets {
		s.Put(pub)
	}
	s.PrependReactor("get", "podunavailablebudgets", s.get)
	s.PrependReactor("update", "podunavailablebudgets", s.update)
	return s
}

// Put stores a copy of pub, with the next resourceVersion, as another writer would, and
// returns the stored copy.
func (s *Server) Put(pub *policyv1beta1.PodUnavailableBudget) *policyv1beta1.PodUnavailableBudget {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := pub.DeepCopy()
	s.version++
	stored.ResourceVersion = strconv.FormatUint(s.version, 10)
	s.budgets[types.NamespacedName{Namespace: stored.Namespace, Name: stored.Name}] = stored
	return stored.DeepCopy()
}

// Delete removes a budget.
func (s *Server) Delete(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.budgets, types.NamespacedName{Namespace: namespace, Name: name})
}

// Budget returns a copy of the stored budget, nil when there is none.
func (s *Server) Budget(namespace, name string) *policyv1beta1.PodUnavailableBudget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgets[types.NamespacedName{Namespace: namespace, Name: name}].DeepCopy()
}

// InjectConflicts makes the next n status updates fail with a conflict, each one also
// bumping the stored budget's resourceVersion as the competing write would have.
func (s *Server) InjectConflicts(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conflicts = n
}

// Counts returns the number of successful status writes, of conflicts answered and of GETs.
func (s *Server) Counts() (statusWrites, conflicts, gets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusWrites, s.conflictsAnswered, s.gets
}

func (s *Server) get(action clienttesting.Action) (bool, runtime.Object, error) {
	get := action.(clienttesting.GetAction)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	pub := s.budgets[types.NamespacedName{Namespace: get.GetNamespace(), Name: get.GetName()}]
	if pub == nil {
		return true, nil, apierrors.NewNotFound(policyv1beta1.Resource("podunavailablebudgets"), get.GetName())
	}
	return true, pub.DeepCopy(), nil
}

func (s *Server) update(action clienttesting.Action) (bool, runtime.Object, error) {
	update := action.(clienttesting.UpdateAction)
	in, ok := update.GetObject().(*policyv1beta1.PodUnavailableBudget)
	if !ok {
		return true, nil, fmt.Errorf("update of %T, not a PodUnavailableBudget", update.GetObject())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := types.NamespacedName{Namespace: update.GetNamespace(), Name: in.Name}
	stored := s.budgets[key]
	if stored == nil {
		return true, nil, apierrors.NewNotFound(policyv1beta1.Resource("podunavailablebudgets"), in.Name)
	}
	conflict := func() error {
		s.conflictsAnswered++
		return apierrors.NewConflict(policyv1beta1.Resource("podunavailablebudgets"), in.Name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if s.conflicts > 0 {
		s.conflicts--
		s.version++
		stored.ResourceVersion = strconv.FormatUint(s.version, 10)
		return true, nil, conflict()
	}
	if in.ResourceVersion != stored.ResourceVersion || (in.UID != "" && in.UID != stored.UID) {
		return true, nil, conflict()
	}
	next := stored.DeepCopy()
	if update.GetSubresource() == "status" {
		in.Status.DeepCopyInto(&next.Status)
	} else {
		next.ObjectMeta = *in.ObjectMeta.DeepCopy()
		in.Spec.DeepCopyInto(&next.Spec)
	}
	s.version++
	next.ResourceVersion = strconv.FormatUint(s.version, 10)
	s.budgets[key] = next
	if update.GetSubresource() == "status" {
		s.statusWrites++
	}
	return true, next.DeepCopy(), nil
}
