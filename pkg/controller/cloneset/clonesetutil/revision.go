package clonesetutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/dump"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"

	"github.com/bosun-dev/bosun/pkg/controller/hash"
	"github.com/bosun-dev/bosun/pkg/controller/kruisepod"
)

// ControllerKind is the kind of the objects the CloneSet controller manages, in the version
// it writes owner references with.
var ControllerKind = appsv1beta1.SchemeGroupVersion.WithKind("CloneSet")

// maxRevisionNamePrefix is how much of a CloneSet's name a revision name keeps, so that the
// name with its hash stays within 253 characters.
const maxRevisionNamePrefix = 223

// RevisionName returns the name of the revision of the CloneSet csName whose hash is hash.
func RevisionName(csName, hash string) string {
	if len(csName) > maxRevisionNamePrefix {
		csName = csName[:maxRevisionNamePrefix]
	}
	return csName + "-" + hash
}

// RevisionNameFor returns the name a revision holding data gets when it is created with the
// collision count count.
func RevisionNameFor(csName string, data []byte, count int32) string {
	return RevisionName(csName, hash.ControllerRevisionHash(data, &count))
}

// ShortHash returns the hash part of a revision name: what follows its last "-" (all of it
// when it has none). Pods carry it as pod-template-hash.
func ShortHash(revisionName string) string {
	return revisionName[strings.LastIndex(revisionName, "-")+1:]
}

// AtRevision reports whether obj's controller-revision-hash label names the revision
// revisionName: the full name, or, as the CloneSetShortHash gate writes it, its hash alone.
func AtRevision(obj metav1.Object, revisionName string) bool {
	label := obj.GetLabels()[appsv1beta1.ControllerRevisionHashLabelKey]
	return label == revisionName || ShortHash(label) == ShortHash(revisionName)
}

// RevisionHashLabelKey is the label a CloneSet's ControllerRevisions keep their hash in:
// upstream's revision history's key, which OpenKruise's CloneSet uses (the DaemonSets' use
// controller-revision-hash, the key their pods carry).
const RevisionHashLabelKey = "controller.kubernetes.io/hash"

// NewRevision returns the ControllerRevision recording cs's template, numbered number and
// named after its data and the collision count: data {"spec":{"template":…}} as
// kruisepod.RevisionData writes it, the template's labels plus the hash label, cs's
// annotations (but for the reserved ones of version conversion, which describe the CloneSet
// in another version) plus the hash of its volume claim templates, and a controller
// reference to cs. Every byte of it is what OpenKruise writes for the same CloneSet, so a
// controller taking over from the other finds its revisions and replaces nothing.
func NewRevision(cs *appsv1beta1.CloneSet, number int64, collisionCount int32) (*appsv1.ControllerRevision, error) {
	data, err := kruisepod.RevisionData(&cs.Spec.Template)
	if err != nil {
		return nil, err
	}
	revisionHash := hash.ControllerRevisionHash(data, &collisionCount)
	labels := maps.Clone(cs.Spec.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[RevisionHashLabelKey] = revisionHash
	annotations := maps.Clone(cs.Annotations)
	maps.DeleteFunc(annotations, func(key, _ string) bool { return strings.HasPrefix(key, appsv1beta1.ConversionAnnotationPrefix) })
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[appsv1beta1.CloneSetVolumeClaimTemplateHashAnnotationKey] = VolumeClaimTemplatesHash(cs.Spec.VolumeClaimTemplates)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            RevisionName(cs.Name, revisionHash),
			Namespace:       cs.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, ControllerKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}, nil
}

// EqualRevisions reports whether two revisions record the same template: byte-equal data,
// unless both hash labels read as 32-bit integers and differ. The second rule is upstream's
// and matters only for hashes written before hashes were safe-encoded.
func EqualRevisions(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	ha, errA := strconv.ParseInt(a.Labels[RevisionHashLabelKey], 10, 32)
	hb, errB := strconv.ParseInt(b.Labels[RevisionHashLabelKey], 10, 32)
	if errA == nil && errB == nil && uint32(ha) != uint32(hb) {
		return false
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw)
}

// SortRevisions sorts revisions oldest first: by revision number, then creation time, then
// name.
func SortRevisions(revisions []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revisions, func(a, b *appsv1.ControllerRevision) int {
		switch {
		case a.Revision != b.Revision:
			if a.Revision < b.Revision {
				return -1
			}
			return 1
		case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// NextRevisionNumber returns one more than the number of the last of sorted revisions, 1
// when there are none.
func NextRevisionNumber(sorted []*appsv1.ControllerRevision) int64 {
	if len(sorted) == 0 {
		return 1
	}
	return sorted[len(sorted)-1].Revision + 1
}

// vctForHash is a volume claim template as it enters the hash: name and spec only, encoded
// the way the Kubernetes 1.32 libraries OpenKruise 1.9 is built with encode it, a zero
// creationTimestamp as null and an empty status as {}. Encoding a PersistentVolumeClaim with
// today's libraries leaves the timestamp out, which would change every hash.
type vctForHash struct {
	Metadata struct {
		Name              string  `json:"name,omitempty"`
		CreationTimestamp *string `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec   corev1.PersistentVolumeClaimSpec   `json:"spec"`
	Status corev1.PersistentVolumeClaimStatus `json:"status"`
}

// VolumeClaimTemplatesHash returns the hash of a CloneSet's volume claim templates that its
// revisions carry in the kruise.io/cloneset-volumeclaimtemplate-hash annotation: "" when
// there are none, else the decimal FNV-1a (32 bit) of the dump (k8s.io/utils/dump.ForHash)
// of the JSON of the templates' names and specs, sorted by name.
func VolumeClaimTemplatesHash(templates []corev1.PersistentVolumeClaim) string {
	if len(templates) == 0 {
		return ""
	}
	encoded := make([]vctForHash, len(templates))
	for i := range templates {
		encoded[i].Metadata.Name = templates[i].Name
		encoded[i].Spec = templates[i].Spec
		encoded[i].Status = corev1.PersistentVolumeClaimStatus{}
	}
	slices.SortStableFunc(encoded, func(a, b vctForHash) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	return strconv.FormatUint(uint64(hashOfJSON(encoded)), 10)
}

// hashOfJSON is the FNV-1a hash of the dump of v's JSON bytes.
func hashOfJSON(v any) uint32 {
	raw, err := json.Marshal(v)
	if err != nil {
		// Claim templates always encode; a failure would be a programming error.
		panic(fmt.Sprintf("encoding volume claim templates: %v", err))
	}
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%v", dump.ForHash(raw))
	return h.Sum32()
}
