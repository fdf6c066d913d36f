package configuration

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
)

func TestNewWriterRejectsWhatTheAPIServerWould(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	regs := testRegistrations()
	regs[2].TimeoutSeconds = 31
	_, err := NewWriter(ctx, client,
		factory.Admissionregistration().V1().MutatingWebhookConfigurations(),
		factory.Admissionregistration().V1().ValidatingWebhookConfigurations(),
		CRDs{}, regs, ClientConfig{URL: "http://127.0.0.1:9876"}, func() []byte { return testCA })
	if err == nil {
		t.Fatal("NewWriter accepted an http URL and a 31s timeout")
	}
	t.Log(err)
}

func TestHandlersQueueOnlyTheWritersKeys(t *testing.T) {
	f := newFixture(t, testRegistrations(), testURLConfig, testCA)
	ours := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: MutatingName}}
	theirs := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kruise-mutating-webhook-configuration"}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ValidatingName}}

	f.expectQueued(t, []handlerEvent{
		{name: "add of another configuration", event: func() { f.w.addConfiguration(f.ctx, theirs) }},
		{name: "update of another configuration", event: func() { f.w.updateConfiguration(f.ctx, theirs, theirs) }},
		{name: "add", event: func() { f.w.addConfiguration(f.ctx, ours) }, want: MutatingName},
		{name: "update", event: func() { f.w.updateConfiguration(f.ctx, validating, validating) }, want: ValidatingName},
		{name: "delete", event: func() { f.w.deleteConfiguration(f.ctx, ours) }, want: MutatingName},
		{name: "delete tombstone", event: func() {
			f.w.deleteConfiguration(f.ctx, cache.DeletedFinalStateUnknown{Key: ValidatingName, Obj: validating})
		}, want: ValidatingName},
	})
}

func TestResyncQueuesBothKeys(t *testing.T) {
	f := newFixture(t, testRegistrations(), testURLConfig, testCA)
	f.w.Resync()
	f.w.Resync()
	got := map[string]bool{}
	for _, key := range f.drainQueue() {
		got[key] = true
	}
	if len(got) != 2 || !got[MutatingName] || !got[ValidatingName] {
		t.Errorf("queued %v, want both keys once", got)
	}
}

func TestOnlyNamed(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, OnlyNamed(MutatingName))
	factory.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	defer factory.Shutdown()
	defer cancel()

	var listed bool
	for _, a := range client.Actions() {
		if list, ok := a.(clienttesting.ListActionImpl); ok && a.GetResource() == mutatingResource {
			listed = true
			if got, want := list.GetListRestrictions().Fields.String(), "metadata.name="+MutatingName; got != want {
				t.Errorf("list field selector = %q, want %q", got, want)
			}
		}
	}
	if !listed {
		t.Error("the informer did not list")
	}
}
