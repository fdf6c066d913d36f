package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// The CloneSets of the run. Each is handed over in the middle of something that only a
// controller that understands OpenKruise's state carries on without replacing a pod: a
// rollout stopped by its partition, an in-place update and a scale-in each held by a
// lifecycle hook.
const (
	claimsAlpha  = "claims-alpha"
	inPlaceAlpha = "inplace-alpha"
	inPlaceBeta  = "inplace-beta"
	drainAlpha   = "drain-alpha"
	drainBeta    = "drain-beta"
)

// Labels and keys of OpenKruise's that the CloneSet cases read and write.
const (
	lifecycleStateLabel = "lifecycle.apps.kruise.io/state"
	revisionLabel       = "controller-revision-hash"
	instanceIDLabel     = "apps.kruise.io/cloneset-instance-id"
	excludeDeleteLabel  = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"

	stateNormal          = "Normal"
	statePreparingUpdate = "PreparingUpdate"
	stateUpdated         = "Updated"
	statePreparingDelete = "PreparingDelete"
)

// The lifecycle hooks' labels: every pod carries them from its template, so every pod is
// hooked, and a pod chosen for an in-place update or a deletion waits, in PreparingUpdate
// or PreparingDelete, until the label is taken off it. Nothing but the run takes it off:
// that is what makes those states last, under OpenKruise and under bosun alike.
const (
	holdUpdateLabel = "takeover.bosun.dev/hold-update"
	holdDeleteLabel = "takeover.bosun.dev/hold-delete"
)

// claimName is the claim template of claimsAlpha; its claims are <claimName>-<cs>-<id>.
const claimName = "data"

// cloneSetShape is where a CloneSet stands when OpenKruise hands it over.
type cloneSetShape string

const (
	// partitionedRecreate: a ReCreate rollout of two pods with partition 1, one pod
	// recreated at the new image, one left at the old; each pod has a bound claim from the
	// volume claim template. bosun completes it once the partition is 0.
	partitionedRecreate cloneSetShape = "a ReCreate rollout stopped by partition 1 of 2, with claims"
	// heldInPlaceUpdate: an InPlaceIfPossible rollout of two pods with partition 1 whose
	// chosen pod sits in PreparingUpdate, held by the inPlaceUpdate hook, at the old image.
	// bosun completes it, in place, once the partition is 0 and the hook lets each pod go.
	heldInPlaceUpdate cloneSetShape = "an in-place rollout of partition 1 of 2 held in PreparingUpdate"
	// heldDeletion: a scale-in from three pods to two whose chosen pod sits in
	// PreparingDelete, held by the preDelete hook; excludePreparingDelete is on (in v1alpha1
	// its label). bosun deletes the pod once the hook lets it go, and creates none.
	heldDeletion cloneSetShape = "a scale-in from 3 to 2 held in PreparingDelete"
)

// cloneSetCase is one CloneSet of the run.
type cloneSetCase struct {
	name string
	// version is the API version the run writes it in, as a user of that version does.
	version string
	shape   cloneSetShape
	// progressDeadline sets spec.progressDeadlineSeconds, so that the CloneSet has a
	// Progressing condition to take over; OpenKruise 1.8's CRD has no such field.
	progressDeadline bool
}

func (c cloneSetCase) workload() workload {
	return workload{kind: "CloneSet", name: c.name, manifest: c.manifest()}
}

// replicas are the CloneSet's pods once created (before) and when handed over (after).
func (c cloneSetCase) replicas() (before, after int64) {
	if c.shape == heldDeletion {
		return 3, 2
	}
	return 2, 2
}

// rollsImage says whether the case goes from the v1 to the v2 image of the web server.
func (c cloneSetCase) rollsImage() bool { return c.shape != heldDeletion }

// finalImage is the image every pod runs once bosun completed the rollout.
func (c cloneSetCase) finalImage() string {
	if c.rollsImage() {
		return cluster.WebserverImage("v2")
	}
	return cluster.WebserverImage("v1")
}

// volumes are the PersistentVolumes the case's claims may bind: one per pod, one per pod
// that a recreation might give a fresh instance ID (and claim) under each manager.
func (c cloneSetCase) volumes() int {
	if c.shape != partitionedRecreate {
		return 0
	}
	_, after := c.replicas()
	return 3 * int(after)
}

// manifest is the CloneSet as a user of its version writes it.
func (c cloneSetCase) manifest() string {
	before, _ := c.replicas()
	labels := map[string]any{"app": c.name}
	container := map[string]any{
		"name":  "webserver",
		"image": cluster.WebserverImage("v1"),
		"ports": []any{map[string]any{"containerPort": cluster.WebserverPort}},
		"readinessProbe": map[string]any{
			"httpGet":       map[string]any{"path": "/ready", "port": cluster.WebserverPort},
			"periodSeconds": 1, "failureThreshold": 1,
		},
	}
	spec := map[string]any{
		"replicas": before,
		"selector": map[string]any{"matchLabels": map[string]any{"app": c.name}},
	}
	metadata := map[string]any{"name": c.name, "namespace": namespace}
	switch c.shape {
	case partitionedRecreate:
		spec["updateStrategy"] = c.updateStrategy("ReCreate", 1)
		spec["volumeClaimTemplates"] = []any{map[string]any{
			"metadata": map[string]any{"name": claimName},
			"spec": map[string]any{
				"accessModes": []any{"ReadWriteOnce"},
				// No class: the claims bind to the run's PersistentVolumes, which have none
				// (the local cluster has no provisioner).
				"storageClassName": "",
				"resources":        map[string]any{"requests": map[string]any{"storage": "1Mi"}},
			},
		}}
		container["volumeMounts"] = []any{map[string]any{"name": claimName, "mountPath": "/data"}}
	case heldInPlaceUpdate:
		spec["updateStrategy"] = c.updateStrategy("InPlaceIfPossible", 1)
		spec["lifecycle"] = map[string]any{"inPlaceUpdate": map[string]any{"labelsHandler": map[string]any{holdUpdateLabel: "true"}}}
		labels[holdUpdateLabel] = "true"
	case heldDeletion:
		spec["lifecycle"] = map[string]any{"preDelete": map[string]any{"labelsHandler": map[string]any{holdDeleteLabel: "true"}}}
		labels[holdDeleteLabel] = "true"
		if c.version == v1alpha1 {
			metadata["labels"] = map[string]any{excludeDeleteLabel: "true"}
		} else {
			spec["scaleStrategy"] = map[string]any{"excludePreparingDelete": true}
		}
	}
	if c.progressDeadline {
		spec["progressDeadlineSeconds"] = 600
	}
	spec["template"] = map[string]any{
		"metadata": map[string]any{"labels": labels},
		"spec":     map[string]any{"terminationGracePeriodSeconds": 5, "containers": []any{container}},
	}
	data, err := yaml.Marshal(map[string]any{
		"apiVersion": "apps.kruise.io/" + c.version,
		"kind":       "CloneSet",
		"metadata":   metadata,
		"spec":       spec,
	})
	if err != nil {
		panic(fmt.Sprintf("takeover: encoding CloneSet %s: %v", c.name, err))
	}
	return string(data)
}

// updateStrategy is a rolling update by policy with a partition, in the case's version.
func (c cloneSetCase) updateStrategy(policy string, partition int) map[string]any {
	if c.version == v1alpha1 {
		return map[string]any{"type": policy, "partition": partition}
	}
	return map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"podUpdatePolicy": policy, "partition": partition}}
}

// partitionPatch is a merge patch of the partition, in the case's version.
func (c cloneSetCase) partitionPatch(partition int) string {
	if c.version == v1alpha1 {
		return fmt.Sprintf(`{"spec":{"updateStrategy":{"partition":%d}}}`, partition)
	}
	return fmt.Sprintf(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":%d}}}}`, partition)
}

// cloneSetView is what the waits read of a CloneSet: the object and its pods and claims
// (those labelled with its app; terminating pods included).
type cloneSetView struct {
	obj    *unstructured.Unstructured
	pods   []corev1.Pod
	claims []corev1.PersistentVolumeClaim
}

func (v cloneSetView) status(field string) int64 {
	n, _, _ := unstructured.NestedInt64(v.obj.Object, "status", field)
	return n
}

func (v cloneSetView) revisions() (update, current string) {
	update, _, _ = unstructured.NestedString(v.obj.Object, "status", "updateRevision")
	current, _, _ = unstructured.NestedString(v.obj.Object, "status", "currentRevision")
	return update, current
}

// describe sums the view up for a wait that timed out.
func (v cloneSetView) describe() string {
	var pods []string
	for _, p := range v.pods {
		s := fmt.Sprintf("%s[%s %s ready=%t %s", p.Name, p.Labels[revisionLabel], p.Labels[lifecycleStateLabel], podReady(&p), p.Spec.Containers[0].Image)
		if p.DeletionTimestamp != nil {
			s += " terminating"
		}
		pods = append(pods, s+"]")
	}
	return fmt.Sprintf("generation %d, status %v, pods %s", v.obj.GetGeneration(), v.obj.Object["status"], strings.Join(pods, " "))
}

// heldProblem says why the view is not the case's state as OpenKruise hands it over, ""
// when it is.
func (c cloneSetCase) heldProblem(v cloneSetView) string {
	_, after := c.replicas()
	if problem := v.common(after); problem != "" {
		return problem
	}
	update, current := v.revisions()
	byState := map[string][]corev1.Pod{}
	for _, p := range v.pods {
		byState[p.Labels[lifecycleStateLabel]] = append(byState[p.Labels[lifecycleStateLabel]], p)
	}
	old, v2 := cluster.WebserverImage("v1"), cluster.WebserverImage("v2")
	switch c.shape {
	case partitionedRecreate:
		if len(v.pods) != 2 || len(byState[stateNormal]) != 2 {
			return "want two Normal pods"
		}
		if update == current || v.status("updatedReplicas") != 1 || v.status("updatedReadyReplicas") != 1 ||
			v.status("readyReplicas") != 2 || v.status("availableReplicas") != 2 {
			return "want one of two pods updated, both ready and available"
		}
		atUpdate := podsAt(v.pods, update)
		if len(atUpdate) != 1 || atUpdate[0].Spec.Containers[0].Image != v2 {
			return "want one pod at the update revision, with the new image"
		}
		if atCurrent := podsAt(v.pods, current); len(atCurrent) != 1 || atCurrent[0].Spec.Containers[0].Image != old {
			return "want one pod at the current revision, with the old image"
		}
		if problem := v.claimsBound(); problem != "" {
			return problem
		}
		if c.progressDeadline && !hasCondition(v.obj, "Progressing", "True", "ProgressPartitionAvailable") {
			return "want condition Progressing True ProgressPartitionAvailable"
		}
	case heldInPlaceUpdate:
		if len(v.pods) != 2 || len(byState[statePreparingUpdate]) != 1 || len(byState[stateNormal]) != 1 {
			return "want one pod in PreparingUpdate and one Normal"
		}
		if update == current || len(podsAt(v.pods, current)) != 2 || v.status("updatedReplicas") != 0 {
			return "want both pods at the current revision, none updated"
		}
		for _, p := range v.pods {
			if p.Spec.Containers[0].Image != old || p.Labels[holdUpdateLabel] != "true" {
				return "want both pods hooked, with the old image"
			}
		}
	case heldDeletion:
		if len(v.pods) != 3 || len(byState[statePreparingDelete]) != 1 || len(byState[stateNormal]) != 2 {
			return "want one pod in PreparingDelete and two Normal"
		}
		if update != current || v.status("replicas") != 3 || v.status("availableReplicas") != 2 {
			return "want status.replicas 3 (the pod in PreparingDelete counted), 2 available"
		}
		if byState[statePreparingDelete][0].Labels[holdDeleteLabel] != "true" {
			return "want the pod in PreparingDelete hooked"
		}
	}
	return ""
}

// rolledOutProblem says why the view is not the case's rollout completed under bosun, ""
// when it is.
func (c cloneSetCase) rolledOutProblem(v cloneSetView) string {
	_, after := c.replicas()
	return rolledOutAt(v, after, c.finalImage(), c.shape == partitionedRecreate)
}

// rolledOutAt says why the view is not a completed rollout of replicas pods running image,
// "" when it is: every pod at the update revision, Ready and Normal, none terminating, the
// status saying so, and, with claims, every pod's claim bound.
func rolledOutAt(v cloneSetView, replicas int64, image string, claims bool) string {
	if problem := v.common(replicas); problem != "" {
		return problem
	}
	update, current := v.revisions()
	if update == "" || update != current {
		return "want the current revision to be the update revision"
	}
	if int64(len(v.pods)) != replicas {
		return fmt.Sprintf("want %d pods", replicas)
	}
	for _, field := range []string{"replicas", "readyReplicas", "availableReplicas", "updatedReplicas", "updatedReadyReplicas", "updatedAvailableReplicas"} {
		if v.status(field) != replicas {
			return fmt.Sprintf("want status.%s %d", field, replicas)
		}
	}
	for _, p := range v.pods {
		if p.Labels[revisionLabel] != update || p.Labels[lifecycleStateLabel] != stateNormal || p.Spec.Containers[0].Image != image {
			return fmt.Sprintf("want every pod Normal at %s with %s", update, image)
		}
	}
	if claims {
		return v.claimsBound()
	}
	return ""
}

// common is what holds of every CloneSet of the run whenever the run looks: the status
// observed the generation, spec.replicas is want, no pod is terminating and every pod is
// Ready (no hook of the run marks a pod not ready).
func (v cloneSetView) common(want int64) string {
	observed, _, _ := unstructured.NestedInt64(v.obj.Object, "status", "observedGeneration")
	if observed != v.obj.GetGeneration() {
		return "want the generation observed"
	}
	if replicas, _, _ := unstructured.NestedInt64(v.obj.Object, "spec", "replicas"); replicas != want {
		return fmt.Sprintf("want spec.replicas %d", want)
	}
	for _, p := range v.pods {
		if p.DeletionTimestamp != nil {
			return "want no pod terminating"
		}
		if !podReady(&p) {
			return "want every pod Ready"
		}
	}
	return ""
}

// claimsBound says why some pod lacks a bound claim of the claim template, "" when none does.
func (v cloneSetView) claimsBound() string {
	for _, p := range v.pods {
		name := claimName + "-" + v.obj.GetName() + "-" + p.Labels[instanceIDLabel]
		i := slices.IndexFunc(v.claims, func(c corev1.PersistentVolumeClaim) bool { return c.Name == name })
		if i < 0 || v.claims[i].Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("want claim %s of pod %s bound", name, p.Name)
		}
	}
	return ""
}

// podsAt returns the pods whose revision label is revision.
func podsAt(pods []corev1.Pod, revision string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Labels[revisionLabel] == revision {
			out = append(out, p)
		}
	}
	return out
}

func hasCondition(obj *unstructured.Unstructured, kind, status, reason string) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		c, _ := c.(map[string]any)
		if c["type"] == kind {
			return c["status"] == status && c["reason"] == reason
		}
	}
	return false
}

// readCloneSet reads a CloneSet of the run in version, with its pods and claims.
func (e *env) readCloneSet(ctx context.Context, version, name string) (cloneSetView, error) {
	obj, err := e.get(ctx, "CloneSet", version, name)
	if err != nil {
		return cloneSetView{}, err
	}
	pods, err := e.appPods(ctx, name)
	if err != nil {
		return cloneSetView{}, err
	}
	claims, err := e.client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return cloneSetView{}, err
	}
	return cloneSetView{obj: obj, pods: pods, claims: claims.Items}, nil
}

// waitCloneSet waits until problem of the CloneSet, read in version, is "".
func (e *env) waitCloneSet(ctx context.Context, timeout time.Duration, version, name, what string, problem func(cloneSetView) string) error {
	var last string
	err := e.waitFor(ctx, timeout, "CloneSet "+name+" "+what, func(ctx context.Context) (bool, error) {
		v, err := e.readCloneSet(ctx, version, name)
		if err != nil {
			return false, err
		}
		p := problem(v)
		last = p + "; " + v.describe()
		return p == "", nil
	})
	if err != nil && last != "" {
		return fmt.Errorf("%w (last seen: %s)", err, last)
	}
	return err
}

// createVolumes creates n PersistentVolumes of no class on the node's disk (under the
// cluster's directory), for the claims of the CloneSets: the local cluster has no
// provisioner, so without them the claims would stay Pending and their pods unscheduled.
func (e *env) createVolumes(ctx context.Context, n int) error {
	create := corev1.HostPathDirectoryOrCreate
	for i := range n {
		name := fmt.Sprintf("takeover-volume-%d", i)
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(e.c.Dir(), "volumes", name), Type: &create},
				},
			},
		}
		if _, err := e.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating PersistentVolume %s: %w", name, err)
		}
	}
	return nil
}

// startCloneSet waits until OpenKruise has rolled out a new CloneSet, every pod Ready and
// Normal with the first image, and then sets off what the case hands over: the new image
// (held by the partition or by the inPlaceUpdate hook) or the scale-in (held by the
// preDelete hook).
func (e *env) startCloneSet(ctx context.Context, c cloneSetCase) error {
	before, _ := c.replicas()
	if err := e.waitCloneSet(ctx, 4*time.Minute, c.version, c.name, "to roll out", func(v cloneSetView) string {
		return rolledOutAt(v, before, cluster.WebserverImage("v1"), c.shape == partitionedRecreate)
	}); err != nil {
		return err
	}
	if c.rollsImage() {
		return e.updateImage(ctx, "CloneSet", c.version, c.name, cluster.WebserverImage("v2"))
	}
	_, after := c.replicas()
	return e.patch(ctx, "CloneSet", c.version, c.name, fmt.Sprintf(`{"spec":{"replicas":%d}}`, after))
}

// completeCloneSet lets bosun finish what OpenKruise handed over, as the CloneSet's user
// would: the partition lowered to 0; the hook's label taken off each pod that waits in
// PreparingUpdate or PreparingDelete, and put back on each pod whose in-place update is
// done (Updated), which returns it to Normal. It returns once the rollout is complete
// (rolledOutProblem) and bosun did nothing to a pod that the rollout did not ask for
// (completionProblem).
func (e *env) completeCloneSet(ctx context.Context, c cloneSetCase) error {
	start, err := e.readCloneSet(ctx, c.version, c.name)
	if err != nil {
		return err
	}
	if problem := c.heldProblem(start); problem != "" {
		return fmt.Errorf("CloneSet %s is no longer as OpenKruise handed it over: %s (%s)", c.name, problem, start.describe())
	}
	if c.shape != heldDeletion {
		if err := e.patch(ctx, "CloneSet", c.version, c.name, c.partitionPatch(0)); err != nil {
			return err
		}
	}
	if err := e.waitCloneSet(ctx, 5*time.Minute, c.version, c.name, "to complete its rollout under bosun", func(v cloneSetView) string {
		if err := e.releaseHooks(ctx, v); err != nil {
			return err.Error()
		}
		return c.rolledOutProblem(v)
	}); err != nil {
		return err
	}
	end, err := e.readCloneSet(ctx, c.version, c.name)
	if err != nil {
		return err
	}
	if problem := c.completionProblem(start, end); problem != "" {
		return fmt.Errorf("CloneSet %s: %s (before: %s; after: %s)", c.name, problem, start.describe(), end.describe())
	}
	return nil
}

// releaseHooks does what a user's hook does with the run's pods: it takes the hook's label
// off every pod that waits for it and puts the inPlaceUpdate hook's back on every pod that
// is done with its update.
func (e *env) releaseHooks(ctx context.Context, v cloneSetView) error {
	for _, p := range v.pods {
		var label, value string
		switch state := p.Labels[lifecycleStateLabel]; {
		case state == statePreparingUpdate && p.Labels[holdUpdateLabel] != "":
			label, value = holdUpdateLabel, "null"
		case state == stateUpdated && p.Labels[holdUpdateLabel] == "":
			label, value = holdUpdateLabel, `"true"`
		case state == statePreparingDelete && p.Labels[holdDeleteLabel] != "":
			label, value = holdDeleteLabel, "null"
		default:
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, label, value)
		if _, err := e.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("setting label %s of pod %s to %s: %w", label, p.Name, value, err)
		}
	}
	return nil
}

// completionProblem says what bosun did to the CloneSet's pods and claims beyond what
// completing the rollout asks for, "" when nothing: the partitioned rollout recreates the
// one pod left at the old revision and keeps the other with its claim; the in-place rollout
// keeps both pods, each restarted into the new image; the held deletion deletes the pod that
// waited and creates none.
func (c cloneSetCase) completionProblem(start, end cloneSetView) string {
	startUIDs, endUIDs := podUIDs(start.pods), podUIDs(end.pods)
	switch c.shape {
	case partitionedRecreate:
		update, _ := start.revisions()
		kept := podsAt(start.pods, update)
		if len(kept) != 1 || !slices.Contains(endUIDs, string(kept[0].UID)) {
			return "the pod OpenKruise had updated was replaced"
		}
		created := slices.DeleteFunc(slices.Clone(endUIDs), func(uid string) bool { return slices.Contains(startUIDs, uid) })
		if len(created) != 1 {
			return fmt.Sprintf("%d pods were created, want 1 (the recreated one)", len(created))
		}
		claim := claimName + "-" + c.name + "-" + kept[0].Labels[instanceIDLabel]
		if before, after := claimUID(start.claims, claim), claimUID(end.claims, claim); before == "" || before != after {
			return "the claim of the pod OpenKruise had updated was replaced"
		}
	case heldInPlaceUpdate:
		if !slices.Equal(startUIDs, endUIDs) {
			return "pods were replaced; the update is in place"
		}
		for _, p := range end.pods {
			i := slices.IndexFunc(start.pods, func(s corev1.Pod) bool { return s.UID == p.UID })
			if restarts(&p) <= restarts(&start.pods[i]) {
				return fmt.Sprintf("pod %s was not restarted into the new image", p.Name)
			}
		}
	case heldDeletion:
		var waiting []string
		for _, p := range start.pods {
			if p.Labels[lifecycleStateLabel] == statePreparingDelete {
				waiting = append(waiting, string(p.UID))
			}
		}
		want := slices.DeleteFunc(slices.Clone(startUIDs), func(uid string) bool { return slices.Contains(waiting, uid) })
		if !slices.Equal(want, endUIDs) {
			return "want exactly the pod in PreparingDelete deleted and no pod created"
		}
	}
	return ""
}

// podUIDs returns the pods' UIDs, sorted.
func podUIDs(pods []corev1.Pod) []string {
	var uids []string
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	slices.Sort(uids)
	return uids
}

func claimUID(claims []corev1.PersistentVolumeClaim, name string) string {
	for _, c := range claims {
		if c.Name == name {
			return string(c.UID)
		}
	}
	return ""
}

// restarts is the restart count of the pod's web server container.
func restarts(p *corev1.Pod) int32 {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "webserver" {
			return s.RestartCount
		}
	}
	return 0
}
