package expectations

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
)

func podAt(uid, resourceVersion string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: resourceVersion}}
}

func TestVersionStoreWaitsForTheWrittenVersion(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1000, 0))
	s := NewVersionStore(clk, nil)
	if _, pending := s.Pending("ns/ds"); pending {
		t.Fatal("an empty store holds a key back")
	}
	s.Expect("ns/ds", podAt("a", "20"))
	s.Expect("ns/ds", podAt("b", "30"))

	s.Observed("ns/ds", podAt("a", "19")) // the cache still has the old pod
	if wait, pending := s.Pending("ns/ds"); !pending || wait != ExpectationsTimeout {
		t.Fatalf("Pending = %v, %v; want the full timeout", wait, pending)
	}
	s.Observed("ns/ds", podAt("a", "21")) // a later version meets it too
	s.Observed("other/ds", podAt("b", "30"))
	if _, pending := s.Pending("ns/ds"); !pending {
		t.Fatal("b's expectation was met through another key")
	}
	s.Gone("ns/ds", podAt("b", "30"))
	if _, pending := s.Pending("ns/ds"); pending {
		t.Fatal("expectations remain after every pod was observed or gone")
	}
}

func TestVersionStoreExpiresAndForgets(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1000, 0))
	s := NewVersionStore(clk, nil)
	s.Expect("ns/ds", podAt("a", "20"))
	clk.SetTime(clk.Now().Add(time.Minute))
	s.Expect("ns/ds", podAt("b", "5"))
	if wait, _ := s.Pending("ns/ds"); wait != ExpectationsTimeout-time.Minute {
		t.Errorf("Pending waits %v, want the oldest expectation's remaining %v", wait, ExpectationsTimeout-time.Minute)
	}
	clk.SetTime(clk.Now().Add(ExpectationsTimeout - time.Minute))
	if wait, pending := s.Pending("ns/ds"); !pending || wait != time.Minute {
		t.Errorf("after a's expiry Pending = %v, %v; want b's remaining minute", wait, pending)
	}
	s.Forget("ns/ds")
	if _, pending := s.Pending("ns/ds"); pending {
		t.Error("Forget left expectations")
	}
}

// A store made with its own timeout waits that long, not ExpectationsTimeout.
func TestVersionStoreWithTimeout(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1000, 0))
	s := NewVersionStoreWithTimeout(clk, nil, 10*time.Second)
	s.Expect("ns/r", podAt("a", "9"))
	if wait, pending := s.Pending("ns/r"); !pending || wait != 10*time.Second {
		t.Fatalf("Pending = %v, %v; want the store's 10s", wait, pending)
	}
	clk.SetTime(clk.Now().Add(4 * time.Second))
	if wait, pending := s.Pending("ns/r"); !pending || wait != 6*time.Second {
		t.Fatalf("after 4s Pending = %v, %v; want the remaining 6s", wait, pending)
	}
	clk.SetTime(clk.Now().Add(6 * time.Second))
	if _, pending := s.Pending("ns/r"); pending {
		t.Error("the expectation outlived the store's timeout")
	}
}

func TestOlderResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"9", "10", true}, {"10", "10", false}, {"11", "10", false},
		// Versions that are not integers are only compared for equality.
		{"x", "y", true}, {"x", "x", false},
	} {
		if got := OlderResourceVersion(tc.a, tc.b); got != tc.want {
			t.Errorf("OlderResourceVersion(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// The informer may show a write before the writer records its expectation; the cache then
// already holds the written version, and Pending must not wait for an event that came and
// went.
func TestVersionStoreAsksTheCache(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1000, 0))
	cache := map[string]*corev1.Pod{}
	s := NewVersionStore(clk, func(namespace, name string) (types.UID, string, bool) {
		pod, ok := cache[namespace+"/"+name]
		if !ok {
			return "", "", false
		}
		return pod.UID, pod.ResourceVersion, true
	})
	at := func(name, uid, resourceVersion string) *corev1.Pod {
		pod := podAt(uid, resourceVersion)
		pod.Namespace, pod.Name = "ns", name
		return pod
	}
	cache["ns/a"], cache["ns/b"], cache["ns/c"] = at("a", "a", "20"), at("b", "b", "29"), at("c", "c", "5")

	s.Observed("ns/ds", at("a", "a", "20")) // the event, before the expectation
	s.Expect("ns/ds", at("a", "a", "20"))
	s.Expect("ns/ds", at("b", "b", "30"))
	if _, pending := s.Pending("ns/ds"); !pending {
		t.Fatal("b's write is not in the cache yet, but nothing is pending")
	}
	cache["ns/b"] = at("b", "b", "31")
	if _, pending := s.Pending("ns/ds"); pending {
		t.Fatal("the cache shows every written version, but the key is still held back")
	}

	s.Expect("ns/ds", at("c", "c", "6"))
	cache["ns/c"] = at("c", "other", "7") // deleted and re-created under the same name
	if _, pending := s.Pending("ns/ds"); pending {
		t.Fatal("an expectation of a replaced pod holds the key back")
	}
	s.Expect("ns/ds", at("c", "other", "8"))
	delete(cache, "ns/c")
	if _, pending := s.Pending("ns/ds"); pending {
		t.Fatal("an expectation of a pod gone from the cache holds the key back")
	}
}
