package kruisepod

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// RevisionData returns the data of the ControllerRevision that records template:
// {"spec":{"template":<template>}} with "$patch":"replace" inside the template, every
// object's keys sorted. OpenKruise writes the same bytes, and a revision is found again by
// byte equality, so a controller taking over from OpenKruise (or the other way round)
// recognises the existing revisions instead of rolling every pod.
//
// Released OpenKruise versions are built on Kubernetes libraries that encode a template's
// zero creationTimestamp as null, newer ones leave it out; the data written here carries
// the null, and MatchesRevisionData accepts both.
func RevisionData(template *corev1.PodTemplateSpec) ([]byte, error) {
	return revisionData(template, true)
}

// MatchesRevisionData reports whether data, a revision's data, records template, in either
// encoding of the template's creationTimestamp.
func MatchesRevisionData(data []byte, template *corev1.PodTemplateSpec) (bool, error) {
	for _, withNullTimestamp := range []bool{true, false} {
		want, err := revisionData(template, withNullTimestamp)
		if err != nil {
			return false, err
		}
		if bytes.Equal(data, want) {
			return true, nil
		}
	}
	return false, nil
}

func revisionData(template *corev1.PodTemplateSpec, withNullTimestamp bool) ([]byte, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, fmt.Errorf("encoding pod template: %w", err)
	}
	// Decoding into generic maps and encoding again sorts the keys of every object.
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, fmt.Errorf("decoding pod template: %w", err)
	}
	metadata, _ := generic["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
	}
	if withNullTimestamp {
		if _, set := metadata["creationTimestamp"]; !set {
			metadata["creationTimestamp"] = nil
		}
		generic["metadata"] = metadata
	} else if metadata["creationTimestamp"] == nil {
		delete(metadata, "creationTimestamp")
	}
	generic["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": generic}})
	if err != nil {
		return nil, fmt.Errorf("encoding revision data: %w", err)
	}
	return data, nil
}

// TemplateFromRevisionData decodes the pod template stored in revision data.
func TemplateFromRevisionData(data []byte) (*corev1.PodTemplateSpec, error) {
	var stored struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &stored); err != nil {
		return nil, fmt.Errorf("decoding revision data: %w", err)
	}
	return &stored.Spec.Template, nil
}
