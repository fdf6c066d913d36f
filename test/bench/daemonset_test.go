package main

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
)

// TestKruiseDaemonSetIsDefaulted holds the daemonset part's fairness claim: bosun's object
// already has every default its mutating webhook would write, so it is stored the same
// with and without the webhooks.
func TestKruiseDaemonSetIsDefaulted(t *testing.T) {
	ds := newKruiseDaemonSet()
	defaulted := ds.DeepCopy()
	appsv1alpha1.SetObjectDefaults_DaemonSet(defaulted)
	if !equality.Semantic.DeepEqual(ds, defaulted) {
		t.Errorf("defaulting changes the bench DaemonSet:\nbefore %+v\nafter  %+v", ds.Spec, defaulted.Spec)
	}
}

func TestBothDaemonSetsRollTheSameWay(t *testing.T) {
	up, bosun := newAppsV1DaemonSet(), newKruiseDaemonSet()
	upRU, bosunRU := up.Spec.UpdateStrategy.RollingUpdate, bosun.Spec.UpdateStrategy.RollingUpdate
	if *upRU.MaxUnavailable != *bosunRU.MaxUnavailable || *upRU.MaxSurge != *bosunRU.MaxSurge {
		t.Errorf("rolling updates differ: upstream %v/%v, bosun %v/%v", upRU.MaxUnavailable, upRU.MaxSurge, bosunRU.MaxUnavailable, bosunRU.MaxSurge)
	}
	if !equality.Semantic.DeepEqual(up.Spec.Template, bosun.Spec.Template) {
		t.Error("the pod templates differ")
	}
}

func affinityPod(name, node, image string, ready bool) corev1.Pod {
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pause", Image: image}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}},
			}},
		},
	}
	if ready {
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return pod
}

func TestPodTargetNode(t *testing.T) {
	pod := affinityPod("p", "node-a", dsImage, false)
	if got := podTargetNode(&pod); got != "node-a" {
		t.Errorf("affinity pod: got %q", got)
	}
	pod.Spec.NodeName = "node-b"
	if got := podTargetNode(&pod); got != "node-b" {
		t.Errorf("bound pod: got %q, want its spec.nodeName", got)
	}
	if got := podTargetNode(&corev1.Pod{}); got != "" {
		t.Errorf("pod without affinity: got %q", got)
	}
	pod = affinityPod("p", "node-a", dsImage, false)
	pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values = []string{"a", "b"}
	if got := podTargetNode(&pod); got != "" {
		t.Errorf("two names: got %q, want none", got)
	}
}

func TestDaemonPodsProblem(t *testing.T) {
	nodes := []string{"n0", "n1", "n2"}
	settled := func(image string) []corev1.Pod {
		var pods []corev1.Pod
		for i, n := range nodes {
			pods = append(pods, affinityPod(fmt.Sprintf("p%d", i), n, image, true))
		}
		return pods
	}
	terminating := affinityPod("old", "n1", dsImage, true)
	terminating.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name string
		pods []corev1.Pod
		want string // a substring of the problem; "" for none
	}{
		{"settled", settled(dsImage), ""},
		{"terminating old pod ignored", append(settled(dsRolledImage), terminating), ""},
		{"missing node", settled(dsImage)[:2], "1 of 3 nodes have no pod"},
		{"old image", settled(dsImage), "does not run " + dsRolledImage},
		{"two pods on a node", append(settled(dsImage), affinityPod("extra", "n0", dsImage, true)), "more than one"},
		{"not ready", append(settled(dsImage)[:2], affinityPod("p2", "n2", dsImage, false)), "not Ready"},
		{"unknown node", append(settled(dsImage), affinityPod("stray", "elsewhere", dsImage, true)), "not a simulated node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			image := dsImage
			if tt.name == "old image" || tt.name == "terminating old pod ignored" {
				image = dsRolledImage
			}
			got := daemonPodsProblem(tt.pods, nodes, image)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("daemonPodsProblem() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStatusSettled(t *testing.T) {
	done := dsStatus{Generation: 2, ObservedGeneration: 2, Desired: 10, Current: 10, Updated: 10, Available: 10}
	if !statusSettled(done, 10, true) {
		t.Error("a finished rollout is not settled")
	}
	for name, s := range map[string]dsStatus{
		"old generation": {Generation: 2, ObservedGeneration: 1, Desired: 10, Current: 10, Updated: 10, Available: 10},
		"not all wanted": {Generation: 2, ObservedGeneration: 2, Desired: 9, Current: 9, Updated: 9, Available: 9},
		"not available":  {Generation: 2, ObservedGeneration: 2, Desired: 10, Current: 10, Updated: 10, Available: 9},
		"not updated":    {Generation: 2, ObservedGeneration: 2, Desired: 10, Current: 10, Updated: 9, Available: 10},
	} {
		if statusSettled(s, 10, true) {
			t.Errorf("%s: settled", name)
		}
	}
	// A create needs no updated count (the controller may not report it the same way).
	created := done
	created.Updated = 0
	if !statusSettled(created, 10, false) {
		t.Error("a finished create is not settled")
	}
}
