package conversion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// The wire form of apiextensions.k8s.io/v1 ConversionReview. The Go types live in
// k8s.io/apiextensions-apiserver, far too large a module for three small structs.
const (
	reviewAPIVersion = "apiextensions.k8s.io/v1"
	reviewKind       = "ConversionReview"
)

type conversionReview struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Request    *conversionRequest  `json:"request,omitempty"`
	Response   *conversionResponse `json:"response,omitempty"`
}

type conversionRequest struct {
	UID               types.UID         `json:"uid"`
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

type conversionResponse struct {
	UID              types.UID         `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           metav1.Status     `json:"result"`
}

// decodeReview returns the request of a ConversionReview, or an error saying what is wrong
// with the body. Field names match case-sensitively, as the API server's own decoding
// does; unknown fields are tolerated, since a newer API server may send fields this build
// does not know. The objects are kept as the JSON they were sent as.
func decodeReview(body []byte) (*conversionRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("empty body")
	}
	var review conversionReview
	if err := utiljson.Unmarshal(body, &review); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	switch {
	case review.APIVersion != reviewAPIVersion:
		return nil, fmt.Errorf("apiVersion %q is not %s", review.APIVersion, reviewAPIVersion)
	case review.Kind != reviewKind:
		return nil, fmt.Errorf("kind %q is not %s", review.Kind, reviewKind)
	case review.Request == nil:
		return nil, errors.New("no request")
	case review.Request.UID == "":
		return nil, errors.New("request.uid is empty")
	case review.Request.DesiredAPIVersion == "":
		return nil, errors.New("request.desiredAPIVersion is empty")
	}
	for i, object := range review.Request.Objects {
		// A JSON null decodes into a nil RawMessage, which would encode as nothing at all.
		if object == nil {
			review.Request.Objects[i] = json.RawMessage("null")
		}
	}
	return review.Request, nil
}

// encodeReview is the ConversionReview answering the request uid with objects, or with
// the failure when it is not nil. It writes the objects as they are, without the second
// scan and copy encoding/json would make of each: they are well-formed, having come in a
// decoded review or out of encoding/json.
func encodeReview(uid types.UID, objects []json.RawMessage, failure *metav1.Status) ([]byte, error) {
	result := successStatus
	if failure != nil {
		objects, result = nil, *failure
	}
	uidJSON, err := json.Marshal(uid)
	if err != nil {
		return nil, err
	}
	resultJSON, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	const (
		head = `{"apiVersion":"` + reviewAPIVersion + `","kind":"` + reviewKind + `","response":{"uid":`
		list = `,"convertedObjects":[`
		tail = `],"result":`
	)
	size := len(head) + len(uidJSON) + len(list) + len(tail) + len(resultJSON) + 2
	for _, o := range objects {
		size += len(o) + 1
	}
	b := make([]byte, 0, size)
	b = append(append(b, head...), uidJSON...)
	b = append(b, list...)
	for i, o := range objects {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, o...)
	}
	b = append(append(b, tail...), resultJSON...)
	return append(b, "}}"...), nil
}

// successStatus is the result of a review whose objects were all converted.
var successStatus = metav1.Status{Status: metav1.StatusSuccess, Code: 200}
