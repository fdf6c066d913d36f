package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

type options struct {
	from       []startingPoint
	skipNoNode bool
	resync     time.Duration
	observe    time.Duration
	timeout    time.Duration
}

func main() {
	klog.InitFlags(nil)
	var o options
	from := flag.String("from", "1.9,1.8", "the OpenKruise releases to take over from, one case each, run one after the other on a fresh local cluster ("+startingPointNames()+")")
	flag.BoolVar(&o.skipNoNode, "skip-without-node", false, "report the run skipped, instead of failing, on a machine that cannot run a real node (not root, packages missing)")
	flag.DurationVar(&o.resync, "min-resync-period", 30*time.Second, "bosun-controller-manager's --min-resync-period: its informers resync every one to two of these")
	flag.DurationVar(&o.observe, "observe", 150*time.Second, "how long bosun runs before its state is compared with OpenKruise's; at least twice the longest resync (2 × 2 × -min-resync-period) plus the PodUnavailableBudget resync (1m)")
	flag.DurationVar(&o.timeout, "timeout", 45*time.Minute, "how long each case may take")
	flag.Parse()
	if o.observe < 4*o.resync {
		fmt.Fprintf(os.Stderr, "takeover: -observe %v does not cover two resyncs of -min-resync-period %v (at most 2 × %v each)\n", o.observe, o.resync, o.resync)
		os.Exit(2)
	}
	var err error
	if o.from, err = parseFrom(*from); err != nil {
		fmt.Fprintln(os.Stderr, "takeover:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if !runAll(ctx, o) {
		os.Exit(1)
	}
}

// runAll runs the case of each starting point, one after the other, each on a cluster of
// its own; a failed case does not keep the next from running. It reports whether all passed
// (or were skipped).
func runAll(ctx context.Context, o options) bool {
	if err := cluster.CheckHost(); err != nil {
		if o.skipNoNode {
			fmt.Println("takeover: SKIP: the takeover from OpenKruise runs on a real node:", err)
			return true
		}
		fmt.Fprintln(os.Stderr, "takeover: FAIL: the takeover from OpenKruise runs on a real node:", err)
		return false
	}
	var results []string
	passed := true
	for _, sp := range o.from {
		if ctx.Err() != nil {
			results = append(results, fmt.Sprintf("from %s: not run (%v)", sp.release, ctx.Err()))
			passed = false
			continue
		}
		fmt.Printf("takeover: === taking over from %s ===\n", sp.release)
		began := time.Now()
		caseCtx, cancel := context.WithTimeout(ctx, o.timeout)
		err := run(caseCtx, o, sp)
		cancel()
		took := time.Since(began).Round(time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, "takeover: FAIL (from %s): %v\n", sp.release, err)
			results = append(results, fmt.Sprintf("from %s: FAIL after %v: %.200s", sp.release, took, err))
			passed = false
			continue
		}
		results = append(results, fmt.Sprintf("from %s: PASS in %v", sp.release, took))
	}
	for _, r := range results {
		fmt.Println("takeover:", r)
	}
	return passed
}

// phases times the steps of a run, for the summary.
type phases struct {
	began time.Time
	done  []phaseTime
}

type phaseTime struct {
	name string
	took time.Duration
}

func (p *phases) run(name string, f func() error) error {
	fmt.Printf("takeover: %s\n", name)
	began := time.Now()
	err := f()
	p.done = append(p.done, phaseTime{name, time.Since(began)})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// run hands a cluster over from the starting point's OpenKruise to bosun and checks it.
func run(ctx context.Context, o options, sp startingPoint) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	release := sp.release
	p := &phases{began: time.Now()}
	if err := p.run(fmt.Sprintf("building %s and %s (cached)", release.ManagerBinary(), release.DaemonBinary()), func() error {
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-kruise.sh"), release.ManagerBinary(), release.DaemonBinary())
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}); err != nil {
		return err
	}

	var c *cluster.Cluster
	if err := p.run("starting the local cluster without bosun", func() (err error) {
		c, err = cluster.Start(ctx, cluster.Options{
			Dir:                 filepath.Join(root, "_output", "takeover-"+sp.name),
			WithoutBosun:        true,
			ManagerFeatureGates: kruiseGates,
			ManagerArgs:         []string{"--min-resync-period=" + o.resync.String()},
		})
		return err
	}); err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "takeover: stopping the local cluster:", err)
		}
	}()
	fmt.Printf("takeover: logs in %s\n", c.LogDir())
	client, err := c.Clientset()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	e := &env{from: sp, c: c, client: client, dyn: dyn}

	var k *kruise
	if err := p.run(fmt.Sprintf("installing %s (config/default) and starting %s and %s", release, release.ManagerBinary(), release.DaemonBinary()), func() (err error) {
		k, err = startKruise(ctx, e)
		return err
	}); err != nil {
		return err
	}
	defer func() {
		if err := k.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "takeover:", err)
		}
	}()
	e.alive = k.err

	if err := p.run("creating DaemonSets, budgets, CloneSets (left mid-rollout), a ContainerRecreateRequest and pull jobs through OpenKruise, until settled", func() error {
		return e.createWorkloads(ctx)
	}); err != nil {
		return err
	}

	var baseline *snapshot
	var storedAlpha []string
	if err := p.run(fmt.Sprintf("recording OpenKruise's state in %s, keeping its CRDs, stopping it", strings.Join(sp.compared, " and ")), func() (err error) {
		// Reads in the version an object is not stored in need the conversion webhook of
		// kruise-manager (from 1.9): the state is recorded while it runs, and etcd shows that
		// nothing was written afterwards.
		if baseline, err = e.record(ctx, sp.compared...); err != nil {
			return err
		}
		recorded, err := e.readEtcd(ctx)
		if err != nil {
			return err
		}
		if err := e.keepCRDs(ctx); err != nil {
			return err
		}
		if err := k.stop(); err != nil {
			return err
		}
		e.alive = nil
		stopped, err := e.readEtcd(ctx)
		if err != nil {
			return err
		}
		if changed := changedKeys(recorded, stopped); len(changed) > 0 {
			return fmt.Errorf("written after OpenKruise's state was recorded: %s", strings.Join(changed, ", "))
		}
		storedAlpha = storedAs(recorded, v1alpha1)
		fmt.Printf("  stored as v1alpha1: %s\n  stored as v1beta1: %s\n", strings.Join(storedAlpha, ", "), strings.Join(storedAs(recorded, v1beta1), ", "))
		for _, want := range sp.storedAsAlpha() {
			if !slices.Contains(storedAlpha, want) {
				return fmt.Errorf("%s is not stored as v1alpha1: the run does not show a takeover of objects OpenKruise stored as v1alpha1", want)
			}
		}
		for _, version := range []string{v1alpha1, v1beta1} {
			if stored := storedAs(recorded, version); !slices.Contains(sp.served, version) && len(stored) > 0 {
				return fmt.Errorf("stored as %s, which the CRDs of %s do not serve: %s", version, sp.release, strings.Join(stored, ", "))
			}
		}
		return nil
	}); err != nil {
		return err
	}

	handOver := "handing over: deleting OpenKruise's webhook configurations, pointing the conversion at bosun, applying bosun's CRDs"
	if !sp.webhookConversion {
		handOver = "handing over: deleting OpenKruise's webhook configurations, applying bosun's CRDs (no conversion to re-point)"
	}
	if err := p.run(handOver, func() error {
		if sp.webhookConversion {
			if err := e.pointConversionAtKruiseService(ctx); err != nil {
				return err
			}
			fmt.Println("  (the CRDs' conversion names OpenKruise's Service now, as an OpenKruise inside the cluster leaves it)")
		} else {
			// The documented step 4 has nothing to do: no CRD names a webhook.
			converting, err := e.convertingCRDs(ctx)
			if err != nil {
				return err
			}
			if len(converting) > 0 {
				return fmt.Errorf("the CRDs of %s convert %s through a webhook; the case expects none to", sp.release, strings.Join(converting, ", "))
			}
			fmt.Printf("  (no CRD of %s converts through a webhook: step 4 of the hand-over has nothing to re-point)\n", sp.release)
		}
		if err := framework.RemoveKruiseWebhooks(ctx, client); err != nil {
			return err
		}
		if sp.webhookConversion {
			// Applied over CRDs whose conversion names OpenKruise's Service, bosun's URL would
			// join it, and the API server refuses a clientConfig with both: hence the step.
			if _, err := e.applyBosunCRDs(ctx, root, true); err == nil || !strings.Contains(err.Error(), "exactly one of url or service is required") {
				return fmt.Errorf("applying bosun's CRDs over a conversion that names OpenKruise's Service: %v; want the API server to refuse a clientConfig with both a url and a service", err)
			}
			if err := e.pointConversionAtBosun(ctx); err != nil {
				return err
			}
		}
		out, err := e.applyBosunCRDs(ctx, root, false)
		fmt.Print(indent(out))
		return err
	}); err != nil {
		return err
	}
	if err := p.run("starting bosun-controller-manager and bosun-daemon", func() error {
		if err := c.StartBosun(ctx); err != nil {
			return err
		}
		return e.checkCRDsHandedOver(ctx)
	}); err != nil {
		return err
	}

	var adds map[string]float64
	if err := p.run(fmt.Sprintf("watching bosun for %v (--min-resync-period=%v) and until its storage migration is done: no pod, claim or ControllerRevision may change", o.observe, o.resync), func() (err error) {
		if err := e.watchNothingChanges(ctx, baseline, o.observe); err != nil {
			return err
		}
		if adds, err = e.checkResynced(ctx, baseline); err != nil {
			return err
		}
		return e.checkMigrated(ctx, storedAlpha)
	}); err != nil {
		return err
	}

	var v verdicts
	if err := p.run("comparing bosun's state with OpenKruise's", func() error {
		// Every object is read in v1beta1 too, which bosun's CRDs serve whatever the
		// starting point's did: a conversion error fails the reading.
		underBosun, err := e.record(ctx, withBeta(sp.compared)...)
		if err != nil {
			return err
		}
		if !slices.Contains(sp.compared, v1beta1) {
			fmt.Printf("  every object read in v1beta1 through bosun's conversion: %d objects\n", len(underBosun.objects[v1beta1]))
		}
		v = e.compareTakeover(baseline, underBosun)
		v.print()
		if !v.ok() {
			return errors.New("bosun's state is not OpenKruise's (see above)")
		}
		return nil
	}); err != nil {
		return err
	}

	if err := p.run("checking that the comparison sees a change (an annotation, a deleted pod)", func() error {
		return e.sabotage(ctx, baseline)
	}); err != nil {
		return err
	}

	if err := p.run("updating the image of "+alphaDaemonSet+" through v1alpha1 under bosun", func() error {
		image := cluster.WebserverImage("v2")
		if err := e.updateImage(ctx, "DaemonSet", v1alpha1, alphaDaemonSet, image); err != nil {
			return err
		}
		return e.waitDaemonSetRolledOut(ctx, v1alpha1, alphaDaemonSet, image)
	}); err != nil {
		return err
	}

	for _, c := range sp.cloneSets() {
		if err := p.run(fmt.Sprintf("completing %s of CloneSet %s under bosun", c.shape, c.name), func() error {
			return e.completeCloneSet(ctx, c)
		}); err != nil {
			return err
		}
	}

	printSummary(sp, baseline, len(storedAlpha), adds, v, p)
	return nil
}

// withBeta is versions with v1beta1 added, once.
func withBeta(versions []string) []string {
	if slices.Contains(versions, v1beta1) {
		return versions
	}
	return append(slices.Clone(versions), v1beta1)
}

// migrationTimeout bounds how long after the observation bosun's storage version migrator
// may still take: it starts 2 minutes (--storage-version-migration-delay) after bosun first
// saw v1beta1 as the storage version.
const migrationTimeout = 4 * time.Minute

// compareBuiltins compares the pods, claims and ControllerRevisions of two snapshots.
func compareBuiltins(before, after *snapshot) []difference {
	diffs := comparePods(before.pods, after.pods)
	diffs = append(diffs, compareClaims(before.claims, after.claims)...)
	return append(diffs, compareRevisions(before.revisions, after.revisions)...)
}

// watchNothingChanges fails as soon as a pod, a claim or a ControllerRevision differs from
// the baseline, and otherwise returns after d, once every CRD's storedVersions is [v1beta1]
// (bosun's migrator has rewritten what OpenKruise stored as v1alpha1).
func (e *env) watchNothingChanges(ctx context.Context, baseline *snapshot, d time.Duration) error {
	began := time.Now()
	for {
		if time.Since(began) >= d {
			stored, err := e.storedVersions(ctx)
			if err != nil {
				return err
			}
			migrated := true
			for _, versions := range stored {
				migrated = migrated && strings.Join(versions, ",") == v1beta1
			}
			if migrated {
				return nil
			}
			if time.Since(began) >= d+migrationTimeout {
				return fmt.Errorf("the CRDs' storedVersions are still %v", stored)
			}
		}
		if err := e.c.Err(); err != nil {
			return fmt.Errorf("the local cluster broke: %w", err)
		}
		now, err := e.record(ctx)
		if err != nil {
			return err
		}
		if diffs := compareBuiltins(baseline, now); len(diffs) > 0 {
			return fmt.Errorf("under bosun:\n%s", indent(joinDiffs(diffs)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// verdicts are the outcome of comparing bosun's state with OpenKruise's.
type verdicts struct {
	podsAndRevisions []difference
	// versions holds the verdict of each version compared, in the starting point's order.
	versions []versionVerdict
}

type versionVerdict struct {
	version string
	verdict
}

func (v verdicts) ok() bool {
	if len(v.podsAndRevisions) > 0 {
		return false
	}
	for _, vv := range v.versions {
		if !vv.ok() {
			return false
		}
	}
	return true
}

// expectedCount is how many expected differences occurred, in all versions.
func (v verdicts) expectedCount() int {
	n := 0
	for _, vv := range v.versions {
		n += len(vv.expected)
	}
	return n
}

// compareTakeover compares bosun's state with OpenKruise's: the same pods (labels,
// annotations and images included), claims and ControllerRevisions, and, in each version the baseline was recorded in, the same objects
// (status recomputed to equal values) but for the starting point's expected differences.
func (e *env) compareTakeover(underKruise, underBosun *snapshot) verdicts {
	v := verdicts{podsAndRevisions: compareBuiltins(underKruise, underBosun)}
	for _, version := range e.from.compared {
		v.versions = append(v.versions, versionVerdict{version,
			judge(compareObjects(version, underKruise.objects[version], underBosun.objects[version]), e.from.expected[version], e.from.possible[version])})
	}
	return v
}

func (v verdicts) print() {
	for _, d := range v.podsAndRevisions {
		fmt.Println("  UNEXPECTED:", d)
	}
	// The newer version first, as the run always showed them.
	for _, vv := range slices.Backward(v.versions) {
		for _, d := range vv.unexpected {
			fmt.Println("  UNEXPECTED:", d)
		}
		for _, d := range vv.expected {
			fmt.Printf("  expected: %s\n      (%s)\n", d.difference, d.why)
		}
		for _, a := range vv.missing {
			fmt.Printf("  MISSING: the expected difference %s %s %s %s did not occur (%s)\n", a.Kind, a.Version, a.Object, a.Path, a.Why)
		}
	}
}

// sabotageAnnotation is what the self-check writes onto a budget.
const sabotageAnnotation = "takeover.bosun.dev/sabotage"

// sabotage shows that the comparison can fail: an annotation written onto the starting
// point's sabotage budget (through the version its CRDs stored) is reported in every
// version compared and nothing else is, and is gone once removed; a deleted pod is
// reported. The DaemonSet then replaces the pod.
func (e *env) sabotage(ctx context.Context, baseline *snapshot) error {
	budget := e.from.sabotageBudget
	budgets := e.dyn.Resource(kindNamed("PodUnavailableBudget").gvr(e.from.storage)).Namespace(namespace)
	patch := func(value string) error {
		_, err := budgets.Patch(ctx, budget, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, sabotageAnnotation, value)), metav1.PatchOptions{})
		return err
	}
	if err := patch(`"1"`); err != nil {
		return err
	}
	now, err := e.record(ctx, e.from.compared...)
	if err != nil {
		return err
	}
	v := e.compareTakeover(baseline, now)
	want := "metadata.annotations[" + sabotageAnnotation + "]"
	for _, vv := range v.versions {
		if got := vv.unexpected; len(got) != 1 || got[0].Kind != "PodUnavailableBudget" || got[0].Path != want {
			return fmt.Errorf("with %s added to %s, the comparison reported %v in %s; want exactly that annotation, in each version", sabotageAnnotation, budget, got, vv.version)
		}
	}
	fmt.Printf("  detected: %s\n", v.versions[len(v.versions)-1].unexpected[0])
	if err := patch("null"); err != nil {
		return err
	}
	if now, err = e.record(ctx, e.from.compared...); err != nil {
		return err
	}
	if v := e.compareTakeover(baseline, now); !v.ok() {
		v.print()
		return fmt.Errorf("with %s removed again, the comparison still reports differences", sabotageAnnotation)
	}

	victims := e.from.victimDaemonSet
	pods, err := e.appPods(ctx, victims)
	if err != nil {
		return err
	}
	if len(pods) != 1 {
		return fmt.Errorf("DaemonSet %s has %d pods, want 1", victims, len(pods))
	}
	victim := pods[0]
	if err := e.client.CoreV1().Pods(namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting pod %s: %w", victim.Name, err)
	}
	if err := e.waitDaemonSetRolledOut(ctx, e.from.storage, victims, cluster.WebserverImage("v1")); err != nil {
		return err
	}
	if now, err = e.record(ctx); err != nil {
		return err
	}
	diffs := comparePods(baseline.pods, now.pods)
	if !slices.ContainsFunc(diffs, func(d difference) bool {
		return d.Object == namespace+"/"+victim.Name && d.Before == string(victim.UID) && d.After == "<absent>"
	}) {
		return fmt.Errorf("with pod %s deleted, the comparison reported %v", victim.Name, diffs)
	}
	fmt.Printf("  detected: %s\n", joinDiffs(diffs))
	return nil
}

func printSummary(sp startingPoint, baseline *snapshot, storedAlpha int, adds map[string]float64, v verdicts, p *phases) {
	var kinds []string
	objects := 0
	for _, k := range takenOverKinds {
		n := baseline.count(k.Kind)
		objects += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k.Kind, n))
	}
	compared := "compared in " + strings.Join(sp.compared, " and ")
	if !slices.Contains(sp.compared, v1beta1) {
		compared += " (v1beta1 read through bosun's conversion)"
	}
	fmt.Printf("takeover: PASS (from %s): %d objects (%s; %d stored as v1alpha1 by OpenKruise, migrated by bosun) %s; "+
		"%d pods, %d claims and %d ControllerRevisions unchanged; %d expected differences\n",
		sp.release, objects, strings.Join(kinds, ", "), storedAlpha, compared, len(baseline.pods), len(baseline.claims), len(baseline.revisions), v.expectedCount())
	var queues []string
	for _, name := range slices.Sorted(maps.Keys(adds)) {
		if _, resynced := resyncedQueues[name]; resynced || slices.Contains(reportedQueues, name) {
			queues = append(queues, fmt.Sprintf("%s %g", name, adds[name]))
		}
	}
	fmt.Printf("takeover: syncs queued under bosun (workqueue_adds_total): %s\n", strings.Join(queues, ", "))
	for _, ph := range p.done {
		fmt.Printf("takeover:   %-110s %v\n", ph.name, ph.took.Round(time.Second))
	}
	fmt.Printf("takeover: total %v\n", time.Since(p.began).Round(time.Second))
}

func joinDiffs(diffs []difference) string {
	lines := make([]string, len(diffs))
	for i, d := range diffs {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
