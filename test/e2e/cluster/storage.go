package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/test/e2e/cluster/hostpathprovisioner"
)

const (
	// DefaultStorageClass is the cluster's default StorageClass, named like kind's, so that
	// a claim without a class (OpenKruise's CloneSet specs make such claims) gets a volume.
	DefaultStorageClass = "standard"
	// annIsDefaultClass marks the StorageClass that the API server's DefaultStorageClass
	// admission (and the PersistentVolume controller, for older claims) gives to claims
	// that name none.
	annIsDefaultClass = "storageclass.kubernetes.io/is-default-class"

	// provisionerLogName is the provisioner's log, beside the processes' logs.
	provisionerLogName = hostpathprovisioner.ControllerName
	// provisionerVerbosity matches the node components' --v.
	provisionerVerbosity = 2
	provisionerWorkers   = 2
)

// defaultStorageClass is the class of DefaultStorageClass, served by the cluster's hostPath
// provisioner and deleted with its claim, as kind's. It binds on first consumer: the
// upstream kube-scheduler of the cluster writes the node it picks for a pod on the pod's
// unbound claims, and the PersistentVolume controller only then hands them to the
// provisioner, which makes the directory on that node. A volume made before its pod is
// placed would have to guess the node.
func defaultStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultStorageClass,
			Annotations: map[string]string{annIsDefaultClass: "true"},
		},
		Provisioner:       hostpathprovisioner.ProvisionerName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// VolumeDir holds the directories of the volumes the cluster's provisioner makes, one per
// PersistentVolume, named after it.
func (c *Cluster) VolumeDir() string { return filepath.Join(c.dir, "volumes") }

// provisioner is the hostPath provisioner running in this process for the cluster.
type provisioner struct {
	cancel      context.CancelFunc
	done        chan struct{}
	broadcaster record.EventBroadcaster
	log         *os.File
}

// startStorage creates the default StorageClass and starts the hostPath provisioner that
// serves it, in this process, logging to the cluster's log directory. It returns once the
// provisioner's caches have synced.
func (c *Cluster) startStorage(ctx context.Context) error {
	admin, err := c.Clientset()
	if err != nil {
		return err
	}
	_, err = admin.StorageV1().StorageClasses().Create(ctx, defaultStorageClass(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", DefaultStorageClass, err)
	}
	if err := os.MkdirAll(c.VolumeDir(), 0o755); err != nil {
		return err
	}

	logFile, err := os.OpenFile(c.logPath(provisionerLogName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile), textlogger.Verbosity(provisionerVerbosity)))
	// The provisioner lives as long as the cluster, not as long as Start's context.
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	p := &provisioner{cancel: cancel, done: make(chan struct{}), log: logFile}
	c.provisioner = p

	config := rest.CopyConfig(c.Config())
	config.UserAgent = hostpathprovisioner.ControllerName
	config.QPS, config.Burst = 20, 50
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		close(p.done)
		return err
	}
	p.broadcaster = record.NewBroadcaster(record.WithContext(runCtx))
	p.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := p.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: hostpathprovisioner.ControllerName})

	factory := informers.NewSharedInformerFactory(client, 0)
	core := factory.Core().V1()
	controller, err := hostpathprovisioner.NewController(runCtx, core.PersistentVolumeClaims(), core.PersistentVolumes(),
		factory.Storage().V1().StorageClasses(), core.Nodes(), client, recorder, c.VolumeDir())
	if err != nil {
		close(p.done)
		return err
	}
	factory.StartWithContext(runCtx)
	go func() {
		defer close(p.done)
		defer factory.Shutdown()
		controller.Run(runCtx, provisionerWorkers)
	}()

	for informer, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the hostPath provisioner's %v cache did not sync: %w", informer, ctx.Err())
		}
	}
	return nil
}

// stopStorage stops the provisioner and waits for it, at most until ctx ends.
func (c *Cluster) stopStorage(ctx context.Context) error {
	p := c.provisioner
	if p == nil {
		return nil
	}
	p.cancel()
	var err error
	select {
	case <-p.done:
	case <-ctx.Done():
		err = errors.New("the hostPath provisioner did not stop in time")
	}
	if p.broadcaster != nil {
		p.broadcaster.Shutdown()
	}
	if closeErr := p.log.Close(); closeErr != nil && err == nil {
		err = closeErr
	}
	return err
}
