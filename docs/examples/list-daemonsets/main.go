// Command list-daemonsets lists Advanced DaemonSets (apps.kruise.io/v1alpha1) with bosun's
// generated clientset, the way any Go program outside the bosun repository would.
//
//	go run . --kubeconfig ~/.kube/config --namespace kube-system
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	bosunclient "github.com/bosun-dev/client-go/clientset/versioned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path of the kubeconfig file")
	namespace := flag.String("namespace", "", "namespace to list; all namespaces when empty")
	flag.Parse()

	if err := run(context.Background(), *kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "list-daemonsets:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	client, err := bosunclient.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating the bosun clientset: %w", err)
	}
	list, err := client.AppsV1alpha1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing DaemonSets: %w", err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tUPDATE STRATEGY\tDESIRED\tREADY")
	for _, ds := range list.Items {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\n", ds.Namespace, ds.Name, ds.Spec.UpdateStrategy.Type,
			ds.Status.DesiredNumberScheduled, ds.Status.NumberReady)
	}
	return w.Flush()
}
