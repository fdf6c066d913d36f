// The token flow of registries that authenticate with Bearer tokens (the
// distribution token specification): a 401 names a realm, the client asks the
// realm for a token scoped to the repository, with its basic credentials if it
// has any, and sends the token from then on.

package ociimage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// bearerChallenge is a parsed `WWW-Authenticate: Bearer realm=...,service=...,scope=...`.
type bearerChallenge struct {
	realm, service, scope string
}

// parseBearerChallenge reads a Bearer challenge; ok is false for any other
// scheme (basic authentication needs no second request) or one without a realm.
func parseBearerChallenge(header string) (bearerChallenge, bool) {
	scheme, params, _ := strings.Cut(strings.TrimSpace(header), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return bearerChallenge{}, false
	}
	var c bearerChallenge
	for params != "" {
		var key, value string
		key, params, _ = strings.Cut(strings.TrimLeft(params, " ,"), "=")
		if strings.HasPrefix(params, `"`) {
			// Quoted values may hold commas (a scope listing several actions).
			end := strings.Index(params[1:], `"`)
			if end < 0 {
				return bearerChallenge{}, false
			}
			value, params = params[1:end+1], params[end+2:]
		} else {
			value, params, _ = strings.Cut(params, ",")
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "realm":
			c.realm = value
		case "service":
			c.service = value
		case "scope":
			c.scope = value
		}
	}
	return c, c.realm != ""
}

// fetchToken asks the challenge's realm for a token that may push to and pull
// from the repository.
func (p *pusher) fetchToken(ctx context.Context, c bearerChallenge) (string, error) {
	realm, err := url.Parse(c.realm)
	if err != nil || (realm.Scheme != "https" && realm.Scheme != "http") {
		return "", fmt.Errorf("the challenge's realm %q is not an http(s) URL", c.realm)
	}
	query := realm.Query()
	if c.service != "" {
		query.Set("service", c.service)
	}
	// The challenge of a HEAD names the pull scope only; the push needs both.
	query.Set("scope", "repository:"+p.repository+":pull,push")
	realm.RawQuery = query.Encode()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", err
	}
	if p.auth != nil {
		req.SetBasicAuth(p.auth.Username, p.auth.Password)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("reading the token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		body := strings.TrimSpace(string(data))
		if len(body) > maxErrorBody {
			body = body[:maxErrorBody] + "..."
		}
		return "", fmt.Errorf("GET %s: %s: %s", realm.Redacted(), resp.Status, body)
	}
	// The specification names the field "token"; OAuth2-style servers answer
	// "access_token", and the specification asks clients to accept either.
	var answer struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return "", fmt.Errorf("decoding the token from %s: %w", realm.Redacted(), err)
	}
	if answer.Token != "" {
		return answer.Token, nil
	}
	if answer.AccessToken != "" {
		return answer.AccessToken, nil
	}
	return "", fmt.Errorf("%s answered without a token", realm.Redacted())
}
