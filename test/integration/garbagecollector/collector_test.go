package garbagecollector

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

const (
	// underTestEnv selects the collector under test; see the package documentation.
	underTestEnv = "BOSUN_GC_UNDER_TEST"

	// controllerName is the collector's canonical name in both managers: its debug handler
	// lives under /debug/controllers/<controllerName>/ and its Events come from it.
	controllerName = "garbage-collector-controller"
	// controllerAlias is what --controllers takes.
	controllerAlias = "garbagecollector"
	// graphPath is the collector's debug graph.
	graphPath = "/debug/controllers/" + controllerName + "/graph"
	// clientName is the name of the collector's clients, the end of their User-Agent.
	clientName = "generic-garbage-collector"
	// workloadControllers are bosun's controllers the Deployment scenario needs besides the
	// collector.
	workloadControllers = "replicaset,deployment"
)

// implementation is the collector under test.
type implementation string

const (
	bosunGC          implementation = "bosun"
	upstreamGC       implementation = "upstream"
	upstreamStrictGC implementation = "upstream-strict"
)

// underTest returns the collector selected by BOSUN_GC_UNDER_TEST.
func underTest(t testing.TB) implementation {
	t.Helper()
	switch v := os.Getenv(underTestEnv); v {
	case "", string(bosunGC):
		return bosunGC
	case string(upstreamGC):
		return upstreamGC
	case string(upstreamStrictGC):
		return upstreamStrictGC
	default:
		t.Fatalf("%s=%q: want bosun, upstream or upstream-strict", underTestEnv, v)
		return ""
	}
}

func (i implementation) upstream() bool { return i == upstreamGC || i == upstreamStrictGC }

// skipUnderUpstream skips the rest of the test when upstream's collector is under test (but
// not with upstream-strict): the test checks where bosun deliberately goes beyond upstream,
// and why says how upstream falls short.
func skipUnderUpstream(t testing.TB, why string) {
	t.Helper()
	if underTest(t) == upstreamGC {
		t.Skipf("bosun improvement, upstream's collector is known to fail this (run with %s=%s to see it): %s", underTestEnv, upstreamStrictGC, why)
	}
}

// collectorOptions configure startCollector.
type collectorOptions struct {
	// workloads also runs bosun's ReplicaSet and Deployment controllers.
	workloads bool
	// qps and burst are the manager's --kube-api-qps and --kube-api-burst; the framework's
	// 500 when zero.
	qps   float64
	burst int
	// kubeconfig, when set, replaces the manager's --kubeconfig: the collector then talks to
	// the API server through whatever it names (an apiProxy). Delegated authentication and
	// authorization of its secure port still go to the API server directly.
	kubeconfig string
}

// collector is a running garbage collector: the controller manager process that runs it.
type collector struct {
	*framework.ControllerManager
	impl implementation
	// agentPrefix starts the User-Agent of every request the process sends (the base name
	// of its binary).
	agentPrefix string
	// token is a bearer token its secure port accepts for the debug graph (the admin's).
	token string
}

// startCollector starts the collector under test against cp until the test ends, and returns
// once its manager answers /healthz (its monitors may still be syncing).
func startCollector(t *testing.T, cp *framework.ControlPlane, opts collectorOptions) *collector {
	t.Helper()
	impl := underTest(t)
	c := &collector{impl: impl, token: cp.Config().BearerToken}
	var extraArgs []string
	if opts.kubeconfig != "" {
		extraArgs = append(extraArgs, "--kubeconfig="+opts.kubeconfig) // the last --kubeconfig wins
	}
	if !impl.upstream() {
		controllers := controllerAlias
		if opts.workloads {
			controllers += "," + workloadControllers
		}
		c.ControllerManager = framework.StartBosunControllerManager(t, cp, framework.ControllerManagerOptions{
			Controllers: controllers,
			QPS:         opts.qps,
			Burst:       opts.burst,
			ExtraArgs:   extraArgs,
		})
		c.agentPrefix = agentPrefix(framework.BuildBosunBinary(t, "bosun-controller-manager"))
		return c
	}
	if opts.workloads {
		framework.StartBosunControllerManager(t, cp, framework.ControllerManagerOptions{Controllers: workloadControllers})
	}
	if opts.qps != 0 {
		extraArgs = append(extraArgs, "--kube-api-qps="+strconv.FormatFloat(opts.qps, 'g', -1, 64))
	}
	if opts.burst != 0 {
		extraArgs = append(extraArgs, "--kube-api-burst="+strconv.Itoa(opts.burst))
	}
	c.ControllerManager = framework.StartUpstreamControllerManager(t, cp, controllerAlias, extraArgs...)
	path, err := framework.ToolPath("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	c.agentPrefix = agentPrefix(path)
	return c
}

// agentPrefix is the start of the User-Agent client-go gives the binary at path:
// "<base name>/<version> (<os>/<arch>) kubernetes/<commit>", then "/<client name>".
func agentPrefix(path string) string { return filepath.Base(path) + "/" }

// sentBy reports whether a request with this User-Agent came from the collector's process.
func (c *collector) sentBy(userAgent string) bool { return strings.HasPrefix(userAgent, c.agentPrefix) }

// sentByCollector reports whether a request with this User-Agent came from the collector's
// own clients (not, say, the manager's shared informers).
func (c *collector) sentByCollector(userAgent string) bool {
	return c.sentBy(userAgent) && strings.HasSuffix(userAgent, "/"+clientName)
}

// response is the answer of one HTTP request to a manager's secure port.
type response struct {
	code   int
	header http.Header
	body   string
}

// get requests path from the manager's secure port with the given bearer token (none when
// empty). A request that gets no answer returns code 0 and the error as body.
func (c *collector) get(path, token string) response {
	if c.Exited() {
		return response{body: fmt.Sprintf("%s exited with status %d:\n%s", c.Name(), c.ExitCode(), c.LogTail(40))}
	}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", c.Port, path), nil)
	if err != nil {
		return response{body: err.Error()}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The managers serve a self-signed certificate without --tls-cert-file.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return response{body: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{body: err.Error()}
	}
	return response{code: resp.StatusCode, header: resp.Header, body: string(body)}
}

// graph returns the collector's dependency graph around uids (the whole graph without any).
func (c *collector) graph(uids ...types.UID) (*dotGraph, error) {
	path := graphPath
	if len(uids) > 0 {
		query := url.Values{}
		for _, uid := range uids {
			query.Add("uid", string(uid))
		}
		path += "?" + query.Encode()
	}
	resp := c.get(path, c.token)
	if resp.code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d: %s", path, resp.code, resp.body)
	}
	g, err := parseDOT(resp.body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w\n%s", path, err, resp.body)
	}
	return g, nil
}

// dotGraph is the collector's debug graph: its vertices (by UID) with their attributes, and its
// edges from dependent to owner.
type dotGraph struct {
	vertices map[types.UID]map[string]string
	edges    map[dotEdge]bool
	text     string
}

type dotEdge struct{ dependent, owner types.UID }

func (e dotEdge) String() string { return fmt.Sprintf("%q -> %q", e.dependent, e.owner) }

// parseDOT parses the output of the debug graph handler:
//
//	strict digraph full {
//	  // Node definitions.
//	  "<uid>" [
//	    key="value"
//	    …
//	  ];
//	  // Edge definitions.
//	  "<dependent uid>" -> "<owner uid>";
//	}
//
// where every id and value is a Go-quoted string.
func parseDOT(text string) (*dotGraph, error) {
	g := &dotGraph{vertices: map[types.UID]map[string]string{}, edges: map[dotEdge]bool{}, text: text}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "strict digraph full {" || lines[len(lines)-1] != "}" {
		return nil, fmt.Errorf("not a graph: want %q ... %q", "strict digraph full {", "}")
	}
	var vertex map[string]string // attributes of the vertex being read
	for i, line := range lines[1 : len(lines)-1] {
		trimmed := strings.TrimSpace(line)
		fail := func(err error) error { return fmt.Errorf("line %d %q: %w", i+2, line, err) }
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "//"):
		case vertex != nil && trimmed == "];":
			vertex = nil
		case vertex != nil:
			key, quoted, ok := strings.Cut(trimmed, "=")
			if !ok {
				return nil, fail(fmt.Errorf("want key=\"value\""))
			}
			value, err := strconv.Unquote(quoted)
			if err != nil {
				return nil, fail(err)
			}
			vertex[key] = value
		case strings.HasSuffix(trimmed, " ["):
			uid, err := strconv.Unquote(strings.TrimSuffix(trimmed, " ["))
			if err != nil {
				return nil, fail(err)
			}
			if _, dup := g.vertices[types.UID(uid)]; dup {
				return nil, fail(fmt.Errorf("vertex %s defined twice", uid))
			}
			vertex = map[string]string{}
			g.vertices[types.UID(uid)] = vertex
		case strings.HasSuffix(trimmed, ";") && strings.Contains(trimmed, " -> "):
			from, to, _ := strings.Cut(strings.TrimSuffix(trimmed, ";"), " -> ")
			dependent, err := strconv.Unquote(from)
			if err != nil {
				return nil, fail(err)
			}
			owner, err := strconv.Unquote(to)
			if err != nil {
				return nil, fail(err)
			}
			g.edges[dotEdge{types.UID(dependent), types.UID(owner)}] = true
		default:
			return nil, fail(fmt.Errorf("neither a vertex, an attribute nor an edge"))
		}
	}
	if vertex != nil {
		return nil, fmt.Errorf("the last vertex is not closed")
	}
	return g, nil
}

// has reports whether every uid is a vertex.
func (g *dotGraph) has(uids ...types.UID) bool {
	for _, uid := range uids {
		if _, ok := g.vertices[uid]; !ok {
			return false
		}
	}
	return true
}

// flag returns a vertex's boolean attribute (beingDeleted, deletingDependents, virtual, missing).
func (g *dotGraph) flag(uid types.UID, name string) bool { return g.vertices[uid][name] == "true" }

// edgeList returns the edges, sorted, for messages.
func (g *dotGraph) edgeList() []string {
	var out []string
	for e := range g.edges {
		out = append(out, e.String())
	}
	sort.Strings(out)
	return out
}
