package gcgraph

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// dotVertex is one node as rendered; missing vertices stand for owners named by a
// reference but absent from the graph.
type dotVertex struct {
	uid                types.UID
	gvk                schema.GroupVersionKind
	namespace, name    string
	missing            bool
	beingDeleted       bool
	deletingDependents bool
	virtual            bool
}

type dotEdge struct {
	from, to types.UID
}

// WriteDOT renders the graph in Graphviz DOT ("strict digraph full"), the body of the
// garbage collector's debug endpoint. With uids, only the nodes reachable from them
// through owners and dependents (transitively) are rendered. Nodes with neither owners nor
// dependents are left out; owners named by a reference but absent from the graph appear
// once with missing="true". Nodes are sorted by UID and edges (dependent -> owner) by
// (from, to).
func WriteDOT(w io.Writer, g *UIDToNode, uids ...types.UID) error {
	nodes := g.Nodes()
	if len(uids) > 0 {
		nodes = reachable(g, uids)
	}
	vertices, edges := toDOT(nodes)
	bw := bufio.NewWriter(w)
	bw.WriteString("strict digraph full {\n")
	if len(vertices) > 0 {
		bw.WriteString("  // Node definitions.\n")
		for _, v := range vertices {
			writeVertex(bw, v)
		}
	}
	if len(edges) > 0 {
		bw.WriteString("  // Edge definitions.\n")
		for _, e := range edges {
			fmt.Fprintf(bw, "  %q -> %q;\n", e.from, e.to)
		}
	}
	bw.WriteString("}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing DOT graph: %w", err)
	}
	return nil
}

// reachable returns the nodes reachable from uids through owner references and
// dependents.
func reachable(g *UIDToNode, uids []types.UID) []*Node {
	seen := map[types.UID]bool{}
	var out []*Node
	pending := append([]types.UID(nil), uids...)
	for len(pending) > 0 {
		uid := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if seen[uid] {
			continue
		}
		seen[uid] = true
		n, ok := g.Read(uid)
		if !ok {
			continue
		}
		out = append(out, n)
		for _, ref := range n.Owners() {
			pending = append(pending, ref.UID)
		}
		for _, d := range n.Dependents() {
			pending = append(pending, d.identity.UID)
		}
	}
	return out
}

func toDOT(nodes []*Node) ([]*dotVertex, []dotEdge) {
	byUID := map[types.UID]*dotVertex{}
	var vertices []*dotVertex
	for _, n := range nodes {
		if len(n.Owners()) == 0 && n.DependentsCount() == 0 {
			continue
		}
		id := n.Identity()
		v := &dotVertex{
			uid:                id.UID,
			gvk:                schema.FromAPIVersionAndKind(id.APIVersion, id.Kind),
			namespace:          id.Namespace,
			name:               id.Name,
			beingDeleted:       n.BeingDeleted(),
			deletingDependents: n.DeletingDependents(),
			virtual:            n.Virtual(),
		}
		byUID[id.UID] = v
		vertices = append(vertices, v)
	}
	var edges []dotEdge
	for _, n := range nodes {
		from := n.Identity().UID
		for _, ref := range n.Owners() {
			if _, ok := byUID[ref.UID]; !ok {
				v := &dotVertex{
					uid:     ref.UID,
					gvk:     schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind),
					name:    ref.Name,
					missing: true,
				}
				byUID[ref.UID] = v
				vertices = append(vertices, v)
			}
			edges = append(edges, dotEdge{from: from, to: ref.UID})
		}
	}
	sort.Slice(vertices, func(i, j int) bool { return vertices[i].uid < vertices[j].uid })
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].from != edges[j].from {
			return edges[i].from < edges[j].from
		}
		return edges[i].to < edges[j].to
	})
	return vertices, edges
}

func writeVertex(w io.Writer, v *dotVertex) {
	kind := v.gvk.Kind + "." + v.gvk.Version
	if v.gvk.Group != "" {
		kind += "." + v.gvk.Group
	}
	label := fmt.Sprintf("uid=%s\nnamespace=%s\n%s/%s\n", v.uid, v.namespace, kind, v.name)
	var flags []string
	for _, f := range []struct {
		set  bool
		name string
	}{{v.beingDeleted, "beingDeleted"}, {v.deletingDependents, "deletingDependents"}, {v.virtual, "virtual"}, {v.missing, "missingFromGraph"}} {
		if f.set {
			flags = append(flags, f.name)
		}
	}
	if len(flags) > 0 {
		label += strings.Join(flags, ",") + "\n"
	}
	attrs := []struct{ key, value string }{
		{"label", label},
		{"group", v.gvk.Group},
		{"version", v.gvk.Version},
		{"kind", v.gvk.Kind},
		{"namespace", v.namespace},
		{"name", v.name},
		{"uid", string(v.uid)},
		{"missing", strconv.FormatBool(v.missing)},
		{"beingDeleted", strconv.FormatBool(v.beingDeleted)},
		{"deletingDependents", strconv.FormatBool(v.deletingDependents)},
		{"virtual", strconv.FormatBool(v.virtual)},
	}
	fmt.Fprintf(w, "  %q [\n", v.uid)
	for _, a := range attrs {
		fmt.Fprintf(w, "    %s=%q\n", a.key, a.value)
	}
	fmt.Fprint(w, "  ];\n")
}
