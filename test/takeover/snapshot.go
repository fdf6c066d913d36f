package main

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// kruiseKind is one of the seven kinds bosun takes over from OpenKruise.
type kruiseKind struct {
	Kind, Group, Resource string
	Namespaced            bool
}

// takenOverKinds are the kinds whose CRDs bosun's manifests replace.
var takenOverKinds = []kruiseKind{
	{"CloneSet", "apps.kruise.io", "clonesets", true},
	{"DaemonSet", "apps.kruise.io", "daemonsets", true},
	{"PodUnavailableBudget", "policy.kruise.io", "podunavailablebudgets", true},
	{"ContainerRecreateRequest", "apps.kruise.io", "containerrecreaterequests", true},
	{"ImagePullJob", "apps.kruise.io", "imagepulljobs", true},
	{"ImageListPullJob", "apps.kruise.io", "imagelistpulljobs", true},
	{"NodeImage", "apps.kruise.io", "nodeimages", false},
}

// kindNamed returns the entry of takenOverKinds for kind; the kinds are fixed, so an unknown
// one is a bug of the caller.
func kindNamed(kind string) kruiseKind {
	for _, k := range takenOverKinds {
		if k.Kind == kind {
			return k
		}
	}
	panic("takeover: unknown kind " + kind)
}

func (k kruiseKind) crdName() string { return k.Resource + "." + k.Group }

func (k kruiseKind) gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: version, Resource: k.Resource}
}

const (
	v1alpha1 = "v1alpha1"
	v1beta1  = "v1beta1"
)

type objectKey struct {
	Kind, Namespace, Name string
}

func (k objectKey) object() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

func (k objectKey) less(o objectKey) bool {
	if k.Kind != o.Kind {
		return k.Kind < o.Kind
	}
	return k.object() < o.object()
}

// revision is what a takeover must leave alone of a ControllerRevision.
type revision struct {
	UID      string                  `json:"uid"`
	Revision int64                   `json:"revision"`
	Data     any                     `json:"data"`
	Labels   map[string]string       `json:"labels"`
	Owners   []metav1.OwnerReference `json:"ownerReferences"`
}

func (r revision) tree() any { return jsonValue(r) }

// snapshot is the state of the cluster's OpenKruise objects at one moment.
type snapshot struct {
	// listed are the objects of takenOverKinds, whatever versions they were read in.
	listed []objectKey
	// objects holds every object of takenOverKinds read in each version: version → key →
	// object. A version missing from the map was not read.
	objects map[string]map[objectKey]*unstructured.Unstructured
	// pods maps namespace/name to what a takeover must leave alone of every pod of the
	// cluster.
	pods map[string]pod
	// claims maps namespace/name to the UID of every PersistentVolumeClaim of the cluster.
	claims map[string]string
	// revisions maps namespace/name to every ControllerRevision of the cluster.
	revisions map[string]revision
}

// pod is what a takeover must leave alone of a pod: the pod itself (its UID), and what a
// controller changes to update, hook or relabel it: labels (revision, lifecycle state,
// specified-delete), annotations (in-place update state, grace) and the containers' images.
type pod struct {
	UID         string            `json:"uid"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Images      []string          `json:"images"`
}

func (p pod) tree() any { return jsonValue(p) }

func podOf(p *corev1.Pod) pod {
	out := pod{UID: string(p.UID), Labels: p.Labels, Annotations: p.Annotations}
	for _, c := range p.Spec.Containers {
		out.Images = append(out.Images, c.Image)
	}
	return out
}

// record reads every object of takenOverKinds in each of versions (listing them in the
// storage version of the starting point's CRDs, and reading each one by name in every
// version), every pod, every PersistentVolumeClaim's UID and every ControllerRevision.
func (e *env) record(ctx context.Context, versions ...string) (*snapshot, error) {
	dyn, client, listVersion := e.dyn, e.client, e.from.storage
	s := &snapshot{objects: map[string]map[objectKey]*unstructured.Unstructured{}, pods: map[string]pod{}, claims: map[string]string{}, revisions: map[string]revision{}}
	for _, v := range versions {
		s.objects[v] = map[objectKey]*unstructured.Unstructured{}
	}
	for _, k := range takenOverKinds {
		list, err := dyn.Resource(k.gvr(listVersion)).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", k.crdName(), listVersion, err)
		}
		for _, item := range list.Items {
			key := objectKey{Kind: k.Kind, Namespace: item.GetNamespace(), Name: item.GetName()}
			s.listed = append(s.listed, key)
			for _, v := range versions {
				var res dynamic.ResourceInterface = dyn.Resource(k.gvr(v))
				if k.Namespaced {
					res = dyn.Resource(k.gvr(v)).Namespace(key.Namespace)
				}
				obj, err := res.Get(ctx, key.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("reading %s %s in %s: %w", k.Kind, key.object(), v, err)
				}
				s.objects[v][key] = obj
			}
		}
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		s.pods[p.Namespace+"/"+p.Name] = podOf(p)
	}
	claims, err := client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	for _, c := range claims.Items {
		s.claims[c.Namespace+"/"+c.Name] = string(c.UID)
	}
	revisions, err := client.AppsV1().ControllerRevisions(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	for _, r := range revisions.Items {
		var data any
		if len(r.Data.Raw) > 0 {
			if err := json.Unmarshal(r.Data.Raw, &data); err != nil {
				return nil, fmt.Errorf("decoding the data of ControllerRevision %s/%s: %w", r.Namespace, r.Name, err)
			}
		}
		s.revisions[r.Namespace+"/"+r.Name] = revision{UID: string(r.UID), Revision: r.Revision, Data: data, Labels: r.Labels, Owners: r.OwnerReferences}
	}
	return s, nil
}

// count returns how many objects of kind the snapshot holds.
func (s *snapshot) count(kind string) int {
	n := 0
	for _, k := range s.listed {
		if k.Kind == kind {
			n++
		}
	}
	return n
}
