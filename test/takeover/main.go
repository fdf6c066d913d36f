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
	skipNoNode bool
	resync     time.Duration
	observe    time.Duration
	timeout    time.Duration
}

func main() {
	klog.InitFlags(nil)
	var o options
	flag.BoolVar(&o.skipNoNode, "skip-without-node", false, "report the run skipped, instead of failing, on a machine that cannot run a real node (not root, packages missing)")
	flag.DurationVar(&o.resync, "min-resync-period", 30*time.Second, "bosun-controller-manager's --min-resync-period: its informers resync every one to two of these")
	flag.DurationVar(&o.observe, "observe", 150*time.Second, "how long bosun runs before its state is compared with OpenKruise's; at least twice the longest resync (2 × 2 × -min-resync-period) plus the PodUnavailableBudget resync (1m)")
	flag.DurationVar(&o.timeout, "timeout", 45*time.Minute, "how long the whole run may take")
	flag.Parse()
	if o.observe < 4*o.resync {
		fmt.Fprintf(os.Stderr, "takeover: -observe %v does not cover two resyncs of -min-resync-period %v (at most 2 × %v each)\n", o.observe, o.resync, o.resync)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "takeover: FAIL:", err)
		os.Exit(1)
	}
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

func run(ctx context.Context, o options) error {
	if err := cluster.CheckHost(); err != nil {
		if o.skipNoNode {
			fmt.Println("takeover: SKIP: the takeover from OpenKruise runs on a real node:", err)
			return nil
		}
		return fmt.Errorf("the takeover from OpenKruise runs on a real node: %w", err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	p := &phases{began: time.Now()}
	if err := p.run("building kruise-manager and kruise-daemon (cached)", func() error {
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-kruise.sh"), framework.KruiseManagerBinary, kruiseDaemonBinary)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}); err != nil {
		return err
	}

	var c *cluster.Cluster
	if err := p.run("starting the local cluster without bosun", func() (err error) {
		c, err = cluster.Start(ctx, cluster.Options{
			Dir:                 filepath.Join(root, "_output", "takeover"),
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
	e := &env{c: c, client: client, dyn: dyn}

	var k *kruise
	if err := p.run("installing OpenKruise v1.9.0 (config/default) and starting kruise-manager and kruise-daemon", func() (err error) {
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

	if err := p.run("creating DaemonSets, budgets, a ContainerRecreateRequest and pull jobs through OpenKruise, until settled", func() error {
		return e.createWorkloads(ctx)
	}); err != nil {
		return err
	}

	var baseline *snapshot
	var storedAlpha []string
	if err := p.run("recording OpenKruise's state, keeping its CRDs, stopping it", func() (err error) {
		// Reads in the version an object is not stored in need the conversion webhook of
		// kruise-manager: the state is recorded while it runs, and etcd shows that nothing
		// was written afterwards.
		if baseline, err = record(ctx, dyn, client, v1alpha1, v1beta1); err != nil {
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
		for _, want := range []string{
			"apps.kruise.io/daemonsets/" + namespace + "/" + alphaDaemonSet,
			"policy.kruise.io/podunavailablebudgets/" + namespace + "/" + alphaBudget,
			"apps.kruise.io/imagepulljobs/" + namespace + "/" + alphaPullJob,
		} {
			if !slices.Contains(storedAlpha, want) {
				return fmt.Errorf("%s is not stored as v1alpha1: the run does not show a takeover of objects OpenKruise stored as v1alpha1", want)
			}
		}
		return nil
	}); err != nil {
		return err
	}

	if err := p.run("handing over: deleting OpenKruise's webhook configurations, pointing the conversion at bosun, applying bosun's CRDs", func() error {
		if err := e.pointConversionAtKruiseService(ctx); err != nil {
			return err
		}
		fmt.Println("  (the CRDs' conversion names OpenKruise's Service now, as an OpenKruise inside the cluster leaves it)")
		if err := framework.RemoveKruiseWebhooks(ctx, client); err != nil {
			return err
		}
		// Applied over CRDs whose conversion names OpenKruise's Service, bosun's URL would
		// join it, and the API server refuses a clientConfig with both: hence the step.
		if _, err := e.applyBosunCRDs(ctx, root, true); err == nil || !strings.Contains(err.Error(), "exactly one of url or service is required") {
			return fmt.Errorf("applying bosun's CRDs over a conversion that names OpenKruise's Service: %v; want the API server to refuse a clientConfig with both a url and a service", err)
		}
		if err := e.pointConversionAtBosun(ctx); err != nil {
			return err
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
	if err := p.run(fmt.Sprintf("watching bosun for %v (--min-resync-period=%v) and until its storage migration is done: no pod or ControllerRevision may change", o.observe, o.resync), func() (err error) {
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

	var underBosun *snapshot
	var v verdicts
	if err := p.run("comparing bosun's state with OpenKruise's", func() (err error) {
		if underBosun, err = record(ctx, dyn, client, v1alpha1, v1beta1); err != nil {
			return err
		}
		v = compareTakeover(baseline, underBosun)
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
		if err := e.updateImage(ctx, v1alpha1, alphaDaemonSet, image); err != nil {
			return err
		}
		return e.waitDaemonSetRolledOut(ctx, v1alpha1, alphaDaemonSet, image)
	}); err != nil {
		return err
	}

	printSummary(baseline, len(storedAlpha), adds, v, p)
	return nil
}

// migrationTimeout bounds how long after the observation bosun's storage version migrator
// may still take: it starts 2 minutes (--storage-version-migration-delay) after bosun first
// saw v1beta1 as the storage version.
const migrationTimeout = 4 * time.Minute

// watchNothingChanges fails as soon as a pod or a ControllerRevision differs from the
// baseline, and otherwise returns after d, once every CRD's storedVersions is [v1beta1]
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
		now, err := record(ctx, e.dyn, e.client)
		if err != nil {
			return err
		}
		if diffs := append(comparePods(baseline.pods, now.pods), compareRevisions(baseline.revisions, now.revisions)...); len(diffs) > 0 {
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
	beta, alpha      verdict
}

func (v verdicts) ok() bool { return len(v.podsAndRevisions) == 0 && v.beta.ok() && v.alpha.ok() }

// compareTakeover compares bosun's state with OpenKruise's: the same pods and
// ControllerRevisions, the same v1beta1 objects (status recomputed to equal values), and
// the same v1alpha1 views but for OpenKruise's losses (expectedAlphaDifferences).
func compareTakeover(underKruise, underBosun *snapshot) verdicts {
	return verdicts{
		podsAndRevisions: append(comparePods(underKruise.pods, underBosun.pods), compareRevisions(underKruise.revisions, underBosun.revisions)...),
		beta:             judge(compareObjects(v1beta1, underKruise.objects[v1beta1], underBosun.objects[v1beta1]), expectedBetaDifferences),
		alpha:            judge(compareObjects(v1alpha1, underKruise.objects[v1alpha1], underBosun.objects[v1alpha1]), expectedAlphaDifferences),
	}
}

func (v verdicts) print() {
	for _, d := range v.podsAndRevisions {
		fmt.Println("  UNEXPECTED:", d)
	}
	for _, version := range []struct {
		name string
		v    verdict
	}{{v1beta1, v.beta}, {v1alpha1, v.alpha}} {
		for _, d := range version.v.unexpected {
			fmt.Println("  UNEXPECTED:", d)
		}
		for _, d := range version.v.expected {
			fmt.Printf("  expected: %s\n      (%s)\n", d.difference, d.why)
		}
		for _, a := range version.v.missing {
			fmt.Printf("  MISSING: the expected difference %s %s %s %s did not occur (%s)\n", a.Kind, a.Version, a.Object, a.Path, a.Why)
		}
	}
}

// sabotageAnnotation is what the self-check writes onto a budget.
const sabotageAnnotation = "takeover.bosun.dev/sabotage"

// sabotage shows that the comparison can fail: an annotation written onto a v1beta1
// object is reported in both versions and nothing else is, and is gone once removed; a
// deleted pod is reported. The DaemonSet then replaces the pod.
func (e *env) sabotage(ctx context.Context, baseline *snapshot) error {
	budgets := e.dyn.Resource(kindNamed("PodUnavailableBudget").gvr(v1beta1)).Namespace(namespace)
	patch := func(value string) error {
		_, err := budgets.Patch(ctx, betaBudget, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, sabotageAnnotation, value)), metav1.PatchOptions{})
		return err
	}
	if err := patch(`"1"`); err != nil {
		return err
	}
	now, err := record(ctx, e.dyn, e.client, v1alpha1, v1beta1)
	if err != nil {
		return err
	}
	v := compareTakeover(baseline, now)
	want := "metadata.annotations[" + sabotageAnnotation + "]"
	for _, got := range [][]difference{v.beta.unexpected, v.alpha.unexpected} {
		if len(got) != 1 || got[0].Kind != "PodUnavailableBudget" || got[0].Path != want {
			return fmt.Errorf("with %s added to %s, the comparison reported %v; want exactly that annotation, in each version", sabotageAnnotation, betaBudget, got)
		}
	}
	fmt.Printf("  detected: %s\n", v.beta.unexpected[0])
	if err := patch("null"); err != nil {
		return err
	}
	if now, err = record(ctx, e.dyn, e.client, v1alpha1, v1beta1); err != nil {
		return err
	}
	if v := compareTakeover(baseline, now); !v.ok() {
		v.print()
		return fmt.Errorf("with %s removed again, the comparison still reports differences", sabotageAnnotation)
	}

	pods, err := e.daemonSetPods(ctx, betaDaemonSet)
	if err != nil {
		return err
	}
	if len(pods) != 1 {
		return fmt.Errorf("DaemonSet %s has %d pods, want 1", betaDaemonSet, len(pods))
	}
	victim := pods[0]
	if err := e.client.CoreV1().Pods(namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting pod %s: %w", victim.Name, err)
	}
	if err := e.waitDaemonSetRolledOut(ctx, v1beta1, betaDaemonSet, cluster.WebserverImage("v1")); err != nil {
		return err
	}
	if now, err = record(ctx, e.dyn, e.client); err != nil {
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

func printSummary(baseline *snapshot, storedAlpha int, adds map[string]float64, v verdicts, p *phases) {
	var kinds []string
	objects := 0
	for _, k := range takenOverKinds {
		n := baseline.count(k.Kind)
		objects += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k.Kind, n))
	}
	fmt.Printf("takeover: PASS: %d objects (%s; %d stored as v1alpha1 by OpenKruise, migrated by bosun) compared in v1alpha1 and v1beta1; "+
		"%d pods and %d ControllerRevisions unchanged; %d expected differences\n",
		objects, strings.Join(kinds, ", "), storedAlpha, len(baseline.pods), len(baseline.revisions), len(v.alpha.expected)+len(v.beta.expected))
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
