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
	s := NewVersionStore(clk)
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
	s := NewVersionStore(clk)
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

func TestOlderVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"9", "10", true}, {"10", "10", false}, {"11", "10", false},
		// Versions that are not integers are only compared for equality.
		{"x", "y", true}, {"x", "x", false},
	} {
		if got := olderVersion(tc.a, tc.b); got != tc.want {
			t.Errorf("olderVersion(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
