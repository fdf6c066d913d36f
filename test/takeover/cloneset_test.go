package main

import (
	"fmt"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	bosunscheme "github.com/bosun-dev/client-go/clientset/versioned/scheme"

	"github.com/bosun-dev/bosun/pkg/webhook/cloneset"
	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// hub decodes a manifest of a case, defaults it as admission does in its version and
// returns its v1beta1 form.
func hub(t *testing.T, c cloneSetCase, manifest []byte) *appsv1beta1.CloneSet {
	t.Helper()
	out := &appsv1beta1.CloneSet{}
	if c.version == v1beta1 {
		if err := yaml.UnmarshalStrict(manifest, out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		cloneset.SetDefaultsV1beta1(out, true)
		return out
	}
	in := &appsv1alpha1.CloneSet{}
	if err := yaml.UnmarshalStrict(manifest, in); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	cloneset.SetDefaults(in, true)
	if err := bosunscheme.Scheme.Convert(in, out, nil); err != nil {
		t.Fatalf("%s: converting to v1beta1: %v", c.name, err)
	}
	return out
}

// Every CloneSet of the run is valid in the version it is written in, and is the case it
// says: the hook that holds it on every pod, the partition, the claim template, the
// exclusion of pods in PreparingDelete.
func TestCloneSetManifests(t *testing.T) {
	for _, sp := range startingPoints {
		for _, c := range sp.cloneSets() {
			cs := hub(t, c, []byte(c.manifest()))
			if errs := cloneset.Validate(cs); len(errs) > 0 {
				t.Errorf("%s: CloneSet %s is invalid: %v", sp.name, c.name, errs)
			}
			before, _ := c.replicas()
			if *cs.Spec.Replicas != int32(before) || cs.Name != c.name || cs.Namespace != namespace {
				t.Errorf("%s: CloneSet %s is %s/%s with %d replicas", sp.name, c.name, cs.Namespace, cs.Name, *cs.Spec.Replicas)
			}
			ru := cs.Spec.UpdateStrategy.RollingUpdate
			labels := cs.Spec.Template.Labels
			switch c.shape {
			case partitionedRecreate:
				if ru.PodUpdatePolicy != appsv1beta1.RecreateCloneSetPodUpdateStrategyType || ru.Partition.IntValue() != 1 {
					t.Errorf("%s: CloneSet %s: want ReCreate with partition 1, got %+v", sp.name, c.name, ru)
				}
				if len(cs.Spec.VolumeClaimTemplates) != 1 || cs.Spec.VolumeClaimTemplates[0].Name != claimName ||
					cs.Spec.VolumeClaimTemplates[0].Spec.StorageClassName == nil || *cs.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != "" {
					t.Errorf("%s: CloneSet %s: want one claim template %s of no class", sp.name, c.name, claimName)
				}
			case heldInPlaceUpdate:
				if ru.PodUpdatePolicy != appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType || ru.Partition.IntValue() != 1 {
					t.Errorf("%s: CloneSet %s: want InPlaceIfPossible with partition 1, got %+v", sp.name, c.name, ru)
				}
				if cs.Spec.Lifecycle == nil || cs.Spec.Lifecycle.InPlaceUpdate == nil ||
					cs.Spec.Lifecycle.InPlaceUpdate.LabelsHandler[holdUpdateLabel] != "true" || labels[holdUpdateLabel] != "true" {
					t.Errorf("%s: CloneSet %s: want every pod hooked by inPlaceUpdate", sp.name, c.name)
				}
			case heldDeletion:
				if cs.Spec.Lifecycle == nil || cs.Spec.Lifecycle.PreDelete == nil ||
					cs.Spec.Lifecycle.PreDelete.LabelsHandler[holdDeleteLabel] != "true" || labels[holdDeleteLabel] != "true" {
					t.Errorf("%s: CloneSet %s: want every pod hooked by preDelete", sp.name, c.name)
				}
				if !cs.Spec.ScaleStrategy.ExcludePreparingDelete {
					t.Errorf("%s: CloneSet %s: want pods in PreparingDelete excluded", sp.name, c.name)
				}
			}
			if got := cs.Spec.ProgressDeadlineSeconds != nil; got != c.progressDeadline {
				t.Errorf("%s: CloneSet %s: progressDeadlineSeconds set: %t, want %t", sp.name, c.name, got, c.progressDeadline)
			}
			// Lowering the partition through the case's version, as the run does under bosun.
			doc, err := yaml.YAMLToJSON([]byte(c.manifest()))
			if err != nil {
				t.Fatal(err)
			}
			patched, err := jsonpatch.MergePatch(doc, []byte(c.partitionPatch(0)))
			if err != nil {
				t.Fatalf("%s: CloneSet %s: the partition patch: %v", sp.name, c.name, err)
			}
			if cs := hub(t, c, patched); cs.Spec.UpdateStrategy.RollingUpdate.Partition.IntValue() != 0 ||
				cs.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy != ru.PodUpdatePolicy {
				t.Errorf("%s: CloneSet %s: the partition patch %s gives %+v", sp.name, c.name, c.partitionPatch(0), cs.Spec.UpdateStrategy)
			}
		}
	}
}

// testPod is a Ready pod of CloneSet cs at revision rev with the web server image version.
func testPod(cs, id, rev, state, version string, extra ...string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: cs + "-" + id, Namespace: namespace, UID: types.UID("uid-" + id),
			Labels: map[string]string{"app": cs, revisionLabel: rev, lifecycleStateLabel: state, instanceIDLabel: id},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webserver", Image: cluster.WebserverImage(version)}}},
		Status: corev1.PodStatus{
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "webserver"}},
		},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		p.Labels[extra[i]] = extra[i+1]
	}
	return p
}

func testCloneSet(name string, replicas int64, status map[string]any) *unstructured.Unstructured {
	status["observedGeneration"] = int64(2)
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": namespace, "generation": int64(2)},
		"spec":     map[string]any{"replicas": replicas},
		"status":   status,
	}}
}

func boundClaims(cs string, ids ...string) []corev1.PersistentVolumeClaim {
	var out []corev1.PersistentVolumeClaim
	for _, id := range ids {
		out = append(out, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claimName + "-" + cs + "-" + id, UID: types.UID("claim-" + id)},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		})
	}
	return out
}

// heldViews are, for each shape, a view of the state OpenKruise hands it over in.
func heldViews() map[cloneSetShape]cloneSetView {
	partitioned := cloneSetView{
		obj: testCloneSet(claimsAlpha, 2, map[string]any{
			"replicas": int64(2), "readyReplicas": int64(2), "availableReplicas": int64(2), "updatedReplicas": int64(1),
			"updatedReadyReplicas": int64(1), "updateRevision": "claims-new", "currentRevision": "claims-old",
			"conditions": []any{map[string]any{"type": "Progressing", "status": "True", "reason": "ProgressPartitionAvailable"}},
		}),
		pods:   []corev1.Pod{testPod(claimsAlpha, "aaaaa", "claims-old", stateNormal, "v1"), testPod(claimsAlpha, "bbbbb", "claims-new", stateNormal, "v2")},
		claims: boundClaims(claimsAlpha, "aaaaa", "bbbbb"),
	}
	inPlace := cloneSetView{
		obj: testCloneSet(inPlaceBeta, 2, map[string]any{
			"replicas": int64(2), "readyReplicas": int64(2), "availableReplicas": int64(1),
			"updateRevision": "inplace-new", "currentRevision": "inplace-old",
		}),
		pods: []corev1.Pod{
			testPod(inPlaceBeta, "ccccc", "inplace-old", statePreparingUpdate, "v1", holdUpdateLabel, "true"),
			testPod(inPlaceBeta, "ddddd", "inplace-old", stateNormal, "v1", holdUpdateLabel, "true"),
		},
	}
	drain := cloneSetView{
		obj: testCloneSet(drainBeta, 2, map[string]any{
			"replicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(2),
			"updateRevision": "drain-1", "currentRevision": "drain-1",
		}),
		pods: []corev1.Pod{
			testPod(drainBeta, "fffff", "drain-1", statePreparingDelete, "v1", holdDeleteLabel, "true"),
			testPod(drainBeta, "ggggg", "drain-1", stateNormal, "v1", holdDeleteLabel, "true"),
			testPod(drainBeta, "hhhhh", "drain-1", stateNormal, "v1", holdDeleteLabel, "true"),
		},
	}
	return map[cloneSetShape]cloneSetView{partitionedRecreate: partitioned, heldInPlaceUpdate: inPlace, heldDeletion: drain}
}

var testCases = map[cloneSetShape]cloneSetCase{
	partitionedRecreate: {name: claimsAlpha, version: v1alpha1, shape: partitionedRecreate, progressDeadline: true},
	heldInPlaceUpdate:   {name: inPlaceBeta, version: v1beta1, shape: heldInPlaceUpdate},
	heldDeletion:        {name: drainBeta, version: v1beta1, shape: heldDeletion},
}

// The held states are recognised, and each thing that is not one is told apart: a pod
// not Ready or terminating, the generation not observed, the hook's pod moved on, a claim
// unbound, the partition's pods swapped.
func TestHeldProblem(t *testing.T) {
	for shape, v := range heldViews() {
		c := testCases[shape]
		if problem := c.heldProblem(v); problem != "" {
			t.Errorf("%s: the held state was refused: %s", shape, problem)
		}
		breakages := map[string]func(v *cloneSetView){
			"a pod not Ready":  func(v *cloneSetView) { v.pods[0].Status.Conditions[0].Status = corev1.ConditionFalse },
			"a pod going":      func(v *cloneSetView) { v.pods[1].DeletionTimestamp = &metav1.Time{} },
			"a new generation": func(v *cloneSetView) { v.obj.SetGeneration(3) },
			"a pod Updating": func(v *cloneSetView) {
				for i := range v.pods {
					if s := v.pods[i].Labels[lifecycleStateLabel]; s != stateNormal {
						v.pods[i].Labels[lifecycleStateLabel] = "Updating"
					}
				}
				if shape == partitionedRecreate {
					v.pods[0].Labels[lifecycleStateLabel] = "PreparingNormal"
				}
			},
		}
		switch shape {
		case partitionedRecreate:
			breakages["a claim unbound"] = func(v *cloneSetView) { v.claims[1].Status.Phase = corev1.ClaimPending }
			breakages["the images swapped"] = func(v *cloneSetView) {
				v.pods[0].Spec.Containers[0].Image, v.pods[1].Spec.Containers[0].Image = v.pods[1].Spec.Containers[0].Image, v.pods[0].Spec.Containers[0].Image
			}
			breakages["no Progressing condition"] = func(v *cloneSetView) { unstructured.RemoveNestedField(v.obj.Object, "status", "conditions") }
		case heldInPlaceUpdate:
			breakages["the hook's label gone"] = func(v *cloneSetView) { delete(v.pods[0].Labels, holdUpdateLabel) }
		case heldDeletion:
			breakages["the pod gone"] = func(v *cloneSetView) { v.pods = v.pods[1:] }
		}
		for name, breakage := range breakages {
			broken := copyView(v)
			breakage(&broken)
			if c.heldProblem(broken) == "" {
				t.Errorf("%s: %s was taken for the held state", shape, name)
			}
		}
	}
}

func copyView(v cloneSetView) cloneSetView {
	out := cloneSetView{obj: v.obj.DeepCopy()}
	for _, p := range v.pods {
		out.pods = append(out.pods, *p.DeepCopy())
	}
	for _, c := range v.claims {
		out.claims = append(out.claims, *c.DeepCopy())
	}
	return out
}

// completed is the view of the case's rollout completed from start: keep are the pods of
// start that stay (restarted once when restarted), add new ones (ids), at revision rev.
func completed(c cloneSetCase, start cloneSetView, rev string, keep []string, restarted bool, add ...string) cloneSetView {
	_, replicas := c.replicas()
	version := "v1"
	if c.rollsImage() {
		version = "v2"
	}
	r := map[string]any{"updateRevision": rev, "currentRevision": rev}
	for _, field := range []string{"replicas", "readyReplicas", "availableReplicas", "updatedReplicas", "updatedReadyReplicas", "updatedAvailableReplicas"} {
		r[field] = replicas
	}
	end := cloneSetView{obj: testCloneSet(c.name, replicas, r), claims: start.claims}
	for _, p := range start.pods {
		id := p.Labels[instanceIDLabel]
		for _, k := range keep {
			if k == id {
				q := testPod(c.name, id, rev, stateNormal, version)
				if restarted {
					q.Status.ContainerStatuses[0].RestartCount = 1
				}
				end.pods = append(end.pods, q)
			}
		}
	}
	for _, id := range add {
		end.pods = append(end.pods, testPod(c.name, id, rev, stateNormal, version))
		end.claims = append(end.claims, boundClaims(c.name, id)...)
	}
	return end
}

// A completed rollout is told apart from one that is not, and from one that replaced,
// created or kept pods it had no reason to.
func TestCompletion(t *testing.T) {
	views := heldViews()
	tests := []struct {
		shape     cloneSetShape
		end       cloneSetView
		rolledOut bool
		problem   bool
	}{
		{partitionedRecreate, completed(testCases[partitionedRecreate], views[partitionedRecreate], "claims-new", []string{"bbbbb"}, false, "zzzzz"), true, false},
		{partitionedRecreate, completed(testCases[partitionedRecreate], views[partitionedRecreate], "claims-new", nil, false, "yyyyy", "zzzzz"), true, true},
		{partitionedRecreate, completed(testCases[partitionedRecreate], views[partitionedRecreate], "claims-new", []string{"aaaaa", "bbbbb"}, false), true, true},
		{heldInPlaceUpdate, completed(testCases[heldInPlaceUpdate], views[heldInPlaceUpdate], "inplace-new", []string{"ccccc", "ddddd"}, true), true, false},
		{heldInPlaceUpdate, completed(testCases[heldInPlaceUpdate], views[heldInPlaceUpdate], "inplace-new", []string{"ccccc", "ddddd"}, false), true, true},
		{heldInPlaceUpdate, completed(testCases[heldInPlaceUpdate], views[heldInPlaceUpdate], "inplace-new", []string{"ccccc"}, true, "zzzzz"), true, true},
		{heldDeletion, completed(testCases[heldDeletion], views[heldDeletion], "drain-1", []string{"ggggg", "hhhhh"}, false), true, false},
		{heldDeletion, completed(testCases[heldDeletion], views[heldDeletion], "drain-1", []string{"fffff", "ggggg"}, false), true, true},
		{heldDeletion, completed(testCases[heldDeletion], views[heldDeletion], "drain-1", []string{"ggggg"}, false, "zzzzz"), true, true},
		// Held is not rolled out.
		{partitionedRecreate, views[partitionedRecreate], false, true},
		{heldInPlaceUpdate, views[heldInPlaceUpdate], false, true},
		{heldDeletion, views[heldDeletion], false, true},
	}
	for i, tt := range tests {
		c := testCases[tt.shape]
		t.Run(fmt.Sprintf("%d %s", i, tt.shape), func(t *testing.T) {
			if problem := c.rolledOutProblem(tt.end); (problem == "") != tt.rolledOut {
				t.Errorf("rolledOutProblem = %q, want rolled out %t", problem, tt.rolledOut)
			}
			if !tt.rolledOut {
				return
			}
			if problem := c.completionProblem(views[tt.shape], tt.end); (problem != "") != tt.problem {
				t.Errorf("completionProblem = %q, want a problem: %t", problem, tt.problem)
			}
		})
	}
	// A completed rollout with a pod still Updated (not back to Normal) or at the old
	// image is not complete.
	end := completed(testCases[heldInPlaceUpdate], views[heldInPlaceUpdate], "inplace-new", []string{"ccccc", "ddddd"}, true)
	end.pods[0].Labels[lifecycleStateLabel] = stateUpdated
	if testCases[heldInPlaceUpdate].rolledOutProblem(end) == "" {
		t.Error("a pod left Updated was taken for a completed rollout")
	}
	end.pods[0].Labels[lifecycleStateLabel] = stateNormal
	end.pods[1].Spec.Containers[0].Image = cluster.WebserverImage("v1")
	if testCases[heldInPlaceUpdate].rolledOutProblem(end) == "" {
		t.Error("a pod at the old image was taken for a completed rollout")
	}
}
