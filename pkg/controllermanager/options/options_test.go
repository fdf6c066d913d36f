package options

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/bosun-dev/bosun/pkg/clientbuilder"
	"github.com/bosun-dev/bosun/pkg/cmdutil"
	"github.com/bosun-dev/bosun/pkg/controllermanager/registry"
	"github.com/bosun-dev/bosun/pkg/features"
)

type noop struct{}

func (noop) Run(ctx context.Context) { <-ctx.Done() }

func testRegistry() *registry.Registry {
	r := registry.New()
	construct := func(context.Context, *registry.ControllerContext) (registry.Controller, error) { return noop{}, nil }
	r.MustRegister(registry.Descriptor{Name: "replicaset-controller", Aliases: []string{"replicaset"}, Constructor: construct})
	r.MustRegister(registry.Descriptor{Name: "deployment-controller", Aliases: []string{"deployment"}, Constructor: construct})
	return r
}

// parse builds fresh options and parses args into them the way the command does.
func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	o := NewOptions(features.NewFeatureGate())
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	cmdutil.AddFlagSets(fs, o.Flags(testRegistry()))
	return o, fs.Parse(args)
}

func TestDefaults(t *testing.T) {
	o, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(testRegistry()); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"controllers", strings.Join(o.Controllers, ","), "*"},
		{"replicaset workers", o.ConcurrentReplicaSetSyncs, int32(5)},
		{"deployment workers", o.ConcurrentDeploymentSyncs, int32(5)},
		{"gc workers", o.ConcurrentGCSyncs, int32(20)},
		{"gc enabled", o.EnableGarbageCollector, true},
		{"advanced daemonset workers", o.ConcurrentAdvancedDaemonSetSyncs, int32(3)},
		{"cloneset workers", o.ConcurrentCloneSetSyncs, int32(3)},
		{"cloneset scaling excludes PreparingDelete", o.CloneSetScalingExcludePreparingDelete, false},
		{"cloneset scale-in of surplus pods ignores maxUnavailable", o.CloneSetScalingSurplusIgnoreMaxUnavailable, false},
		{"storage version migration delay", o.StorageVersionMigrationDelay, 2 * time.Minute},
		{"webhook port", o.Webhook.Port, 9876},
		{"webhook bind address", o.Webhook.BindAddress, "0.0.0.0"},
		{"webhook secret", o.Webhook.Secret, "kube-system/bosun-webhook-certs"},
		{"webhook cert dir", o.Webhook.CertDir, ""},
		{"webhook url", o.Webhook.ClientConfig().URL, "https://127.0.0.1:9876"},
		{"webhook service port", o.Webhook.ServicePort, int32(443)},
		{"qps", o.Client.QPS, float32(20)},
		{"burst", o.Client.Burst, int32(30)},
		{"client limits given", o.ClientLimitsGiven, false},
		{"kruise controllers qps flag", o.KruiseControllersQPS, float32(0)},
		{"kruise controllers burst flag", o.KruiseControllersBurst, int32(0)},
		{"kruise controllers limits", o.KruiseClientLimits(), clientbuilder.Limits{QPS: 50, Burst: 100}},
		{"content type", o.Client.ContentType, "application/vnd.kubernetes.protobuf"},
		{"min resync", o.MinResyncPeriod, 12 * time.Hour},
		{"start interval", o.ControllerStartInterval, time.Duration(0)},
		{"shutdown timeout", o.ControllerShutdownTimeout, 10 * time.Second},
		{"sa credentials", o.UseServiceAccountCredentials, false},
		{"leader elect", o.LeaderElection.LeaderElect, true},
		{"lease", o.LeaderElection.LeaseDuration.Duration, 15 * time.Second},
		{"renew", o.LeaderElection.RenewDeadline.Duration, 10 * time.Second},
		{"retry", o.LeaderElection.RetryPeriod.Duration, 2 * time.Second},
		{"lock", o.LeaderElection.ResourceLock, "leases"},
		{"lease name", o.LeaderElection.ResourceName, "bosun-controller-manager"},
		{"lease namespace", o.LeaderElection.ResourceNamespace, "kube-system"},
		{"secure port", o.Serving.SecureServing.BindPort, 10267},
		{"bind address", o.Serving.SecureServing.BindAddress.String(), "0.0.0.0"},
		{"cert pair", o.Serving.SecureServing.ServerCert.PairName, "bosun-controller-manager"},
		{"token cache ttl", o.Serving.Authentication.CacheTTL, 10 * time.Second},
		{"always allow", strings.Join(o.Serving.Authorization.AlwaysAllowPaths, ","), "/healthz,/readyz,/livez"},
		{"authz allowed ttl", o.Serving.Authorization.AllowCacheTTL, 10 * time.Second},
		{"authz denied ttl", o.Serving.Authorization.DenyCacheTTL, 10 * time.Second},
		{"profiling", o.Profiling.EnableProfiling, true},
		{"contention profiling", o.Profiling.EnableContentionProfiling, false},
		{"logging format", o.Logs.Format, "text"},
		{"log flush", o.Logs.FlushFrequency.Duration.Duration, 5 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: default %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// wantErrs are substrings, one per expected error; the count must match exactly.
		wantErrs []string
	}{
		{name: "valid selection with aliases", args: []string{"--controllers=-replicaset,*,deployment-controller"}},
		{name: "empty selection is valid", args: []string{"--controllers="}},
		{
			name:     "unknown controller",
			args:     []string{"--controllers=*,nosuch"},
			wantErrs: []string{`"nosuch" is not in the list of known controllers; valid names are: deployment-controller (alias deployment), replicaset-controller (alias replicaset)`},
		},
		{
			name: "zero workers",
			args: []string{"--concurrent-replicaset-syncs=0", "--concurrent-deployment-syncs=-1", "--concurrent-gc-syncs=0",
				"--concurrent-advanced-daemonset-syncs=0", "--concurrent-pod-unavailable-budget-syncs=0", "--concurrent-cloneset-syncs=0"},
			wantErrs: []string{"--concurrent-replicaset-syncs", "--concurrent-deployment-syncs", "--concurrent-gc-syncs",
				"--concurrent-advanced-daemonset-syncs", "--concurrent-pod-unavailable-budget-syncs", "--concurrent-cloneset-syncs"},
		},
		{name: "budget resync disabled", args: []string{"--pod-unavailable-budget-resync-period=0s"}},
		{name: "budget resync", args: []string{"--pod-unavailable-budget-resync-period=-1s"}, wantErrs: []string{"--pod-unavailable-budget-resync-period must not be negative"}},
		{name: "storage version migration without delay", args: []string{"--storage-version-migration-delay=0s"}},
		{name: "storage version migration delay", args: []string{"--storage-version-migration-delay=-1s"},
			wantErrs: []string{"--storage-version-migration-delay must not be negative, got -1s"}},
		{name: "resync", args: []string{"--min-resync-period=0s"}, wantErrs: []string{"--min-resync-period"}},
		{name: "start interval", args: []string{"--controller-start-interval=-1s"}, wantErrs: []string{"--controller-start-interval"}},
		{name: "shutdown timeout", args: []string{"--controller-shutdown-timeout=0s"}, wantErrs: []string{"--controller-shutdown-timeout"}},
		{name: "client", args: []string{"--kube-api-qps=0", "--kube-api-burst=0", "--kube-api-content-type=text/plain"},
			wantErrs: []string{"--kube-api-qps", "--kube-api-burst", "--kube-api-content-type"}},
		{name: "kruise controllers' limits unset", args: []string{"--kruise-controllers-kube-api-qps=0", "--kruise-controllers-kube-api-burst=0"}},
		{name: "kruise controllers' limits", args: []string{"--kruise-controllers-kube-api-qps=-1", "--kruise-controllers-kube-api-burst=-5"},
			wantErrs: []string{"--kruise-controllers-kube-api-qps must not be negative (0 means unset), got -1",
				"--kruise-controllers-kube-api-burst must not be negative (0 means unset), got -5"}},
		{
			name:     "lease not longer than renew deadline",
			args:     []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"},
			wantErrs: []string{"--leader-elect-lease-duration (10s) must be greater than --leader-elect-renew-deadline (10s)"},
		},
		{
			name:     "renew deadline not above 1.2 x retry",
			args:     []string{"--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=5s"},
			wantErrs: []string{"--leader-elect-renew-deadline (6s) must be greater than 1.2"},
		},
		{
			name: "non-positive timings",
			args: []string{"--leader-elect-lease-duration=0s", "--leader-elect-renew-deadline=-1s", "--leader-elect-retry-period=0s"},
			wantErrs: []string{"--leader-elect-lease-duration must be greater than 0", "--leader-elect-renew-deadline must be greater than 0",
				"--leader-elect-retry-period must be greater than 0", "--leader-elect-renew-deadline (-1s) must be greater than 1.2"},
		},
		{name: "lock type", args: []string{"--leader-elect-resource-lock=endpointsleases"}, wantErrs: []string{`--leader-elect-resource-lock must be "leases"`}},
		{name: "empty lease name", args: []string{"--leader-elect-resource-name=", "--leader-elect-resource-namespace="},
			wantErrs: []string{"--leader-elect-resource-name", "--leader-elect-resource-namespace"}},
		{
			name: "leader election rules do not apply when it is off",
			args: []string{"--leader-elect=false", "--leader-elect-lease-duration=1s", "--leader-elect-resource-lock=configmaps"},
		},
		{name: "secure port out of range", args: []string{"--secure-port=70000"}, wantErrs: []string{"--secure-port"}},
		{name: "secure port 0 disables serving", args: []string{"--secure-port=0"}},
		{name: "logging format", args: []string{"--logging-format=xml"}, wantErrs: []string{"xml"}},
		{name: "webhook port out of range", args: []string{"--webhook-port=65536"}, wantErrs: []string{"--webhook-port must be between 0 and 65535"}},
		{name: "webhook port 0 disables webhooks and their checks", args: []string{"--webhook-port=0", "--webhook-url=http://x", "--webhook-secret=bad"}},
		{name: "webhook service", args: []string{"--webhook-service=bosun-system/bosun-webhook", "--webhook-service-port=9443"}},
		{name: "webhook url", args: []string{"--webhook-url=https://bosun.example:9876/"}},
		{name: "webhook url and service", args: []string{"--webhook-url=https://127.0.0.1:9876", "--webhook-service=a/b"},
			wantErrs: []string{"--webhook-url and --webhook-service are mutually exclusive"}},
		{name: "webhook url not https", args: []string{"--webhook-url=http://127.0.0.1:9876"}, wantErrs: []string{`scheme "http" is not https`}},
		{name: "webhook service without namespace", args: []string{"--webhook-service=bosun-webhook"},
			wantErrs: []string{`--webhook-service must be <namespace>/<name>, got "bosun-webhook"`}},
		{name: "webhook secret", args: []string{"--webhook-secret=kube-system/Bad_Name"}, wantErrs: []string{`--webhook-secret: name "Bad_Name"`}},
		{name: "webhook bind address", args: []string{"--webhook-bind-address=localhost"}, wantErrs: []string{"--webhook-bind-address must be an IP address"}},
		{name: "webhook cert dir missing", args: []string{"--webhook-cert-dir=/nonexistent/bosun-certs"}, wantErrs: []string{"--webhook-cert-dir: stat /nonexistent/bosun-certs"}},
		{
			name:     "all problems are reported together",
			args:     []string{"--controllers=nosuch", "--concurrent-gc-syncs=0", "--kube-api-qps=0", "--leader-elect-resource-lock=x", "--secure-port=-2"},
			wantErrs: []string{`"nosuch" is not in the list`, "--concurrent-gc-syncs", "--kube-api-qps", "--leader-elect-resource-lock", "--secure-port"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = o.Validate(testRegistry())
			var got []error
			if err != nil {
				got = err.(utilerrors.Aggregate).Errors()
			}
			if len(got) != len(tc.wantErrs) {
				t.Fatalf("got %d errors %v, want %d matching %q", len(got), got, len(tc.wantErrs), tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("errors %q lack %q", err, want)
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--storage-version-migration-delay=soon"},
		{"--feature-gates=NoSuchGate=true"},
		{"--feature-gates=LogarithmicScaleDown=false"},
		{"--no-such-flag"},
	} {
		if _, err := parse(t, args...); err == nil {
			t.Errorf("parsing %v succeeded", args)
		}
	}
	o, err := parse(t, "--feature-gates=PodDeletionCost=false")
	if err != nil {
		t.Fatal(err)
	}
	if o.FeatureGate.Enabled(features.PodDeletionCost) {
		t.Error("--feature-gates=PodDeletionCost=false did not reach the gate")
	}
}

func TestFlagGroupsAndHelp(t *testing.T) {
	o := NewOptions(features.NewFeatureGate())
	fss := o.Flags(testRegistry())
	wantOrder := []string{"generic", "controllers", "client", "leader election", "secure serving", "authentication",
		"authorization", "admission webhooks", "feature gates", "logs", "misc"}
	if got := strings.Join(fss.Order, "|"); got != strings.Join(wantOrder, "|") {
		t.Errorf("groups %q, want %q", got, strings.Join(wantOrder, "|"))
	}
	for group, flag := range map[string]string{
		"controllers": "concurrent-gc-syncs", "client": "kube-api-content-type", "leader election": "leader-elect-renew-deadline",
		"secure serving": "tls-cert-file", "authentication": "requestheader-client-ca-file",
		"authorization": "authorization-always-allow-paths", "feature gates": "feature-gates", "logs": "logging-format",
		"misc": "version", "generic": "controller-shutdown-timeout", "admission webhooks": "webhook-cert-dir",
	} {
		if fss.FlagSets[group].Lookup(flag) == nil {
			t.Errorf("--%s is not in group %q", flag, group)
		}
	}
	help := fss.FlagSets["controllers"].Lookup("controllers").Usage
	if !strings.Contains(help, "All controllers: deployment-controller (alias deployment), replicaset-controller (alias replicaset)") {
		t.Errorf("--controllers help %q does not list the controllers", help)
	}
}

func TestKruiseClientLimits(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// wantGeneral is what --kube-api-qps/--kube-api-burst give the other clients.
		wantGeneral, wantKruise clientbuilder.Limits
	}{
		{name: "defaults", wantGeneral: clientbuilder.Limits{QPS: 20, Burst: 30}, wantKruise: clientbuilder.Limits{QPS: 50, Burst: 100}},
		// Operators who set the general flags keep what they had: every controller at them.
		{name: "general qps given", args: []string{"--kube-api-qps=100"},
			wantGeneral: clientbuilder.Limits{QPS: 100, Burst: 30}, wantKruise: clientbuilder.Limits{QPS: 100, Burst: 30}},
		{name: "general burst given", args: []string{"--kube-api-burst=7"},
			wantGeneral: clientbuilder.Limits{QPS: 20, Burst: 7}, wantKruise: clientbuilder.Limits{QPS: 20, Burst: 7}},
		{name: "general flags given at their defaults", args: []string{"--kube-api-qps=20", "--kube-api-burst=30"},
			wantGeneral: clientbuilder.Limits{QPS: 20, Burst: 30}, wantKruise: clientbuilder.Limits{QPS: 20, Burst: 30}},
		{name: "general flags given for a benchmark", args: []string{"--kube-api-qps=1000", "--kube-api-burst=1000"},
			wantGeneral: clientbuilder.Limits{QPS: 1000, Burst: 1000}, wantKruise: clientbuilder.Limits{QPS: 1000, Burst: 1000}},
		{name: "kruise qps alone", args: []string{"--kruise-controllers-kube-api-qps=200"},
			wantGeneral: clientbuilder.Limits{QPS: 20, Burst: 30}, wantKruise: clientbuilder.Limits{QPS: 200, Burst: 100}},
		{name: "kruise flags over general ones", args: []string{"--kube-api-qps=10", "--kube-api-burst=15", "--kruise-controllers-kube-api-burst=60"},
			wantGeneral: clientbuilder.Limits{QPS: 10, Burst: 15}, wantKruise: clientbuilder.Limits{QPS: 10, Burst: 60}},
		{name: "kruise flags at 0 are unset", args: []string{"--kruise-controllers-kube-api-qps=0", "--kruise-controllers-kube-api-burst=0"},
			wantGeneral: clientbuilder.Limits{QPS: 20, Burst: 30}, wantKruise: clientbuilder.Limits{QPS: 50, Burst: 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(testRegistry()); err != nil {
				t.Fatal(err)
			}
			if general := (clientbuilder.Limits{QPS: o.Client.QPS, Burst: int(o.Client.Burst)}); general != tc.wantGeneral {
				t.Errorf("--kube-api-qps/--kube-api-burst = %+v, want %+v", general, tc.wantGeneral)
			}
			if got := o.KruiseClientLimits(); got != tc.wantKruise {
				t.Errorf("KruiseClientLimits() = %+v, want %+v", got, tc.wantKruise)
			}
		})
	}
}

func TestClientLimitFlagsHelp(t *testing.T) {
	reg := testRegistry()
	reg.MustRegister(registry.Descriptor{Name: "advanced-daemonset-controller", KruiseClientLimits: true,
		Constructor: func(context.Context, *registry.ControllerContext) (registry.Controller, error) { return noop{}, nil }})
	client := NewOptions(features.NewFeatureGate()).Flags(reg).FlagSets["client"]
	for flag, want := range map[string]string{
		"kube-api-qps": "float32", "kube-api-burst": "int32",
		"kruise-controllers-kube-api-qps": "float32", "kruise-controllers-kube-api-burst": "int32",
	} {
		f := client.Lookup(flag)
		if f == nil {
			t.Errorf("--%s is not in the client group", flag)
			continue
		}
		// Wrapping the general flags must not change how --help shows them.
		if f.Value.Type() != want {
			t.Errorf("--%s has type %q, want %q", flag, f.Value.Type(), want)
		}
	}
	if def := client.Lookup("kube-api-qps").DefValue; def != "20" {
		t.Errorf("--kube-api-qps default %q, want 20", def)
	}
	help := client.Lookup("kruise-controllers-kube-api-qps").Usage
	for _, want := range []string{"(advanced-daemonset-controller) and of the admission webhooks", "otherwise 50"} {
		if !strings.Contains(help, want) {
			t.Errorf("--kruise-controllers-kube-api-qps help %q lacks %q", help, want)
		}
	}
	if _, err := parse(t, "--kube-api-qps=fast"); err == nil || !strings.Contains(err.Error(), "kube-api-qps") {
		t.Errorf("a malformed --kube-api-qps parsed: %v", err)
	}
}

func TestControllerConfiguration(t *testing.T) {
	o, err := parse(t, "--concurrent-replicaset-syncs=7", "--concurrent-deployment-syncs=8", "--concurrent-gc-syncs=9",
		"--enable-garbage-collector=false", "--min-resync-period=1h", "--storage-version-migration-delay=15s",
		"--concurrent-cloneset-syncs=4", "--cloneset-scaling-exclude-preparing-delete", "--cloneset-scaling-surplus-ignore-max-unavailable",
		"--cloneset-progress-deadline-restarts-on-progress")
	if err != nil {
		t.Fatal(err)
	}
	c := o.ControllerConfiguration()
	if c.ReplicaSet.ConcurrentSyncs != 7 || c.Deployment.ConcurrentSyncs != 8 || c.GarbageCollector.ConcurrentSyncs != 9 ||
		c.GarbageCollector.Enabled || c.MinResyncPeriod != time.Hour || c.StorageVersionMigrator.SettleDelay != 15*time.Second ||
		c.CloneSet.ConcurrentSyncs != 4 || !c.CloneSet.ScalingExcludePreparingDelete || !c.CloneSet.ScalingSurplusIgnoreMaxUnavailable ||
		!c.CloneSet.ProgressDeadlineRestartsOnProgress {
		t.Errorf("configuration %+v", c)
	}
}

func TestWebhookClientConfigAndCertificateHosts(t *testing.T) {
	tests := []struct {
		args      []string
		wantURL   string
		wantSvc   string
		wantHosts string
	}{
		{args: nil, wantURL: "https://127.0.0.1:9876", wantHosts: "127.0.0.1"},
		{args: []string{"--webhook-port=9443"}, wantURL: "https://127.0.0.1:9443", wantHosts: "127.0.0.1"},
		{args: []string{"--webhook-url=https://cp.example:9876/"}, wantURL: "https://cp.example:9876", wantHosts: "cp.example"},
		{args: []string{"--webhook-service=bosun-system/webhook", "--webhook-service-port=8443"}, wantSvc: "bosun-system/webhook:8443",
			wantHosts: "webhook.bosun-system.svc,webhook.bosun-system.svc.cluster.local,webhook.bosun-system"},
	}
	for _, tc := range tests {
		o, err := parse(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(testRegistry()); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		cc := o.Webhook.ClientConfig()
		svc := ""
		if cc.Service != nil {
			svc = fmt.Sprintf("%s/%s:%d", cc.Service.Namespace, cc.Service.Name, cc.Service.Port)
		}
		if cc.URL != tc.wantURL || svc != tc.wantSvc {
			t.Errorf("%v: client config URL %q service %q, want %q and %q", tc.args, cc.URL, svc, tc.wantURL, tc.wantSvc)
		}
		if got := strings.Join(o.Webhook.CertificateHosts(), ","); got != tc.wantHosts {
			t.Errorf("%v: certificate hosts %q, want %q", tc.args, got, tc.wantHosts)
		}
	}
}
