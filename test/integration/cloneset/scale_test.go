package cloneset

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

// `kubectl scale` works through the scale subresource of either version, whose
// status.selector is the CloneSet's status.labelSelector, and the HPA controller reads the
// scale (and parses the selector) of a CloneSet it targets.
func testScaleSubresource(t *testing.T, e *testEnv) {
	cs := e.cloneSets().Create(t, newCloneSet("web", 1))
	for _, step := range []struct{ resource, replicas string }{
		{"clonesets.v1alpha1.apps.kruise.io/web", "3"},
		{"clonesets.v1beta1.apps.kruise.io/web", "5"},
	} {
		if out, err := e.Kubectl(t, "scale", step.resource, "--replicas="+step.replicas); err != nil {
			t.Fatalf("kubectl scale %s --replicas=%s: %v\n%s", step.resource, step.replicas, err, out)
		}
		e.cloneSets().WaitFor(t, "web", "spec.replicas "+step.replicas, func(cs *appsv1beta1.CloneSet) bool {
			return fmt.Sprint(ptr.Deref(cs.Spec.Replicas, 0)) == step.replicas
		})
	}
	cs = e.cloneSets().WaitFor(t, "web", "5 replicas in status", func(cs *appsv1beta1.CloneSet) bool {
		return cs.Status.ObservedGeneration == cs.Generation && cs.Status.Replicas == 5
	})
	if cs.Status.LabelSelector != "app=web" {
		t.Errorf("status.labelSelector %q, want app=web", cs.Status.LabelSelector)
	}
	for _, version := range []string{"v1alpha1", "v1beta1"} {
		scale := &autoscalingv1.Scale{}
		err := e.Bosun.AppsV1beta1().RESTClient().Get().AbsPath("/apis/apps.kruise.io", version, "namespaces", e.Namespace, "clonesets", "web", "scale").
			Do(e.Ctx).Into(scale)
		if err != nil {
			t.Fatalf("reading the %s scale of CloneSet web: %v", version, err)
		}
		if scale.Spec.Replicas != 5 || scale.Status.Replicas != 5 || scale.Status.Selector != cs.Status.LabelSelector {
			t.Errorf("%s scale %+v, want 5 replicas in spec and status and selector %q", version, scale, cs.Status.LabelSelector)
		}
	}

	// The HPA controller of upstream kube-controller-manager, and nothing else of it.
	framework.StartUpstreamControllerManager(t, e.CP, "horizontalpodautoscaling", "--horizontal-pod-autoscaler-sync-period=1s")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
			}}},
		},
	}
	hpas := framework.NewObjects(e.Env, "HorizontalPodAutoscaler", e.Namespace, e.Client.AutoscalingV2().HorizontalPodAutoscalers(e.Namespace))
	hpas.Create(t, hpa)
	// No metrics API runs, so the HPA stops at the metrics; it gets there only with the
	// scale read and its selector parsed.
	hpa = hpas.WaitFor(t, "web", "the scale read and the metrics asked for", func(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
		able, active := hpaCondition(hpa, autoscalingv2.AbleToScale), hpaCondition(hpa, autoscalingv2.ScalingActive)
		return able != nil && active != nil
	})
	if able := hpaCondition(hpa, autoscalingv2.AbleToScale); able.Status != corev1.ConditionTrue || able.Reason != "SucceededGetScale" {
		t.Errorf("HPA condition AbleToScale %s/%s (%s), want True/SucceededGetScale", able.Status, able.Reason, able.Message)
	}
	if active := hpaCondition(hpa, autoscalingv2.ScalingActive); active.Reason == "InvalidSelector" {
		t.Errorf("HPA condition ScalingActive %s/%s (%s): the selector of the scale did not do", active.Status, active.Reason, active.Message)
	}
	if hpa.Status.CurrentReplicas != 5 {
		t.Errorf("HPA status.currentReplicas %d, want 5", hpa.Status.CurrentReplicas)
	}
	for _, ev := range e.GetEvents(t, e.Namespace, "HorizontalPodAutoscaler", "web") {
		if ev.Reason == "FailedGetScale" || ev.Reason == "SelectorRequired" || ev.Reason == "InvalidSelector" {
			t.Errorf("HPA event %s: %s", ev.Reason, ev.Message)
		}
	}
}

func hpaCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range hpa.Status.Conditions {
		if hpa.Status.Conditions[i].Type == t {
			return &hpa.Status.Conditions[i]
		}
	}
	return nil
}

// instanceIDPattern is a pod name of CloneSet web: the name and five characters of the
// vowel-free alphabet.
var instanceIDPattern = regexp.MustCompile(`^web-([bcdfghjklmnpqrstvwxz2456789]{5})$`)

// A scale from 0 to 5 creates five pods in slow-start batches of 1, 2 and 2, each
// named after the CloneSet and its instance ID, labelled with its revision and in
// PreparingNormal until it is scheduled, then Normal; its readiness gates InPlaceUpdateReady
// (the controller's) and KruisePodReady (the pod webhook's) turn True.
func testCreateZeroToFive(t *testing.T, e *testEnv) {
	cs := e.cloneSets().Create(t, newCloneSet("web", 0))
	cs = e.cloneSets().WaitFor(t, "web", "an update revision for 0 replicas", func(cs *appsv1beta1.CloneSet) bool {
		return cs.Status.ObservedGeneration == cs.Generation && cs.Status.UpdateRevision != ""
	})
	revision := cs.Status.UpdateRevision
	e.scale(t, "web", 5)
	pods := e.waitForPods(t, cs, "5 pods", func(pods []*corev1.Pod) bool { return len(pods) == 5 })
	e.settle(t)

	hash, found := strings.CutPrefix(revision, "web-")
	if !found || hash == "" || strings.Contains(hash, "-") {
		t.Errorf("update revision %q, want web-<hash>", revision)
	}
	for _, pod := range e.GetPods(t, nil) {
		m := instanceIDPattern.FindStringSubmatch(pod.Name)
		if m == nil {
			t.Errorf("pod name %q, want web-<5 characters of the instance ID alphabet>", pod.Name)
			continue
		}
		want := map[string]string{
			"app": "web", appsv1beta1.CloneSetInstanceID: m[1], appsv1beta1.ControllerRevisionHashLabelKey: revision,
			appsv1beta1.PodTemplateHashLabelKey: hash, appsv1beta1.LifecycleStateKey: string(appsv1beta1.LifecycleStatePreparingNormal),
		}
		if !maps.Equal(pod.Labels, want) {
			t.Errorf("pod %s of a CloneSet no node has taken: labels %v, want %v", pod.Name, pod.Labels, want)
		}
		if _, ok := pod.Annotations[appsv1beta1.LifecycleTimestampKey]; !ok {
			t.Errorf("pod %s has no %s annotation", pod.Name, appsv1beta1.LifecycleTimestampKey)
		}
		ref := metav1.GetControllerOf(&pod)
		if ref == nil || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "CloneSet" || ref.UID != cs.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s: controller %+v, want CloneSet web (apps.kruise.io/v1beta1, blocking owner deletion)", pod.Name, ref)
		}
		for _, gate := range []corev1.PodConditionType{appsv1beta1.InPlaceUpdateReady, appsv1beta1.KruisePodReadyConditionType} {
			if !slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == gate }) {
				t.Errorf("pod %s: readiness gates %v lack %s", pod.Name, pod.Spec.ReadinessGates, gate)
			}
		}
	}

	// One sync created them all, in batches each of which started once the one before had
	// completed.
	creates := e.podRequests(t, "create")
	if len(creates) != 5 {
		t.Errorf("%d pod creates, want 5: %+v", len(creates), creates)
	} else {
		batches := [][]framework.Request{creates[0:1], creates[1:3], creates[3:5]}
		for i := 1; i < len(batches); i++ {
			if !allAfter(batches[i], batches[i-1]) {
				t.Errorf("create batch %d (%s) started before batch %d (%s) had completed", i+1, describeRequests(batches[i]), i, describeRequests(batches[i-1]))
			}
		}
		if !creates[1].Received.Before(creates[2].Completed) || !creates[3].Received.Before(creates[4].Completed) {
			t.Errorf("the creates of a batch of 2 went one after the other: %s", describeRequests(creates))
		}
	}

	// A node takes them: Normal, ready and available.
	e.startKubelet(t)
	_, pods = e.waitForSettled(t, "web")
	for _, pod := range pods {
		if lifecycleState(pod) != appsv1beta1.LifecycleStateNormal || !conditionTrue(pod, appsv1beta1.InPlaceUpdateReady) ||
			!conditionTrue(pod, appsv1beta1.KruisePodReadyConditionType) {
			t.Errorf("pod %s scheduled: %s, want state Normal, InPlaceUpdateReady and KruisePodReady True", pod.Name, podDetails(pod))
		}
	}
	// The move to Normal rode in the status write that set InPlaceUpdateReady: the API
	// server keeps label and annotation changes sent to pods/status, so no pod was patched.
	if patches := e.podRequests(t, "patch"); len(patches) != 0 {
		t.Errorf("pods patched: %s; want the lifecycle state written with the InPlaceUpdateReady condition", describeRequests(patches))
	}
}

// podRequests returns the successful requests with verb on the namespace's pods (not their
// subresources), by arrival.
func (e *testEnv) podRequests(t *testing.T, verb string) []framework.Request {
	t.Helper()
	reqs, err := e.Requests(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Namespace == e.Namespace && ev.ObjectRef.Resource == "pods" &&
			ev.ObjectRef.Subresource == "" && ev.Verb == verb && ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300
	})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// allAfter reports whether every request of batch arrived after every request of earlier
// had completed.
func allAfter(batch, earlier []framework.Request) bool {
	for _, r := range batch {
		for _, before := range earlier {
			if !r.Received.After(before.Completed) {
				return false
			}
		}
	}
	return true
}

func describeRequests(reqs []framework.Request) string {
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		parts = append(parts, fmt.Sprintf("%s %s %s..%s by %q", r.Verb, r.Name, r.Received.Format("15:04:05.000000"), r.Completed.Format("15:04:05.000000"), r.UserAgent))
	}
	return strings.Join(parts, "; ")
}

// With scaleStrategy.maxUnavailable 1, a scale-up creates one pod at a time,
// each once the one before has been ready for minReadySeconds, and says so in a
// ScaleUpLimited event.
func testScaleUpPacing(t *testing.T, e *testEnv) {
	const minReady = 3
	e.startKubelet(t)
	cs := newCloneSet("web", 3)
	cs.Spec.MinReadySeconds = minReady
	cs.Spec.ScaleStrategy.MaxUnavailable = intOrStr(1)
	e.cloneSets().Create(t, cs)
	_, pods := e.waitForSettled(t, "web")

	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	for i := 1; i < len(pods); i++ {
		ready := podCondition(pods[i-1], corev1.PodReady).LastTransitionTime
		gap := pods[i].CreationTimestamp.Sub(ready.Time)
		// Both times are whole seconds; the controller looks again minReadySeconds after
		// the pod turned ready.
		if gap < minReady*time.Second || gap > (minReady+3)*time.Second {
			t.Errorf("pod %s was created %v after pod %s turned ready, want %d to %d s", pods[i].Name, gap, pods[i-1].Name, minReady, minReady+3)
		}
	}
	const limited = "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: "
	events := e.csEvents(t, "web", "ScaleUpLimited")
	if len(events) == 0 || events[0].Type != corev1.EventTypeWarning || !strings.HasPrefix(events[0].Message, limited) {
		t.Errorf("ScaleUpLimited events %s, want a Warning %q<n>", framework.DescribeEvents(events), limited)
	}
}

// A scale-in deletes a Pending pod, a pod that is not ready and a pod with a
// lower deletion cost before others; of pods that are alike, one of two on the same node
// goes before a pod alone on its node.
func testScaleDownOrder(t *testing.T, e *testEnv) {
	cs := e.cloneSets().Create(t, newCloneSet("web", 6))
	names := podNames(e.waitForPods(t, cs, "6 pods", func(pods []*corev1.Pod) bool { return len(pods) == 6 }))
	pending, unready, cheap, shared1, shared2, alone := names[0], names[1], names[2], names[3], names[4], names[5]
	k := e.newKubelet()
	k.Ignore(pending)
	k.SetReady(unready, false)
	k.PlaceOn(shared1, "node-shared")
	k.PlaceOn(shared2, "node-shared")
	k.Start(t)
	e.patchPod(t, cheap, `{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"-10"}}}`)
	e.waitForPods(t, cs, "4 available, 1 running not ready, 1 pending", func(pods []*corev1.Pod) bool {
		return countPods(pods, available) == 4 && countPods(pods, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }) == 5
	})
	e.settle(t) // the controller has seen every pod as it is now

	e.scale(t, "web", 3)
	pods := e.waitForPods(t, cs, "3 pods", func(pods []*corev1.Pod) bool { return len(pods) == 3 })
	if got, want := podNames(pods), []string{shared1, shared2, alone}; !slices.Equal(got, want) {
		t.Fatalf("after 6→3 pods %v remain, want %v (the pending %s, the unready %s and the cheap %s deleted)", got, want, pending, unready, cheap)
	}

	e.scale(t, "web", 2)
	pods = e.waitForPods(t, cs, "2 pods", func(pods []*corev1.Pod) bool { return len(pods) == 2 })
	if got := podNames(pods); !slices.Contains(got, alone) || !(slices.Contains(got, shared1) || slices.Contains(got, shared2)) {
		t.Errorf("after 3→2 pods %v remain, want %s (alone on its node) and one of %s and %s (sharing one)", got, alone, shared1, shared2)
	}
}

// A pod named in podsToDelete is replaced and its name then dropped; the
// specified-delete label does the same; a scale-in with podsToDelete deletes exactly the
// pods named.
func testSpecifiedDelete(t *testing.T, e *testEnv) {
	e.startKubelet(t)
	cs := e.cloneSets().Create(t, newCloneSet("web", 3))
	_, pods := e.waitForSettled(t, "web")

	// replaced is the pods of the CloneSet once named is replaced and the others kept.
	replaced := func(what, named string, before []*corev1.Pod) []*corev1.Pod {
		t.Helper()
		kept := podNames(before)
		kept = slices.DeleteFunc(kept, func(n string) bool { return n == named })
		return e.waitForPods(t, cs, what, func(pods []*corev1.Pod) bool {
			names := podNames(pods)
			return len(pods) == 3 && countPods(pods, available) == 3 && !slices.Contains(names, named) &&
				len(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !slices.Contains(kept, n) })) == 2
		})
	}

	named := pods[0].Name
	e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{named} })
	pods = replaced(named+" (in podsToDelete) replaced", named, pods)
	e.cloneSets().WaitFor(t, "web", "podsToDelete emptied", func(cs *appsv1beta1.CloneSet) bool {
		return len(cs.Spec.ScaleStrategy.PodsToDelete) == 0
	})

	labelled := pods[1].Name
	e.patchPod(t, labelled, fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, appsv1beta1.SpecifiedDeleteKey))
	replaced(labelled+" (labelled specified-delete) replaced", labelled, pods)

	e.scale(t, "web", 5)
	_, pods = e.waitForSettled(t, "web")
	victim := pods[2].Name
	e.cloneSets().Update(t, "web", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.Replicas = ptr.To[int32](4)
		cs.Spec.ScaleStrategy.PodsToDelete = []string{victim}
	})
	want := slices.DeleteFunc(podNames(pods), func(n string) bool { return n == victim })
	e.waitForPods(t, cs, victim+" deleted", func(pods []*corev1.Pod) bool { return !slices.Contains(podNames(pods), victim) })
	e.settle(t)
	if got := podNames(activePods(e.GetPods(t, nil), cs.UID)); !slices.Equal(got, want) {
		t.Errorf("after 5→4 with podsToDelete [%s] pods %v remain, want %v", victim, got, want)
	}
	for _, name := range []string{named, labelled, victim} {
		if !slices.ContainsFunc(e.csEvents(t, "web", "SuccessfulDelete"), func(ev corev1.Event) bool {
			return ev.Message == "succeed to delete pod "+name
		}) {
			t.Errorf("no SuccessfulDelete event for pod %s", name)
		}
	}
}

// Every pod has a claim per claim template, named <claim>-<cloneset>-<id> and
// controlled by the CloneSet. A v1alpha1 CloneSet reuses claims by default: a deleted pod
// comes back under its instance ID, with its claim. A v1beta1 CloneSet does not by default:
// the claim goes and the replacement has a new ID. A scale-in deletes the pod's claims.
func testClaims(t *testing.T, e *testEnv) {
	template := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	alpha := newAlpha("reuse")
	alpha.Spec.Replicas = ptr.To[int32](2)
	alpha.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{template}
	e.alpha.Create(t, alpha)
	beta := newCloneSet("fresh", 2)
	beta.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{template}
	e.cloneSets().Create(t, beta)
	// No node takes the pods: a deleted pod is gone at once.

	for _, name := range []string{"reuse", "fresh"} {
		cs := e.cloneSets().Get(t, name)
		t.Run(name, func(t *testing.T) {
			pods := e.waitForPods(t, cs, "2 pods", func(pods []*corev1.Pod) bool { return len(pods) == 2 })
			claims := e.waitForClaims(t, cs, pods)
			victim := pods[0]
			id := victim.Labels[appsv1beta1.CloneSetInstanceID]
			claim := claims[id]
			e.Pods().Delete(t, victim.Name)
			if name == "reuse" {
				pods = e.waitForPods(t, cs, victim.Name+" back under its instance ID", func(pods []*corev1.Pod) bool {
					return len(pods) == 2 && slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Name == victim.Name && p.UID != victim.UID })
				})
				claims = e.waitForClaims(t, cs, pods)
				if got := claims[id]; got.UID != claim.UID {
					t.Errorf("pod %s came back with claim %s (uid %s), want the claim it had (uid %s)", victim.Name, got.Name, got.UID, claim.UID)
				}
			} else {
				pods = e.waitForPods(t, cs, victim.Name+" replaced under a new instance ID", func(pods []*corev1.Pod) bool {
					return len(pods) == 2 && !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Name == victim.Name })
				})
				e.waitForClaimReleased(t, claim.Name, victim)
				claims = e.waitForClaims(t, cs, pods)
			}

			e.scale(t, name, 1)
			pods = e.waitForPods(t, cs, "1 pod", func(pods []*corev1.Pod) bool { return len(pods) == 1 })
			kept := e.waitForClaims(t, cs, pods)
			for claimID, claim := range claims {
				if _, ok := kept[claimID]; !ok {
					e.waitForClaimDeleted(t, claim.Name)
				}
			}
		})
	}
}

// waitForClaims waits until each of pods has its claim, data-<cloneset>-<id>, labelled and
// controlled like the CloneSet's and mounted by the pod, and returns the claims by
// instance ID.
func (e *testEnv) waitForClaims(t *testing.T, cs *appsv1beta1.CloneSet, pods []*corev1.Pod) map[string]*corev1.PersistentVolumeClaim {
	t.Helper()
	claims := map[string]*corev1.PersistentVolumeClaim{}
	var problems []string
	e.Await(t, fmt.Sprintf("the claims of %v", podNames(pods)), func(ctx context.Context) (bool, error) {
		problems = nil
		for _, pod := range pods {
			id := pod.Labels[appsv1beta1.CloneSetInstanceID]
			name := "data-" + cs.Name + "-" + id
			claim, err := e.Client.CoreV1().PersistentVolumeClaims(e.Namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				problems = append(problems, name+" missing")
				continue
			}
			if err != nil {
				return false, err
			}
			ref := metav1.GetControllerOf(claim)
			switch {
			case claim.DeletionTimestamp != nil:
				problems = append(problems, name+" being deleted")
			case ref == nil || ref.Kind != "CloneSet" || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.UID != cs.UID:
				problems = append(problems, fmt.Sprintf("%s controlled by %+v", name, ref))
			case claim.Labels[appsv1beta1.CloneSetInstanceID] != id || claim.Labels["app"] != cs.Name:
				problems = append(problems, fmt.Sprintf("%s labelled %v", name, claim.Labels))
			case !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Name == "data" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name
			}):
				problems = append(problems, fmt.Sprintf("pod %s does not mount %s as volume data: %+v", pod.Name, name, pod.Spec.Volumes))
			}
			claims[id] = claim
		}
		return len(problems) == 0, nil
	}, func() string { return strings.Join(problems, "; ") })
	return claims
}

// waitForClaimDeleted waits until the claim is gone or being deleted (no controller removes
// the protection finalizer of a claim here).
func (e *testEnv) waitForClaimDeleted(t *testing.T, name string) {
	t.Helper()
	e.claims().WaitForEvenAbsent(t, name, "deleted", func(c *corev1.PersistentVolumeClaim) bool { return c == nil || c.DeletionTimestamp != nil })
}

// waitForClaimReleased waits until the claim of a pod deleted behind the CloneSet's back is
// no longer the CloneSet's: deleted, or handed over to the deleted pod, whose going the
// garbage collector (which does not run here) follows by deleting the claim.
func (e *testEnv) waitForClaimReleased(t *testing.T, name string, pod *corev1.Pod) {
	t.Helper()
	e.claims().WaitForEvenAbsent(t, name, "deleted or handed over to pod "+pod.Name, func(c *corev1.PersistentVolumeClaim) bool {
		if c == nil || c.DeletionTimestamp != nil {
			return true
		}
		ref := metav1.GetControllerOf(c)
		return ref != nil && ref.Kind == "Pod" && ref.UID == pod.UID && len(c.OwnerReferences) == 1
	})
}

func (e *testEnv) claims() *framework.Objects[*corev1.PersistentVolumeClaim] {
	return framework.NewObjects(e.Env, "PersistentVolumeClaim", e.Namespace, e.Client.CoreV1().PersistentVolumeClaims(e.Namespace))
}

// A pod the CloneSet's selector matches but nobody owns is neither adopted
// nor counted; a pod of the CloneSet whose labels stop matching is released and replaced.
func testOrphans(t *testing.T, e *testEnv) {
	orphan := e.Pods().Create(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image1}}},
	})
	cs := e.cloneSets().Create(t, newCloneSet("web", 2))
	pods := e.waitForPods(t, cs, "2 pods", func(pods []*corev1.Pod) bool { return len(pods) == 2 })
	e.settle(t)
	if got := e.Pods().Get(t, orphan.Name); len(got.OwnerReferences) != 0 {
		t.Errorf("the orphan got owners %+v", got.OwnerReferences)
	}
	if got := e.cloneSets().Get(t, "web"); got.Status.Replicas != 2 {
		t.Errorf("status.replicas %d with 2 pods and an orphan, want 2", got.Status.Replicas)
	}

	leaver := pods[0]
	e.patchPod(t, leaver.Name, `{"metadata":{"labels":{"app":"elsewhere"}}}`)
	e.Pods().WaitFor(t, leaver.Name, "released", func(p *corev1.Pod) bool { return metav1.GetControllerOf(p) == nil })
	e.waitForPods(t, cs, "2 pods without "+leaver.Name, func(pods []*corev1.Pod) bool {
		return len(pods) == 2 && !slices.Contains(podNames(pods), leaver.Name)
	})
	e.cloneSets().WaitFor(t, "web", "status.replicas 2", func(cs *appsv1beta1.CloneSet) bool { return cs.Status.Replicas == 2 })
	e.settle(t)
	if got := activePods(e.GetPods(t, nil), cs.UID); len(got) != 2 {
		t.Errorf("%d pods after the release settled, want 2: %s", len(got), describePodPtrs(got))
	}
}
