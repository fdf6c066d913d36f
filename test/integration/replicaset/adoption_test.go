package replicaset

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/podutil"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// Scenario 1: which ownerReferences make a matching pod adoptable.
func TestAdoption(t *testing.T) {
	e := setup(t)
	otherOwner := uuid.NewUUID()
	cases := []struct {
		name string
		refs func(rs *appsv1.ReplicaSet) []metav1.OwnerReference
		// adopted: the refs must become one controller ref to the RS; otherwise they must
		// stay as they were and the RS must not count the pod.
		adopted bool
		counted bool
	}{
		{
			name: "non-controller ref to the RS",
			refs: func(rs *appsv1.ReplicaSet) []metav1.OwnerReference {
				return []metav1.OwnerReference{plainRef("apps/v1", "ReplicaSet", rs.Name, rs.UID)}
			},
			adopted: true, counted: true,
		},
		{
			name:    "no refs",
			refs:    func(*appsv1.ReplicaSet) []metav1.OwnerReference { return nil },
			adopted: true, counted: true,
		},
		{
			name: "controller ref to the RS without blockOwnerDeletion",
			refs: func(rs *appsv1.ReplicaSet) []metav1.OwnerReference {
				ref := plainRef("apps/v1", "ReplicaSet", rs.Name, rs.UID)
				ref.Controller = ptr.To(true)
				return []metav1.OwnerReference{ref}
			},
			counted: true,
		},
		{
			name: "controller ref to another owner and a plain ref to the RS",
			refs: func(rs *appsv1.ReplicaSet) []metav1.OwnerReference {
				other := plainRef("apps/v1", "ReplicaSet", "another", otherOwner)
				other.Controller = ptr.To(true)
				return []metav1.OwnerReference{other, plainRef("apps/v1", "ReplicaSet", rs.Name, rs.UID)}
			},
		},
	}

	// Everything exists before the controller starts (as in upstream's test), so that its
	// first sync finds the pod instead of racing it with a pod of its own.
	rses := make([]*appsv1.ReplicaSet, len(cases))
	pods := make([]*corev1.Pod, len(cases))
	for i, tc := range cases {
		rses[i] = e.replicaSets().Create(t, newReplicaSet(fmt.Sprintf("rs-%d", i), 1))
		pods[i] = e.Pods().Create(t, newPod(fmt.Sprintf("pod-%d", i), rses[i].Spec.Template.Labels, tc.refs(rses[i])...))
	}
	e.startController(t, "")

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs, pod := rses[i], pods[i]
			if tc.adopted {
				want := []metav1.OwnerReference{controllerRef(rs)}
				e.Pods().WaitFor(t, pod.Name, "adoption by "+rs.Name, func(p *corev1.Pod) bool { return sameRefs(p.OwnerReferences, want) })
			}
			owned := e.waitForReplicas(t, rs.Name, 1)
			e.WaitForNoWrites(t, idlePeriod)

			got := e.Pods().Get(t, pod.Name)
			if !tc.adopted && !sameRefs(got.OwnerReferences, pod.OwnerReferences) {
				t.Errorf("ownerReferences changed from %+v to %+v; they must stay as they were", pod.OwnerReferences, got.OwnerReferences)
			}
			if counted := owned[0].Name == pod.Name; counted != tc.counted {
				t.Errorf("the ReplicaSet's one pod is %s; want the test's pod %s counted = %v", owned[0].Name, pod.Name, tc.counted)
			}
		})
	}
}

// Scenario 7: a pod relabelled out of the selector is released; relabelled back it is
// claimed again.
func TestPodOrphaningAndAdoptionWhenLabelsChange(t *testing.T) {
	e := setup(t)
	e.startController(t, "")
	rs := e.replicaSets().Create(t, newReplicaSet("rs", 1))
	pod := e.waitForReplicas(t, rs.Name, 1)[0]

	e.Pods().Update(t, pod.Name, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "elsewhere"} })
	e.Pods().WaitFor(t, pod.Name, "the relabelled pod to be released", func(p *corev1.Pod) bool {
		return !slices.ContainsFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == rs.UID })
	})
	replacement := e.waitForReplicas(t, rs.Name, 1)[0]
	if replacement.Name == pod.Name {
		t.Fatalf("the released pod %s is still counted", pod.Name)
	}

	e.Pods().Update(t, pod.Name, func(p *corev1.Pod) { p.Labels = copyLabels(rs.Spec.Selector.MatchLabels) })
	// Adopted and then one of the two deleted as surplus, or not adopted at all because it
	// went first: either way one pod, controlled by the RS.
	e.WaitForPods(t, "one pod, controlled by the ReplicaSet", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && controlledBy(&pods[0], rs.UID)
	})
	e.waitForReplicas(t, rs.Name, 1)
	e.WaitForNoWrites(t, idlePeriod)
	if pods := e.GetPods(t, nil); len(pods) != 1 || !controlledBy(&pods[0], rs.UID) {
		t.Errorf("after the controller went idle: %s; want one pod controlled by %s", framework.DescribePods(pods), rs.Name)
	}
}

// Scenario 8: adoption keeps refs to other kinds and upgrades a plain ref to the RS.
func TestGeneralPodAdoption(t *testing.T) {
	e := setup(t)
	statefulSet := plainRef("apps/v1", "StatefulSet", "web", uuid.NewUUID())
	cases := []struct {
		name string
		refs func(rs *appsv1.ReplicaSet) []metav1.OwnerReference
		want func(rs *appsv1.ReplicaSet) []metav1.OwnerReference
	}{
		{
			name: "non-controller ref to a StatefulSet",
			refs: func(*appsv1.ReplicaSet) []metav1.OwnerReference { return []metav1.OwnerReference{statefulSet} },
			want: func(rs *appsv1.ReplicaSet) []metav1.OwnerReference {
				return []metav1.OwnerReference{statefulSet, controllerRef(rs)}
			},
		},
		{
			name: "non-controller ref to the RS",
			refs: func(rs *appsv1.ReplicaSet) []metav1.OwnerReference {
				return []metav1.OwnerReference{plainRef("apps/v1", "ReplicaSet", rs.Name, rs.UID)}
			},
			want: func(rs *appsv1.ReplicaSet) []metav1.OwnerReference { return []metav1.OwnerReference{controllerRef(rs)} },
		},
	}
	rses := make([]*appsv1.ReplicaSet, len(cases))
	pods := make([]*corev1.Pod, len(cases))
	for i, tc := range cases {
		rses[i] = e.replicaSets().Create(t, newReplicaSet(fmt.Sprintf("rs-%d", i), 1))
		pods[i] = e.Pods().Create(t, newPod(fmt.Sprintf("pod-%d", i), rses[i].Spec.Template.Labels, tc.refs(rses[i])...))
	}
	e.startController(t, "")

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want(rses[i])
			e.Pods().WaitFor(t, pods[i].Name, fmt.Sprintf("ownerReferences %+v", want), func(p *corev1.Pod) bool {
				return sameRefs(p.OwnerReferences, want)
			})
			if owned := e.waitForReplicas(t, rses[i].Name, 1); owned[0].Name != pods[i].Name {
				t.Errorf("the ReplicaSet counts %s instead of the adopted %s", owned[0].Name, pods[i].Name)
			}
		})
	}
}

// Scenario 11: surplus orphans are adopted, and the extra one deleted.
func TestExtraPodsAdoptionAndDeletion(t *testing.T) {
	e := setup(t)
	rs := newReplicaSet("rs", 2)
	orphans := map[string]bool{}
	for i := range 3 {
		pod := e.Pods().Create(t, newPod(fmt.Sprintf("orphan-%d", i), rs.Spec.Selector.MatchLabels))
		orphans[pod.Name] = true
	}
	rs = e.replicaSets().Create(t, rs)
	// Started last, so that its first sync sees the three orphans at once.
	e.startController(t, "")

	e.waitForReplicas(t, rs.Name, 2)
	e.WaitForNoWrites(t, idlePeriod)
	pods := e.GetPods(t, nil)
	if len(pods) != 2 {
		t.Fatalf("%s; want exactly 2", framework.DescribePods(pods))
	}
	for _, pod := range pods {
		if !controlledBy(&pod, rs.UID) || !podutil.IsPodActive(&pod) {
			t.Errorf("pod %s is not an active pod controlled by %s: %+v", pod.Name, rs.Name, pod.OwnerReferences)
		}
		if !orphans[pod.Name] {
			t.Errorf("pod %s is new: the ReplicaSet must adopt the orphans, not replace them", pod.Name)
		}
	}
}
