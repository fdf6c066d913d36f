package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// Refusal is a request a webhook endpoint answers with an HTTP error instead of a review:
// nothing the API server would send.
type Refusal struct {
	Status  int
	Message string
}

// Write answers the request with the refusal's status and message.
func (r *Refusal) Write(w http.ResponseWriter) {
	if r.Status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	http.Error(w, r.Message, r.Status)
}

// ReadReviewBody reads the body of a review (review names it in messages: "admission",
// "conversion") POSTed as JSON, of at most limit bytes, or says why it refuses the request.
// Admission and conversion endpoints share it so that both refuse the same requests with
// the same status codes.
func ReadReviewBody(w http.ResponseWriter, r *http.Request, review string, limit int64) ([]byte, *Refusal) {
	if r.Method != http.MethodPost {
		return nil, &Refusal{http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: %s reviews are POSTed", r.Method, review)}
	}
	contentType := r.Header.Get("Content-Type")
	if mediaType, _, err := mime.ParseMediaType(contentType); err != nil || mediaType != "application/json" {
		return nil, &Refusal{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not application/json", contentType)}
	}
	tooLarge := &Refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge
		}
		return nil, &Refusal{http.StatusBadRequest, fmt.Sprintf("reading the request body: %v", err)}
	}
	return body, nil
}

// readBody reads all of body, of the announced length when it is known (reviews run to
// megabytes, which io.ReadAll would copy several times over while growing its buffer).
func readBody(body io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(body)
	}
	var buf bytes.Buffer
	buf.Grow(int(length) + bytes.MinRead)
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}
