package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bosun-dev/bosun/pkg/controller/podcache"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

func TestPlanClusterRunsExactlyThePodsAsked(t *testing.T) {
	for _, tc := range []struct {
		pods, nodes                  int
		wantNodes, wantCS, wantDepls int
	}{
		// The size: 2,000 nodes, 20 CloneSets of 500, 36,000 pods in Deployments
		// (25 cycles of 1,000+300+100+30+10).
		{pods: 50000, wantNodes: 2000, wantCS: 20, wantDepls: 125},
		{pods: 10000, wantNodes: 400, wantCS: 4, wantDepls: 25},
		// The last Deployment is cut to fit.
		{pods: 1000, wantNodes: 40, wantCS: 1, wantDepls: 1},
		{pods: 3000, nodes: 100, wantNodes: 100, wantCS: 2, wantDepls: 6},
	} {
		p, err := planCluster(tc.pods, tc.nodes)
		if err != nil {
			t.Fatalf("planCluster(%d, %d): %v", tc.pods, tc.nodes, err)
		}
		if got := p.pods(); got != tc.pods {
			t.Errorf("planCluster(%d, %d) runs %d pods", tc.pods, tc.nodes, got)
		}
		if p.nodes != tc.wantNodes || len(p.cloneSets) != tc.wantCS || len(p.deployments) != tc.wantDepls {
			t.Errorf("planCluster(%d, %d): %d nodes, %d CloneSets, %d Deployments; want %d, %d, %d", tc.pods, tc.nodes,
				p.nodes, len(p.cloneSets), len(p.deployments), tc.wantNodes, tc.wantCS, tc.wantDepls)
		}
		for _, r := range append(p.cloneSets, p.deployments...) {
			if r < 1 {
				t.Errorf("planCluster(%d, %d) plans a workload of %d replicas", tc.pods, tc.nodes, r)
			}
		}
	}
}

func TestPlanClusterRefusesTooFewPodsForTheDaemonSets(t *testing.T) {
	_, err := planCluster(100, 100)
	if err == nil || !strings.Contains(err.Error(), "--bench-pods") {
		t.Fatalf("planCluster(100 pods, 100 nodes) = %v, want an error naming --bench-pods", err)
	}
}

func TestClusterWorkloadsBudgetEveryOtherAndSpreadOverNamespaces(t *testing.T) {
	p, err := planCluster(10000, 0)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.workloads()
	if len(ws) != p.daemonSets+len(p.cloneSets)+len(p.deployments) {
		t.Fatalf("%d workloads for a plan of %d", len(ws), p.daemonSets+len(p.cloneSets)+len(p.deployments))
	}
	budgets, namespaces := map[string]int{}, map[string]bool{}
	for _, w := range ws {
		namespaces[w.namespace] = true
		if w.budget {
			budgets[w.kind]++
		}
		if w.kind == kindDaemonSet && w.budget {
			t.Errorf("DaemonSet %s has a budget", w.name)
		}
	}
	if budgets[kindCloneSet] != (len(p.cloneSets)+1)/2 || budgets[kindDeployment] != (len(p.deployments)+1)/2 {
		t.Errorf("budgets %v for %d CloneSets and %d Deployments, want every other one", budgets, len(p.cloneSets), len(p.deployments))
	}
	if len(namespaces) != clusterNamespaces {
		t.Errorf("workloads in %d namespaces, want %d", len(namespaces), clusterNamespaces)
	}
}

func TestClusterReportComparesTheSidesAgainstTheTargets(t *testing.T) {
	o := &options{}
	o.cluster.pods, o.cluster.idle = 1000, time.Minute
	o.limits.QPS, o.limits.Burst = 500, 500
	res := newClusterResults()
	res.runs[clusterSideUpstream] = []clusterRun{{Side: clusterSideUpstream, Pods: 1000, Nodes: 40, Synced: 10 * time.Second,
		Rollout: 100 * time.Second, Processes: []processFigures{
			{Label: "kube-controller-manager", SteadyRSS: 100 << 20, RolloutCPU: 50, HeapInUse: 10 << 20, CachedPod: 5 << 10},
			{Label: "kruise-manager", SteadyRSS: 100 << 20, RolloutCPU: 50, HeapInUse: 30 << 20},
		}, Profiles: "kube-controller-manager, live heap: …\n"}}
	res.runs[clusterSideBosun] = []clusterRun{{Side: clusterSideBosun, Pods: 1000, Nodes: 40, Synced: 5 * time.Second,
		Rollout: 120 * time.Second, Processes: []processFigures{{Label: "bosun-controller-manager", SteadyRSS: 80 << 20, RolloutCPU: 40, HeapInUse: 6 << 20, CachedPod: 2 << 10}}}}
	report := res.markdown(o)
	for _, want := range []string{
		"| steady RSS (MiB) | 100 | 100 | 200 | 80 | 0.40× | ≤ 0.5× met |",
		"| rolling update of everything: CPU-s | 50.00 | 50.00 | 100.00 | 40.00 | 0.40× | ≤ 0.6× met |",
		"| rolling update of everything: wall | – | – | 100.0 s | 120.0 s | 1.20× | ≤ 1.0× **missed** |",
		"| start-up to synced caches | 0.0 s | 0.0 s | 10.0 s | 5.0 s | 0.50× | ≤ 1.0× met |",
		// The heap per pod is held against kube-controller-manager's alone: 6 KiB against 10.
		"| heap per pod (KiB) | 10.2 | 30.7 | 41.0 | 6.1 | 0.15× |  |",
		"| heap per pod against kube-controller-manager's (KiB) | – | – | 10.2 | 6.1 | 0.60× | ≤ 0.5× **missed** |",
		// A process whose profile has no figure (kruise-manager's here) shows none.
		"| a cached pod in the steady heap profile, with its Pod struct, against kube-controller-manager's (KiB) | 5.0 | – | 5.0 | 2.0 | 0.40× | ≤ 0.5× met |",
		"Where it goes, upstream+kruise (the last run's profiles):\n\nkube-controller-manager, live heap: …",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// The cached-pod figure is read from a real heap profile through `go tool pprof`: pods
// decoded from protobuf and trimmed, and kept, as bosun's informer keeps them, must show up
// at about the bytes they hold, the maps its transform built included.
func TestCachedPodBytesReadsWhatDecodedPodsHold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool pprof")
	}
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	const pods = 2000
	kept := make([]*corev1.Pod, pods)
	for i := range kept {
		// Labels of its own, so that the transform builds each pod its own map.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", Labels: map[string]string{"app": "web", "instance": strconv.Itoa(i)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:v1",
				Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}}}}},
		}
		data, err := pod.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		kept[i] = &corev1.Pod{}
		if err := kept[i].Unmarshal(data); err != nil {
			t.Fatal(err)
		}
		if _, err := podcache.Trim(kept[i]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	dir := t.TempDir()
	path := heapProfilePath(dir, "bosun-controller-manager")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, ok, err := cachedPodBytes(t.Context(), path, pods)
	runtime.KeepAlive(kept)
	if err != nil || !ok {
		t.Fatalf("cachedPodBytes: %v (ok %v)", err, ok)
	}
	// The fields of such a pod take a few hundred bytes (its strings, maps and slices);
	// the struct comes on top.
	fields := got - podStructBytes
	t.Logf("a decoded pod holds %.0f bytes besides its %.0f-byte struct", fields, podStructBytes)
	if fields < 100 || fields > 2000 {
		t.Errorf("a decoded pod holds %.0f bytes besides its struct by the profile, want a few hundred", fields)
	}
	// The maps bosun's transform rebuilt are the pods' too.
	if transform, err := focusedBytes(t.Context(), path, podCacheFrames[1]); err != nil || transform < 100*pods {
		t.Errorf("the pod cache's transform holds %.0f bytes by the profile (%v), want each pod's label map", transform, err)
	}
	if _, ok, err := cachedPodBytes(t.Context(), path, 0); ok || err != nil {
		t.Errorf("a figure for zero pods (ok %v, err %v)", ok, err)
	}

	// The report shows the top of the profile the run left, without its file header.
	tops, err := profileTops(t.Context(), clusterRun{LogDir: dir, Processes: []processFigures{{Label: "bosun-controller-manager"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tops, "bosun-controller-manager, live heap after a collection, steady (`go tool pprof -top -sample_index=inuse_space "+path+"`)") ||
		!strings.Contains(tops, "Showing nodes accounting for") || !strings.Contains(tops, "flat%") || strings.Contains(tops, "Type: inuse_space") {
		t.Errorf("profile tops:\n%s", tops)
	}
}

func TestTopCumBytesReadsTheFirstNode(t *testing.T) {
	out := `File: bosun-controller-manager
Type: inuse_space
Active filters:
   focus=v1\.\(\*Pod\)\.Unmarshal
Showing nodes accounting for 0, 0% of 131072000B total
      flat  flat%   sum%        cum   cum%
         0     0%     0%  69500000B 53.02%  runtime.goexit
`
	if v, ok := topCumBytes(out); !ok || v != 69500000 {
		t.Errorf("topCumBytes = %v, %v; want 69500000", v, ok)
	}
	if _, ok := topCumBytes("Showing nodes accounting for 0, 0% of 0 total\n"); ok {
		t.Error("a figure from output without nodes")
	}
}

func TestMarkersLoggedAtTakesTheLatestMarkerLine(t *testing.T) {
	ref := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	lines := strings.Split(`I1127 08:44:09.032257   27949 garbagecollector.go:166] "Garbage collector: all resource monitors have synced"
I1127 08:44:11.942192   27950 controller.go:242] "msg"="Starting workers" "controller"="cloneset-controller" "worker count"=3
I1127 08:44:10.000000   27950 controller.go:242] "msg"="Starting workers" "controller"="daemonset-controller" "worker count"=3`, "\n")
	spec := managerSpec{Kruise: &framework.KruiseManagerOptions{WaitForControllers: []string{"cloneset-controller", "daemonset-controller"}}}
	at, ok, err := markersLoggedAt(lines, syncedMarkers(spec), map[string]time.Time{}, ref)
	if err != nil || !ok || !at.Equal(time.Date(2026, 11, 27, 8, 44, 11, 942192000, time.UTC)) {
		t.Errorf("kruise-manager synced at %v (ok %v, err %v), want 08:44:11.942192", at, ok, err)
	}
	at, ok, err = markersLoggedAt(lines, syncedMarkers(managerSpec{Label: "kube-controller-manager"}), map[string]time.Time{}, ref)
	if err != nil || !ok || !at.Equal(time.Date(2026, 11, 27, 8, 44, 9, 32257000, time.UTC)) {
		t.Errorf("kube-controller-manager synced at %v (ok %v, err %v), want 08:44:09.032257", at, ok, err)
	}
	spec.Kruise.WaitForControllers = append(spec.Kruise.WaitForControllers, "nodeimage-controller")
	seen := map[string]time.Time{}
	if _, ok, err := markersLoggedAt(lines, syncedMarkers(spec), seen, ref); ok || err != nil {
		t.Errorf("synced with a controller's workers not started (ok %v, err %v)", ok, err)
	}
	// The lines read on a later look complete what the earlier ones began.
	later := []string{`I1127 08:44:12.500000   27950 controller.go:242] "msg"="Starting workers" "controller"="nodeimage-controller" "worker count"=3`}
	at, ok, err = markersLoggedAt(later, syncedMarkers(spec), seen, ref)
	if err != nil || !ok || !at.Equal(time.Date(2026, 11, 27, 8, 44, 12, 500000000, time.UTC)) {
		t.Errorf("kruise-manager synced at %v (ok %v, err %v) once its last controller started, want 08:44:12.5", at, ok, err)
	}
	if markers := syncedMarkers(managerSpec{ReadyPath: "/readyz"}); markers != nil {
		t.Errorf("bosun's start is timed by its logs %q, want by /healthz and /readyz", markers)
	}
}
