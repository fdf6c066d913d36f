package options

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/bosun-dev/bosun/pkg/cmdutil"
	"github.com/bosun-dev/bosun/pkg/features"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions(features.NewFeatureGate())
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	cmdutil.AddFlagSets(fs, o.Flags())
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestNodeName(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		args    []string
		want    string
		wantErr bool
	}{
		{name: "neither flag nor env", wantErr: true},
		{name: "env", env: "node-a", want: "node-a"},
		{name: "flag", args: []string{"--node-name=node-b"}, want: "node-b"},
		{name: "flag wins over env", env: "node-a", args: []string{"--node-name=node-b"}, want: "node-b"},
		{name: "explicitly empty flag", env: "node-a", args: []string{"--node-name="}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(NodeNameEnv, tc.env)
			o := parse(t, tc.args...)
			err := o.Validate()
			if tc.wantErr {
				if err == nil || err.Error() != "--node-name (or NODE_NAME) is required" {
					t.Fatalf("Validate = %v, want exactly the node-name message", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.NodeName != tc.want {
				t.Errorf("node name %q, want %q", o.NodeName, tc.want)
			}
		})
	}
}

func TestDefaultsAndValidation(t *testing.T) {
	t.Setenv(NodeNameEnv, "node-a")
	o := parse(t)
	if o.Serving.SecureServing.BindPort != 10268 || o.Client.QPS != 20 || o.Client.Burst != 30 || o.RuntimeEndpoint != "" ||
		strings.Join(o.RuntimeSocketDirs, ",") != "/run,/var/run" || !o.Profiling.EnableProfiling {
		t.Errorf("defaults: port %d qps %v burst %d endpoint %q dirs %v", o.Serving.SecureServing.BindPort, o.Client.QPS,
			o.Client.Burst, o.RuntimeEndpoint, o.RuntimeSocketDirs)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}

	t.Setenv(NodeNameEnv, "")
	o = parse(t, "--runtime-endpoint=tcp://1.2.3.4:5", "--kube-api-qps=0", "--secure-port=-1")
	err := o.Validate()
	if err == nil {
		t.Fatal("invalid flags accepted")
	}
	errs := err.(utilerrors.Aggregate).Errors()
	want := []string{"--node-name (or NODE_NAME) is required", "tcp://1.2.3.4:5", "--kube-api-qps", "--secure-port"}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(want))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors %q lack %q", err, w)
		}
	}
	if o := parse(t, "--node-name=n", "--runtime-endpoint=/run/containerd/containerd.sock"); o.Validate() != nil {
		t.Errorf("plain socket path rejected: %v", o.Validate())
	}
}
