package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// namespace holds every object the run creates.
const namespace = "takeover"

// The objects, as a user of OpenKruise writes them: some in v1alpha1 with the annotations
// that carry v1beta1 fields, some (from 1.9 only) in v1beta1 with the fields.
const (
	alphaDaemonSet = "agent-alpha"
	betaDaemonSet  = "agent-beta"
	alphaBudget    = "budget-alpha"
	betaBudget     = "budget-beta"
	recreate       = "restart-webserver"
	alphaPullJob   = "pull-alpha"
	betaPullJob    = "pull-beta"
	listPullJob    = "pull-list"
)

// daemonSetYAML is an Advanced DaemonSet of the test web server, ready once /ready answers.
func daemonSetYAML(version, name, extraMetadata, extraSpec, rollingUpdateType string) string {
	return fmt.Sprintf(`apiVersion: apps.kruise.io/%[1]s
kind: DaemonSet
metadata:
  name: %[2]s
  namespace: %[3]s
%[4]s
spec:
  selector:
    matchLabels: {app: %[2]s}
%[5]s
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {rollingUpdateType: %[6]s, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: webserver
        image: %[7]s
        ports: [{containerPort: %[8]d}]
        readinessProbe:
          httpGet: {path: /ready, port: %[8]d}
          periodSeconds: 1
          failureThreshold: 1
`, version, name, namespace, extraMetadata, extraSpec, rollingUpdateType, cluster.WebserverImage("v1"), cluster.WebserverPort)
}

// alphaDaemonSetYAML is in v1alpha1, with the annotation that v1beta1 calls
// spec.scaleStrategy.partitionedScaling; betaDaemonSetYAML in v1beta1 with the field
// itself. With no partition both create on every node, as without it: the node gets its pod.
var (
	alphaDaemonSetYAML = daemonSetYAML(v1alpha1, alphaDaemonSet, `  annotations:
    daemonset.kruise.io/progressive-create-pod: "true"`, "", "Standard")
	betaDaemonSetYAML = daemonSetYAML(v1beta1, betaDaemonSet, "", `  scaleStrategy:
    partitionedScaling: true`, "InPlaceIfPossible")
)

// alphaBudgetYAML is a v1alpha1 budget with the annotations that v1beta1 calls
// spec.protectOperations and spec.protectTotalReplicas; betaBudgetYAML a v1beta1 budget
// with those fields and ignoredPodSelector, which v1alpha1 has no form of. Each covers the
// pod of one DaemonSet and lets it go (total 1, maxUnavailable 1), so that rollouts and the
// run's own deletion pass.
var (
	alphaBudgetYAML = fmt.Sprintf(`apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata:
  name: %s
  namespace: %s
  annotations:
    kruise.io/pub-protect-operations: "DELETE,EVICT"
    pub.kruise.io/protect-total-replicas: "1"
spec:
  selector:
    matchLabels: {app: %s}
  maxUnavailable: 1
`, alphaBudget, namespace, alphaDaemonSet)
	betaBudgetYAML = fmt.Sprintf(`apiVersion: policy.kruise.io/v1beta1
kind: PodUnavailableBudget
metadata:
  name: %s
  namespace: %s
spec:
  selector:
    matchLabels: {app: %s}
  maxUnavailable: 1
  protectOperations: [DELETE, EVICT]
  protectTotalReplicas: 1
  ignoredPodSelector:
    matchLabels: {takeover.bosun.dev/unprotected: "true"}
`, betaBudget, namespace, betaDaemonSet)
)

// The pull jobs pull images of the loopback registries onto the node: an ImagePullJob in
// each version and an ImageListPullJob (v1alpha1) of two images through the slow registry,
// whose pulls take seconds as over a real network.
var (
	alphaPullJobYAML = fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata:
  name: %s
  namespace: %s
spec:
  image: %s
  parallelism: 1
  completionPolicy: {type: Always, activeDeadlineSeconds: 600}
  pullPolicy: {timeoutSeconds: 300, backoffLimit: 3}
`, alphaPullJob, namespace, cluster.WebserverImage("v2"))
	betaPullJobYAML = fmt.Sprintf(`apiVersion: apps.kruise.io/v1beta1
kind: ImagePullJob
metadata:
  name: %s
  namespace: %s
spec:
  image: %s
  completionPolicy: {type: Always}
`, betaPullJob, namespace, cluster.WebserverImage("v3"))
	listPullJobYAML = fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: ImageListPullJob
metadata:
  name: %s
  namespace: %s
spec:
  images: [%s, %s]
  parallelism: 1
  completionPolicy: {type: Always, activeDeadlineSeconds: 600}
`, listPullJob, namespace, cluster.SlowOpenRegistryHost+"/bosun/webserver:v1", cluster.SlowOpenRegistryHost+"/bosun/webserver:v2")
)

// crrYAML restarts the web server container of a pod.
func crrYAML(pod string) string {
	return fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: ContainerRecreateRequest
metadata:
  name: %s
  namespace: %s
spec:
  podName: %s
  containers:
  - name: webserver
  strategy: {failurePolicy: Fail}
  activeDeadlineSeconds: 300
`, recreate, namespace, pod)
}

// env is what the waits and writes need.
type env struct {
	from   startingPoint
	c      *cluster.Cluster
	client kubernetes.Interface
	dyn    dynamic.Interface
	// alive reports a process of the run that exited (OpenKruise's while it runs).
	alive func() error
}

// waitFor polls cond every second until it holds, failing at once when a component of the
// cluster (or of OpenKruise) has exited. An error from cond ends the wait.
func (e *env) waitFor(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Err(); err != nil {
			return false, fmt.Errorf("the local cluster broke: %w", err)
		}
		if e.alive != nil {
			if err := e.alive(); err != nil {
				return false, err
			}
		}
		ok, err := cond(ctx)
		if err != nil && apierrors.IsNotFound(err) {
			last = err.Error()
			return false, nil
		}
		return ok, err
	})
	if err != nil && wait.Interrupted(err) {
		if last != "" {
			return fmt.Errorf("timed out after %v waiting for %s (last: %s)", timeout, what, last)
		}
		return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
	}
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// create creates every object of a YAML stream in the version it names.
func (e *env) create(ctx context.Context, manifests string) error {
	objs, err := framework.DecodeObjects(strings.NewReader(manifests))
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gvr, ok := resourceOf(obj)
		if !ok {
			return fmt.Errorf("no resource for %s", obj.GroupVersionKind())
		}
		if _, err := e.dyn.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s %s: %w", obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

func resourceOf(obj *unstructured.Unstructured) (gvr schema.GroupVersionResource, ok bool) {
	gvk := obj.GroupVersionKind()
	for _, k := range takenOverKinds {
		if k.Kind == gvk.Kind && k.Group == gvk.Group {
			return k.gvr(gvk.Version), true
		}
	}
	return gvr, false
}

// createWorkloads creates, through OpenKruise, every object the takeover is judged on,
// era by era (startingPoint.eras), and waits until they have settled: DaemonSets rolled out
// with Ready pods, the ContainerRecreateRequest completed, the pull jobs completed, the
// budgets observed, the CloneSets rolled out and then left in the middle of a new rollout or
// a scale-in (cloneSetShape).
//
// Before each era the CRDs are given the era's storage version, where it differs from the
// one they have. From 1.9 the cluster so plays one that ran OpenKruise before 1.9: the
// v1alpha1 objects are written while the CRDs store v1alpha1 and are left to settle, then
// the CRDs store v1beta1, as OpenKruise 1.9's CRDs do, and the v1beta1 objects follow.
// Objects nothing wrote since stay stored as v1alpha1, as on such a cluster.
func (e *env) createWorkloads(ctx context.Context) error {
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	// The pods mount the namespace's default ServiceAccount, which upstream's
	// serviceaccount controller creates.
	if err := e.waitFor(ctx, time.Minute, "the default ServiceAccount of "+namespace, func(ctx context.Context) (bool, error) {
		_, err := e.client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	}); err != nil {
		return err
	}
	// kruise-manager creates the node's NodeImage some 25 s after the node registered; a
	// pull job made before then completes at once with no node to pull on.
	if err := e.waitFor(ctx, 2*time.Minute, "NodeImage "+e.c.NodeName(), func(ctx context.Context) (bool, error) {
		_, err := e.get(ctx, "NodeImage", e.from.storage, e.c.NodeName())
		return err == nil, err
	}); err != nil {
		return err
	}

	// The claims of the CloneSets bind to volumes the run makes (the cluster has no
	// provisioner).
	volumes := 0
	for _, c := range e.from.cloneSets() {
		volumes += c.volumes()
	}
	if err := e.createVolumes(ctx, volumes); err != nil {
		return err
	}

	storage := e.from.eras[0].storage // startKruise gave the CRDs the first era's
	var created []workload
	for _, era := range e.from.eras {
		if era.storage != storage {
			if err := e.setStorageVersion(ctx, era.storage); err != nil {
				return err
			}
			storage = era.storage
		}
		if err := e.create(ctx, era.daemonSet.manifest); err != nil {
			return err
		}
		if err := e.waitDaemonSetRolledOut(ctx, e.from.storage, era.daemonSet.name, cluster.WebserverImage("v1")); err != nil {
			return err
		}
		created = append(created, era.daemonSet)
		for _, w := range era.others {
			if err := e.create(ctx, w.manifest); err != nil {
				return err
			}
			created = append(created, w)
		}
		for _, c := range era.cloneSets {
			if err := e.create(ctx, c.manifest()); err != nil {
				return err
			}
			created = append(created, c.workload())
		}
		for _, c := range era.cloneSets {
			if err := e.startCloneSet(ctx, c); err != nil {
				return err
			}
		}
		if era.recreate {
			pods, err := e.appPods(ctx, era.daemonSet.name)
			if err != nil {
				return err
			}
			if len(pods) != 1 {
				return fmt.Errorf("DaemonSet %s has %d pods, want 1", era.daemonSet.name, len(pods))
			}
			if err := e.create(ctx, crrYAML(pods[0].Name)); err != nil {
				return err
			}
			created = append(created, workload{kind: "ContainerRecreateRequest", name: recreate})
		}
		if err := e.waitSettled(ctx, created); err != nil {
			return err
		}
	}
	return nil
}

// waitSettled waits until every object created has done its work: the
// ContainerRecreateRequest completed, the pull jobs completed, the DaemonSets rolled out,
// the CloneSets in the state they are handed over in, the budgets observed; and then until
// nothing changes (waitQuiet).
func (e *env) waitSettled(ctx context.Context, created []workload) error {
	byKind := func(kind string) []string {
		var names []string
		for _, w := range created {
			if w.kind == kind {
				names = append(names, w.name)
			}
		}
		return names
	}
	for _, name := range byKind("ContainerRecreateRequest") {
		if err := e.waitFor(ctx, 5*time.Minute, "ContainerRecreateRequest "+name+" to complete", func(ctx context.Context) (bool, error) {
			crr, err := e.get(ctx, "ContainerRecreateRequest", e.from.storage, name)
			if err != nil {
				return false, err
			}
			phase, _, _ := unstructured.NestedString(crr.Object, "status", "phase")
			if phase == "Failed" {
				msg, _, _ := unstructured.NestedString(crr.Object, "status", "message")
				return false, fmt.Errorf("it failed: %s", msg)
			}
			return phase == "Completed", nil
		}); err != nil {
			return err
		}
	}
	for _, kind := range []string{"ImagePullJob", "ImageListPullJob"} {
		for _, name := range byKind(kind) {
			if err := e.waitPullJob(ctx, kind, name); err != nil {
				return err
			}
		}
	}
	for _, name := range byKind("DaemonSet") {
		if err := e.waitDaemonSetRolledOut(ctx, e.from.storage, name, cluster.WebserverImage("v1")); err != nil {
			return err
		}
	}
	for _, name := range byKind("CloneSet") {
		c, ok := e.from.cloneSet(name)
		if !ok {
			return fmt.Errorf("no CloneSet case %s", name)
		}
		if err := e.waitCloneSet(ctx, 4*time.Minute, e.from.storage, name, "to reach "+string(c.shape), c.heldProblem); err != nil {
			return err
		}
	}
	for _, name := range byKind("PodUnavailableBudget") {
		if err := e.waitBudget(ctx, name); err != nil {
			return err
		}
	}
	return e.waitQuiet(ctx)
}

// waitPullJob waits until a pull job completed with every node's pull succeeded.
func (e *env) waitPullJob(ctx context.Context, kind, name string) error {
	return e.waitFor(ctx, 5*time.Minute, kind+" "+name+" to complete", func(ctx context.Context) (bool, error) {
		obj, err := e.get(ctx, kind, e.from.storage, name)
		if err != nil {
			return false, err
		}
		desired, _, _ := unstructured.NestedInt64(obj.Object, "status", "desired")
		succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
		done, _, _ := unstructured.NestedString(obj.Object, "status", "completionTime")
		if done != "" && (succeeded != desired || desired == 0) {
			return false, fmt.Errorf("it completed with %d of %d succeeded: %v", succeeded, desired, obj.Object["status"])
		}
		return done != "" && desired > 0, nil
	})
}

// waitBudget waits until a budget has observed its generation and counts its pod available.
func (e *env) waitBudget(ctx context.Context, name string) error {
	return e.waitFor(ctx, 2*time.Minute, "PodUnavailableBudget "+name+" to be observed with its pod available", func(ctx context.Context) (bool, error) {
		pub, err := e.get(ctx, "PodUnavailableBudget", e.from.storage, name)
		if err != nil {
			return false, err
		}
		observed, _, _ := unstructured.NestedInt64(pub.Object, "status", "observedGeneration")
		available, _, _ := unstructured.NestedInt64(pub.Object, "status", "currentAvailable")
		return observed == pub.GetGeneration() && available == 1, nil
	})
}

// quietPeriod is how long nothing the run looks at may change before its state counts as
// settled: longer than the status updates that trail a completed CRR or pull.
const quietPeriod = 15 * time.Second

// waitQuiet waits until no object of takenOverKinds, no pod, no claim and no
// ControllerRevision has changed for quietPeriod.
func (e *env) waitQuiet(ctx context.Context) error {
	var last string
	var since time.Time
	return e.waitFor(ctx, 3*time.Minute, "the objects to stop changing", func(ctx context.Context) (bool, error) {
		state, err := e.stateVersions(ctx)
		if err != nil {
			return false, err
		}
		if state != last {
			last, since = state, time.Now()
			return false, nil
		}
		return time.Since(since) >= quietPeriod, nil
	})
}

// stateVersions renders the resourceVersions of everything waitQuiet watches.
func (e *env) stateVersions(ctx context.Context) (string, error) {
	var b bytes.Buffer
	for _, k := range takenOverKinds {
		list, err := e.dyn.Resource(k.gvr(e.from.storage)).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		for _, item := range list.Items {
			fmt.Fprintf(&b, "%s/%s/%s=%s ", k.Kind, item.GetNamespace(), item.GetName(), item.GetResourceVersion())
		}
	}
	pods, err := e.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod/%s/%s=%s ", p.Namespace, p.Name, p.ResourceVersion)
	}
	claims, err := e.client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, c := range claims.Items {
		fmt.Fprintf(&b, "claim/%s/%s=%s ", c.Namespace, c.Name, c.ResourceVersion)
	}
	revisions, err := e.client.AppsV1().ControllerRevisions(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, r := range revisions.Items {
		fmt.Fprintf(&b, "revision/%s/%s=%s ", r.Namespace, r.Name, r.ResourceVersion)
	}
	return b.String(), nil
}

// get reads an object of the run (of the node, for NodeImages) in version.
func (e *env) get(ctx context.Context, kind, version, name string) (*unstructured.Unstructured, error) {
	k := kindNamed(kind)
	if !k.Namespaced {
		return e.dyn.Resource(k.gvr(version)).Get(ctx, name, metav1.GetOptions{})
	}
	return e.dyn.Resource(k.gvr(version)).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// appPods returns the pods of a DaemonSet or CloneSet of the run: those labelled with its
// app, terminating ones included.
func (e *env) appPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	list, err := e.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitDaemonSetRolledOut waits until the DaemonSet, read in version, has observed its
// generation and reports every scheduled pod updated, ready and available, and its pods
// all run image, are Ready and carry the revision its status names.
func (e *env) waitDaemonSetRolledOut(ctx context.Context, version, name, image string) error {
	var observed string
	err := e.waitFor(ctx, 4*time.Minute, fmt.Sprintf("DaemonSet %s to roll out %s", name, image), func(ctx context.Context) (bool, error) {
		ds, err := e.get(ctx, "DaemonSet", version, name)
		if err != nil {
			return false, err
		}
		status := func(field string) int64 {
			n, _, _ := unstructured.NestedInt64(ds.Object, "status", field)
			return n
		}
		revisionField := "updateRevision"
		if version == v1alpha1 {
			revisionField = "daemonSetHash"
		}
		revision, _, _ := unstructured.NestedString(ds.Object, "status", revisionField)
		observed = fmt.Sprintf("generation %d, status %v", ds.GetGeneration(), ds.Object["status"])
		desired := status("desiredNumberScheduled")
		if desired < 1 || status("observedGeneration") != ds.GetGeneration() || revision == "" ||
			status("updatedNumberScheduled") != desired || status("numberReady") != desired || status("numberAvailable") != desired {
			return false, nil
		}
		pods, err := e.appPods(ctx, name)
		if err != nil {
			return false, err
		}
		if int64(len(pods)) != desired {
			return false, nil
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || !podReady(&p) || p.Spec.Containers[0].Image != image ||
				p.Labels["controller-revision-hash"] != revision {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && observed != "" {
		return fmt.Errorf("%w (last seen: %s)", err, observed)
	}
	return err
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// updateImage sets the image of the container of a DaemonSet or CloneSet through version's
// API, as a user of that version does: read, change, write back.
func (e *env) updateImage(ctx context.Context, kind, version, name, image string) error {
	obj, err := e.get(ctx, kind, version, name)
	if err != nil {
		return err
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		return fmt.Errorf("%s %s has %d containers, want 1", kind, name, len(containers))
	}
	containers[0].(map[string]any)["image"] = image
	if err := unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return err
	}
	gvr, _ := resourceOf(obj)
	if _, err := e.dyn.Resource(gvr).Namespace(namespace).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the image of %s %s through %s: %w", kind, name, version, err)
	}
	return nil
}

// patch applies a JSON merge patch to an object of the run through version's API.
func (e *env) patch(ctx context.Context, kind, version, name, patch string) error {
	k := kindNamed(kind)
	if _, err := e.dyn.Resource(k.gvr(version)).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching %s %s through %s with %s: %w", kind, name, version, patch, err)
	}
	return nil
}
