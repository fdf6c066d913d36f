package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// placeholders stand in the base's objects for the template expressions that replace them
// once the objects are encoded: an encoder would quote or escape the expressions themselves.
// Each placeholder is a plain YAML scalar that cannot occur in a real manifest.
type placeholders struct {
	// scalars maps a placeholder to the expression that replaces it in place.
	scalars map[string]string
	// lines maps a placeholder to a function that rewrites the whole line holding it, given
	// the line's indentation.
	lines map[string]func(indent string) string
}

func newPlaceholders() *placeholders {
	return &placeholders{scalars: map[string]string{}, lines: map[string]func(string) string{}}
}

// placeholderPattern matches the placeholders. They sort after every key of a manifest, so
// that one standing as a map key never comes first in a list item, on the line of its "- ".
var placeholderPattern = regexp.MustCompile(`zz_chart_[0-9]+_zz`)

func (p *placeholders) next() string {
	return fmt.Sprintf("zz_chart_%d_zz", len(p.scalars)+len(p.lines))
}

// scalar is a placeholder for a scalar or part of one, replaced by {{ expr }}.
func (p *placeholders) scalar(expr string) string {
	token := p.next()
	p.scalars[token] = "{{ " + expr + " }}"
	return token
}

// value records def as the default of the value at path (dotted, under .Values) and returns
// the placeholder for it.
func (p *placeholders) value(defaults map[string]any, path string, def any) string {
	setDefault(defaults, path, def)
	return p.scalar(".Values." + path)
}

// optionalBlock is a map key whose line becomes `key:` followed by expr as YAML, or nothing
// when expr is empty.
func (p *placeholders) optionalBlock(key, expr string) string {
	token := p.next()
	p.lines[token] = func(indent string) string {
		return fmt.Sprintf("%[1]s{{- with %[2]s }}\n%[1]s%[3]s:\n%[1]s  {{- toYaml . | nindent %[4]d }}\n%[1]s{{- end }}",
			indent, expr, key, len(indent)+2)
	}
	return token
}

// optionalArg is a list item whose line becomes `- <flag>=<expr>`, or nothing when expr is
// empty.
func (p *placeholders) optionalArg(flag, expr string) string {
	token := p.next()
	p.lines[token] = func(indent string) string {
		return fmt.Sprintf("%[1]s{{- if %[2]s }}\n%[1]s- %[3]s={{ %[2]s }}\n%[1]s{{- end }}", indent, expr, flag)
	}
	return token
}

// expand replaces the placeholders of encoded YAML by their expressions.
func (p *placeholders) expand(text string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		for _, token := range placeholderPattern.FindAllString(line, -1) {
			if rewrite, ok := p.lines[token]; ok {
				indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
				line = rewrite(indent)
				break
			}
			line = strings.ReplaceAll(line, token, p.scalars[token])
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

// parameteriseWorkload puts placeholders into the pod template of the manager's Deployment or
// the daemon's DaemonSet, at the fields values set, and records the base's settings of those
// fields as the values' defaults under component ("manager" or "daemon").
func parameteriseWorkload(o object, component string, p *placeholders, defaults map[string]any) error {
	spec, _ := o["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	podSpec, _ := template["spec"].(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	if len(containers) != 1 {
		return fmt.Errorf("want one container, found %d", len(containers))
	}
	container, _ := containers[0].(map[string]any)
	values := ".Values." + component

	if component == "manager" {
		spec["replicas"] = p.value(defaults, "manager.replicas", spec["replicas"])
	}

	image, _ := container["image"].(string)
	at := strings.LastIndex(image, ":")
	if at < 0 || strings.Contains(image[at:], "/") {
		return fmt.Errorf("image %q has no tag", image)
	}
	container["image"] = p.value(defaults, component+".image.repository", image[:at]) + ":" +
		p.value(defaults, component+".image.tag", image[at+1:])

	args, _ := container["args"].([]any)
	for i, a := range args {
		arg, _ := a.(string)
		flag, value, _ := strings.Cut(arg, "=")
		var key string
		switch {
		case flag == "--v":
			key = "log.level"
		case flag == "--controllers" && component == "manager":
			key = "controllers"
		case flag == "--webhook-port" && component == "manager":
			key = "webhook.port"
		case flag == "--feature-gates":
			return fmt.Errorf("the base sets %s; the chart's featureGates value owns that flag", arg)
		default:
			continue
		}
		args[i] = flag + "=" + p.value(defaults, component+"."+key, typed(value))
	}
	// OpenKruise's chart has one featureGates value for its manager; bosun's agent has gates
	// of its own, so it gets daemon.featureGates.
	gates := ".Values.featureGates"
	if component == "daemon" {
		gates = ".Values.daemon.featureGates"
		setDefault(defaults, "daemon.featureGates", "")
	} else {
		setDefault(defaults, "featureGates", "")
	}
	container["args"] = append(args, p.optionalArg("--feature-gates", gates))

	if component == "manager" {
		ports, _ := container["ports"].([]any)
		for _, port := range ports {
			port, _ := port.(map[string]any)
			if port["name"] == "webhook" {
				port["containerPort"] = p.scalar(values + ".webhook.port")
			}
		}
	}

	if component == "daemon" {
		if err := parameteriseSocketLocation(podSpec, p, defaults); err != nil {
			return err
		}
	}
	moveToValues(container, "resources", map[string]any{}, component, p, defaults)
	moveToValues(podSpec, "nodeSelector", map[string]any{}, component, p, defaults)
	moveToValues(podSpec, "tolerations", []any{}, component, p, defaults)
	return nil
}

// parameteriseSocketLocation makes the host directory mounted for the runtime's socket the
// value daemon.socketLocation, as OpenKruise's chart has it for kruise-daemon.
func parameteriseSocketLocation(podSpec map[string]any, p *placeholders, defaults map[string]any) error {
	volumes, _ := podSpec["volumes"].([]any)
	for _, v := range volumes {
		volume, _ := v.(map[string]any)
		hostPath, _ := volume["hostPath"].(map[string]any)
		if volume["name"] != "runtime-sockets" || hostPath == nil {
			continue
		}
		hostPath["path"] = p.value(defaults, "daemon.socketLocation", hostPath["path"])
		return nil
	}
	return fmt.Errorf("no hostPath volume runtime-sockets for the runtime's socket")
}

// moveToValues replaces a block field of parent by a placeholder for the value
// <component>.<key>, whose default is the base's setting (empty when the base has none).
func moveToValues(parent map[string]any, key string, empty any, component string, p *placeholders, defaults map[string]any) {
	value, ok := parent[key]
	if !ok || value == nil {
		value = empty
	}
	setDefault(defaults, component+"."+key, value)
	delete(parent, key)
	parent[p.optionalBlock(key, ".Values."+component+"."+key)] = nil
}

// typed turns a flag's value into the YAML type a user would write: numbers as numbers.
func typed(value string) any {
	if n, err := strconv.Atoi(value); err == nil {
		return n
	}
	return value
}

// setDefault sets the value at a dotted path of defaults.
func setDefault(defaults map[string]any, path string, value any) {
	keys := strings.Split(path, ".")
	m := defaults
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
}

// valuesTemplate is values.yaml: the documentation of every value, with the base's settings
// as the defaults.
var valuesTemplate = template.Must(template.New("values.yaml").Funcs(template.FuncMap{"yaml": yamlAt}).Parse(
	`# Generated by hack/update-chart.sh from config/default. Do not edit.
# The values of the bosun chart. Their defaults are the settings of config/default, so that
# ` + "`helm template`" + ` with no values renders what ` + "`kubectl kustomize config/default`" + ` does.

installation:
  # The namespace of both binaries, the webhook Service and the Secret of the webhook
  # certificate.
  namespace: bosun-system
  # Create the namespace (false when it exists already).
  createNamespace: true

crds:
  # Install and upgrade bosun's CRDs with the chart. Leave it true: the CRDs change between
  # releases, and bosun's controllers need the served versions of their release.
  managed: true

# Feature gates of bosun-controller-manager (--feature-gates), for example
# "CloneSetShortHash=true,PodUnavailableBudgetUpdateGate=true".
featureGates:{{ yaml . "featureGates" 0 }}

manager:
  # Replicas of bosun-controller-manager: one leads (Lease <namespace>/bosun-controller-manager),
  # every ready replica serves the webhooks.
  replicas:{{ yaml . "manager.replicas" 2 }}
  image:
    repository:{{ yaml . "manager.image.repository" 4 }}
    tag:{{ yaml . "manager.image.tag" 4 }}
  # The controllers to run (--controllers): "*" for all of them, "-name" to leave one out. The
  # upstream ones (replicaset, deployment, garbagecollector) are left to the control plane's
  # kube-controller-manager.
  controllers:{{ yaml . "manager.controllers" 2 }}
  log:
    # Log verbosity (--v).
    level:{{ yaml . "manager.log.level" 4 }}
  webhook:
    # The port the webhooks listen on inside the pod (--webhook-port); the Service listens on 443.
    port:{{ yaml . "manager.webhook.port" 4 }}
  resources:{{ yaml . "manager.resources" 2 }}
  nodeSelector:{{ yaml . "manager.nodeSelector" 2 }}
  tolerations:{{ yaml . "manager.tolerations" 2 }}

daemon:
  image:
    repository:{{ yaml . "daemon.image.repository" 4 }}
    tag:{{ yaml . "daemon.image.tag" 4 }}
  # The host directory searched for the container runtime's socket (containerd, CRI-O or
  # cri-dockerd), mounted into the agent's pod.
  socketLocation:{{ yaml . "daemon.socketLocation" 2 }}
  # Feature gates of bosun-daemon (--feature-gates).
  featureGates:{{ yaml . "daemon.featureGates" 2 }}
  log:
    # Log verbosity (--v).
    level:{{ yaml . "daemon.log.level" 4 }}
  resources:{{ yaml . "daemon.resources" 2 }}
  # The nodes that run bosun-daemon; every node by default.
  nodeSelector:{{ yaml . "daemon.nodeSelector" 2 }}
  tolerations:{{ yaml . "daemon.tolerations" 2 }}
`))

// yamlAt encodes the default at path for a line of values.yaml whose key is indented by
// indent: scalars and empty collections in place, others as an indented block.
func yamlAt(defaults map[string]any, path string, indent int) (string, error) {
	var value any = defaults
	for _, k := range strings.Split(path, ".") {
		m, ok := value.(map[string]any)
		if !ok {
			return "", fmt.Errorf("no default for %s", path)
		}
		if value, ok = m[k]; !ok {
			return "", fmt.Errorf("no default for %s", path)
		}
	}
	data, err := yaml.Marshal(value)
	if err != nil {
		return "", err
	}
	text := strings.TrimSuffix(string(data), "\n")
	if !strings.Contains(text, "\n") && !strings.HasPrefix(text, "- ") && !strings.Contains(text, ": ") {
		return " " + text, nil
	}
	pad := strings.Repeat(" ", indent+2)
	return "\n" + pad + strings.ReplaceAll(text, "\n", "\n"+pad), nil
}

func renderValues(defaults map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	if err := valuesTemplate.Execute(&buf, defaults); err != nil {
		return nil, fmt.Errorf("writing values.yaml: %w", err)
	}
	return buf.Bytes(), nil
}
