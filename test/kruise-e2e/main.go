package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
	"github.com/bosun-dev/bosun/test/integration/framework"
)

// defaultLabelFilter selects the specs of the kinds bosun serves.
const defaultLabelFilter = "CloneSet || DaemonSet || PodUnavailableBudget || ContainerRecreateRequest || PullImage || PullImages"

// kruiseCIGates turns on, in bosun-controller-manager, every gate that shares its name with
// one of OpenKruise's: OpenKruise's own CI runs its suite with all alpha and beta gates on,
// and specs such as PodUnavailableBudget's in-place update protection need them. bosun's
// own alpha gates stay off; they change behaviour beyond OpenKruise's.
const kruiseCIGates = "PodUnavailableBudgetDeleteGate=true,PodUnavailableBudgetUpdateGate=true," +
	"KruiseDaemon=true,ImagePullJobGate=true,PreDownloadImageForDaemonSetUpdate=true," +
	"PreDownloadImageForInPlaceUpdate=true,CloneSetShortHash=true,PreparingUpdateAsUpdate=true,CloneSetPartitionRollback=true," +
	"RecreatePodWhenChangeVCTInCloneSetGate=true,ForceDeleteTimeoutExpectationGate=true"

type options struct {
	labelFilter string
	focus       string
	skip        string
	// skipFile is Ginkgo's --ginkgo.skip-file: the specs of the files it matches do not run.
	skipFile     string
	expectations string
	repeat       int
	skipNoNode   bool
	timeout      time.Duration
	seed         int64
	// passesOnly leaves out the specs the expectation file lists as `not yet` and judges
	// only the specs that ran: `make test` checks, within CI's time, that nothing that
	// passed stops passing; the full run also finds the specs that start passing, and
	// `pass` specs that no longer run.
	passesOnly bool
	// withoutFreshNodes leaves out the freshNodeSpecs, each of which costs a cluster of its
	// own: `make test` runs without them to stay within CI's hour.
	withoutFreshNodes bool
	// manager is the manager under test: bosun, or kruise-manager for a reference run.
	manager string
	// inCluster installs bosun inside the cluster from its images and Helm chart
	// (cluster.Options.InCluster) instead of running its binaries on the host.
	inCluster bool
}

// The managers the suite runs against: bosun-controller-manager with bosun-daemon, the
// subject, and OpenKruise's kruise-manager with kruise-daemon, the reference, to tell a
// spec that fails on bosun from one that fails on this machine.
const (
	managerBosun  = "bosun"
	managerKruise = "kruise-manager"
)

// defaultSeed is the Ginkgo seed of the run test/kruise-e2e/expectations.txt was last
// recorded from: every run orders the specs alike, so that a spec that leans on what an
// earlier one left behind fails or passes every time, not one run in a few. (The two
// known dependencies are taken care of: the suite starts once the node's NodeImage exists,
// and the freshNodeSpecs run on clusters of their own.)
const defaultSeed = 1795679036

func main() {
	klog.InitFlags(nil)
	var o options
	flag.StringVar(&o.labelFilter, "label-filter", defaultLabelFilter, "Ginkgo label filter of the specs to run")
	flag.StringVar(&o.skip, "skip", "", "Ginkgo skip regular expression: the specs whose full text it matches do not run (the expectations are then checked only for the specs that ran)")
	flag.StringVar(&o.skipFile, "skip-file", "", "Ginkgo skip-file regular expression: the specs of the suite's files whose path it matches do not run, for example apps/v1beta1/ for one API version of the specs that exist in both (the expectations are then checked only for the specs that ran)")
	flag.StringVar(&o.focus, "focus", "", "Ginkgo focus regular expression, to run fewer specs while working on one, all on one cluster (the expectations are then checked only for the specs that ran)")
	flag.StringVar(&o.expectations, "expectations", "test/kruise-e2e/expectations.txt", "the expectation file, relative to the repository's root")
	flag.IntVar(&o.repeat, "repeat", 1, "run the suite this many times in a row on the same cluster; every run must match the expectations")
	flag.BoolVar(&o.skipNoNode, "skip-without-node", false, "report the run skipped, instead of failing, on a machine that cannot run a real node (not root, packages missing)")
	flag.DurationVar(&o.timeout, "timeout", 50*time.Minute, "how long one run of the suite may take")
	flag.BoolVar(&o.passesOnly, "expected-passes-only", false, "run only the specs the expectation file lists as `pass` (a `not yet` spec whose twin in the other API version passes runs too: Ginkgo selects by text), and judge only the specs that ran")
	flag.Int64Var(&o.seed, "seed", defaultSeed, "Ginkgo's random seed, which orders the specs: fixed, so that every run orders them as the run the expectation file was recorded from (0: a new order each run)")
	flag.BoolVar(&o.withoutFreshNodes, "without-fresh-nodes", false, "leave out the specs that need a node that has not pulled their image yet, each of which runs on a new cluster of its own (minutes each)")
	flag.StringVar(&o.manager, "manager", managerBosun, "the manager the suite runs against: "+managerBosun+", or "+managerKruise+" (OpenKruise v1.9.0's kruise-manager and kruise-daemon, with the same feature gates) for a reference run, whose outcomes are printed and not judged against the expectations")
	flag.BoolVar(&o.inCluster, "in-cluster", false, "install bosun inside the local cluster from its images and Helm chart, as a managed cluster runs it, instead of running its binaries on the host (with -manager="+managerBosun+")")
	flag.Parse()
	if _, err := regexp.Compile(o.skipFile); err != nil {
		fmt.Fprintln(os.Stderr, "kruise-e2e: -skip-file:", err)
		os.Exit(2)
	}
	if _, err := regexp.Compile(o.skip); err != nil {
		fmt.Fprintln(os.Stderr, "kruise-e2e: -skip:", err)
		os.Exit(2)
	}
	if o.manager != managerBosun && o.manager != managerKruise {
		fmt.Fprintf(os.Stderr, "kruise-e2e: -manager must be %s or %s, not %q\n", managerBosun, managerKruise, o.manager)
		os.Exit(2)
	}
	if o.repeat < 1 {
		fmt.Fprintln(os.Stderr, "kruise-e2e: -repeat must be at least 1")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "kruise-e2e:", err)
		os.Exit(1)
	}
}

// errExpectations is returned when a run did not match the expectation file; what did not
// match has been printed.
var errExpectations = errors.New("the suite did not match the expectations")

func run(ctx context.Context, o options) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	expectationsPath := filepath.Join(root, o.expectations)
	f, err := os.Open(expectationsPath)
	if err != nil {
		return err
	}
	expected, err := parseExpectations(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", o.expectations, err)
	}
	if err := cluster.CheckHost(); err != nil {
		if o.skipNoNode {
			fmt.Println("kruise-e2e: SKIP: OpenKruise's suite needs a real node:", err)
			return nil
		}
		return fmt.Errorf("OpenKruise's suite needs a real node: %w", err)
	}

	suiteBinary, agnhost, err := buildSuite(ctx, root)
	if err != nil {
		return err
	}

	mismatched := 0
	for i := 1; i <= o.repeat; i++ {
		var outcomes []outcome
		for _, p := range parts(o, expected) {
			got, err := runOnFreshCluster(ctx, o, root, i, p, suiteBinary, agnhost)
			if err != nil {
				return err
			}
			outcomes = append(outcomes, got...)
		}
		if o.manager == managerKruise {
			if o.repeat > 1 {
				fmt.Printf("kruise-e2e: run %d of %d: ", i, o.repeat)
			}
			writeOutcomes(os.Stdout, o.manager, outcomes)
			continue
		}
		want := expected
		switch {
		case o.focus != "" || o.skip != "" || o.skipFile != "":
			want = onlyRan(expected, outcomes)
		case o.passesOnly:
			// Only what ran is judged: CI narrows the label filter to fit its time, and the
			// full run is the one that finds a `pass` spec that no longer runs.
			if len(outcomes) == 0 {
				return fmt.Errorf("no spec of OpenKruise's suite ran (label filter %q)", o.labelFilter)
			}
			want = onlyRan(expected, outcomes)
		}
		v := judge(want, outcomes)
		if o.repeat > 1 {
			fmt.Printf("kruise-e2e: run %d of %d: ", i, o.repeat)
		}
		writeVerdict(os.Stdout, v, o.expectations)
		if !v.ok() {
			mismatched++
		}
	}
	if mismatched > 0 {
		return errExpectations
	}
	return nil
}

// part is one run of the suite on a cluster of its own: the main run, or one of the
// freshNodeSpecs.
type part struct {
	name string
	// dir is the cluster's directory under _output.
	dir string
	// focus and skip are Ginkgo's --ginkgo.focus and --ginkgo.skip, "" for none.
	focus, skip string
}

// parts are the runs of one repetition: every spec of the label filter but the
// freshNodeSpecs on one cluster, then each of those on a new one. With -focus, the focused
// specs run together, on one cluster. With -expected-passes-only, the texts of which no
// spec is expected to pass are left out too, and fresh clusters start only for texts that
// are.
func parts(o options, expected map[specKey]expectation) []part {
	if o.focus != "" {
		return []part{{name: "focused", dir: "kruise-e2e", focus: o.focus, skip: o.skip}}
	}
	texts := specTexts(freshNodeSpecs)
	skipped := texts
	if o.passesOnly {
		texts = passingTexts(texts, expected)
		skipped = append(append([]string{}, specTexts(freshNodeSpecs)...), notPassingTexts(expected)...)
	}
	skip := exactly(skipped...)
	if o.skip != "" {
		skip += "|" + o.skip
	}
	out := []part{{name: "main", dir: "kruise-e2e", skip: skip}}
	if o.withoutFreshNodes {
		return out
	}
	for i, text := range texts {
		if o.skip != "" && regexp.MustCompile(o.skip).MatchString(text) {
			continue
		}
		out = append(out, part{
			name:  fmt.Sprintf("on a fresh node: %q", text),
			dir:   filepath.Join("kruise-e2e-fresh-node", strconv.Itoa(i+1)),
			focus: exactly(text),
		})
	}
	return out
}

// runOnFreshCluster starts a local cluster, fills its registry with the suite's images,
// waits for the node's NodeImage, runs the part of the suite once and stops the cluster.
// Every run gets a new cluster, as in OpenKruise's own CI: a node that has already pulled
// the suite's images answers the ImagePullJob specs at once, which they do not expect.
func runOnFreshCluster(ctx context.Context, o options, root string, run int, p part, suiteBinary, agnhost string) ([]outcome, error) {
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(root, "_output", p.dir), ManagerFeatureGates: kruiseCIGates,
		MirroredRegistries: mirroredRegistries, WithoutBosun: o.manager == managerKruise, InCluster: o.inCluster && o.manager == managerBosun})
	if err != nil {
		return nil, fmt.Errorf("starting the local cluster: %w", err)
	}
	var reference *openKruise
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if err := reference.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kruise-e2e: stopping OpenKruise:", err)
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kruise-e2e: stopping the local cluster:", err)
		}
	}
	defer stop()
	if o.manager == managerKruise {
		if reference, err = startOpenKruise(ctx, c); err != nil {
			return nil, err
		}
	}
	if err := pushImages(ctx, agnhost); err != nil {
		return nil, err
	}
	work := filepath.Join(c.Dir(), "suite")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	imageList := filepath.Join(work, "image-list.yaml")
	if err := os.WriteFile(imageList, []byte(imageListFile()), 0o644); err != nil {
		return nil, err
	}
	if err := waitForNodeImage(ctx, c); err != nil {
		return nil, err
	}
	fmt.Printf("kruise-e2e: %s: local cluster up with OpenKruise's images and the node's NodeImage in %v; logs in %s\n", p.name, time.Since(began).Round(time.Second), c.LogDir())
	outcomes, err := runSuite(ctx, o, p, suiteRun{
		binary: suiteBinary, kubeconfig: c.KubeconfigPath(), imageList: imageList,
		report: filepath.Join(work, "report.json"),
		log:    filepath.Join(c.LogDir(), "kruise-e2e.log"),
	})
	if err != nil {
		return nil, err
	}
	if c.Err() != nil {
		return nil, fmt.Errorf("the local cluster broke during the suite: %w", c.Err())
	}
	if err := reference.err(); err != nil {
		return nil, fmt.Errorf("OpenKruise broke during the suite: %w", err)
	}
	stop()
	// The next run's start empties the cluster's directory: keep this run's logs and report.
	if o.repeat > 1 {
		keep := filepath.Join(root, "_output", "kruise-e2e-runs", strconv.Itoa(run), p.dir)
		if err := os.RemoveAll(keep); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(c.LogDir(), keep); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(work, "report.json"), filepath.Join(keep, "report.json")); err != nil {
			return nil, err
		}
		fmt.Printf("kruise-e2e: run %d's logs and report: %s\n", run, keep)
	}
	return outcomes, nil
}

// buildSuite builds OpenKruise's e2e test binary and agnhost (cached by hack/build-kruise.sh).
func buildSuite(ctx context.Context, root string) (suite, agnhost string, err error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-kruise.sh"), "kruise-e2e.test", "agnhost")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("building OpenKruise's e2e suite: %w", err)
	}
	if suite, err = framework.ToolPath("kruise-e2e.test"); err != nil {
		return "", "", err
	}
	agnhost, err = framework.ToolPath("agnhost")
	return suite, agnhost, err
}

type suiteRun struct {
	binary, kubeconfig, imageList, report, log string
}

// runSuite runs a part of OpenKruise's suite once and returns how its specs ended. The
// suite's own exit status says only whether every spec passed, which is not the question:
// the report is.
func runSuite(ctx context.Context, o options, p part, r suiteRun) ([]outcome, error) {
	args := []string{
		"--ginkgo.label-filter=" + o.labelFilter,
		"--ginkgo.json-report=" + r.report,
		"--ginkgo.no-color",
		"--ginkgo.timeout=" + o.timeout.String(),
		"-test.timeout=" + (o.timeout + 5*time.Minute).String(),
	}
	if p.focus != "" {
		args = append(args, "--ginkgo.focus="+p.focus)
	}
	if p.skip != "" {
		args = append(args, "--ginkgo.skip="+p.skip)
	}
	if o.skipFile != "" {
		args = append(args, "--ginkgo.skip-file="+o.skipFile)
	}
	if o.seed != 0 {
		args = append(args, "--ginkgo.seed="+strconv.FormatInt(o.seed, 10))
	}
	logFile, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, r.binary, args...)
	cmd.Dir = filepath.Dir(r.report)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig, "KUBE_TEST_REPO_LIST="+r.imageList)
	cmd.Stdout = io.MultiWriter(logFile, &progressWriter{out: os.Stdout})
	cmd.Stderr = logFile
	fmt.Printf("kruise-e2e: running OpenKruise's suite (%s); its log: %s\n", o.labelFilter, r.log)
	began := time.Now()
	runErr := cmd.Run()
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		return nil, fmt.Errorf("running OpenKruise's suite: %w", runErr)
	}
	fmt.Printf("kruise-e2e: %s: the suite ran for %v\n", p.name, time.Since(began).Round(time.Second))
	outcomes, err := readOutcomes(r.report)
	if err != nil {
		return nil, fmt.Errorf("%w (the suite exited with %v; see %s)", err, runErr, r.log)
	}
	return outcomes, nil
}

// passingTexts returns those of texts that some spec expected to pass has.
func passingTexts(texts []string, expected map[specKey]expectation) []string {
	var out []string
	for _, text := range texts {
		for key, e := range expected {
			if key.text == text && e.pass {
				out = append(out, text)
				break
			}
		}
	}
	return out
}

// notPassingTexts returns, sorted, the texts of which no spec is expected to pass. A text
// shared by a passing spec and its `not yet` twin is not among them: Ginkgo selects by
// text, so skipping it would skip the passing one too.
func notPassingTexts(expected map[specKey]expectation) []string {
	passing := map[string]bool{}
	for key, e := range expected {
		passing[key.text] = passing[key.text] || e.pass
	}
	var out []string
	for text, p := range passing {
		if !p {
			out = append(out, text)
		}
	}
	sort.Strings(out)
	return out
}

// onlyRan keeps the expectations of the specs that ran: with a focus, the others are not
// missing, just not asked for.
func onlyRan(expected map[specKey]expectation, outcomes []outcome) map[specKey]expectation {
	out := map[specKey]expectation{}
	for _, o := range outcomes {
		if e, ok := expected[o.key]; ok {
			out[o.key] = e
		}
	}
	return out
}
