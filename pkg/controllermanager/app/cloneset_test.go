package app

import (
	"context"
	"reflect"
	"slices"
	"testing"

	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
	policyv1beta1 "github.com/bosun-dev/api/policy/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/component-base/featuregate"

	"github.com/bosun-dev/bosun/pkg/controller/cloneset"
	"github.com/bosun-dev/bosun/pkg/controller/podunavailablebudget/budget"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
	clonesetwebhook "github.com/bosun-dev/bosun/pkg/webhook/cloneset"
)

// crdMetadata is a CRD as the metadata API returns it.
func crdMetadata(name string, labels map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
}

// The CloneSet's webhooks are registered exactly while the API server serves v1beta1
// CloneSets through bosun's own CRD. The CRD is not shipped yet: the shipped CRDs register
// nothing, nor does OpenKruise's CRD, whose CloneSets kruise-manager admits; a cluster that
// installed bosun's CRD gets its admission.
func TestCloneSetWebhooksFollowBosunsCRD(t *testing.T) {
	served := []*metav1.APIResourceList{
		servedAPIs("apps.kruise.io/v1alpha1", "clonesets"),
		servedAPIs("apps.kruise.io/v1beta1", "clonesets"),
	}
	bosuns := map[string]string{"app.kubernetes.io/managed-by": "bosun"}
	for _, tc := range []struct {
		name   string
		served []*metav1.APIResourceList
		crd    *metav1.PartialObjectMetadata
		want   bool
	}{
		{"no CRD", nil, nil, false},
		{"v1alpha1 only", []*metav1.APIResourceList{servedAPIs("apps.kruise.io/v1alpha1", "clonesets")}, crdMetadata(cloneSetCRD, bosuns), false},
		{"other kinds only", []*metav1.APIResourceList{servedAPIs("apps.kruise.io/v1beta1", "daemonsets")}, nil, false},
		{"OpenKruise's CRD", served, crdMetadata(cloneSetCRD, map[string]string{"app.kubernetes.io/managed-by": "Helm"}), false},
		{"served, the CRD gone since", served, nil, false},
		{"bosun's CRD", served, crdMetadata(cloneSetCRD, bosuns), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.Resources = tc.served
			var objects []runtime.Object
			if tc.crd != nil {
				objects = append(objects, tc.crd)
			}
			scheme := runtime.NewScheme()
			if err := metav1.AddMetaToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			crds := metadatafake.NewSimpleMetadataClient(scheme, objects...)
			wc := &registry.WebhookContext{Client: client, FeatureGate: features.NewFeatureGate()}
			regs, err := cloneSetWebhooksWith(wc, func() (metadata.Interface, error) { return crds, nil })
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range regs {
				names = append(names, r.Name)
			}
			if got := len(names) == 2 && names[0] == clonesetwebhook.MutatingName && names[1] == clonesetwebhook.ValidatingName; got != tc.want {
				t.Errorf("webhooks %v, want the CloneSet's: %t", names, tc.want)
			}
		})
	}
}

// The CloneSet's webhooks come with its controller, as every kind's do: served only while
// the cloneset controller is enabled (and, above, bosun's CRD is installed).
func TestCloneSetWebhooksComeWithTheController(t *testing.T) {
	reg := NewControllerRegistry()
	d, ok := reg.Get(cloneset.ControllerName)
	if !ok || d.Webhooks == nil || !slices.Equal(d.Aliases, []string{"cloneset"}) || !d.KruiseClientLimits {
		t.Fatalf("descriptor %+v: want alias cloneset, webhooks and the OpenKruise client limits", d)
	}
	if !hasWebhooks(reg, []string{cloneset.ControllerName}) {
		t.Error("hasWebhooks with the cloneset controller enabled = false")
	}
	if hasWebhooks(reg, nil) {
		t.Error("hasWebhooks with no controller enabled = true: the CloneSet's webhooks no longer come without their controller")
	}
	wc := &registry.WebhookContext{Client: fake.NewClientset(), FeatureGate: features.NewFeatureGate()}
	regs, err := webhookRegistrations(reg, []string{cloneset.ControllerName}, wc)
	if err != nil || len(regs) != 0 {
		t.Errorf("cloneset enabled, no CloneSet CRD: webhooks %v, %v; want none", regs, err)
	}
}

// With PodUnavailableBudgetUpdateGate the CloneSet controller asks budgets in process, so
// it watches v1beta1 budgets, when they are served; otherwise it does not watch them.
func TestCloneSetWatchesBudgetsForTheUpdateGate(t *testing.T) {
	budgetType := reflect.TypeOf(&policyv1beta1.PodUnavailableBudget{})
	cloneSets := servedAPIs("apps.kruise.io/v1beta1", "clonesets")
	budgets := servedAPIs("policy.kruise.io/v1beta1", "podunavailablebudgets")
	for _, tc := range []struct {
		name        string
		gate        bool
		served      []*metav1.APIResourceList
		wantBudgets bool
	}{
		{name: "gate off", served: []*metav1.APIResourceList{cloneSets, budgets}},
		{name: "gate on, budgets not served", gate: true, served: []*metav1.APIResourceList{cloneSets}},
		{name: "gate on, budgets served", gate: true, served: []*metav1.APIResourceList{cloneSets, budgets}, wantBudgets: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if watched := cloneSetStartsInformer(t, features.PodUnavailableBudgetUpdateGate, tc.gate, tc.served, budgetType); watched != tc.wantBudgets {
				t.Errorf("budget informer started: %t, want %t", watched, tc.wantBudgets)
			}
		})
	}
}

// With PreDownloadImageForInPlaceUpdate the CloneSet controller reads its ImagePullJobs, so
// it watches v1beta1 ImagePullJobs, when they are served; otherwise it does not watch them.
func TestCloneSetWatchesImagePullJobsForPreDownload(t *testing.T) {
	jobType := reflect.TypeOf(&appsv1beta1.ImagePullJob{})
	cloneSets := servedAPIs("apps.kruise.io/v1beta1", "clonesets")
	withJobs := servedAPIs("apps.kruise.io/v1beta1", "clonesets", "imagepulljobs")
	for _, tc := range []struct {
		name     string
		gate     bool
		served   []*metav1.APIResourceList
		wantJobs bool
	}{
		{name: "gate off", served: []*metav1.APIResourceList{withJobs}},
		{name: "gate on, jobs not served", gate: true, served: []*metav1.APIResourceList{cloneSets}},
		{name: "gate on, jobs served in v1alpha1 only", gate: true, served: []*metav1.APIResourceList{cloneSets, servedAPIs("apps.kruise.io/v1alpha1", "imagepulljobs")}},
		{name: "gate on, jobs served", gate: true, served: []*metav1.APIResourceList{withJobs}, wantJobs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if watched := cloneSetStartsInformer(t, features.PreDownloadImageForInPlaceUpdate, tc.gate, tc.served, jobType); watched != tc.wantJobs {
				t.Errorf("ImagePullJob informer started: %t, want %t", watched, tc.wantJobs)
			}
		})
	}
}

// cloneSetStartsInformer builds the CloneSet controller with gate set to on, on an API
// server that serves served, and reports whether it started bosun's informer of objects of
// type informer.
func cloneSetStartsInformer(t *testing.T, gate featuregate.Feature, on bool, served []*metav1.APIResourceList, informer reflect.Type) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc, _ := imageControllerContext(cloneset.ControllerName, served)
	cc.Config.CloneSet.ConcurrentSyncs = 3
	gates := features.NewFeatureGate()
	if err := gates.SetFromMap(map[string]bool{string(gate): on}); err != nil {
		t.Fatal(err)
	}
	cc.FeatureGate = gates
	if _, err := newCloneSetController(budget.NewCache())(ctx, cc); err != nil {
		t.Fatalf("building the controller: %v", err)
	}
	return startedBosunInformers(ctx, cc)[informer]
}
