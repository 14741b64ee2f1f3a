package kubeapi

import (
	"encoding/json"
	"time"
)

// The few fields of Kubernetes objects bench reads and writes (batch/v1
// Job, v1 Pod, v1 ConfigMap), as their JSON.

type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	GenerateName      string            `json:"generateName,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp *time.Time        `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	Finalizers        []string          `json:"finalizers,omitempty"`
}

type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

type ListMeta struct {
	ResourceVersion string `json:"resourceVersion"`
	Continue        string `json:"continue,omitempty"`
}

// Job is a batch/v1 Job.
type Job struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       JobSpec    `json:"spec"`
	Status     JobStatus  `json:"status"`
}

// JobSpec is a Job's spec.
type JobSpec struct {
	Parallelism             *int32            `json:"parallelism,omitempty"`
	Completions             *int32            `json:"completions,omitempty"`
	CompletionMode          string            `json:"completionMode,omitempty"`
	BackoffLimit            *int32            `json:"backoffLimit,omitempty"`
	BackoffLimitPerIndex    *int32            `json:"backoffLimitPerIndex,omitempty"`
	ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds,omitempty"`
	TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished,omitempty"`
	Suspend                 *bool             `json:"suspend,omitempty"`
	PodFailurePolicy        *PodFailurePolicy `json:"podFailurePolicy,omitempty"`
	PodReplacementPolicy    string            `json:"podReplacementPolicy,omitempty"`
	Selector                *struct {
		MatchLabels map[string]string `json:"matchLabels,omitempty"`
	} `json:"selector,omitempty"`
	Template PodTemplate `json:"template"`
}

// PodFailurePolicy is a Job's pod failure policy.
type PodFailurePolicy struct {
	Rules []PodFailurePolicyRule `json:"rules"`
}

// PodFailurePolicyRule is one rule of it.
type PodFailurePolicyRule struct {
	Action          string `json:"action"`
	OnExitCodes     any    `json:"onExitCodes,omitempty"`
	OnPodConditions []struct {
		Type   string `json:"type"`
		Status string `json:"status,omitempty"`
	} `json:"onPodConditions,omitempty"`
}

// JobStatus is a Job's status.
type JobStatus struct {
	Conditions     []Condition `json:"conditions,omitempty"`
	StartTime      *time.Time  `json:"startTime,omitempty"`
	CompletionTime *time.Time  `json:"completionTime,omitempty"`
	Active         int32       `json:"active,omitempty"`
	Succeeded      int32       `json:"succeeded,omitempty"`
	Failed         int32       `json:"failed,omitempty"`
	Ready          *int32      `json:"ready,omitempty"`
	Terminating    *int32      `json:"terminating,omitempty"`
}

// Condition is a Job's or a Pod's FindCondition.
type Condition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	LastProbeTime      *time.Time `json:"lastProbeTime,omitempty"`
}

// PodTemplate is a Job's pod template.
type PodTemplate struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
}

// Pod is a v1 Pod.
type Pod struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
	Status     PodStatus  `json:"status"`
}

// PodSpec is a pod's spec (the fields bench sets; Extra keeps the rest a
// pod read back has, so that a played Job controller can copy a
// template).
type PodSpec struct {
	RestartPolicy                 string            `json:"restartPolicy,omitempty"`
	ServiceAccountName            string            `json:"serviceAccountName,omitempty"`
	AutomountServiceAccountToken  *bool             `json:"automountServiceAccountToken,omitempty"`
	NodeName                      string            `json:"nodeName,omitempty"`
	NodeSelector                  map[string]string `json:"nodeSelector,omitempty"`
	Tolerations                   []map[string]any  `json:"tolerations,omitempty"`
	ImagePullSecrets              []LocalObjectRef  `json:"imagePullSecrets,omitempty"`
	PriorityClassName             string            `json:"priorityClassName,omitempty"`
	TerminationGracePeriodSeconds *int64            `json:"terminationGracePeriodSeconds,omitempty"`
	Containers                    []Container       `json:"containers"`
	Volumes                       []map[string]any  `json:"volumes,omitempty"`
	SecurityContext               map[string]any    `json:"securityContext,omitempty"`
}

type LocalObjectRef struct {
	Name string `json:"name"`
}

// Container is a pod's container.
type Container struct {
	Name                     string           `json:"name"`
	Image                    string           `json:"image"`
	ImagePullPolicy          string           `json:"imagePullPolicy,omitempty"`
	Command                  []string         `json:"command,omitempty"`
	Args                     []string         `json:"args,omitempty"`
	WorkingDir               string           `json:"workingDir,omitempty"`
	Env                      []EnvVar         `json:"env,omitempty"`
	EnvFrom                  []map[string]any `json:"envFrom,omitempty"`
	Resources                *Resources       `json:"resources,omitempty"`
	VolumeMounts             []map[string]any `json:"volumeMounts,omitempty"`
	TerminationMessagePolicy string           `json:"terminationMessagePolicy,omitempty"`
}

// EnvVar is a container's environment variable.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where an environment variable's value comes from.
type EnvVarSource struct {
	FieldRef *struct {
		FieldPath string `json:"fieldPath"`
	} `json:"fieldRef,omitempty"`
	ConfigMapKeyRef *KeyRef `json:"configMapKeyRef,omitempty"`
	SecretKeyRef    *KeyRef `json:"secretKeyRef,omitempty"`
}

type KeyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

// Resources are a container's requests and limits.
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// PodStatus is a pod's status.
type PodStatus struct {
	Phase             string            `json:"phase,omitempty"`
	Reason            string            `json:"reason,omitempty"`
	Message           string            `json:"message,omitempty"`
	Conditions        []Condition       `json:"conditions,omitempty"`
	StartTime         *time.Time        `json:"startTime,omitempty"`
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
}

// ContainerStatus is a container's status.
type ContainerStatus struct {
	Name         string         `json:"name"`
	Ready        bool           `json:"ready"`
	RestartCount int32          `json:"restartCount"`
	Image        string         `json:"image"`
	ImageID      string         `json:"imageID"`
	Started      *bool          `json:"started,omitempty"`
	State        ContainerState `json:"state"`
}

// ContainerState is a container's state.
type ContainerState struct {
	Waiting *struct {
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"waiting,omitempty"`
	Running *struct {
		StartedAt *time.Time `json:"startedAt,omitempty"`
	} `json:"running,omitempty"`
	Terminated *ContainerTerminated `json:"terminated,omitempty"`
}

// ContainerTerminated is a terminated container's state.
type ContainerTerminated struct {
	ExitCode   int32      `json:"exitCode"`
	Signal     int32      `json:"signal,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Message    string     `json:"message,omitempty"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// ConfigMap is a v1 ConfigMap.
type ConfigMap struct {
	APIVersion string            `json:"apiVersion,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Metadata   ObjectMeta        `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
}

// List is a List answer.
type List[T any] struct {
	Metadata ListMeta `json:"metadata"`
	Items    []T      `json:"items"`
}

// FindCondition returns the FindCondition of a type that is "True", if any.
func FindCondition(cs []Condition, typ string) *Condition {
	for i := range cs {
		if cs[i].Type == typ && cs[i].Status == "True" {
			return &cs[i]
		}
	}
	return nil
}

// Status is an API Status object (a watch's ERROR event).
type Status struct {
	Kind    string `json:"kind"`
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func DecodeStatus(b json.RawMessage) Status {
	var s Status
	_ = json.Unmarshal(b, &s)
	return s
}
