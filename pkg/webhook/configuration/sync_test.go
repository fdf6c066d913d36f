package configuration

import (
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/queue"
	"github.com/bosun-dev/bosun/pkg/webhook"
)

// assertDesired fails the test unless the stored configurations' webhooks are exactly
// Desired's for ca and both carry bosun's label.
func (f *fixture) assertDesired(regs []webhook.Registration, client ClientConfig, ca []byte) {
	f.t.Helper()
	wantM, wantV := Desired(regs, client, ca)
	m, v := f.live()
	if m == nil || v == nil {
		f.t.Fatalf("stored configurations: mutating %v, validating %v; want both", m != nil, v != nil)
	}
	if !reflect.DeepEqual(m.Webhooks, wantM.Webhooks) {
		f.t.Errorf("mutating webhooks:\n got %+v\nwant %+v", m.Webhooks, wantM.Webhooks)
	}
	if !reflect.DeepEqual(v.Webhooks, wantV.Webhooks) {
		f.t.Errorf("validating webhooks:\n got %+v\nwant %+v", v.Webhooks, wantV.Webhooks)
	}
	for _, obj := range []metav1.Object{m, v} {
		if obj.GetLabels()[managedByLabel] != managedByBosun {
			f.t.Errorf("%s lacks %s=%s: labels %v", obj.GetName(), managedByLabel, managedByBosun, obj.GetLabels())
		}
	}
}

// newSyncedFixture is a fixture whose writer has created both configurations and whose
// caches have seen them; writes count from there.
func newSyncedFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, testRegistrations(), testURLConfig, testCA)
	f.syncBoth()
	f.settle()
	f.markWrites()
	return f
}

func TestSyncCreatesBoth(t *testing.T) {
	f := newFixture(t, testRegistrations(), testURLConfig, testCA)
	f.syncBoth()

	writes := f.writes()
	if len(writes) != 2 || writes[0].GetVerb() != "create" || writes[1].GetVerb() != "create" {
		t.Fatalf("writes = %v, want two creates", writes)
	}
	f.assertDesired(testRegistrations(), testURLConfig, testCA)
}

func TestSyncWritesNothingWhenUpToDate(t *testing.T) {
	f := newSyncedFixture(t)
	f.syncBoth()
	f.syncBoth()
	f.assertNoWrites()
}

// A field the API server defaults, cleared by another client and stored without it (the
// fake does not default), means the same as bosun's explicit value: no update.
func TestSyncComparesWithDefaultsFilledIn(t *testing.T) {
	f := newSyncedFixture(t)
	f.editMutating(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
		hook := &m.Webhooks[0]
		hook.TimeoutSeconds, hook.MatchPolicy, hook.NamespaceSelector, hook.ReinvocationPolicy = nil, nil, nil, nil
		hook.Rules[0].Scope = nil
	})
	f.settle()
	f.markWrites()
	f.syncBoth()
	f.assertNoWrites()
}

func TestSyncRevertsUserEdits(t *testing.T) {
	tests := []struct {
		name string
		edit func(f *fixture)
	}{
		{name: "failure policy relaxed", edit: func(f *fixture) {
			f.editMutating(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
				m.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			})
		}},
		{name: "webhook removed", edit: func(f *fixture) {
			f.editMutating(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
				m.Webhooks = m.Webhooks[1:]
			})
		}},
		{name: "webhooks reordered", edit: func(f *fixture) {
			f.editMutating(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
				m.Webhooks[0], m.Webhooks[1] = m.Webhooks[1], m.Webhooks[0]
			})
		}},
		{name: "foreign webhook added", edit: func(f *fixture) {
			f.editValidating(func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
				extra := *v.Webhooks[0].DeepCopy()
				extra.Name = "vextra.example.com"
				v.Webhooks = append(v.Webhooks, extra)
			})
		}},
		{name: "caBundle replaced", edit: func(f *fixture) {
			f.editValidating(func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
				v.Webhooks[0].ClientConfig.CABundle = otherCA
			})
		}},
		{name: "URL pointed elsewhere", edit: func(f *fixture) {
			f.editValidating(func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
				v.Webhooks[0].ClientConfig.URL = ptr.To("https://evil.example/validate")
			})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncedFixture(t)
			tc.edit(f)
			f.settle()
			f.markWrites()
			f.syncBoth()

			writes := f.writes()
			if len(writes) != 1 || writes[0].GetVerb() != "update" {
				t.Fatalf("writes = %v, want one update", writes)
			}
			f.assertDesired(testRegistrations(), testURLConfig, testCA)

			f.settle()
			f.markWrites()
			f.syncBoth()
			f.assertNoWrites()
		})
	}
}

func TestSyncKeepsWhatUsersAdded(t *testing.T) {
	f := newSyncedFixture(t)
	f.editMutating(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
		m.Labels["team"] = "platform"
		m.Annotations = map[string]string{"note": "do not remove"}
		m.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	})
	f.settle()
	edited, _ := f.live()
	f.markWrites()
	f.sync(MutatingName)

	writes := f.writes()
	if len(writes) != 1 {
		t.Fatalf("writes = %v, want one update", writes)
	}
	sent := writes[0].(clienttesting.UpdateAction).GetObject().(*admissionregistrationv1.MutatingWebhookConfiguration)
	if sent.ResourceVersion != edited.ResourceVersion || sent.UID != edited.UID {
		t.Errorf("update sent resourceVersion %q uid %q, want the live object's %q %q",
			sent.ResourceVersion, sent.UID, edited.ResourceVersion, edited.UID)
	}
	m, _ := f.live()
	wantLabels := map[string]string{managedByLabel: managedByBosun, "team": "platform"}
	if !reflect.DeepEqual(m.Labels, wantLabels) || m.Annotations["note"] != "do not remove" {
		t.Errorf("labels %v, annotations %v; want %v and the user's annotation", m.Labels, m.Annotations, wantLabels)
	}
	if *m.Webhooks[0].FailurePolicy != admissionregistrationv1.Fail {
		t.Error("the user's failure policy was not reverted")
	}
}

func TestSyncRecreatesDeleted(t *testing.T) {
	f := newSyncedFixture(t)
	if err := f.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(f.ctx, MutatingName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.markWrites()
	f.syncBoth()

	writes := f.writes()
	if len(writes) != 1 || writes[0].GetVerb() != "create" || writes[0].GetResource() != mutatingResource {
		t.Fatalf("writes = %v, want the mutating configuration created", writes)
	}
	f.assertDesired(testRegistrations(), testURLConfig, testCA)
}

func TestSyncFollowsTheCABundle(t *testing.T) {
	f := newSyncedFixture(t)
	f.ca.set(otherCA)
	f.syncBoth()

	if writes := f.writes(); len(writes) != 2 || writes[0].GetVerb() != "update" || writes[1].GetVerb() != "update" {
		t.Fatalf("writes = %v, want both configurations updated", writes)
	}
	f.assertDesired(testRegistrations(), testURLConfig, otherCA)
}

func TestSyncWritesNothingWithoutCABundle(t *testing.T) {
	for _, ca := range [][]byte{nil, {}} {
		f := newFixture(t, testRegistrations(), testURLConfig, ca)
		f.syncBoth()
		f.assertNoWrites()

		// Nor over an existing configuration: an empty caBundle would break it.
		f.ca.set(testCA)
		f.syncBoth()
		f.settle()
		f.ca.set(ca)
		f.markWrites()
		f.syncBoth()
		f.assertNoWrites()
	}
}

func managedMutating(name string, labels map[string]string) *admissionregistrationv1.MutatingWebhookConfiguration {
	m, _ := Desired(testRegistrations(), testURLConfig, testCA)
	m.Name = name
	m.Labels = labels
	m.UID = types.UID("uid-" + name)
	m.ResourceVersion = "7"
	return m
}

func TestSyncDeletesOnlyWhatBosunManages(t *testing.T) {
	validatingOnly := onlyType(testRegistrations(), webhook.Validating)
	tests := []struct {
		name       string
		labels     map[string]string
		wantDelete bool
	}{
		{name: "managed by bosun", labels: map[string]string{managedByLabel: managedByBosun, "team": "x"}, wantDelete: true},
		{name: "no label", labels: nil},
		{name: "managed by someone else", labels: map[string]string{managedByLabel: "Helm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, validatingOnly, testURLConfig, testCA, managedMutating(MutatingName, tc.labels))
			f.sync(MutatingName)
			m, _ := f.live()

			if !tc.wantDelete {
				f.assertNoWrites()
				if m == nil {
					t.Error("someone else's configuration was deleted")
				}
				return
			}
			writes := f.writes()
			if len(writes) != 1 || writes[0].GetVerb() != "delete" {
				t.Fatalf("writes = %v, want one delete", writes)
			}
			pre := writes[0].(clienttesting.DeleteAction).GetDeleteOptions().Preconditions
			if pre == nil || ptr.Deref(pre.UID, "") != "uid-"+MutatingName || ptr.Deref(pre.ResourceVersion, "") != "7" {
				t.Errorf("delete preconditions = %+v, want the cached object's UID and resourceVersion", pre)
			}
			if m != nil {
				t.Error("bosun's configuration without registrations was not deleted")
			}
			f.settle()
			f.markWrites()
			f.sync(MutatingName)
			f.assertNoWrites()
		})
	}
}

func TestSyncLeavesSomeoneElsesConfigurationAlone(t *testing.T) {
	theirs := managedMutating(MutatingName, map[string]string{managedByLabel: "Helm"})
	theirs.Webhooks = theirs.Webhooks[:1]
	f := newFixture(t, testRegistrations(), testURLConfig, testCA, theirs)
	f.syncBoth()

	writes := f.writes()
	if len(writes) != 1 || writes[0].GetVerb() != "create" || writes[0].GetResource() != validatingResource {
		t.Fatalf("writes = %v, want only the validating configuration created", writes)
	}
	m, _ := f.live()
	if !reflect.DeepEqual(m, theirs) {
		t.Errorf("someone else's configuration changed:\n got %+v\nwant %+v", m, theirs)
	}
}

func TestSyncDeleteRetriesOnConflict(t *testing.T) {
	f := newFixture(t, onlyType(testRegistrations(), webhook.Validating), testURLConfig, testCA,
		managedMutating(MutatingName, map[string]string{managedByLabel: managedByBosun}))
	// Someone changed the object after the cache saw it: the API server refuses the
	// delete's precondition once.
	refused := false
	f.client.PrependReactor("delete", "mutatingwebhookconfigurations", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if refused {
			return false, nil, nil
		}
		refused = true
		return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), MutatingName, errors.New("the object has been modified"))
	})
	err := f.w.sync(f.ctx, MutatingName)
	if !errors.Is(err, queue.ErrRequeue) {
		t.Fatalf("sync = %v, want a requeue", err)
	}
	if m, _ := f.live(); m == nil {
		t.Fatal("deleted despite the failed precondition")
	}
	f.settle()
	f.sync(MutatingName)
	if m, _ := f.live(); m != nil {
		t.Error("not deleted once the cache caught up")
	}
}

// Two replicas running side by side: after they converge, a user's edit is reverted by
// exactly one update, however the two interleave.
func TestTwoRunningWritersDoNotTakeTurns(t *testing.T) {
	client := newClient()
	ca := newCASource(testCA)
	first := newFixtureOn(t, client, testRegistrations(), testURLConfig, ca)
	second := newFixtureOn(t, client, testRegistrations(), testURLConfig, ca)
	first.run()
	second.run()
	first.eventually("both configurations exist", func() bool {
		m, v := first.live()
		return m != nil && v != nil
	})
	first.settle()
	second.settle()

	_, validating := first.live()
	edited := first.editMutating(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
		m.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	})
	first.eventually("the edit is reverted", func() bool {
		m, _ := first.live()
		return *m.Webhooks[0].FailurePolicy == admissionregistrationv1.Fail
	})
	// Give a ping-pong time to show, then let both writers look again.
	time.Sleep(100 * time.Millisecond)
	first.settle()
	second.settle()
	first.w.Resync()
	second.w.Resync()
	time.Sleep(100 * time.Millisecond)

	m, v := first.live()
	if want := bumped(t, edited.ResourceVersion, 1); m.ResourceVersion != want {
		t.Errorf("resourceVersion %s after the edit's %s, want %s: one update, no turns", m.ResourceVersion, edited.ResourceVersion, want)
	}
	if v.ResourceVersion != validating.ResourceVersion {
		t.Errorf("validating configuration rewritten (resourceVersion %s)", v.ResourceVersion)
	}
	first.assertDesired(testRegistrations(), testURLConfig, testCA)
}

// bumped returns the fake's resourceVersion n writes after rv.
func bumped(t *testing.T, rv string, n int) string {
	t.Helper()
	v, err := strconv.Atoi(rv)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return strconv.Itoa(v + n)
}

func TestRunConvergesAndRepairs(t *testing.T) {
	f := newFixture(t, testRegistrations(), testURLConfig, nil)
	f.run()

	// No CA yet: nothing is written, and the writer looks again by itself, without a
	// Resync.
	f.eventually("both keys found no CA", func() bool { return f.ca.readCount() >= 2 })
	f.assertNoWrites()
	f.ca.set(testCA)
	f.eventually("both configurations exist", func() bool {
		m, v := f.live()
		return m != nil && v != nil
	})
	f.assertDesired(testRegistrations(), testURLConfig, testCA)

	// A new CA: Resync rewrites both.
	f.ca.set(otherCA)
	f.w.Resync()
	f.eventually("both configurations carry the new CA", func() bool {
		m, v := f.live()
		return string(m.Webhooks[0].ClientConfig.CABundle) == string(otherCA) &&
			string(v.Webhooks[0].ClientConfig.CABundle) == string(otherCA)
	})

	// A user's edit and a deletion, seen through the informers, are put back.
	f.editMutating(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
		m.Webhooks[1].TimeoutSeconds = ptr.To[int32](30)
	})
	if err := f.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(f.ctx, ValidatingName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the edit is reverted and the deletion undone", func() bool {
		m, v := f.live()
		return v != nil && *m.Webhooks[1].TimeoutSeconds == 5
	})
	f.assertDesired(testRegistrations(), testURLConfig, otherCA)
}
