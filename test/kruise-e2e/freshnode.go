package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// freshNodeSpecs assume a node that has not pulled their image yet, as each is on
// OpenKruise's CI cluster: the three "pull image with secret" specs pull the same image
// and read the job's copied pull secret while the pull lasts. Both versions' jobs default
// to imagePullPolicy IfNotPresent, and kruise-daemon, like bosun-daemon, then reports an
// image the node holds as pulled at once; the job completes and releases its copy before
// the spec looks for it. On one node only the first of the three could pass, so each runs
// alone on a cluster of its own, after the main run that leaves them out.
var freshNodeSpecs = []specKey{
	{file: "apps/v1alpha1/pullimages.go", text: "PullImage ImagePullJob pulling images functionality [ImagePullJob] pull image with secret"},
	{file: "apps/v1beta1/pullimages.go", text: "PullImage ImagePullJob pulling images functionality [ImagePullJob] pull image with secret and ttl cleaned"},
	{file: "apps/v1beta1/pullimages.go", text: "PullImage ImagePullJob pulling images functionality [ImagePullJob] pull image with secret and completed"},
}

// exactly is a Ginkgo focus or skip expression matching the specs whose full text ends
// with one of texts, and no spec whose text merely begins with one of them. Only the end is
// anchored: the text Ginkgo matches begins with more than the containers' and the spec's
// own texts (an anchored start matched no spec of the suite).
func exactly(texts ...string) string {
	quoted := make([]string, len(texts))
	for i, t := range texts {
		quoted[i] = regexp.QuoteMeta(t)
	}
	return "(" + strings.Join(quoted, "|") + ")$"
}

// specTexts returns the full texts of specs, each once: a v1alpha1 spec and its v1beta1
// twin share theirs.
func specTexts(specs []specKey) []string {
	var texts []string
	seen := map[string]bool{}
	for _, s := range specs {
		if !seen[s.text] {
			seen[s.text] = true
			texts = append(texts, s.text)
		}
	}
	return texts
}

var nodeImages = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "nodeimages"}

// waitForNodeImage waits until the node's NodeImage exists. bosun creates it some 30 s
// after the node registered, as kruise-manager does; OpenKruise's CI cluster has had its
// NodeImages long before its suite starts, and a pull job created before then completes
// at once with no node to pull on.
func waitForNodeImage(ctx context.Context, c *cluster.Cluster) error {
	client, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Err(); err != nil {
			return false, err
		}
		_, err := client.Resource(nodeImages).Get(ctx, c.NodeName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("waiting for NodeImage %s: %w", c.NodeName(), err)
	}
	return nil
}
