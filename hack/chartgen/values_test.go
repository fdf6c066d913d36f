package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestParameteriseWorkload puts placeholders into a small Deployment and checks the template
// that comes out, and the defaults that go into values.yaml.
func TestParameteriseWorkload(t *testing.T) {
	var deployment object
	if err := yaml.Unmarshal([]byte(`kind: Deployment
metadata:
  name: bosun-controller-manager
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: manager
        image: registry.example.com/bosun/bosun-controller-manager:latest
        args: ["--controllers=*", "--webhook-port=9876", "--v=2", "--other=kept"]
        ports:
        - name: webhook
          containerPort: 9876
        resources:
          requests: {cpu: 100m}
`), &deployment); err != nil {
		t.Fatal(err)
	}
	p := newPlaceholders()
	defaults := map[string]any{}
	if err := parameteriseWorkload(deployment, "manager", p, defaults); err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(map[string]any(deployment))
	if err != nil {
		t.Fatal(err)
	}
	got := p.expand(string(data))
	for _, want := range []string{
		"  replicas: {{ .Values.manager.replicas }}\n",
		"        - --controllers={{ .Values.manager.controllers }}\n",
		"        - --webhook-port={{ .Values.manager.webhook.port }}\n",
		"        - --v={{ .Values.manager.log.level }}\n        - --other=kept\n",
		"        {{- if .Values.featureGates }}\n        - --feature-gates={{ .Values.featureGates }}\n        {{- end }}\n",
		"        image: {{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag }}\n",
		"        - containerPort: {{ .Values.manager.webhook.port }}\n",
		"        {{- with .Values.manager.resources }}\n        resources:\n          {{- toYaml . | nindent 10 }}\n        {{- end }}\n",
		"      {{- with .Values.manager.nodeSelector }}\n      nodeSelector:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the template lacks\n%s\nin\n%s", want, got)
		}
	}
	if strings.Contains(got, "zz_chart") {
		t.Errorf("a placeholder is left in\n%s", got)
	}
	want := map[string]any{
		"featureGates": "",
		"manager": map[string]any{
			"replicas":     float64(2),
			"image":        map[string]any{"repository": "registry.example.com/bosun/bosun-controller-manager", "tag": "latest"},
			"controllers":  "*",
			"webhook":      map[string]any{"port": 9876},
			"log":          map[string]any{"level": 2},
			"resources":    map[string]any{"requests": map[string]any{"cpu": "100m"}},
			"nodeSelector": map[string]any{},
			"tolerations":  []any{},
		},
	}
	if diff := cmp.Diff(want, defaults); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestParameteriseWorkloadRefusesAFeatureGatesFlag(t *testing.T) {
	o := object{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"image": "a:b", "args": []any{"--feature-gates=X=true"}},
	}}}}}
	err := parameteriseWorkload(o, "daemon", newPlaceholders(), map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "featureGates value owns that flag") {
		t.Errorf("error = %v, want the base's --feature-gates refused", err)
	}
}
