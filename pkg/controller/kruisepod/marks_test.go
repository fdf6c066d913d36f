package kruisepod

import "testing"

func TestNotReadyMarks(t *testing.T) {
	message, added := AddNotReadyMark("", PreDeleteMark)
	if !added || message != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]` {
		t.Errorf("AddNotReadyMark = %s, %v", message, added)
	}
	if again, added := AddNotReadyMark(message, PreDeleteMark); added || again != message {
		t.Errorf("mark added twice: %s", again)
	}
}

func TestRemoveNotReadyMark(t *testing.T) {
	crr := NotReadyMark{UserAgent: "ContainerRecreateRequest", Key: "shop/r"}
	both, _ := AddNotReadyMark(`[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, crr)
	for _, tt := range []struct {
		name, message, want string
		remaining           int
		removed             bool
	}{
		{"one of two", both, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, 1, true},
		{"the last", `[{"userAgent":"ContainerRecreateRequest","key":"shop/r"}]`, "", 0, true},
		{"absent", `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, 1, false},
		{"empty", "", "", 0, false},
		{"not a mark list", "kubelet says hi", "kubelet says hi", 0, false},
	} {
		message, remaining, removed := RemoveNotReadyMark(tt.message, crr)
		if message != tt.want || remaining != tt.remaining || removed != tt.removed {
			t.Errorf("%s: RemoveNotReadyMark = %q, %d, %v; want %q, %d, %v", tt.name, message, remaining, removed, tt.want, tt.remaining, tt.removed)
		}
	}
}
