package garbagecollector

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"
)

// Scenario 17 (e2e "should delete RS created by deployment when not orphaning" and "should
// orphan RS created by deployment when deleteOptions.PropagationPolicy is Orphan"), with
// bosun's ReplicaSet and Deployment controllers: deleting a Deployment in the background
// deletes its ReplicaSet and their pods; deleting one with Orphan leaves its ReplicaSet, with
// no owner, and the ReplicaSet's pods.
func TestDeploymentCascade(t *testing.T) {
	e := setup(t)
	e.startCollector(collectorOptions{workloads: true})
	deployments := e.Client.AppsV1().Deployments(e.Namespace)

	cascaded, rs, pods := e.rolledOutDeployment("cascaded", 2)
	if err := deployments.Delete(e.Ctx, cascaded.Name, background); err != nil {
		t.Fatal(err)
	}
	e.waitGone("ReplicaSet "+rs.Name, func(ctx context.Context) error {
		_, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		return err
	})
	for _, pod := range pods {
		e.Pods().WaitForGone(e.t, pod.Name)
	}

	orphaned, rs, pods := e.rolledOutDeployment("orphaned", 2)
	// Orphaning needs the collector to know the ReplicaSet when the deletion arrives.
	e.waitInGraph(rs.UID, orphaned.UID)
	if err := deployments.Delete(e.Ctx, orphaned.Name, orphan); err != nil {
		t.Fatal(err)
	}
	e.waitGone("Deployment "+orphaned.Name, func(ctx context.Context) error {
		_, err := deployments.Get(ctx, orphaned.Name, metav1.GetOptions{})
		return err
	})
	e.observe()
	got, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(e.Ctx, rs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the orphaned ReplicaSet: %v", err)
	}
	if len(got.OwnerReferences) != 0 || got.DeletionTimestamp != nil {
		t.Errorf("the orphaned ReplicaSet has owners %v and deletionTimestamp %v, want none", got.OwnerReferences, got.DeletionTimestamp)
	}
	for _, pod := range pods {
		got := e.Pods().Get(e.t, pod.Name)
		if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != rs.UID || got.DeletionTimestamp != nil {
			t.Errorf("pod %s of the orphaned ReplicaSet: controller %v, deletionTimestamp %v", pod.Name, ref, got.DeletionTimestamp)
		}
	}
}

// rolledOutDeployment creates a Deployment and waits until its controllers made one
// ReplicaSet with all its pods.
func (e *env) rolledOutDeployment(name string, replicas int32) (*appsv1.Deployment, *appsv1.ReplicaSet, []corev1.Pod) {
	e.t.Helper()
	labels := map[string]string{"app": name}
	d, err := e.Client.AppsV1().Deployments(e.Namespace).Create(e.Ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var rs *appsv1.ReplicaSet
	var pods []corev1.Pod
	e.waitFor(fmt.Sprintf("Deployment %s's ReplicaSet with %d pods", name, replicas), waitTimeout, func(ctx context.Context) (bool, error) {
		rsList, err := e.Client.AppsV1().ReplicaSets(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var owned []*appsv1.ReplicaSet
		for i := range rsList.Items {
			if ref := metav1.GetControllerOf(&rsList.Items[i]); ref != nil && ref.UID == d.UID {
				owned = append(owned, &rsList.Items[i])
			}
		}
		if len(owned) != 1 {
			return false, nil
		}
		podList, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		rs, pods = owned[0], nil
		for _, pod := range podList.Items {
			if ref := metav1.GetControllerOf(&pod); ref != nil && ref.UID == rs.UID {
				pods = append(pods, pod)
			}
		}
		return len(pods) == int(replicas), nil
	})
	return d, rs, pods
}

// Scenario 19: the collector's debug graph around a ReplicaSet with 2 pods holds those 3
// objects and the 2 edges from the pods to it, for authorized users only.
func TestDebugGraph(t *testing.T) {
	e := setup(t)
	gc := e.startCollector(collectorOptions{})
	rs, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Create(e.Ctx, newReplicaSet("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{e.Pods().Create(e.t, newPod("web-1", rsControllerRef(rs))), e.Pods().Create(e.t, newPod("web-2", rsControllerRef(rs)))}

	g := e.waitGraph("3 vertices and 2 edges around the ReplicaSet", func(g *dotGraph) bool {
		return len(g.vertices) == 3 && len(g.edges) == 2
	}, rs.UID)
	if !g.has(rs.UID, pods[0].UID, pods[1].UID) {
		t.Errorf("vertices are not the ReplicaSet and its pods:\n%s", g.text)
	}
	for _, pod := range pods {
		if !g.edges[dotEdge{pod.UID, rs.UID}] {
			t.Errorf("no edge %q -> %q; edges: %v", pod.UID, rs.UID, g.edgeList())
		}
	}
	wantRS := map[string]string{
		"label":              fmt.Sprintf("uid=%s\nnamespace=%s\nReplicaSet.v1.apps/%s\n", rs.UID, e.Namespace, rs.Name),
		"group":              "apps",
		"version":            "v1",
		"kind":               "ReplicaSet",
		"namespace":          e.Namespace,
		"name":               rs.Name,
		"uid":                string(rs.UID),
		"missing":            "false",
		"beingDeleted":       "false",
		"deletingDependents": "false",
		"virtual":            "false",
	}
	if got := g.vertices[rs.UID]; fmt.Sprint(got) != fmt.Sprint(wantRS) {
		t.Errorf("the ReplicaSet's vertex:\n got %v\nwant %v", got, wantRS)
	}
	if got := g.vertices[pods[0].UID]; got["kind"] != "Pod" || got["version"] != "v1" || got["group"] != "" || got["name"] != pods[0].Name {
		t.Errorf("pod %s's vertex: %v", pods[0].Name, got)
	}

	path := graphPath + "?uid=" + string(rs.UID)
	resp := gc.get(path, gc.token)
	if got := resp.header.Get("Content-Type"); got != "text/vnd.graphviz" {
		t.Errorf("Content-Type %q, want text/vnd.graphviz", got)
	}
	if got := resp.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
	if resp := gc.get(path, ""); resp.code != http.StatusUnauthorized && resp.code != http.StatusForbidden {
		t.Errorf("without credentials: status %d, want 401 or 403: %s", resp.code, resp.body)
	}
	other := "/debug/controllers/" + controllerName + "/nosuch"
	if resp := gc.get(other, gc.token); resp.code != http.StatusNotFound {
		t.Errorf("GET %s: status %d, want 404", other, resp.code)
	}
}

// Scenario 20: with --kube-api-qps=20 --kube-api-burst=30 the collector deletes all 500 pods of
// a deleted ReplicaSet. Its requests for objects (its metadata client's: QPS 40, burst 30)
// never exceed that budget; how fast it goes is for the benchmark to measure.
func TestClientBudget(t *testing.T) {
	const (
		pods     = 500
		qps      = 20
		burst    = 30
		workers  = 16
		window   = 5 * time.Second
		gcQPS    = 2 * qps // the metadata client's
		gcBudget = burst + gcQPS*5
	)
	e := setup(t)
	rs, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Create(e.Ctx, newReplicaSet("big", pods), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				_, err := e.Client.CoreV1().Pods(e.Namespace).Create(e.Ctx, newPod(fmt.Sprintf("big-%d", i), rsControllerRef(rs)), metav1.CreateOptions{})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range pods {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		t.Fatal(err)
	}

	e.startCollector(collectorOptions{qps: qps, burst: burst})
	began := time.Now()
	if err := e.Client.AppsV1().ReplicaSets(e.Namespace).Delete(e.Ctx, rs.Name, background); err != nil {
		t.Fatal(err)
	}
	e.waitFor(fmt.Sprintf("the collector to delete all %d pods", pods), 3*time.Minute, func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
	t.Logf("the collector deleted %d pods in %v", pods, time.Since(began).Round(100*time.Millisecond))

	// Its requests about objects: its metadata client's (events go through its typed client,
	// discovery has no object).
	requests := e.requests(func(ev *auditv1.Event) bool {
		return e.gc.sentByCollector(ev.UserAgent) && ev.ObjectRef != nil && ev.ObjectRef.Resource != "events"
	})
	deletes := 0
	for _, ev := range requests {
		if ev.Verb == "delete" && ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Namespace == e.Namespace {
			deletes++
		}
	}
	if deletes < pods {
		t.Errorf("the collector sent %d pod deletions, want at least %d (its User-Agent must end in /%s)", deletes, pods, clientName)
	}
	// A token bucket lets at most burst + qps × window requests through in any window; the
	// margin covers the time between the client's limiter and the API server's clock.
	most, at := mostInWindow(requests, window)
	if limit := gcBudget + gcBudget/10; most > limit {
		t.Errorf("the collector sent %d requests in the %v from %s, more than its budget of %d (burst %d + %d QPS × %v)",
			most, window, at.Format(time.StampMilli), gcBudget, burst, gcQPS, window)
	}
	t.Logf("the collector sent %d requests about objects, at most %d in %v", len(requests), most, window)
}

// mostInWindow returns the largest number of requests received within any span of length
// window, and when that span began.
func mostInWindow(events []auditv1.Event, window time.Duration) (int, time.Time) {
	times := make([]time.Time, 0, len(events))
	for _, ev := range events {
		times = append(times, ev.RequestReceivedTimestamp.Time)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	most, at, j := 0, time.Time{}, 0
	for i := range times {
		for times[i].Sub(times[j]) >= window {
			j++
		}
		if n := i - j + 1; n > most {
			most, at = n, times[j]
		}
	}
	return most, at
}
