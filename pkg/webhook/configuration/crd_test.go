package configuration

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
)

var testServiceConfig = ClientConfig{Service: &ServiceReference{Namespace: "bosun-system", Name: "bosun-webhook"}}

// kruiseClientConfig is where OpenKruise's manifests send conversions.
var kruiseClientConfig = map[string]any{
	"service":  map[string]any{"namespace": "kruise-system", "name": "kruise-webhook-service", "path": "/convert"},
	"caBundle": base64.StdEncoding.EncodeToString(otherCA),
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// urlClientConfig is bosun's clientConfig in URL mode, as the writer leaves it.
func urlClientConfig(ca []byte) map[string]any {
	return map[string]any{"url": "https://127.0.0.1:9876/convert", "caBundle": b64(ca)}
}

// unmanaged removes bosun's label.
func unmanaged(obj map[string]any) {
	unstructured.RemoveNestedField(obj, "metadata", "labels", managedByLabel)
}

// withoutCABundle returns a copy of crd's content without the caBundle and the
// resourceVersion, the two fields an injection changes, as JSON.
func withoutCABundle(t *testing.T, crd *unstructured.Unstructured) string {
	t.Helper()
	c := crd.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	data, err := json.Marshal(c.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// assertEvents fails the test unless the events recorded since the last call are one per
// entry of want, each of type Warning with the reason and holding every fragment.
func (f *fixture) assertEvents(want ...[]string) {
	f.t.Helper()
	f.checkEvents(f.events(), want)
}

// awaitEvents is assertEvents for a running writer, which records an event a moment after
// the write it tells of: it waits until as many events as wanted have come.
func (f *fixture) awaitEvents(want ...[]string) {
	f.t.Helper()
	var got []string
	f.eventually(fmt.Sprintf("%d events", len(want)), func() bool {
		got = append(got, f.events()...)
		return len(got) >= len(want)
	})
	f.checkEvents(append(got, f.events()...), want)
}

func (f *fixture) checkEvents(got []string, want [][]string) {
	f.t.Helper()
	if len(got) != len(want) {
		f.t.Fatalf("events %q, want %d", got, len(want))
	}
	for i, fragments := range want {
		for _, fragment := range fragments {
			if !strings.Contains(got[i], fragment) {
				f.t.Errorf("event %q lacks %q", got[i], fragment)
			}
		}
	}
}

func TestCRDAbsentIsNothingToDo(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, testCA)
	for _, name := range ConversionCRDNames() {
		if err := f.syncCRD(name); err != nil {
			t.Errorf("sync %s: %v", name, err)
		}
	}
	f.assertNoCRDWrites()
	f.assertEvents()
	if problems := f.w.outcomes.problems(ConversionCRDNames()); len(problems) != 0 {
		t.Errorf("readiness problems %q, want none for absent CRDs", problems)
	}
}

func TestCRDInjectsTheCABundle(t *testing.T) {
	shipped := testCRD(daemonSetsCRD)
	f := newCRDFixture(t, testURLConfig, testCA, shipped)
	if err := f.syncCRD(daemonSetsCRD); err != nil {
		t.Fatal(err)
	}

	writes := f.crdWrites()
	if len(writes) != 1 || writes[0].GetVerb() != "update" || writes[0].GetSubresource() != "" {
		t.Fatalf("writes %v, want one update of the CRD", writes)
	}
	sent := writes[0].(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
	if sent.GetResourceVersion() != "7" {
		t.Errorf("update sent resourceVersion %q, want the cached object's 7", sent.GetResourceVersion())
	}
	if got := f.clientConfigOf(daemonSetsCRD); !reflect.DeepEqual(got, urlClientConfig(testCA)) {
		t.Errorf("clientConfig %v, want %v", got, urlClientConfig(testCA))
	}
	// Nothing but the caBundle changed, and no one is warned of an injection.
	if got, want := withoutCABundle(t, f.storedCRD(daemonSetsCRD)), withoutCABundle(t, shipped); got != want {
		t.Errorf("CRD changed beyond the caBundle:\n got %s\nwant %s", got, want)
	}
	f.assertEvents()

	// Rotation: the new CA, again without a warning.
	f.settleCRDs()
	f.markCRDWrites()
	f.ca.set(otherCA)
	if err := f.syncCRD(daemonSetsCRD); err != nil {
		t.Fatal(err)
	}
	if writes := f.crdWrites(); len(writes) != 1 {
		t.Fatalf("writes %v after rotation, want one update", writes)
	}
	if got := f.clientConfigOf(daemonSetsCRD); !reflect.DeepEqual(got, urlClientConfig(otherCA)) {
		t.Errorf("clientConfig %v after rotation, want %v", got, urlClientConfig(otherCA))
	}
	f.assertEvents()
}

func TestCRDWritesNothingWhenUpToDate(t *testing.T) {
	tests := []struct {
		name         string
		clientConfig ClientConfig
		live         map[string]any
	}{
		{name: "url", clientConfig: testURLConfig, live: urlClientConfig(testCA)},
		{name: "url, base with a trailing slash", clientConfig: ClientConfig{URL: "https://127.0.0.1:9876/"}, live: urlClientConfig(testCA)},
		{name: "service with its port", clientConfig: testServiceConfig, live: map[string]any{
			"service":  map[string]any{"namespace": "bosun-system", "name": "bosun-webhook", "path": "/convert", "port": int64(443)},
			"caBundle": b64(testCA),
		}},
		// As a manifest may have it: the API server's default port left out.
		{name: "service without its port", clientConfig: testServiceConfig, live: map[string]any{
			"service":  map[string]any{"namespace": "bosun-system", "name": "bosun-webhook", "path": "/convert"},
			"caBundle": b64(testCA),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crd := with(testCRD(daemonSetsCRD), func(o map[string]any) {
				setField(o, tc.live, "spec", "conversion", "webhook", "clientConfig")
			})
			f := newCRDFixture(t, tc.clientConfig, testCA, crd)
			for range 3 {
				if err := f.syncCRD(daemonSetsCRD); err != nil {
					t.Fatal(err)
				}
			}
			f.assertNoCRDWrites()
			f.assertEvents()
			if problems := f.w.outcomes.problems([]string{daemonSetsCRD}); len(problems) != 0 {
				t.Errorf("readiness problems %q", problems)
			}
		})
	}
}

// After its own write, the writer's next syncs find nothing to do.
func TestCRDWritesOnce(t *testing.T) {
	for _, clientConfig := range []ClientConfig{testURLConfig, testServiceConfig} {
		f := newCRDFixture(t, clientConfig, testCA, with(testCRD(crrsCRD), func(o map[string]any) {
			setField(o, map[string]any{"url": "https://elsewhere.example/convert"}, "spec", "conversion", "webhook", "clientConfig")
		}))
		if err := f.syncCRD(crrsCRD); err != nil {
			t.Fatal(err)
		}
		f.settleCRDs()
		f.markCRDWrites()
		for range 3 {
			if err := f.syncCRD(crrsCRD); err != nil {
				t.Fatal(err)
			}
		}
		f.assertNoCRDWrites()
	}
}

// In Service mode a manifest that renders the Service form gets only its caBundle: the
// writer keeps the form (the port left to the API server's default), so that re-applying
// the manifest changes nothing.
func TestCRDServiceModeInjectsOnlyTheCABundle(t *testing.T) {
	serviceForm := map[string]any{"namespace": "bosun-system", "name": "bosun-webhook", "path": "/convert"}
	crd := with(testCRD(pubsCRD), func(o map[string]any) {
		setField(o, map[string]any{"service": serviceForm}, "spec", "conversion", "webhook", "clientConfig")
	})
	f := newCRDFixture(t, testServiceConfig, testCA, crd)
	if err := f.syncCRD(pubsCRD); err != nil {
		t.Fatal(err)
	}
	if writes := f.crdWrites(); len(writes) != 1 {
		t.Fatalf("writes %v, want one update", writes)
	}
	want := map[string]any{"service": serviceForm, "caBundle": b64(testCA)}
	if got := f.clientConfigOf(pubsCRD); !reflect.DeepEqual(got, want) {
		t.Errorf("clientConfig %v, want %v", got, want)
	}
	f.assertEvents()
}

func TestCRDCorrectsTheClientConfig(t *testing.T) {
	bosunService := map[string]any{"namespace": "bosun-system", "name": "bosun-webhook", "path": "/convert", "port": int64(443)}
	tests := []struct {
		name         string
		clientConfig ClientConfig
		edit         func(o map[string]any)
		want         map[string]any
		wantVersions []any
		wantEvent    []string
	}{
		{
			name:         "wrong url",
			clientConfig: testURLConfig,
			edit: func(o map[string]any) {
				setField(o, map[string]any{"url": "https://kruise.example/convert", "caBundle": b64(testCA)}, "spec", "conversion", "webhook", "clientConfig")
			},
			want:      urlClientConfig(testCA),
			wantEvent: []string{"url https://kruise.example/convert replaced by url https://127.0.0.1:9876/convert"},
		},
		{
			name:         "wrong path",
			clientConfig: testURLConfig,
			edit: func(o map[string]any) {
				setField(o, "https://127.0.0.1:9876/convert-v1", "spec", "conversion", "webhook", "clientConfig", "url")
			},
			want:      urlClientConfig(testCA),
			wantEvent: []string{"url https://127.0.0.1:9876/convert-v1 replaced by url https://127.0.0.1:9876/convert"},
		},
		{
			name:         "OpenKruise's service, flags say url",
			clientConfig: testURLConfig,
			edit: func(o map[string]any) {
				setField(o, kruiseClientConfig, "spec", "conversion", "webhook", "clientConfig")
			},
			want:      urlClientConfig(testCA),
			wantEvent: []string{"service kruise-system/kruise-webhook-service port 443 path /convert replaced by url https://127.0.0.1:9876/convert"},
		},
		{
			name:         "url, flags say service",
			clientConfig: testServiceConfig,
			edit:         func(o map[string]any) {},
			want:         map[string]any{"service": bosunService, "caBundle": b64(testCA)},
			wantEvent:    []string{"url https://127.0.0.1:9876/convert replaced by service bosun-system/bosun-webhook port 443 path /convert"},
		},
		{
			name:         "service on another port",
			clientConfig: testServiceConfig,
			edit: func(o map[string]any) {
				setField(o, map[string]any{"service": map[string]any{"namespace": "bosun-system", "name": "bosun-webhook", "path": "/convert", "port": int64(8443)}},
					"spec", "conversion", "webhook", "clientConfig")
			},
			want:      map[string]any{"service": bosunService, "caBundle": b64(testCA)},
			wantEvent: []string{"port 8443 path /convert replaced by service bosun-system/bosun-webhook port 443"},
		},
		{
			name:         "review versions /convert does not speak first",
			clientConfig: testURLConfig,
			edit: func(o map[string]any) {
				setField(o, []any{"v1beta1", "v1"}, "spec", "conversion", "webhook", "conversionReviewVersions")
			},
			want:      urlClientConfig(testCA),
			wantEvent: []string{"conversionReviewVersions [v1beta1 v1] replaced by [v1]"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newCRDFixture(t, tc.clientConfig, testCA, with(testCRD(daemonSetsCRD), tc.edit))
			if err := f.syncCRD(daemonSetsCRD); err != nil {
				t.Fatal(err)
			}
			if writes := f.crdWrites(); len(writes) != 1 || writes[0].GetVerb() != "update" {
				t.Fatalf("writes %v, want one update", writes)
			}
			if got := f.clientConfigOf(daemonSetsCRD); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("clientConfig %v, want %v", got, tc.want)
			}
			versions, _, _ := unstructured.NestedSlice(f.storedCRD(daemonSetsCRD).Object, "spec", "conversion", "webhook", "conversionReviewVersions")
			if !reflect.DeepEqual(versions, []any{"v1"}) {
				t.Errorf("conversionReviewVersions %v, want [v1]", versions)
			}
			strategy, _, _ := unstructured.NestedString(f.storedCRD(daemonSetsCRD).Object, "spec", "conversion", "strategy")
			if strategy != "Webhook" {
				t.Errorf("strategy %q, want Webhook kept", strategy)
			}
			f.assertEvents(append([]string{"Warning", ReasonConversionClientConfigCorrected, daemonSetsCRD}, tc.wantEvent...))

			f.settleCRDs()
			f.markCRDWrites()
			if err := f.syncCRD(daemonSetsCRD); err != nil {
				t.Fatal(err)
			}
			f.assertNoCRDWrites()
			f.assertEvents()
		})
	}
}

// The writer owns spec.conversion.webhook only: the versions, their storage flags, the
// status and the metadata go back byte for byte as read.
func TestCRDUpdateTouchesOnlyTheConversionWebhook(t *testing.T) {
	original := with(testCRD(daemonSetsCRD), func(o map[string]any) {
		setField(o, map[string]any{"url": "https://kruise.example/convert"}, "spec", "conversion", "webhook", "clientConfig")
	})
	f := newCRDFixture(t, testURLConfig, testCA, original)
	if err := f.syncCRD(daemonSetsCRD); err != nil {
		t.Fatal(err)
	}
	writes := f.crdWrites()
	if len(writes) != 1 {
		t.Fatalf("writes %v, want one update", writes)
	}
	sent := writes[0].(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
	stored := f.storedCRD(daemonSetsCRD)

	strip := func(crd *unstructured.Unstructured) string {
		c := crd.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "spec", "conversion", "webhook")
		unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
		data, err := json.Marshal(c.Object)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	want := strip(original)
	if got := strip(sent); got != want {
		t.Errorf("update sent more than spec.conversion.webhook:\n got %s\nwant %s", got, want)
	}
	if got := strip(stored); got != want {
		t.Errorf("stored CRD changed beyond spec.conversion.webhook:\n got %s\nwant %s", got, want)
	}
	for _, path := range [][]string{{"spec", "versions"}, {"status", "storedVersions"}, {"spec", "conversion", "strategy"}} {
		before, _, _ := unstructured.NestedFieldNoCopy(original.Object, path...)
		after, _, _ := unstructured.NestedFieldNoCopy(stored.Object, path...)
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		if string(a) != string(b) || before == nil {
			t.Errorf("%s: %s, want %s", strings.Join(path, "."), a, b)
		}
	}
}

func TestCRDWaitsForTheCABundle(t *testing.T) {
	for _, ca := range [][]byte{nil, {}} {
		f := newCRDFixture(t, testURLConfig, ca, testCRD(daemonSetsCRD))
		if err := f.syncCRD(daemonSetsCRD); err != nil {
			t.Fatalf("sync without a CA: %v, want nil (the key looks again later)", err)
		}
		f.assertNoCRDWrites()
		if problems := f.w.outcomes.problems([]string{daemonSetsCRD}); len(problems) != 1 || !strings.Contains(problems[0], "waiting for the CA bundle") {
			t.Errorf("readiness problems %q, want the CA wait", problems)
		}

		// Nor over a CRD that already has one: an empty caBundle would break it.
		f.ca.set(testCA)
		if err := f.syncCRD(daemonSetsCRD); err != nil {
			t.Fatal(err)
		}
		f.settleCRDs()
		f.ca.set(ca)
		f.markCRDWrites()
		if err := f.syncCRD(daemonSetsCRD); err != nil {
			t.Fatal(err)
		}
		f.assertNoCRDWrites()
		if got := f.clientConfigOf(daemonSetsCRD); !reflect.DeepEqual(got, urlClientConfig(testCA)) {
			t.Errorf("clientConfig %v, want the last CA kept", got)
		}
	}
}

func TestCRDNotManagedIsLeftAlone(t *testing.T) {
	tests := []struct {
		name   string
		labels func(o map[string]any)
	}{
		{name: "no label", labels: unmanaged},
		{name: "managed by someone else", labels: func(o map[string]any) {
			setField(o, "Helm", "metadata", "labels", managedByLabel)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			theirs := with(testCRD(daemonSetsCRD), func(o map[string]any) {
				tc.labels(o)
				setField(o, kruiseClientConfig, "spec", "conversion", "webhook", "clientConfig")
			})
			f := newCRDFixture(t, testURLConfig, testCA, theirs)
			// What the informers' initial lists queued: the CRD's name, which the handler
			// may deliver a moment after the caches report synced.
			f.eventually("the initial list queues the CRD", func() bool { return f.w.queue.Len() > 0 })
			f.drainQueue()
			for range 2 {
				if err := f.syncCRD(daemonSetsCRD); err != nil {
					t.Fatalf("sync: %v, want nil: retrying cannot help", err)
				}
			}
			f.assertNoCRDWrites()
			if got := f.storedCRD(daemonSetsCRD); !reflect.DeepEqual(got, theirs) {
				t.Errorf("someone else's CRD changed:\n got %v\nwant %v", got, theirs)
			}
			// One event, however often the writer looks.
			where := "service kruise-system/kruise-webhook-service port 443 path /convert"
			f.assertEvents([]string{"Warning", ReasonConversionNotManaged, daemonSetsCRD, where})
			if w := f.w.queue.Len(); w != 0 {
				t.Errorf("queue holds %d keys, want none: only a change of the CRD can help", w)
			}
			err := readiness(f)
			if err == nil || !strings.Contains(err.Error(), daemonSetsCRD+": ") || !strings.Contains(err.Error(), "not labelled "+managedByLabel+"=bosun") ||
				!strings.Contains(err.Error(), where) {
				t.Errorf("readiness %v, want the CRD named with the reason and where its conversions go", err)
			}

			// Once labelled as bosun's, the writer takes over.
			f.editCRD(daemonSetsCRD, func(o map[string]any) { setField(o, managedByBosun, "metadata", "labels", managedByLabel) })
			f.settleCRDs()
			f.markCRDWrites()
			if err := f.syncCRD(daemonSetsCRD); err != nil {
				t.Fatal(err)
			}
			if got := f.clientConfigOf(daemonSetsCRD); !reflect.DeepEqual(got, urlClientConfig(testCA)) {
				t.Errorf("clientConfig %v after labelling, want %v", got, urlClientConfig(testCA))
			}
			if problems := f.w.outcomes.problems([]string{daemonSetsCRD}); len(problems) != 0 {
				t.Errorf("readiness problems %q after labelling", problems)
			}
		})
	}
}

// A CRD of someone else that converts through no webhook sends no conversion anywhere: the
// writer leaves it alone without a report, as it does the v1alpha1-only CRDs of an earlier
// release while the manager is upgraded before them.
func TestCRDNotManagedWithoutWebhookIsNotReported(t *testing.T) {
	old := with(testCRD(crrsCRD), func(o map[string]any) {
		unmanaged(o)
		unstructured.RemoveNestedField(o, "spec", "conversion")
	})
	f := newCRDFixture(t, testURLConfig, testCA, old)
	if err := f.syncCRD(crrsCRD); err != nil {
		t.Fatal(err)
	}
	f.assertNoCRDWrites()
	f.assertEvents()
	if problems := f.w.outcomes.problems([]string{crrsCRD}); len(problems) != 0 {
		t.Errorf("readiness problems %q, want none", problems)
	}
}

// bosun's manifests give these kinds a webhook; one of bosun's CRDs without is reported,
// and its strategy left as it is.
func TestCRDManagedWithoutWebhookIsReported(t *testing.T) {
	for _, strategy := range []string{"None", ""} {
		crd := with(testCRD(pubsCRD), func(o map[string]any) {
			unstructured.RemoveNestedField(o, "spec", "conversion")
			if strategy != "" {
				setField(o, strategy, "spec", "conversion", "strategy")
			}
		})
		f := newCRDFixture(t, testURLConfig, testCA, crd)
		for range 2 {
			if err := f.syncCRD(pubsCRD); err != nil {
				t.Fatalf("sync: %v, want nil", err)
			}
		}
		f.assertNoCRDWrites()
		f.assertEvents([]string{"Warning", ReasonConversionStrategyNotWebhook, pubsCRD, "conversion strategy is None"})
		if err := readiness(f); err == nil || !strings.Contains(err.Error(), pubsCRD+": ") || !strings.Contains(err.Error(), "conversion strategy is None") {
			t.Errorf("readiness %v, want the CRD's strategy reported", err)
		}
	}
}

// A write that loses to another writer is retried on the newer object, which keeps what
// the other writer did.
func TestCRDUpdateConflictIsRetried(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, testCA, testCRD(daemonSetsCRD))
	cached, err := f.crdInformer[daemonSetsCRD].Lister().Get(daemonSetsCRD)
	if err != nil {
		t.Fatal(err)
	}
	f.editCRD(daemonSetsCRD, func(o map[string]any) { setField(o, "keep me", "metadata", "annotations", "note") })
	// The cache has not seen the edit yet.
	f.settleCRDs()
	if err := f.crdInformer[daemonSetsCRD].Informer().GetIndexer().Update(cached); err != nil {
		t.Fatal(err)
	}
	f.markCRDWrites()

	err = f.syncCRD(daemonSetsCRD)
	if !errors.Is(err, queue.ErrRequeue) || !apierrors.IsConflict(err) {
		t.Fatalf("sync = %v, want a requeue on the conflict", err)
	}
	if got := f.clientConfigOf(daemonSetsCRD); got["caBundle"] != nil {
		t.Errorf("clientConfig %v written despite the conflict", got)
	}

	if err := f.crdInformer[daemonSetsCRD].Informer().GetIndexer().Update(f.storedCRD(daemonSetsCRD)); err != nil {
		t.Fatal(err)
	}
	if err := f.syncCRD(daemonSetsCRD); err != nil {
		t.Fatal(err)
	}
	stored := f.storedCRD(daemonSetsCRD)
	if got := f.clientConfigOf(daemonSetsCRD); !reflect.DeepEqual(got, urlClientConfig(testCA)) {
		t.Errorf("clientConfig %v after the retry, want %v", got, urlClientConfig(testCA))
	}
	if stored.GetAnnotations()["note"] != "keep me" {
		t.Errorf("annotations %v: the other writer's edit was lost", stored.GetAnnotations())
	}
	if writes := f.crdWrites(); len(writes) != 2 {
		t.Errorf("writes %v, want the refused update and its retry", writes)
	}
}

// What the API server stores is compared with what was written: a difference the writer
// does not expect would otherwise be rewritten on every sync, unnoticed.
func TestCRDReadsBackWhatWasStored(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, testCA, testCRD(daemonSetsCRD))
	f.dyn.PrependReactor("update", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		setField(obj.Object, "https://127.0.0.1:9876/convert/", "spec", "conversion", "webhook", "clientConfig", "url")
		return true, obj, nil
	})
	err := f.syncCRD(daemonSetsCRD)
	if err == nil || !strings.Contains(err.Error(), "not as written") {
		t.Fatalf("sync = %v, want the difference reported", err)
	}
	if problems := f.w.outcomes.problems([]string{daemonSetsCRD}); len(problems) != 1 {
		t.Errorf("readiness problems %q, want the difference", problems)
	}
}

func TestCRDHandlersQueueOnlyTheWritersKeys(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, testCA)
	ours := testCRD(crrsCRD)
	theirs := testCRD("nodeimages.apps.kruise.io")
	f.expectQueued(t, []handlerEvent{
		{name: "add of another CRD", event: func() { f.w.addCRD(f.ctx, theirs) }},
		{name: "update of another CRD", event: func() { f.w.updateCRD(f.ctx, theirs, theirs) }},
		{name: "add", event: func() { f.w.addCRD(f.ctx, ours) }, want: crrsCRD},
		{name: "update", event: func() { f.w.updateCRD(f.ctx, ours, ours) }, want: crrsCRD},
		{name: "delete", event: func() { f.w.deleteCRD(f.ctx, ours) }, want: crrsCRD},
		{name: "delete tombstone", event: func() {
			f.w.deleteCRD(f.ctx, cache.DeletedFinalStateUnknown{Key: pubsCRD, Obj: testCRD(pubsCRD)})
		}, want: pubsCRD},
	})
}

// The certificate provider's Resync reaches the CRDs too.
func TestResyncQueuesTheCRDKeys(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, testCA)
	f.w.Resync()
	got := f.drainQueue()
	slices.Sort(got)
	want := append(ConversionCRDNames(), MutatingName, ValidatingName)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("queued %v, want %v", got, want)
	}
}

func TestNewCRDInformersWatchOneNameEach(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, testCA)
	selectors := map[string]bool{}
	for _, a := range f.dyn.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			continue
		}
		if a.GetResource() != crdResource {
			t.Errorf("%s of %v, want only CRDs", a.GetVerb(), a.GetResource())
		}
		var restrictions string
		switch a := a.(type) {
		case clienttesting.ListActionImpl:
			restrictions = a.GetListRestrictions().Fields.String()
		case clienttesting.WatchActionImpl:
			restrictions = a.GetWatchRestrictions().Fields.String()
		}
		selectors[a.GetVerb()+" "+restrictions] = true
	}
	for _, name := range ConversionCRDNames() {
		for _, verb := range []string{"list", "watch"} {
			if !selectors[verb+" metadata.name="+name] {
				t.Errorf("no %s restricted to %s; saw %v", verb, name, selectors)
			}
		}
	}
	if len(selectors) != 2*len(ConversionCRDNames()) {
		t.Errorf("lists and watches %v, want one of each per name", selectors)
	}
}

func TestNewWriterRejectsIncompleteCRDs(t *testing.T) {
	informers, _ := NewCRDInformers(newDynamicClient(), ConversionCRDNames())
	f := newFixture(t, testRegistrations(), testURLConfig, testCA)
	_, err := NewWriter(f.ctx, f.client,
		f.factory.Admissionregistration().V1().MutatingWebhookConfigurations(),
		f.factory.Admissionregistration().V1().ValidatingWebhookConfigurations(),
		CRDs{Informers: informers}, testRegistrations(), testURLConfig, f.ca.get)
	if err == nil || !strings.Contains(err.Error(), "no client") || !strings.Contains(err.Error(), "no event recorder") {
		t.Errorf("NewWriter = %v, want the missing client and recorder reported", err)
	}
}

// Running, the writer injects the CA once it is known, follows a rotation, puts a changed
// url back, and configures a CRD created later: all through its informers.
func TestRunKeepsTheConversionWebhooks(t *testing.T) {
	f := newCRDFixture(t, testURLConfig, nil, testCRD(daemonSetsCRD))
	f.run()
	f.eventually("every key found no CA", func() bool { return f.ca.readCount() >= 3 })
	f.assertNoCRDWrites()

	f.ca.set(testCA)
	f.eventually("the CA is injected", func() bool {
		return reflect.DeepEqual(f.clientConfigOf(daemonSetsCRD), urlClientConfig(testCA))
	})

	f.ca.set(otherCA)
	f.w.Resync()
	f.eventually("the rotated CA is injected", func() bool {
		return reflect.DeepEqual(f.clientConfigOf(daemonSetsCRD), urlClientConfig(otherCA))
	})

	f.editCRD(daemonSetsCRD, func(o map[string]any) {
		setField(o, "https://kruise.example/convert", "spec", "conversion", "webhook", "clientConfig", "url")
	})
	f.eventually("the url is put back", func() bool {
		return reflect.DeepEqual(f.clientConfigOf(daemonSetsCRD), urlClientConfig(otherCA))
	})
	f.awaitEvents([]string{ReasonConversionClientConfigCorrected, "url https://kruise.example/convert replaced by"})

	created := testCRD(pubsCRD)
	created.SetResourceVersion("")
	if _, err := f.dyn.Resource(crdResource).Create(f.ctx, created, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the new CRD gets the CA", func() bool {
		return reflect.DeepEqual(f.clientConfigOf(pubsCRD), urlClientConfig(otherCA))
	})
	f.eventually("the writer is ready", func() bool { return readiness(f) == nil })
}
