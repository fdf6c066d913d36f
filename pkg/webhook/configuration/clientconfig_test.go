package configuration

import (
	"strings"
	"testing"

	"github.com/bosun-dev/bosun/pkg/webhook"
)

func TestClientConfigValidate(t *testing.T) {
	svc := func(namespace, name string, port int32) *ServiceReference {
		return &ServiceReference{Namespace: namespace, Name: name, Port: port}
	}
	tests := []struct {
		name    string
		config  ClientConfig
		wantErr string // empty: valid
	}{
		{name: "URL", config: ClientConfig{URL: "https://127.0.0.1:9876"}},
		{name: "URL with a path and trailing slash", config: ClientConfig{URL: "https://bosun.example:9876/hooks/"}},
		{name: "service", config: ClientConfig{Service: svc("bosun-system", "bosun-webhook", 9443)}},
		{name: "service on the default port", config: ClientConfig{Service: svc("bosun-system", "bosun-webhook", 0)}},
		{name: "neither", config: ClientConfig{}, wantErr: "neither a URL nor a Service"},
		{name: "both", config: ClientConfig{URL: "https://h", Service: svc("ns", "s", 0)}, wantErr: "both a URL and a Service"},
		{name: "http", config: ClientConfig{URL: "http://127.0.0.1:9876"}, wantErr: `scheme "http" is not https`},
		{name: "no scheme", config: ClientConfig{URL: "//127.0.0.1:9876"}, wantErr: `scheme "" is not https`},
		{name: "no host", config: ClientConfig{URL: "https:///hooks"}, wantErr: "no host"},
		{name: "user info", config: ClientConfig{URL: "https://bosun:secret@127.0.0.1:9876"}, wantErr: "user information"},
		{name: "query", config: ClientConfig{URL: "https://127.0.0.1:9876/?x=1"}, wantErr: "query"},
		{name: "empty query", config: ClientConfig{URL: "https://127.0.0.1:9876?"}, wantErr: "query"},
		{name: "fragment", config: ClientConfig{URL: "https://127.0.0.1:9876#top"}, wantErr: "fragment"},
		{name: "unparseable", config: ClientConfig{URL: "https://[::1"}, wantErr: "not a valid URL"},
		{name: "service without namespace", config: ClientConfig{Service: svc("", "bosun-webhook", 0)}, wantErr: `namespace ""`},
		{name: "service with a bad name", config: ClientConfig{Service: svc("ns", "Bosun_Webhook", 0)}, wantErr: `name "Bosun_Webhook"`},
		{name: "service port out of range", config: ClientConfig{Service: svc("ns", "s", 70000)}, wantErr: "port 70000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.config.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("Validate() = nil, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("Validate() = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestValidateRegistrationsForTheAPIServer(t *testing.T) {
	service := ClientConfig{Service: &ServiceReference{Namespace: "bosun-system", Name: "bosun-webhook"}}
	withPath := func(path string) []webhook.Registration {
		regs := testRegistrations()
		regs[0].Path = path
		return regs
	}
	duplicate := testRegistrations()
	duplicate[1].Name = duplicate[0].Name
	// The same name in the two configurations is allowed: they are separate objects.
	acrossTypes := testRegistrations()
	acrossTypes[2].Name = acrossTypes[0].Name

	tests := []struct {
		name    string
		regs    []webhook.Registration
		config  ClientConfig
		wantErr string
	}{
		{name: "valid with a URL", regs: testRegistrations(), config: testURLConfig},
		{name: "valid with a service", regs: testRegistrations(), config: service},
		{name: "same name in both types", regs: acrossTypes, config: testURLConfig},
		{name: "bad client config", regs: testRegistrations(), config: ClientConfig{}, wantErr: "neither"},
		{name: "duplicate name", regs: duplicate, config: testURLConfig, wantErr: "registered twice"},
		{name: "invalid registration", regs: withPath("no-slash"), config: testURLConfig, wantErr: "must start with /"},
		{name: "upper case in a URL path is fine", regs: withPath("/mutate-Pod"), config: testURLConfig},
		{name: "upper case in a service path", regs: withPath("/mutate-Pod"), config: service, wantErr: `segment "mutate-Pod"`},
		{name: "underscore in a service path", regs: withPath("/mutate_pod"), config: service, wantErr: `segment "mutate_pod"`},
		{name: "empty segment in a service path", regs: withPath("/mutate//pod"), config: service, wantErr: "segment 1 is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.regs, tc.config)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("validate() = %v, want nil", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("validate() = nil, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("validate() = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
