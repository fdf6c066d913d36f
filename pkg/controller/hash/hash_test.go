package hash

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

const helperEnv = "BOSUN_HASH_HELPER_PROCESS"

// fixedTemplate is a template with maps, pointers, slices and quantities, so that the
// golden values cover the parts of the dump that could be non-deterministic.
func fixedTemplate() *corev1.PodTemplateSpec {
	labels := map[string]string{}
	for _, k := range []string{"app", "tier", "track", "zone", "a", "b", "c", "d"} {
		labels[k] = "v-" + k
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      labels,
			Annotations: map[string]string{"example.com/x": "1", "example.com/y": "2"},
		},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			NodeSelector:                  map[string]string{"disk": "ssd", "arch": "amd64"},
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   "registry.example/app:1.0",
				Command: []string{"/app", "--serve"},
				Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
				Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}},
			}},
		},
	}
}

// goldenValues computes the hashes the golden file records.
func goldenValues() map[string]string {
	return map[string]string{
		"nil": ComputeHash(fixedTemplate(), nil),
		"0":   ComputeHash(fixedTemplate(), ptr.To[int32](0)),
		"1":   ComputeHash(fixedTemplate(), ptr.To[int32](1)),
	}
}

func TestComputeHashGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden.json")
	got := goldenValues()
	if *update {
		data, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden values (run with -update to create them): %v", err)
	}
	var want map[string]string
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("collisionCount %s: hash %q, golden %q (k8s.io/api changes may legitimately change it; rerun with -update after review)", k, got[k], w)
		}
	}
	if got["nil"] == got["0"] || got["0"] == got["1"] || got["nil"] == got["1"] {
		t.Errorf("nil, 0 and 1 must hash differently: %v", got)
	}
}

// TestHashHelperProcess is not a real test: it prints the golden values when run as a
// child process by TestComputeHashAcrossProcesses.
func TestHashHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}
	v := goldenValues()
	fmt.Printf("HASHES nil=%s 0=%s 1=%s\n", v["nil"], v["0"], v["1"])
}

func TestComputeHashAcrossProcesses(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		t.Skip("inside the helper process")
	}
	v := goldenValues()
	want := fmt.Sprintf("HASHES nil=%s 0=%s 1=%s", v["nil"], v["0"], v["1"])
	// Two child runs: each process gets its own map-iteration seed and heap layout.
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHashHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper process %d: %v\n%s", i, err, out)
		}
		var line string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "HASHES ") {
				line = l
			}
		}
		if line != want {
			t.Errorf("helper process %d printed %q, this process computed %q", i, line, want)
		}
	}
}

func TestComputeHashStableAndSensitive(t *testing.T) {
	base := ComputeHash(fixedTemplate(), nil)
	for range 20 {
		// Fresh maps and pointers each time; map iteration order varies between calls.
		if got := ComputeHash(fixedTemplate().DeepCopy(), nil); got != base {
			t.Fatalf("hash of an equal template differs: %q vs %q", got, base)
		}
	}
	changes := map[string]func(*corev1.PodTemplateSpec){
		"label value":   func(t *corev1.PodTemplateSpec) { t.Labels["app"] = "other" },
		"image":         func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "registry.example/app:1.1" },
		"pointer value": func(t *corev1.PodTemplateSpec) { t.Spec.TerminationGracePeriodSeconds = ptr.To[int64](31) },
		"nil pointer":   func(t *corev1.PodTemplateSpec) { t.Spec.TerminationGracePeriodSeconds = nil },
		"empty vs nil":  func(t *corev1.PodTemplateSpec) { t.Spec.Volumes = []corev1.Volume{} },
	}
	for name, change := range changes {
		tmpl := fixedTemplate()
		change(tmpl)
		if got := ComputeHash(tmpl, nil); got == base {
			t.Errorf("%s: hash did not change", name)
		}
	}
	if ComputeHash(fixedTemplate(), ptr.To[int32](1)) == ComputeHash(fixedTemplate(), ptr.To[int32](2)) {
		t.Error("collision counts 1 and 2 hash equally")
	}
}

func TestSafeEncode(t *testing.T) {
	if got := SafeEncode("0123456789"); got != "456789bcdf" {
		t.Errorf("SafeEncode(digits) = %q, want %q", got, "456789bcdf")
	}
	for _, c := range ComputeHash(fixedTemplate(), nil) {
		if !strings.ContainsRune("456789bcdf", c) {
			t.Errorf("hash contains %q outside the digit image", c)
		}
	}
}

func BenchmarkComputeHash(b *testing.B) {
	tmpl := fixedTemplate()
	count := ptr.To[int32](3)
	for b.Loop() {
		ComputeHash(tmpl, count)
	}
}
