package clientconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://from-kubeconfig.invalid:6443
users:
- name: u
  user:
    token: abc
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
`

func TestRESTConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	tests := []struct {
		name     string
		opts     Options
		wantHost string
		wantErr  string
	}{
		{name: "kubeconfig", opts: Options{Kubeconfig: path}, wantHost: "https://from-kubeconfig.invalid:6443"},
		{name: "master overrides kubeconfig", opts: Options{Kubeconfig: path, Master: "https://master.invalid"}, wantHost: "https://master.invalid"},
		{name: "master alone", opts: Options{Master: "http://127.0.0.1:8080"}, wantHost: "http://127.0.0.1:8080"},
		{name: "nothing available", opts: Options{}, wantErr: "in-cluster"},
		{name: "missing kubeconfig file", opts: Options{Kubeconfig: filepath.Join(t.TempDir(), "nope")}, wantErr: "loading client configuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.QPS, tc.opts.Burst, tc.opts.ContentType = 7, 9, "application/json"
			config, err := tc.opts.RESTConfig()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if config.Host != tc.wantHost || config.QPS != 7 || config.Burst != 9 || config.ContentType != "application/json" {
				t.Errorf("config host %q qps %v burst %d content type %q", config.Host, config.QPS, config.Burst, config.ContentType)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	if errs := NewOptions().Validate(); len(errs) != 0 {
		t.Errorf("defaults: %v", errs)
	}
	o := &Options{QPS: 0, Burst: 0, ContentType: "text/plain"}
	errs := o.Validate()
	if len(errs) != 3 {
		t.Fatalf("want 3 errors (qps, burst, content type), got %v", errs)
	}
	for i, flag := range []string{"--kube-api-qps", "--kube-api-burst", "--kube-api-content-type"} {
		if !strings.Contains(errs[i].Error(), flag) {
			t.Errorf("error %d %q does not name %s", i, errs[i], flag)
		}
	}
}
