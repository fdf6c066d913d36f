package kruisepod

import (
	"encoding/json"
	"slices"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	appsv1beta1 "github.com/bosun-dev/api/apps/v1beta1"
)

// The KruisePodReady condition is shared by every party that may want a pod out of
// service (a DaemonSet's preDelete hook, a ContainerRecreateRequest's unready grace): each
// adds its own mark to the condition's message and removes only its own, and the
// condition is True only once no mark is left. MarkPodNotReady and UnmarkPodNotReady,
// built on the functions below, are the writers they all use.

// NotReadyMark is one entry of the JSON list in the KruisePodReady condition's message:
// a party that wants the pod out of service.
type NotReadyMark struct {
	UserAgent string `json:"userAgent"`
	Key       string `json:"key"`
}

// PreDeleteMark is the mark a preDelete hook with markPodNotReady sets.
var PreDeleteMark = NotReadyMark{UserAgent: appsv1alpha1.KruisePodReadyUserAgentLifecycle, Key: appsv1alpha1.KruisePodReadyKeyPreDeleteHook}

// PreUpdateMark is the mark an inPlaceUpdate hook with markPodNotReady sets.
var PreUpdateMark = NotReadyMark{UserAgent: appsv1beta1.KruisePodReadyUserAgentLifecycle, Key: appsv1beta1.KruisePodReadyKeyPreUpdateHook}

// AddNotReadyMark returns the KruisePodReady message with mark added, and whether it was
// missing. A message that is not a mark list is replaced.
func AddNotReadyMark(message string, mark NotReadyMark) (string, bool) {
	var marks []NotReadyMark
	if message != "" {
		_ = json.Unmarshal([]byte(message), &marks)
	}
	if slices.Contains(marks, mark) {
		return message, false
	}
	marks = append(marks, mark)
	encoded, _ := json.Marshal(marks)
	return string(encoded), true
}

// RemoveNotReadyMark returns the KruisePodReady message with mark removed, how many marks
// remain, and whether mark was there. A message that is not a mark list holds no mark.
func RemoveNotReadyMark(message string, mark NotReadyMark) (string, int, bool) {
	var marks []NotReadyMark
	if message == "" || json.Unmarshal([]byte(message), &marks) != nil {
		return message, 0, false
	}
	kept := slices.DeleteFunc(slices.Clone(marks), func(m NotReadyMark) bool { return m == mark })
	if len(kept) == len(marks) {
		return message, len(marks), false
	}
	if len(kept) == 0 {
		return "", 0, true
	}
	encoded, _ := json.Marshal(kept)
	return string(encoded), len(kept), true
}
