package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/bosun-dev/bosun/test/integration/framework"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// bosunConvertURL is where the shipped CRDs send conversions: the manager beside the API
// server, on --webhook-port's default.
const bosunConvertURL = "https://127.0.0.1:9876/convert"

// kubectl runs kubectl as the admin, the way the documentation tells a user to, and
// returns its output.
func (e *env) kubectl(ctx context.Context, args ...string) (string, error) {
	binary, err := framework.ToolPath("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, binary, append([]string{"--kubeconfig=" + e.c.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// keepCRDs annotates the CRDs bosun takes over helm.sh/resource-policy=keep, so that
// uninstalling OpenKruise's chart leaves them and their objects.
func (e *env) keepCRDs(ctx context.Context) error {
	args := []string{"annotate", "--overwrite", "crd"}
	for _, k := range takenOverKinds {
		args = append(args, k.crdName())
	}
	_, err := e.kubectl(ctx, append(args, "helm.sh/resource-policy=keep")...)
	return err
}

// applyBosunCRDs applies bosun's CRDs over OpenKruise's, server-side, taking over the
// fields OpenKruise's installer and manager own. dryRun asks the API server only.
func (e *env) applyBosunCRDs(ctx context.Context, root string, dryRun bool) (string, error) {
	args := []string{"apply", "--server-side", "--force-conflicts", "-k", filepath.Join(root, "config", "crd")}
	if dryRun {
		args = append(args, "--dry-run=server")
	}
	return e.kubectl(ctx, args...)
}

// kruiseWebhookService is where the conversion webhooks of an OpenKruise installed in the
// cluster (its Helm chart, its config/default) send the API server.
var kruiseWebhookService = map[string]any{"namespace": "kruise-system", "name": "kruise-webhook-service", "path": "/convert", "port": int64(443)}

// convertingCRDs returns the names of the seven CRDs that convert through a webhook.
func (e *env) convertingCRDs(ctx context.Context) ([]string, error) {
	var names []string
	for _, k := range takenOverKinds {
		crd, err := e.dyn.Resource(crdResource).Get(ctx, k.crdName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); strategy == "Webhook" {
			names = append(names, k.crdName())
		}
	}
	return names, nil
}

// pointConversionAtKruiseService leaves the converting CRDs as an OpenKruise running in the
// cluster leaves them: their conversion webhook names OpenKruise's Service (the CA
// kruise-manager wrote stays), written by Helm. kruise-manager runs outside the cluster
// here and wrote its loopback URL instead; a user's CRDs name the Service, and a
// server-side apply of bosun's URL cannot remove a Service that another manager owns.
func (e *env) pointConversionAtKruiseService(ctx context.Context) error {
	names, err := e.convertingCRDs(ctx)
	if err != nil {
		return err
	}
	crds := e.dyn.Resource(crdResource)
	for _, name := range names {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			config, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig")
			delete(config, "url")
			config["service"] = kruiseWebhookService
			if err := unstructured.SetNestedMap(crd.Object, config, "spec", "conversion", "webhook", "clientConfig"); err != nil {
				return err
			}
			_, err = crds.Update(ctx, crd, metav1.UpdateOptions{FieldManager: "helm"})
			return err
		})
		if err != nil {
			return fmt.Errorf("pointing the conversion of CRD %s at OpenKruise's Service: %w", name, err)
		}
	}
	return nil
}

// pointConversionAtBosun is the documented step before the apply: the converting CRDs'
// webhook clientConfig becomes bosun's URL, the Service removed in the same patch.
func (e *env) pointConversionAtBosun(ctx context.Context) error {
	names, err := e.convertingCRDs(ctx)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"service":null,"url":%q}}}}}`, bosunConvertURL)
	_, err = e.kubectl(ctx, append(append([]string{"patch", "crd"}, names...), "--type=merge", "-p", patch)...)
	return err
}

// checkCRDsHandedOver checks what the user's steps and bosun's start must have made of
// the seven CRDs: bosun's (its label), still kept by Helm, and, for those that convert
// through a webhook, converting through bosun's /convert with a CA bundle.
func (e *env) checkCRDsHandedOver(ctx context.Context) error {
	for _, k := range takenOverKinds {
		crd, err := e.dyn.Resource(crdResource).Get(ctx, k.crdName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		var problems []string
		if crd.GetLabels()["app.kubernetes.io/managed-by"] != "bosun" {
			problems = append(problems, "not labelled app.kubernetes.io/managed-by=bosun")
		}
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			problems = append(problems, "lost its annotation helm.sh/resource-policy=keep")
		}
		strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		if strategy == "Webhook" {
			url, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url")
			ca, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
			_, service, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service")
			if url != bosunConvertURL || ca == "" || service {
				problems = append(problems, fmt.Sprintf("converts through %v, want %s with a CA bundle",
					crd.Object["spec"].(map[string]any)["conversion"], bosunConvertURL))
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("CRD %s: %s", k.crdName(), strings.Join(problems, "; "))
		}
	}
	return nil
}
