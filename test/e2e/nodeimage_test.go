package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/bosun-dev/api/apps/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/e2e/cluster"
)

// pullTimeout bounds one pull from the loopback registry, the NodeImage's creation (30 s
// after the node turned Ready) and the agent's status write.
const pullTimeout = 2 * time.Minute

// privateWebserverName and slowWebserverName are the web server's repository in the
// private registry and through the slow proxy in front of it, as a NodeImage names images:
// no tag.
var (
	privateWebserverName = strings.TrimSuffix(cluster.PrivateWebserverImage("v1"), ":v1")
	slowWebserverName    = strings.TrimSuffix(cluster.SlowWebserverImage("v1"), ":v1")
)

// imageService connects to the node's container runtime's image service over CRI.
func imageService(t *testing.T) runtimeapi.ImageServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(requireCluster(t).RuntimeEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("connecting to the container runtime: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewImageServiceClient(conn)
}

// removeImage removes image from the node, so that the test sees a real pull.
func removeImage(t *testing.T, images runtimeapi.ImageServiceClient, image string) {
	t.Helper()
	_, err := images.RemoveImage(testContext(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatalf("removing %s from the node: %v", image, err)
	}
}

// imagePresent reports whether the node's runtime has image.
func imagePresent(ctx context.Context, images runtimeapi.ImageServiceClient, image string) (bool, error) {
	status, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return false, err
	}
	return status.Image != nil, nil
}

// registrySecret is a kubernetes.io/dockerconfigjson Secret for the private registry,
// directly and through the slow proxy.
func registrySecret(t *testing.T, namespace, name, password string) *corev1.Secret {
	t.Helper()
	auth := map[string]string{
		"username": cluster.PrivateRegistryUser, "password": password,
		"auth": base64.StdEncoding.EncodeToString([]byte(cluster.PrivateRegistryUser + ":" + password)),
	}
	config, err := json.Marshal(map[string]any{"auths": map[string]any{cluster.PrivateRegistryHost: auth, cluster.SlowRegistryHost: auth}})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := clientset(t).CoreV1().Secrets(namespace).Create(testContext(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: config},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset(t).CoreV1().Secrets(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return secret
}

// nodeImage waits for the node's NodeImage, which the manager creates once the node has
// been Ready for a while.
func nodeImage(t *testing.T) *appsv1alpha1.NodeImage {
	t.Helper()
	c, bosun := requireCluster(t), bosunClientset(t)
	var ni *appsv1alpha1.NodeImage
	waitFor(t, pullTimeout, "the NodeImage of node "+c.NodeName(), func(ctx context.Context) (bool, error) {
		got, err := bosun.AppsV1alpha1().NodeImages().Get(ctx, c.NodeName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		ni = got
		return err == nil, err
	})
	return ni
}

// requestPull adds a tag of image (a repository name, no tag) to the node's NodeImage,
// pulled with secret, and removes the image entry again when the test ends.
func requestPull(t *testing.T, image, secret, tag string, backoffLimit int32) {
	t.Helper()
	bosun := bosunClientset(t)
	name := nodeImage(t).Name
	update := func(ctx context.Context, change func(*appsv1alpha1.NodeImage)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ni, err := bosun.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(ni)
			_, err = bosun.AppsV1alpha1().NodeImages().Update(ctx, ni, metav1.UpdateOptions{})
			return err
		})
	}
	err := update(testContext(t), func(ni *appsv1alpha1.NodeImage) {
		if ni.Spec.Images == nil {
			ni.Spec.Images = map[string]appsv1alpha1.ImageSpec{}
		}
		ni.Spec.Images[image] = appsv1alpha1.ImageSpec{
			PullSecrets: []appsv1alpha1.ReferenceObject{{Namespace: appsv1alpha1.DefaultImagePullSecretNamespace, Name: secret}},
			Tags: []appsv1alpha1.ImageTagSpec{{
				Tag:             tag,
				ImagePullPolicy: appsv1alpha1.PullAlways,
				PullPolicy: &appsv1alpha1.ImageTagPullPolicy{
					TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To(backoffLimit), TTLSecondsAfterFinished: ptr.To[int32](600),
				},
			}},
		}
	})
	if err != nil {
		t.Fatalf("adding %s:%s to NodeImage %s: %v", image, tag, name, err)
	}
	t.Cleanup(func() {
		if err := update(context.Background(), func(ni *appsv1alpha1.NodeImage) { delete(ni.Spec.Images, image) }); err != nil {
			t.Logf("removing %s from NodeImage %s: %v", image, name, err)
		}
	})
}

// waitForTag waits until the NodeImage reports tag of image finished and returns its
// status.
func waitForTag(t *testing.T, image, tag string) appsv1alpha1.ImageTagStatus {
	t.Helper()
	bosun := bosunClientset(t)
	name := nodeImage(t).Name
	var status appsv1alpha1.ImageTagStatus
	waitFor(t, pullTimeout, fmt.Sprintf("NodeImage %s to report %s:%s finished", name, image, tag), func(ctx context.Context) (bool, error) {
		ni, err := bosun.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range ni.Status.ImageStatuses[image].Tags {
			if s.Tag == tag && s.CompletionTime != nil {
				status = s
				return true, nil
			}
		}
		return false, nil
	})
	return status
}

// A NodeImage tag of the private registry, with a dockerconfigjson pull secret (htpasswd
// account) in kruise-daemon-config, is pulled by bosun-daemon through containerd.
func TestNodeImagePullsFromThePrivateRegistry(t *testing.T) {
	requireCluster(t)
	images := imageService(t)
	image := cluster.PrivateWebserverImage("v2")
	removeImage(t, images, image)
	secret := registrySecret(t, appsv1alpha1.DefaultImagePullSecretNamespace, "e2e-registry", cluster.PrivateRegistryPassword)

	requestPull(t, privateWebserverName, secret.Name, "v2", 0)
	status := waitForTag(t, privateWebserverName, "v2")
	if status.Phase != appsv1alpha1.ImagePhaseSucceeded || !strings.HasPrefix(status.ImageID, privateWebserverName+"@") || status.Progress != 100 {
		t.Fatalf("tag v2: %+v", status)
	}
	present, err := imagePresent(testContext(t), images, image)
	if err != nil || !present {
		t.Errorf("containerd does not have %s after the pull (%v)", image, err)
	}
	events, err := clientset(t).CoreV1().Events(metav1.NamespaceDefault).List(testContext(t), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=NodeImage,reason=PullImageSucceed",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Error("no PullImageSucceed event on the NodeImage")
	}
}

// A wrong password fails the pull with the registry's own answer.
func TestNodeImageWrongPasswordFails(t *testing.T) {
	requireCluster(t)
	removeImage(t, imageService(t), cluster.PrivateWebserverImage("v3"))
	secret := registrySecret(t, appsv1alpha1.DefaultImagePullSecretNamespace, "e2e-wrong-password", "not-the-password")

	requestPull(t, privateWebserverName, secret.Name, "v3", 0)
	status := waitForTag(t, privateWebserverName, "v3")
	if status.Phase != appsv1alpha1.ImagePhaseFailed || !strings.Contains(strings.ToLower(status.Message), "unauthorized") {
		t.Fatalf("tag v3 with a wrong password: %+v; want Failed with the registry's unauthorized answer", status)
	}
}

// An ImagePullJob pre-pulls an image of the private registry onto the node, with a pull
// secret of its own namespace (copied to kruise-daemon-config), and completes.
func TestImagePullJobPrePullsOntoTheNode(t *testing.T) {
	c := requireCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t)
	bosun := bosunClientset(t)
	images := imageService(t)
	image := cluster.PrivateWebserverImage("v1")
	removeImage(t, images, image)
	nodeImage(t)
	secret := registrySecret(t, ns, "registry", cluster.PrivateRegistryPassword)

	job := &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "prepull"},
		Spec: appsv1alpha1.ImagePullJobSpec{
			Image: image,
			ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				PullSecrets:     []string{secret.Name},
				Selector:        &appsv1alpha1.ImagePullJobNodeSelector{Names: []string{c.NodeName()}},
				Parallelism:     ptr.To(intstr.FromInt32(1)),
				ImagePullPolicy: appsv1alpha1.PullAlways,
				CompletionPolicy: appsv1alpha1.CompletionPolicy{
					Type: appsv1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](600), TTLSecondsAfterFinished: ptr.To[int32](600),
				},
			},
		},
	}
	if _, err := bosun.AppsV1alpha1().ImagePullJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *appsv1alpha1.ImagePullJob
	waitFor(t, pullTimeout, "ImagePullJob prepull to complete", func(ctx context.Context) (bool, error) {
		j, err := bosun.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = j
		return j.Status.CompletionTime != nil, nil
	})
	if got.Status.Desired != 1 || got.Status.Succeeded != 1 || got.Status.Failed != 0 || got.Status.Message != "job has completed" {
		t.Fatalf("ImagePullJob status %+v", got.Status)
	}
	present, err := imagePresent(ctx, images, image)
	if err != nil || !present {
		t.Errorf("containerd does not have %s after the job (%v)", image, err)
	}
}

// While a multi-megabyte image comes through a slow registry, the NodeImage's tag reports
// how far the pull has got: Pulling with a progress between 0 and 100, read from
// containerd's content store, before Succeeded with 100 (OpenKruise's NodeImage stays at 0
// until the end).
func TestNodeImageReportsPullProgress(t *testing.T) {
	requireCluster(t)
	images := imageService(t)
	image := cluster.SlowWebserverImage(cluster.LargeWebserverTag)
	removeImage(t, images, image)
	secret := registrySecret(t, appsv1alpha1.DefaultImagePullSecretNamespace, "e2e-slow-registry", cluster.PrivateRegistryPassword)
	bosun := bosunClientset(t)
	name := nodeImage(t).Name

	requestPull(t, slowWebserverName, secret.Name, cluster.LargeWebserverTag, 0)
	// Every status the tag shows, as often as the test can look.
	var seen []appsv1alpha1.ImageTagStatus
	waitFor(t, pullTimeout, fmt.Sprintf("NodeImage %s to report %s finished", name, image), func(ctx context.Context) (bool, error) {
		ni, err := bosun.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		status := findTagStatus(ni.Status.ImageStatuses[slowWebserverName].Tags, cluster.LargeWebserverTag)
		if status == nil {
			return false, nil
		}
		if len(seen) == 0 || seen[len(seen)-1].Phase != status.Phase || seen[len(seen)-1].Progress != status.Progress {
			seen = append(seen, *status)
		}
		return status.CompletionTime != nil, nil
	})

	var steps []string
	pullingBetween := false
	for i, s := range seen {
		steps = append(steps, fmt.Sprintf("%s %d%%", s.Phase, s.Progress))
		if s.Phase == appsv1alpha1.ImagePhasePulling && s.Progress > 0 && s.Progress < 100 {
			pullingBetween = true
		}
		if i > 0 && s.Progress < seen[i-1].Progress {
			t.Errorf("progress went down from %d to %d", seen[i-1].Progress, s.Progress)
		}
	}
	t.Logf("tag %s went: %s", cluster.LargeWebserverTag, strings.Join(steps, ", "))
	final := seen[len(seen)-1]
	if final.Phase != appsv1alpha1.ImagePhaseSucceeded || final.Progress != 100 || !strings.HasPrefix(final.ImageID, slowWebserverName+"@") {
		t.Fatalf("final status %+v", final)
	}
	if !pullingBetween {
		t.Errorf("no status Pulling with a progress between 0 and 100 before Succeeded: %s", strings.Join(steps, ", "))
	}
	present, err := imagePresent(testContext(t), images, image)
	if err != nil || !present {
		t.Errorf("containerd does not have %s after the pull (%v)", image, err)
	}
}

// findTagStatus returns the status of tag among statuses, or nil.
func findTagStatus(statuses []appsv1alpha1.ImageTagStatus, tag string) *appsv1alpha1.ImageTagStatus {
	for i := range statuses {
		if statuses[i].Tag == tag {
			return &statuses[i]
		}
	}
	return nil
}
