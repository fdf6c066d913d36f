package framework

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"
)

// GetEndpoint requests path from a bosun binary's secure port on 127.0.0.1, with a bearer
// token when token is not empty, and returns the status code and body. A request that
// fails before any answer returns code 0 and the error text, so callers can poll until a
// process starts serving. The certificate is not verified: without --tls-cert-file the
// binaries serve a self-signed one, as upstream components do.
func GetEndpoint(port int, path, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}
