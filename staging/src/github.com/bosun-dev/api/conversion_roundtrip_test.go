package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1alpha1 "github.com/bosun-dev/api/policy/v1alpha1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
)

// These tests hold the conversion functions to their contract on fuzzed objects of every
// kind: a round trip through the other version gives back the object it started from,
// whatever the values of its carrier annotations and fields; a conversion never fails nor
// panics, never modifies its input, gives the same result every time, changes no metadata
// but annotations and carrier labels, and gives through the scheme what the typed function
// gives.

// fuzzedObjectsPerDirection is how many objects each kind is fuzzed with in each direction
// by default: 2,000 take about 25 s for all kinds on two cores, a share of CI's hour. The
// seeds are fixed, so a run repeats the last; objectsEnv asks for more (100,000 is a long
// night's check), and `make fuzz` explores further from the corpus.
const fuzzedObjectsPerDirection = 2000

// objectsEnv, set to a number, overrides fuzzedObjectsPerDirection.
const objectsEnv = "BOSUN_CONVERSION_OBJECTS"

const (
	alphaReservedKey = appsv1alpha1.V1alpha1ConversionAnnotation
	betaReservedKey  = appsv1alpha1.V1beta1ConversionAnnotation
)

// conversionKind is one kind as these tests drive it: typed conversion functions and the
// injection of its carriers, which random values would hardly ever hit.
type conversionKind struct {
	name        string
	newAlpha    func() runtime.Object
	newBeta     func() runtime.Object
	up          func(in, out runtime.Object)
	down        func(in, out runtime.Object)
	carryAlpha  func(r *rand.Rand, obj runtime.Object)
	carryBeta   func(r *rand.Rand, obj runtime.Object)
	recordPaths []string // item paths the kind's reserved annotations may name
	// carrierLabels are the labels that carry fields: the only labels a conversion may
	// change.
	carrierLabels []string
	// alphaRecords says that some v1alpha1 objects cannot come back from v1beta1 without
	// a record, so that fuzzing must produce records in that direction too.
	alphaRecords bool
}

func conversionKinds() []conversionKind {
	return []conversionKind{{
		name:     "DaemonSet",
		newAlpha: func() runtime.Object { return &appsv1alpha1.DaemonSet{} },
		newBeta:  func() runtime.Object { return &appsv1beta1.DaemonSet{} },
		up: func(in, out runtime.Object) {
			appsv1alpha1.ConvertDaemonSetToV1beta1(in.(*appsv1alpha1.DaemonSet), out.(*appsv1beta1.DaemonSet))
		},
		down: func(in, out runtime.Object) {
			appsv1alpha1.ConvertDaemonSetFromV1beta1(in.(*appsv1beta1.DaemonSet), out.(*appsv1alpha1.DaemonSet))
		},
		carryAlpha: func(r *rand.Rand, obj runtime.Object) {
			ds := obj.(*appsv1alpha1.DaemonSet)
			maybeCarrier(r, &ds.ObjectMeta, appsv1alpha1.ProgressiveCreatePodAnnotation)
			if r.Intn(3) == 0 {
				if ds.Spec.UpdateStrategy.RollingUpdate == nil {
					ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{}
				}
				ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1alpha1.RollingUpdateType(pick(r,
					"", "Standard", "InPlaceIfPossible", "Surging", "Surging", "surging", randomString(r)))
			}
		},
		carryBeta: func(r *rand.Rand, obj runtime.Object) {
			ds := obj.(*appsv1beta1.DaemonSet)
			maybeCarrier(r, &ds.ObjectMeta, appsv1alpha1.ProgressiveCreatePodAnnotation)
			switch r.Intn(4) {
			case 0:
				ds.Spec.ScaleStrategy = nil
			case 1:
				ds.Spec.ScaleStrategy = &appsv1beta1.DaemonSetScaleStrategy{}
			default:
				ds.Spec.ScaleStrategy = &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
			}
			if r.Intn(3) == 0 {
				if ds.Spec.UpdateStrategy.RollingUpdate == nil {
					ds.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{}
				}
				// v1beta1 rejects Surging, but an object holding it still decodes.
				ds.Spec.UpdateStrategy.RollingUpdate.Type = appsv1beta1.RollingUpdateType(pick(r,
					"", "Standard", "InPlaceIfPossible", "Surging", randomString(r)))
			}
		},
		recordPaths: []string{
			"metadata.annotations[" + appsv1alpha1.ProgressiveCreatePodAnnotation + "]",
			"spec.scaleStrategy", "spec.updateStrategy.rollingUpdate",
		},
		// The Surging rolling update.
		alphaRecords: true,
	}, {
		name:     "CloneSet",
		newAlpha: func() runtime.Object { return &appsv1alpha1.CloneSet{} },
		newBeta:  func() runtime.Object { return &appsv1beta1.CloneSet{} },
		up: func(in, out runtime.Object) {
			appsv1alpha1.ConvertCloneSetToV1beta1(in.(*appsv1alpha1.CloneSet), out.(*appsv1beta1.CloneSet))
		},
		down: func(in, out runtime.Object) {
			appsv1alpha1.ConvertCloneSetFromV1beta1(in.(*appsv1beta1.CloneSet), out.(*appsv1alpha1.CloneSet))
		},
		carryAlpha:    carryAlphaCloneSet,
		carryBeta:     carryBetaCloneSet,
		recordPaths:   cloneSetRecordPaths(),
		carrierLabels: []string{appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey},
		// Pre-download settings in v1alpha1's spec come back as annotations.
		alphaRecords: true,
	}, {
		name:     "PodUnavailableBudget",
		newAlpha: func() runtime.Object { return &policyv1alpha1.PodUnavailableBudget{} },
		newBeta:  func() runtime.Object { return &policyv1beta1.PodUnavailableBudget{} },
		up: func(in, out runtime.Object) {
			policyv1alpha1.ConvertPodUnavailableBudgetToV1beta1(
				in.(*policyv1alpha1.PodUnavailableBudget), out.(*policyv1beta1.PodUnavailableBudget))
		},
		down: func(in, out runtime.Object) {
			policyv1alpha1.ConvertPodUnavailableBudgetFromV1beta1(
				in.(*policyv1beta1.PodUnavailableBudget), out.(*policyv1alpha1.PodUnavailableBudget))
		},
		carryAlpha: func(r *rand.Rand, obj runtime.Object) {
			pub := obj.(*policyv1alpha1.PodUnavailableBudget)
			maybeCarrier(r, &pub.ObjectMeta, policyv1alpha1.PubProtectOperationAnnotation)
			maybeCarrier(r, &pub.ObjectMeta, policyv1alpha1.PubProtectTotalReplicasAnnotation)
		},
		carryBeta: func(r *rand.Rand, obj runtime.Object) {
			pub := obj.(*policyv1beta1.PodUnavailableBudget)
			maybeCarrier(r, &pub.ObjectMeta, policyv1alpha1.PubProtectOperationAnnotation)
			maybeCarrier(r, &pub.ObjectMeta, policyv1alpha1.PubProtectTotalReplicasAnnotation)
			if r.Intn(2) == 0 {
				pub.Spec.IgnoredPodSelector = nil
			}
			if r.Intn(3) > 0 {
				pub.Spec.ProtectOperations = nil
				if n := r.Intn(5); n > 0 || r.Intn(2) == 0 {
					pub.Spec.ProtectOperations = make([]policyv1beta1.PubOperation, n)
					for i := range pub.Spec.ProtectOperations {
						pub.Spec.ProtectOperations[i] = policyv1beta1.PubOperation(pick(r,
							"DELETE", "UPDATE", "EVICT", "RESIZE", "", "DELETE,EVICT", " EVICT", randomString(r)))
					}
				}
			}
			if r.Intn(3) > 0 {
				pub.Spec.ProtectTotalReplicas = nil
				if r.Intn(3) > 0 {
					n := int32(pick(r, 0, 1, 3, -1, 2147483647, -2147483648, int(r.Int31())))
					pub.Spec.ProtectTotalReplicas = &n
				}
			}
		},
		recordPaths: []string{
			"metadata.annotations[" + policyv1alpha1.PubProtectOperationAnnotation + "]",
			"metadata.annotations[" + policyv1alpha1.PubProtectTotalReplicasAnnotation + "]",
			"spec.protectOperations", "spec.protectTotalReplicas", "spec.ignoredPodSelector",
		},
	}, {
		name:     "ContainerRecreateRequest",
		newAlpha: func() runtime.Object { return &appsv1alpha1.ContainerRecreateRequest{} },
		newBeta:  func() runtime.Object { return &appsv1beta1.ContainerRecreateRequest{} },
		up: func(in, out runtime.Object) {
			appsv1alpha1.ConvertContainerRecreateRequestToV1beta1(
				in.(*appsv1alpha1.ContainerRecreateRequest), out.(*appsv1beta1.ContainerRecreateRequest))
		},
		down: func(in, out runtime.Object) {
			appsv1alpha1.ConvertContainerRecreateRequestFromV1beta1(
				in.(*appsv1beta1.ContainerRecreateRequest), out.(*appsv1alpha1.ContainerRecreateRequest))
		},
		carryAlpha: func(r *rand.Rand, obj runtime.Object) {
			crr := obj.(*appsv1alpha1.ContainerRecreateRequest)
			maybeCarrier(r, &crr.ObjectMeta, appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey)
			maybeCarrier(r, &crr.ObjectMeta, appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
		},
		carryBeta: func(r *rand.Rand, obj runtime.Object) {
			crr := obj.(*appsv1beta1.ContainerRecreateRequest)
			maybeCarrier(r, &crr.ObjectMeta, appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey)
			maybeCarrier(r, &crr.ObjectMeta, appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
			if r.Intn(2) == 0 {
				crr.Status.ContainerStatusSnapshot = nil
				for i := r.Intn(4); i > 0; i-- {
					crr.Status.ContainerStatusSnapshot = append(crr.Status.ContainerStatusSnapshot,
						appsv1beta1.ContainerRecreateRequestSyncContainerStatus{
							Name: pick(r, "app", "", randomString(r)), Ready: r.Intn(2) == 0,
							RestartCount: int32(pick(r, 0, 1, -1, int(r.Int31()))),
							ContainerID:  pick(r, "", "containerd://abc", randomString(r)),
						})
				}
			}
			if r.Intn(3) > 0 {
				crr.Status.Conditions = nil
				for i := r.Intn(4); i > 0; i-- {
					c := metav1.Condition{
						Type:               pick(r, "PreRecreateGrace", "PreRecreateGrace", "Other", randomString(r)),
						Status:             metav1.ConditionStatus(pick(r, "True", "True", "False", "Unknown")),
						LastTransitionTime: metav1.Unix(r.Int63n(1<<34), 0),
						Reason:             pick(r, "PreRecreateGrace", "PreRecreateGrace", "Other", ""),
						Message:            pick(r, "", "", randomString(r)),
						ObservedGeneration: int64(pick(r, 0, 0, 1, int(r.Int63()))),
					}
					crr.Status.Conditions = append(crr.Status.Conditions, c)
					if r.Intn(2) == 0 {
						// The carrier of this condition, written in another zone or verbatim.
						t := c.LastTransitionTime.Time
						crr.Annotations = setAnnotation(crr.Annotations, appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey,
							pick(r, t.UTC().Format(time.RFC3339), t.In(time.FixedZone("", 5*3600+1800)).Format(time.RFC3339)))
					}
				}
			}
		},
		recordPaths: []string{
			"metadata.annotations[" + appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey + "]",
			"metadata.annotations[" + appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey + "]",
			"status.containerStatusSnapshot", "status.conditions",
		},
	}, {
		name:     "NodeImage",
		newAlpha: func() runtime.Object { return &appsv1alpha1.NodeImage{} },
		newBeta:  func() runtime.Object { return &appsv1beta1.NodeImage{} },
		up: func(in, out runtime.Object) {
			appsv1alpha1.ConvertNodeImageToV1beta1(in.(*appsv1alpha1.NodeImage), out.(*appsv1beta1.NodeImage))
		},
		down: func(in, out runtime.Object) {
			appsv1alpha1.ConvertNodeImageFromV1beta1(in.(*appsv1beta1.NodeImage), out.(*appsv1alpha1.NodeImage))
		},
	}, {
		name:     "ImagePullJob",
		newAlpha: func() runtime.Object { return &appsv1alpha1.ImagePullJob{} },
		newBeta:  func() runtime.Object { return &appsv1beta1.ImagePullJob{} },
		up: func(in, out runtime.Object) {
			appsv1alpha1.ConvertImagePullJobToV1beta1(in.(*appsv1alpha1.ImagePullJob), out.(*appsv1beta1.ImagePullJob))
		},
		down: func(in, out runtime.Object) {
			appsv1alpha1.ConvertImagePullJobFromV1beta1(in.(*appsv1beta1.ImagePullJob), out.(*appsv1alpha1.ImagePullJob))
		},
	}, {
		name:     "ImageListPullJob",
		newAlpha: func() runtime.Object { return &appsv1alpha1.ImageListPullJob{} },
		newBeta:  func() runtime.Object { return &appsv1beta1.ImageListPullJob{} },
		up: func(in, out runtime.Object) {
			appsv1alpha1.ConvertImageListPullJobToV1beta1(
				in.(*appsv1alpha1.ImageListPullJob), out.(*appsv1beta1.ImageListPullJob))
		},
		down: func(in, out runtime.Object) {
			appsv1alpha1.ConvertImageListPullJobFromV1beta1(
				in.(*appsv1beta1.ImageListPullJob), out.(*appsv1alpha1.ImageListPullJob))
		},
	}}
}

// carrierValues are values that carrier annotations are given besides random strings:
// valid and invalid forms of every carrier.
var carrierValues = []string{
	"true", "TRUE", "false", "", " ",
	"DELETE", "DELETE,EVICT", "DELETE,,EVICT", ",", "DELETE, EVICT", "UPDATE,RESIZE,DELETE,EVICT",
	"3", " 3", "03", "+3", "0", "-1", "abc", "2147483647", "2147483648", "1e3",
	"2024-05-01T10:00:00Z", "2024-05-01T12:00:00+02:00", "2024-05-01T10:00:00.25Z", "2024-13-01T10:00:00Z",
	"2024-05-01 10:00:00", "0001-01-01T00:00:00Z", "garbage-time",
	"[]", " [ ] ", "null", "[", "{}", "[1]", `[{"name":1}]`, `[{"name":"app"}]`,
	`[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://0123"}]`,
	`[ {"restartCount":1, "name":"b", "ready":false} , {"name":"c","ready":true,"restartCount":0,"containerID":""}]`,
}

// maybeCarrier gives meta the carrier annotation key, with a value of carrierValues or a
// random one, or removes it.
func maybeCarrier(r *rand.Rand, meta *metav1.ObjectMeta, key string) {
	switch r.Intn(6) {
	case 0, 1:
		delete(meta.Annotations, key)
	case 2:
		meta.Annotations = setAnnotation(meta.Annotations, key, randomString(r))
	default:
		meta.Annotations = setAnnotation(meta.Annotations, key, pick(r, carrierValues...))
	}
}

func setAnnotation(annotations map[string]string, key, value string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	return annotations
}

func pick[T any](r *rand.Rand, values ...T) T {
	return values[r.Intn(len(values))]
}

func randomString(r *rand.Rand) string {
	const alphabet = "abcXYZ019 ,:-+.[]{}\"\\éü漢"
	runes := []rune(alphabet)
	var b strings.Builder
	for i := r.Intn(12); i > 0; i-- {
		b.WriteRune(runes[r.Intn(len(runes))])
	}
	return b.String()
}

func newConversionScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme,
		policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatalf("adding types to scheme: %v", err)
		}
	}
	return scheme
}

// seedFor gives every kind and direction its own fixed random sequence, so that a failure
// reproduces.
func seedFor(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64() >> 1)
}

func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

// fuzzed fills a new object of version newObj with random values, without the reserved
// annotations unless withReserved, and then gives it random carriers.
type fuzzSource struct {
	fill func(any)
	r    *rand.Rand
}

func newFuzzSource(t *testing.T, scheme *runtime.Scheme, seed int64) fuzzSource {
	t.Helper()
	codecs := serializer.NewCodecFactory(scheme)
	return fuzzSource{
		fill: fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), codecs).Fill,
		r:    rand.New(rand.NewSource(seed + 1)),
	}
}

func (f fuzzSource) object(newObj func() runtime.Object, carry func(*rand.Rand, runtime.Object)) runtime.Object {
	obj := newObj()
	f.fill(obj)
	meta := objectMeta(obj)
	delete(meta.Annotations, alphaReservedKey)
	delete(meta.Annotations, betaReservedKey)
	if carry != nil {
		carry(f.r, obj)
	}
	return obj
}

func objectCount(t *testing.T) int {
	if v := os.Getenv(objectsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number of objects", objectsEnv, v)
		}
		return n
	}
	if testing.Short() {
		return fuzzedObjectsPerDirection / 20
	}
	return fuzzedObjectsPerDirection
}

// TestConversionRoundTrip checks down(up(a)) ≡ a and up(down(b)) ≡ b on fuzzed objects of
// every kind without reserved annotations, and the contract of each conversion on the way.
func TestConversionRoundTrip(t *testing.T) {
	scheme := newConversionScheme(t)
	n := objectCount(t)
	for _, k := range conversionKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Run("v1alpha1", func(t *testing.T) {
				src := newFuzzSource(t, scheme, seedFor(k.name, "v1alpha1"))
				c := roundTripChecker{t: t, scheme: scheme, there: k.up, back: k.down, newThere: k.newBeta, newBack: k.newAlpha,
					consumed: betaReservedKey, produced: alphaReservedKey, carrierLabels: k.carrierLabels}
				recorded := 0
				for i := 0; i < n && !t.Failed(); i++ {
					if c.check(src.object(k.newAlpha, k.carryAlpha)) {
						recorded++
					}
				}
				t.Logf("%d fuzzed v1alpha1 %s objects, %d of them converted with records: down(up(a)) ≡ a for every one",
					n, k.name, recorded)
				if k.alphaRecords && recorded == 0 {
					t.Errorf("no fuzzed v1alpha1 %s needed a record: the carriers were not exercised", k.name)
				}
			})
			t.Run("v1beta1", func(t *testing.T) {
				src := newFuzzSource(t, scheme, seedFor(k.name, "v1beta1"))
				c := roundTripChecker{t: t, scheme: scheme, there: k.down, back: k.up, newThere: k.newAlpha, newBack: k.newBeta,
					consumed: alphaReservedKey, produced: betaReservedKey, carrierLabels: k.carrierLabels}
				recorded := 0
				for i := 0; i < n && !t.Failed(); i++ {
					if c.check(src.object(k.newBeta, k.carryBeta)) {
						recorded++
					}
				}
				t.Logf("%d fuzzed v1beta1 %s objects, %d of them converted with records: up(down(b)) ≡ b for every one",
					n, k.name, recorded)
				if k.recordPaths != nil && recorded == 0 {
					t.Errorf("no fuzzed v1beta1 %s needed a record: the carriers were not exercised", k.name)
				}
			})
		})
	}
}

// roundTripChecker converts objects of one version to the other one and back.
type roundTripChecker struct {
	t                 *testing.T
	scheme            *runtime.Scheme
	there, back       func(in, out runtime.Object)
	newThere, newBack func() runtime.Object
	// consumed is the reserved annotation that conversion "there" reads, produced the one
	// it writes.
	consumed, produced string
	// carrierLabels are the labels a conversion may change.
	carrierLabels []string
}

// check converts orig there and back, and reports whether the conversion there wrote
// records.
func (c roundTripChecker) check(orig runtime.Object) (recorded bool) {
	t := c.t
	t.Helper()
	in := orig.DeepCopyObject()

	converted := c.convert(in, c.there, c.newThere)
	if _, ok := objectMeta(converted).Annotations[c.consumed]; ok {
		t.Errorf("the conversion of\n%s\nkept the reserved annotation %s", dump(orig), c.consumed)
	}
	_, recorded = objectMeta(converted).Annotations[c.produced]
	back := c.convert(converted, c.back, c.newBack)
	if !apiequality.Semantic.DeepEqual(back, orig) {
		t.Errorf("round trip changed the object\noriginal:  %s\nconverted: %s\nback:      %s",
			dump(orig), dump(converted), dump(back))
		return recorded
	}

	// Through the wire, as the API server sees it: the converted object is JSON there.
	wire := c.newThere()
	decodeInto(t, encode(t, converted), wire)
	if back := c.convert(wire, c.back, c.newBack); !sameJSONDocument(encode(t, back), encode(t, orig)) {
		t.Errorf("round trip through JSON changed the object\noriginal:  %s\nconverted: %s\nback:      %s",
			dump(orig), dump(converted), dump(back))
	}
	return recorded
}

// convert runs a conversion function on in and checks its contract: in is left as it
// was, a second run gives the same result, the scheme gives the same result, and no
// metadata but annotations and carrier labels changed.
func (c roundTripChecker) convert(in runtime.Object, fn func(in, out runtime.Object), newOut func() runtime.Object) runtime.Object {
	t := c.t
	t.Helper()
	before := in.DeepCopyObject()
	out := newOut()
	fn(in, out)
	if !reflect.DeepEqual(in, before) {
		t.Fatalf("converting modified its input\nbefore: %s\nafter:  %s", dump(before), dump(in))
	}
	again := newOut()
	fn(in, again)
	if !reflect.DeepEqual(out, again) {
		t.Fatalf("converting twice gave two results\nfirst:  %s\nsecond: %s", dump(out), dump(again))
	}
	viaScheme := newOut()
	if err := c.scheme.Convert(in, viaScheme, nil); err != nil {
		t.Fatalf("scheme conversion of %T into %T failed: %v", in, viaScheme, err)
	}
	if !reflect.DeepEqual(out, viaScheme) {
		t.Fatalf("the scheme converted differently\ntyped:  %s\nscheme: %s", dump(out), dump(viaScheme))
	}
	inMeta, outMeta := *objectMeta(in), *objectMeta(out)
	inMeta.Annotations, outMeta.Annotations = nil, nil
	inMeta.Labels, outMeta.Labels = withoutKeys(inMeta.Labels, c.carrierLabels), withoutKeys(outMeta.Labels, c.carrierLabels)
	if !reflect.DeepEqual(inMeta, outMeta) {
		t.Fatalf("converting changed metadata other than annotations and carrier labels\nin:  %#v\nout: %#v", inMeta, outMeta)
	}
	return out
}

// TestConversionTotality converts fuzzed objects of every kind that carry reserved
// annotations, valid, stale and broken ones, and checks that every conversion succeeds
// with the contract of any conversion, consumes the reserved annotation it reads and
// writes only a well-formed one.
func TestConversionTotality(t *testing.T) {
	scheme := newConversionScheme(t)
	n := objectCount(t)
	for _, k := range conversionKinds() {
		if k.recordPaths == nil {
			continue // no reserved annotations: the conversion copies every field
		}
		t.Run(k.name, func(t *testing.T) {
			for _, dir := range []struct {
				name, consumed, produced string
				newIn, newOut            func() runtime.Object
				carry                    func(*rand.Rand, runtime.Object)
				convert                  func(in, out runtime.Object)
			}{
				{"v1alpha1", betaReservedKey, alphaReservedKey, k.newAlpha, k.newBeta, k.carryAlpha, k.up},
				{"v1beta1", alphaReservedKey, betaReservedKey, k.newBeta, k.newAlpha, k.carryBeta, k.down},
			} {
				t.Run(dir.name, func(t *testing.T) {
					src := newFuzzSource(t, scheme, seedFor(k.name, dir.name, "reserved"))
					c := roundTripChecker{t: t, scheme: scheme, carrierLabels: k.carrierLabels}
					for i := 0; i < n && !t.Failed(); i++ {
						in := src.object(dir.newIn, dir.carry)
						meta := objectMeta(in)
						for _, key := range []string{dir.consumed, dir.produced} {
							if src.r.Intn(3) > 0 {
								meta.Annotations = setAnnotation(meta.Annotations, key, randomReservedValue(src.r, k.recordPaths))
							}
						}
						out := c.convert(in, dir.convert, dir.newOut)
						annotations := objectMeta(out).Annotations
						if _, ok := annotations[dir.consumed]; ok {
							t.Errorf("the conversion of\n%s\nkept the reserved annotation %s", dump(in), dir.consumed)
						}
						if v, ok := annotations[dir.produced]; ok {
							var records map[string]struct {
								Restore json.RawMessage            `json:"restore"`
								Guard   map[string]json.RawMessage `json:"guard"`
							}
							if err := json.Unmarshal([]byte(v), &records); err != nil || len(records) == 0 {
								t.Errorf("the conversion wrote the malformed reserved annotation %s: %q", dir.produced, v)
							}
							for path, r := range records {
								if r.Restore == nil || r.Guard == nil {
									t.Errorf("the conversion wrote the malformed record %q: %q", path, v)
								}
							}
						}
					}
					t.Logf("%d fuzzed %s %s objects with reserved annotations converted", n, dir.name, k.name)
				})
			}
		})
	}
}

// randomReservedValue returns a reserved annotation value: a record set over the kind's
// item paths and unknown ones, with valid and invalid restore values and guards, or a
// broken document.
func randomReservedValue(r *rand.Rand, paths []string) string {
	jsonValues := []string{`null`, `"true"`, `"3"`, `""`, `true`, `3`, `{}`, `[]`, `{"partitionedScaling":true}`,
		`["DELETE",""]`, `{"matchLabels":{"a":"b"}}`, `{"rollingUpdateType":"Surging"}`,
		`[{"name":"app","ready":true,"restartCount":1}]`,
		`[{"type":"PreRecreateGrace","status":"True","lastTransitionTime":"2024-05-01T10:00:00Z","reason":"PreRecreateGrace","message":""}]`,
		`[{"type":"X","lastTransitionTime":"garbage"}]`, `{"maxSurge":"x%"}`,
		`{"type":"ReCreate"}`, `{"rollingUpdate":{"podUpdatePolicy":"InPlaceOnly","partition":"50%"}}`}
	switch r.Intn(8) {
	case 0:
		return pick(r, "", "abc", "null", "[]", "{", `{"a":1}`, `{"a":{"restore":null}}`, `{"a":{"guard":{}}}`,
			`{"a":{"restore":null,"guard":null}}`, `{"a":{"restore":null,"guard":[]}}`, randomString(r))
	}
	candidates := append(append([]string(nil), paths...), "spec.unknown", "metadata.annotations[other]")
	var records []string
	for i := r.Intn(4); i >= 0; i-- {
		var guard []string
		for j := r.Intn(3); j > 0; j-- {
			guard = append(guard, fmt.Sprintf("%q:%s", pick(r, candidates...), pick(r, jsonValues...)))
		}
		records = append(records, fmt.Sprintf(`%q:{"restore":%s,"guard":{%s}}`,
			pick(r, candidates...), pick(r, jsonValues...), strings.Join(guard, ",")))
	}
	return "{" + strings.Join(records, ",") + "}"
}

// TestConversionOfLists converts lists through the scheme: every item as the typed
// function converts it.
func TestConversionOfLists(t *testing.T) {
	scheme := newConversionScheme(t)
	src := newFuzzSource(t, scheme, seedFor("lists"))
	k := conversionKinds()[0]
	alpha := &appsv1alpha1.DaemonSetList{}
	for i := 0; i < 20; i++ {
		alpha.Items = append(alpha.Items, *src.object(k.newAlpha, k.carryAlpha).(*appsv1alpha1.DaemonSet))
	}
	beta := &appsv1beta1.DaemonSetList{}
	if err := scheme.Convert(alpha, beta, nil); err != nil {
		t.Fatalf("converting a DaemonSetList: %v", err)
	}
	if len(beta.Items) != len(alpha.Items) {
		t.Fatalf("the list has %d items, want %d", len(beta.Items), len(alpha.Items))
	}
	for i := range alpha.Items {
		var want appsv1beta1.DaemonSet
		appsv1alpha1.ConvertDaemonSetToV1beta1(&alpha.Items[i], &want)
		if !reflect.DeepEqual(beta.Items[i], want) {
			t.Errorf("item %d differs from its typed conversion\nlist:  %s\ntyped: %s", i, dump(&beta.Items[i]), dump(&want))
		}
	}
	back := &appsv1alpha1.DaemonSetList{}
	if err := scheme.Convert(beta, back, nil); err != nil {
		t.Fatalf("converting a DaemonSetList back: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(back, alpha) {
		t.Errorf("the list's round trip changed it")
	}
}

func encode(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding %T: %v", obj, err)
	}
	return data
}

func decodeInto(t *testing.T, data []byte, obj runtime.Object) {
	t.Helper()
	if err := json.Unmarshal(data, obj); err != nil {
		t.Fatalf("decoding %T: %v", obj, err)
	}
}

func sameJSONDocument(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func dump(obj runtime.Object) string {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Sprintf("%#v", obj)
	}
	return string(data)
}
