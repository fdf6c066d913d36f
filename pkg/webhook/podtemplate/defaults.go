package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/bosun-dev/bosun/pkg/controller/imageref"
)

const (
	// defaultProbeTimeoutSeconds, defaultProbePeriodSeconds, defaultProbeSuccessThreshold
	// and defaultProbeFailureThreshold are a probe's timings when unset.
	defaultProbeTimeoutSeconds   = 1
	defaultProbePeriodSeconds    = 10
	defaultProbeSuccessThreshold = 1
	defaultProbeFailureThreshold = 3
	// defaultTokenExpirationSeconds is a projected service account token's lifetime when
	// unset: one hour.
	defaultTokenExpirationSeconds int64 = 3600
	// fieldRefAPIVersion is the version a fieldRef reads the pod in when it names none.
	fieldRefAPIVersion = "v1"
	// quantityScale is the scale quantities are rounded up to: milli-units.
	quantityScale = resource.Milli
)

// SetDefaults writes the core defaults into a pod template's spec, in place:
//
//   - the pod: dnsPolicy ClusterFirst, restartPolicy Always, securityContext {},
//     terminationGracePeriodSeconds 30, schedulerName default-scheduler, overhead rounded;
//   - each volume: emptyDir {} when it names no source; hostPath type ""; defaultMode 0644
//     for secret, configMap, downwardAPI and projected sources; fieldRef apiVersion v1 in
//     downwardAPI items; a projected token's expirationSeconds 3600;
//   - each container: imagePullPolicy Always, then each init container: imagePullPolicy
//     Always for an image tagged "latest" or neither tagged nor pinned by digest,
//     IfNotPresent otherwise (an image that does not parse included); for both,
//     terminationMessagePath /dev/termination-log and terminationMessagePolicy File;
//   - each container of all three kinds (ephemeral ones too): port protocol TCP, env
//     fieldRef apiVersion v1, resource limits and requests rounded up to milli-units, probe
//     timings (timeout 1 s, period 10 s, success 1, failure 3), and path "/" and scheme HTTP
//     of the httpGet of probes and lifecycle handlers.
//
// Host ports are not filled in for hostNetwork pods: OpenKruise does that only under a gate
// of its own, off by default, and upstream no longer does it for templates.
func SetDefaults(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		setVolumeDefaults(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = pullPolicyForTag(c.Image)
		}
		setContainerDefaults(c)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		// Always, whatever the tag: an in-place update changes the image of a running pod,
		// and a new image under an old tag must still be pulled.
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullAlways
		}
		setContainerDefaults(c)
	}
	for i := range spec.EphemeralContainers {
		common := &spec.EphemeralContainers[i].EphemeralContainerCommon
		setCommonContainerDefaults(&common.Ports, common.Env, &common.Resources,
			[]*corev1.Probe{common.LivenessProbe, common.ReadinessProbe, common.StartupProbe}, common.Lifecycle)
	}
	roundUp(spec.Overhead)
}

// SetClaimDefaults writes the core defaults into a volume claim template, in place: phase
// Pending, and its requested, limited and reported quantities rounded up to milli-units.
// The volume mode is not filled in, as OpenKruise does not.
func SetClaimDefaults(claim *corev1.PersistentVolumeClaim) {
	if claim.Status.Phase == "" {
		claim.Status.Phase = corev1.ClaimPending
	}
	roundUp(claim.Spec.Resources.Limits)
	roundUp(claim.Spec.Resources.Requests)
	roundUp(claim.Status.Capacity)
}

// pullPolicyForTag is the pull policy of a container that names none: Always for the
// "latest" tag, which moves, and for an image that names no tag and no digest, which means
// "latest"; IfNotPresent otherwise, an image that does not parse included.
func pullPolicyForTag(image string) corev1.PullPolicy {
	ref, err := imageref.Parse(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	if ref.Tag == imageref.DefaultTag || (ref.Tag == "" && ref.Digest == "") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// setContainerDefaults writes the defaults of an init or regular container whose pull
// policy is already decided.
func setContainerDefaults(c *corev1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	setCommonContainerDefaults(&c.Ports, c.Env, &c.Resources,
		[]*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe}, c.Lifecycle)
}

// setCommonContainerDefaults writes the defaults every kind of container gets, ephemeral
// ones included.
func setCommonContainerDefaults(ports *[]corev1.ContainerPort, env []corev1.EnvVar, resources *corev1.ResourceRequirements,
	probes []*corev1.Probe, lifecycle *corev1.Lifecycle) {
	for i := range *ports {
		if (*ports)[i].Protocol == "" {
			(*ports)[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range env {
		if from := env[i].ValueFrom; from != nil {
			setFieldRefDefaults(from.FieldRef)
		}
	}
	roundUp(resources.Limits)
	roundUp(resources.Requests)
	for _, probe := range probes {
		if probe != nil {
			setProbeDefaults(probe)
		}
	}
	if lifecycle != nil {
		for _, handler := range []*corev1.LifecycleHandler{lifecycle.PostStart, lifecycle.PreStop} {
			if handler != nil {
				setHTTPGetDefaults(handler.HTTPGet)
			}
		}
	}
}

func setProbeDefaults(probe *corev1.Probe) {
	if probe.TimeoutSeconds == 0 {
		probe.TimeoutSeconds = defaultProbeTimeoutSeconds
	}
	if probe.PeriodSeconds == 0 {
		probe.PeriodSeconds = defaultProbePeriodSeconds
	}
	if probe.SuccessThreshold == 0 {
		probe.SuccessThreshold = defaultProbeSuccessThreshold
	}
	if probe.FailureThreshold == 0 {
		probe.FailureThreshold = defaultProbeFailureThreshold
	}
	setHTTPGetDefaults(probe.HTTPGet)
}

func setHTTPGetDefaults(get *corev1.HTTPGetAction) {
	if get == nil {
		return
	}
	if get.Path == "" {
		get.Path = "/"
	}
	if get.Scheme == "" {
		get.Scheme = corev1.URISchemeHTTP
	}
}

func setFieldRefDefaults(ref *corev1.ObjectFieldSelector) {
	if ref != nil && ref.APIVersion == "" {
		ref.APIVersion = fieldRefAPIVersion
	}
}

func setVolumeDefaults(v *corev1.Volume) {
	source := &v.VolumeSource
	if ptr.AllPtrFieldsNil(source) {
		source.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if hostPath := source.HostPath; hostPath != nil && hostPath.Type == nil {
		hostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if secret := source.Secret; secret != nil && secret.DefaultMode == nil {
		secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if configMap := source.ConfigMap; configMap != nil && configMap.DefaultMode == nil {
		configMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if downward := source.DownwardAPI; downward != nil {
		if downward.DefaultMode == nil {
			downward.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range downward.Items {
			setFieldRefDefaults(downward.Items[i].FieldRef)
		}
	}
	if projected := source.Projected; projected != nil {
		if projected.DefaultMode == nil {
			projected.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range projected.Sources {
			s := &projected.Sources[i]
			if s.DownwardAPI != nil {
				for j := range s.DownwardAPI.Items {
					setFieldRefDefaults(s.DownwardAPI.Items[j].FieldRef)
				}
			}
			if token := s.ServiceAccountToken; token != nil && token.ExpirationSeconds == nil {
				token.ExpirationSeconds = ptr.To(defaultTokenExpirationSeconds)
			}
		}
	}
}

// roundUp rounds every quantity of list up to milli-units, as the API server rounds those
// of the pods and claims made from the template.
func roundUp(list corev1.ResourceList) {
	for name, quantity := range list {
		quantity.RoundUp(quantityScale)
		list[name] = quantity
	}
}
