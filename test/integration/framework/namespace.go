package framework

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

// TestNamespaceLabel marks namespaces made by CreateTestNamespace.
const TestNamespaceLabel = "bosun.dev/integration-test"

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// CreateTestNamespace creates a namespace named after the test, with a random suffix,
// plus its "default" ServiceAccount (which kube-controller-manager would create in a
// real cluster), and deletes the namespace when the test ends. Tests that share a
// control plane isolate their objects this way.
//
// No namespace controller runs, so a deleted namespace stays Terminating with its
// objects; it only stops taking new ones.
func CreateTestNamespace(t testing.TB, client kubernetes.Interface) *corev1.Namespace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   testNamespaceName(t.Name()),
		Labels: map[string]string{TestNamespaceLabel: "true"},
	}}
	ns, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a test namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting test namespace %s: %v", ns.Name, err)
		}
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the default ServiceAccount of %s: %v", ns.Name, err)
	}
	return ns
}

// testNamespaceName turns a test name into a valid, unique namespace name.
func testNamespaceName(testName string) string {
	const suffixLen = 5
	base := notDNSLabel.ReplaceAllString(strings.ToLower(testName), "-")
	// A DNS label has at most 63 characters; keep room for "-" and the suffix.
	base = strings.Trim(base[:min(len(base), 63-1-suffixLen)], "-")
	if base == "" {
		base = "test"
	}
	return base + "-" + utilrand.String(suffixLen)
}
