// Package kubernetes runs trials as Kubernetes Jobs (engine class
// bench.engines.KubernetesEngine).
//
// Each trial is one Job (batch/v1) in a configured namespace whose single
// container runs `bench exec-trial --request env:BENCH_REQUEST --outcome
// configmap://NAMESPACE/POD-outcome` in a configured image. The request
// travels in a ConfigMap the Job owns (the container reads it through
// an environment variable from that ConfigMap); the outcome comes back in
// a ConfigMap the pod creates and owns (so both go away with the Job); or,
// with "bucket", both travel through S3. No shared file system is needed.
//
// Job names are derived from the experiment, the trial, the attempt and a
// hash of the request (engines.SubmitName), so a restarted bench that
// submits the same attempt again finds the Job it created before (an
// AlreadyExists answer) and follows it instead of running the trial twice.
//
// State comes from a watch (a list, then a streaming watch of the
// experiment's Jobs and Pods, by label), not from polling: Poll reads the
// cache, and the engine tells the runner at once when a Job ends
// (engines.Notifier). Mapping: Complete → done; Failed with
// DeadlineExceeded (activeDeadlineSeconds) → timed out; Failed otherwise
// → failed, with the container's reason (OOMKilled, exit code); a pod
// that cannot pull its image or start its container → failed at once,
// with the kubelet's message. Evicted or preempted pods (the
// DisruptionTarget condition) do not count: the Job's podFailurePolicy
// ignores them and the Job controller starts a new pod, up to
// max_disruptions times.
//
// The API is spoken with a small REST client (client.go), not client-go,
// to keep bench's build small.
package kubernetes

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/kubernetes/kubeapi"
	"github.com/benchtune/bench/internal/decode"
)

// Class names of the engine.
const (
	ClassShort = "bench.engines.KubernetesEngine"
	ClassFull  = "bench.engines.kubernetes.KubernetesEngine"
)

// EngineName is the engine's name in trial handles.
const EngineName = "kubernetes"

// Labels and annotations bench puts on its objects.
const (
	managedLabel    = "app.kubernetes.io/managed-by"
	managedValue    = "bench"
	experimentLabel = "bench.io/experiment"
	jobNameLabel    = "bench.io/job"
	trialLabel      = "bench.io/trial"
	attemptLabel    = "bench.io/attempt"
	kindLabel       = "bench.io/kind" // "trial" or "pilots"
	submitNameAnn   = "bench.io/submit-name"
	indexAnn        = "batch.kubernetes.io/job-completion-index"
	queueLabel      = "kueue.x-k8s.io/queue-name"
)

// Keys and environment variables of the far side.
const (
	// RequestEnv holds the request in the container (from the request
	// ConfigMap).
	RequestEnv = "BENCH_REQUEST"
	// RequestKey is the request ConfigMap's key.
	RequestKey = "request.json"
	// OutcomeKey is the outcome ConfigMap's key.
	OutcomeKey = "outcome.json"
	// PodNameEnv and PodUIDEnv name the pod (downward API): the outcome
	// ConfigMap is named after the pod and owned by it.
	PodNameEnv = "BENCH_POD_NAME"
	PodUIDEnv  = "BENCH_POD_UID"
	// containerName is the Job's container.
	containerName = "bench"
)

// Defaults.
const (
	defaultTTL            = 24 * 60 * 60
	defaultMaxDisruptions = 3
	logTailLines          = 40
	maxNameLen            = 52 // the kubeapi.Job controller appends "-<index>-xxxxx" for pod names (63 at most)
)

func init() {
	engines.Register(New, ClassShort, ClassFull)
}

// SecretEnv is one environment variable from a Secret's key.
type SecretEnv struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
	Key    string `json:"key"`
}

// TrialResource takes a request or limit from the trial: the value of a
// tunable or global of that name, with an optional unit ("Mi", "m").
type TrialResource struct {
	From string `json:"from"`
	Unit string `json:"unit"`
}

// Config is the engine's own config (beside engines.Common).
type Config struct {
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, else
	// ~/.kube/config; in a pod without either: the in-cluster service
	// account). Context selects one of its contexts ("": current).
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context"`
	// InCluster forces (true) or forbids (false) the in-cluster config.
	InCluster *bool `json:"in_cluster"`
	// Namespace of the Jobs ("": the context's, else "default").
	Namespace string `json:"namespace"`
	// Image is the container image with bench (Common.Bench, default
	// "bench" on its PATH) and the experiment's configs (required).
	Image            string   `json:"image"`
	ImagePullPolicy  string   `json:"image_pull_policy"`
	ImagePullSecrets []string `json:"image_pull_secrets"`
	ServiceAccount   string   `json:"service_account"`
	// MaxJobs is how many trials run at once (default num_trial_runners).
	MaxJobs *int `json:"max_jobs"`
	// Resources of the container; GPUs adds a limit of GPUResource
	// (default nvidia.com/gpu).
	Resources   kubeapi.Resources `json:"resources"`
	GPUs        *int              `json:"gpus"`
	GPUResource string            `json:"gpu_resource"`
	// TrialResources takes requests and limits from each trial's tunables
	// or globals: "requests.cpu": {"from": "vm_cores"}.
	TrialResources map[string]TrialResource `json:"trial_resources"`
	NodeSelector   map[string]string        `json:"node_selector"`
	Tolerations    []map[string]any         `json:"tolerations"`
	// Labels and Annotations are added to the Jobs and their pods.
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// Env is added to the container (plain values: not for secrets).
	Env map[string]string `json:"env"`
	// SecretEnv and EnvFromSecrets add Secrets by reference (never by
	// value): one key each, or all keys of named Secrets.
	SecretEnv      []SecretEnv `json:"secret_env"`
	EnvFromSecrets []string    `json:"env_from_secrets"`
	// ActiveDeadlineSeconds is the Job's time limit: the trial is then
	// TIMED_OUT.
	ActiveDeadlineSeconds *int `json:"active_deadline_seconds"`
	// TTLSecondsAfterFinished lets Kubernetes delete a finished Job (and
	// its pods and ConfigMaps) after this long (default one day; 0:
	// at once, not recommended: bench reads the outcome after the end).
	TTLSecondsAfterFinished *int `json:"ttl_seconds_after_finished"`
	// Cleanup is "end" (default: bench deletes the Jobs whose outcome it
	// read when the experiment ends) or "ttl" (Kubernetes deletes them,
	// ttl_seconds_after_finished after they ended).
	Cleanup string `json:"cleanup"`
	// MaxDisruptions bounds the evictions and preemptions of one Job's
	// pods (each starts a new pod; default 3); then the trial FAILS.
	MaxDisruptions *int `json:"max_disruptions"`
	// PriorityClassName of the pods.
	PriorityClassName string `json:"priority_class_name"`
	// TerminationGracePeriodSeconds is how long a stopped pod's bench
	// exec-trial has to write its outcome after SIGTERM (Kubernetes'
	// default: 30).
	TerminationGracePeriodSeconds *int `json:"termination_grace_period_seconds"`
	// Bucket and Prefix send requests and outcomes through S3 (s3://
	// Bucket/Prefix/<job>.<token>.request.json and .outcome.json) instead
	// of ConfigMaps: for outcomes larger than a ConfigMap's 1 MiB. The
	// driver uses its standard AWS configuration, the pods theirs (give
	// them credentials with secret_env or their service account).
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix"`
	// QueueName hands the Jobs to a Kueue LocalQueue: they are created
	// suspended with the label kueue.x-k8s.io/queue-name, and Kueue
	// starts them when it admits them (a suspended Job is queued).
	QueueName string `json:"queue_name"`
	// ProgressInterval is how often a running trial's progress is read
	// from its pod's log (one pods/log request per running trial; default
	// 10s; the last reports are read when the job ends whatever it is).
	ProgressInterval decode.Duration `json:"progress_interval"`
}

var (
	bucketName      = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	dns1123Label    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	envName         = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	quantity        = regexp.MustCompile(`^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[0-9]+|E[0-9]+)?$`)
	labelKey        = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValue      = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	resourceName    = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z0-9A-Z]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`)
	tolerationKeys  = map[string]bool{"key": true, "operator": true, "value": true, "effect": true, "tolerationSeconds": true}
	pullPolicies    = map[string]bool{"": true, "Always": true, "IfNotPresent": true, "Never": true}
	immediateErrors = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
		"ErrImageNeverPull": true, "CreateContainerConfigError": true, "CreateContainerError": true}
)

func (c *Config) validate() error {
	if c.ProgressInterval < 0 {
		return errors.New(`config key "progress_interval": must not be negative`)
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = decode.Duration(10 * time.Second)
	}
	if strings.TrimSpace(c.Image) == "" {
		return errors.New(`config key "image": the container image (with bench and the experiment's configs) is required`)
	}
	if c.Namespace != "" && !dns1123Label.MatchString(c.Namespace) {
		return fmt.Errorf(`config key "namespace": %q is not a namespace name (lower-case letters, digits and '-')`, c.Namespace)
	}
	if !pullPolicies[c.ImagePullPolicy] {
		return fmt.Errorf(`config key "image_pull_policy": %q is not one of Always, IfNotPresent, Never`, c.ImagePullPolicy)
	}
	if c.ServiceAccount != "" && !dns1123Subdomain(c.ServiceAccount) {
		return fmt.Errorf(`config key "service_account": %q is not a service account name`, c.ServiceAccount)
	}
	for _, s := range c.ImagePullSecrets {
		if !dns1123Subdomain(s) {
			return fmt.Errorf(`config key "image_pull_secrets": %q is not a Secret name`, s)
		}
	}
	if c.MaxJobs != nil && *c.MaxJobs < 1 {
		return fmt.Errorf(`config key "max_jobs": must be at least 1, got %d`, *c.MaxJobs)
	}
	for what, m := range map[string]map[string]string{"requests": c.Resources.Requests, "limits": c.Resources.Limits} {
		for k, v := range m {
			if !resourceName.MatchString(k) {
				return fmt.Errorf(`config key "resources.%s": %q is not a resource name`, what, k)
			}
			if !quantity.MatchString(v) {
				return fmt.Errorf(`config key "resources.%s.%s": %q is not a Kubernetes quantity (e.g. "500m", "2", "4Gi")`, what, k, v)
			}
		}
	}
	if c.GPUs != nil && *c.GPUs < 0 {
		return fmt.Errorf(`config key "gpus": must be 0 or more, got %d`, *c.GPUs)
	}
	if c.GPUResource != "" && !resourceName.MatchString(c.GPUResource) {
		return fmt.Errorf(`config key "gpu_resource": %q is not a resource name`, c.GPUResource)
	}
	for k, tr := range c.TrialResources {
		what, name, ok := strings.Cut(k, ".")
		if !ok || (what != "requests" && what != "limits") || !resourceName.MatchString(name) {
			return fmt.Errorf(`config key "trial_resources": %q is not "requests.NAME" or "limits.NAME"`, k)
		}
		if strings.TrimSpace(tr.From) == "" {
			return fmt.Errorf(`config key "trial_resources.%s.from": the name of a tunable or global is required`, k)
		}
		if tr.Unit != "" && !quantity.MatchString("1"+tr.Unit) {
			return fmt.Errorf(`config key "trial_resources.%s.unit": %q is not a quantity suffix (m, Ki, Mi, Gi, k, M, G, ...)`, k, tr.Unit)
		}
	}
	for k, v := range c.NodeSelector {
		if !labelKey.MatchString(k) || !labelValue.MatchString(v) {
			return fmt.Errorf(`config key "node_selector": %q: %q is not a label`, k, v)
		}
	}
	for i, t := range c.Tolerations {
		for k := range t {
			if !tolerationKeys[k] {
				return fmt.Errorf(`config key "tolerations[%d]": unknown key %q (known: key, operator, value, effect, tolerationSeconds)`, i, k)
			}
		}
	}
	for k, v := range c.Labels {
		if !labelKey.MatchString(k) || !labelValue.MatchString(v) {
			return fmt.Errorf(`config key "labels": %q: %q is not a label`, k, v)
		}
		if strings.HasPrefix(k, "bench.io/") || k == managedLabel {
			return fmt.Errorf(`config key "labels": %q is set by bench`, k)
		}
	}
	for k := range c.Annotations {
		if !labelKey.MatchString(k) {
			return fmt.Errorf(`config key "annotations": %q is not an annotation key`, k)
		}
	}
	for k := range c.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf(`config key "env": %q is not an environment variable name`, k)
		}
		if strings.HasPrefix(k, "BENCH_") {
			return fmt.Errorf(`config key "env": %s is set by bench`, k)
		}
	}
	for i, s := range c.SecretEnv {
		if !envName.MatchString(s.Name) || !dns1123Subdomain(s.Secret) || s.Key == "" {
			return fmt.Errorf(`config key "secret_env[%d]": want {"name": ENV_NAME, "secret": SECRET_NAME, "key": KEY}`, i)
		}
	}
	for _, s := range c.EnvFromSecrets {
		if !dns1123Subdomain(s) {
			return fmt.Errorf(`config key "env_from_secrets": %q is not a Secret name`, s)
		}
	}
	if c.ActiveDeadlineSeconds != nil && *c.ActiveDeadlineSeconds < 1 {
		return fmt.Errorf(`config key "active_deadline_seconds": must be at least 1, got %d`, *c.ActiveDeadlineSeconds)
	}
	if c.TTLSecondsAfterFinished != nil && *c.TTLSecondsAfterFinished < 0 {
		return fmt.Errorf(`config key "ttl_seconds_after_finished": must be 0 or more, got %d`, *c.TTLSecondsAfterFinished)
	}
	switch c.Cleanup {
	case "", "end", "ttl":
	default:
		return fmt.Errorf(`config key "cleanup": %q is not "end" (bench deletes its Jobs when the experiment ends) or "ttl" (ttl_seconds_after_finished)`, c.Cleanup)
	}
	if c.TerminationGracePeriodSeconds != nil && *c.TerminationGracePeriodSeconds < 0 {
		return fmt.Errorf(`config key "termination_grace_period_seconds": must be 0 or more, got %d`, *c.TerminationGracePeriodSeconds)
	}
	if c.Bucket != "" && !bucketName.MatchString(c.Bucket) {
		return fmt.Errorf(`config key "bucket": %q is not an S3 bucket name`, c.Bucket)
	}
	if c.Prefix != "" && c.Bucket == "" {
		return errors.New(`config key "prefix": only with "bucket"`)
	}
	for _, el := range strings.Split(strings.Trim(c.Prefix, "/"), "/") {
		if el == "." || el == ".." {
			return fmt.Errorf(`config key "prefix": %q may not contain "." or ".." elements`, c.Prefix)
		}
	}
	if c.QueueName != "" && !labelValue.MatchString(c.QueueName) {
		return fmt.Errorf(`config key "queue_name": %q is not a LocalQueue name`, c.QueueName)
	}
	if c.MaxDisruptions != nil && *c.MaxDisruptions < 0 {
		return fmt.Errorf(`config key "max_disruptions": must be 0 or more, got %d`, *c.MaxDisruptions)
	}
	return nil
}

func dns1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !dns1123Label.MatchString(part) {
			return false
		}
	}
	return true
}

// ref is the engine's Ref JSON.
type ref struct {
	Namespace string `json:"namespace"`
	Job       string `json:"job"`
	UID       string `json:"uid,omitempty"`
	// Index is a pilot's completion index (Indexed Jobs; nil: a trial's
	// Job).
	Index *int `json:"index,omitempty"`
	// Outcome is the outcome's s3:// URL ("": a ConfigMap of the pod).
	Outcome string `json:"outcome,omitempty"`
}

func parseRef(r engines.Ref) (ref, error) {
	var x ref
	if err := json.Unmarshal(r, &x); err != nil {
		return ref{}, fmt.Errorf("kubernetes: bad job reference %q: %w", string(r), err)
	}
	if x.Job == "" || x.Namespace == "" {
		return ref{}, fmt.Errorf("kubernetes: job reference %q has no namespace or job", string(r))
	}
	return x, nil
}

// Engine is the Kubernetes Jobs engine.
type Engine struct {
	cfg          Config
	bench        string
	workdir      string
	experimentID string
	expLabel     string
	slots        int
	ns           string
	c            *kubeapi.Client
	inf          *informer
	log          *slog.Logger
	globals      map[string]any
	startOnce    sync.Once

	mu       sync.Mutex
	fetched  map[string]bool   // Jobs whose outcome was read (cleanup "end")
	outcomes map[string][]byte // outcome ConfigMaps read by Poll, for Fetch
	aborting map[string]bool   // Jobs bench deleted because they cannot run
	closed   bool
	created  int             // Jobs this engine created
	unowned  map[string]bool // request ConfigMaps its Job could not be made the owner of

	progress sync.Map // Job name -> *progressCursor (progress.go)
}

var (
	_ engines.Engine         = (*Engine)(nil)
	_ engines.Notifier       = (*Engine)(nil)
	_ engines.PilotSubmitter = (*Engine)(nil)
)

// New is the engine factory.
func New(ctx context.Context, p engines.Params) (engines.Engine, error) {
	return newEngine(ctx, p)
}

func newEngine(_ context.Context, p engines.Params) (*Engine, error) {
	var c Config
	if err := decode.Into(p.Config, &c); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: c, bench: p.Common.Bench, workdir: p.Common.WorkDir, experimentID: p.ExperimentID,
		slots: max(p.Slots, 1), log: slog.Default(), globals: p.Globals,
		fetched: map[string]bool{}, outcomes: map[string][]byte{}, unowned: map[string]bool{}, aborting: map[string]bool{}}
	if e.bench == "" || isDriverExe(e.bench) {
		// Common.Defaults fills in this binary's path, which means
		// nothing in a container: there it is bench on the image's PATH.
		e.bench = "bench"
	}
	if c.MaxJobs != nil {
		e.slots = *c.MaxJobs
	}
	e.expLabel = labelSafe(p.ExperimentID)
	if p.ValidateOnly {
		// bench validate: the config is checked; a kubeconfig the config
		// names is read (a missing or broken one is a config error), but
		// nothing is contacted. Without one named, where the cluster is
		// ($KUBECONFIG, ~/.kube/config, in-cluster) belongs to the machine
		// that runs the experiment, not to the config: it is looked for
		// when the engine starts.
		if c.Kubeconfig != "" {
			if _, err := e.restConfig(); err != nil {
				return nil, err
			}
		}
		return e, nil
	}
	rc, err := e.restConfig()
	if err != nil {
		return nil, err
	}
	e.ns = c.Namespace
	if e.ns == "" {
		e.ns = rc.Namespace
	}
	if e.ns == "" {
		e.ns = "default"
	}
	e.c = kubeapi.NewClient(rc)
	e.inf = newInformer(e.c, e.ns, managedLabel+"="+managedValue+","+experimentLabel+"="+e.expLabel, e.log)
	return e, nil
}

// Config resolves how to reach the API server.
func (e *Engine) restConfig() (*kubeapi.Config, error) {
	c := e.cfg
	useInCluster := c.InCluster != nil && *c.InCluster
	if c.InCluster == nil && c.Kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && kubeapi.InCluster() {
		useInCluster = true
	}
	if useInCluster {
		return kubeapi.InClusterConfig()
	}
	rc, err := kubeapi.LoadKubeconfig(kubeapi.KubeconfigPaths(c.Kubeconfig), c.Context)
	if err != nil {
		return nil, fmt.Errorf(`config key "kubeconfig": %w`, err)
	}
	return rc, nil
}

// isDriverExe reports whether path is this process's own executable.
func isDriverExe(path string) bool {
	exe, err := os.Executable()
	return err == nil && path == exe
}

// start starts the watch on first use.
func (e *Engine) start(ctx context.Context) error {
	e.startOnce.Do(e.inf.start)
	return e.inf.waitSynced(ctx)
}

// Name is "kubernetes".
func (e *Engine) Name() string { return EngineName }

// Slots is max_jobs (default num_trial_runners).
func (e *Engine) Slots() int { return e.slots }

// Namespace is the namespace of the engine's Jobs.
func (e *Engine) Namespace() string { return e.ns }

// Calls returns how many API requests the engine made and how many watches
// it opened.
func (e *Engine) Calls() (requests, watches int64) {
	if e.c == nil {
		return 0, 0
	}
	return e.c.Calls.Load(), e.c.Watches.Load()
}

var (
	nameBad  = regexp.MustCompile(`[^a-z0-9-]+`)
	labelBad = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

// labelSafe makes a label value of s (a hash replaces what does not fit).
func labelSafe(s string) string {
	if labelValue.MatchString(s) && len(s) <= 63 {
		return s
	}
	v := strings.Trim(labelBad.ReplaceAllString(s, "_"), "_.-")
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	if len(v) > 54 {
		v = strings.Trim(v[:54], "_.-")
	}
	if v == "" {
		return "x" + h
	}
	return v + "-" + h
}

// JobName is the Job name of a submission: bench-<experiment>-<trial>-
// <attempt>-<hash of engines.SubmitName>, lower-case, at most 52
// characters.
func JobName(job engines.Job) string {
	var head struct {
		ExperimentID string `json:"experiment_id"`
		TrialID      int    `json:"trial_id"`
	}
	_ = json.Unmarshal(job.Request, &head)
	sum := sha256.Sum256([]byte(engines.SubmitName(job)))
	tail := fmt.Sprintf("-%d-%d-%s", head.TrialID, job.Attempt, hex.EncodeToString(sum[:4]))
	exp := strings.Trim(nameBad.ReplaceAllString(strings.ToLower(head.ExperimentID), "-"), "-")
	room := maxNameLen - len("bench-") - len(tail)
	if len(exp) > room {
		exp = strings.TrimRight(exp[:max(room, 0)], "-")
	}
	if exp == "" {
		return strings.TrimSuffix("bench"+tail, "-")
	}
	return "bench-" + exp + tail
}

func (e *Engine) jobsPath() string { return "/apis/batch/v1/namespaces/" + e.ns + "/jobs" }
func (e *Engine) cmPath() string   { return "/api/v1/namespaces/" + e.ns + "/configmaps" }
func (e *Engine) podsPath() string { return "/api/v1/namespaces/" + e.ns + "/pods" }

// labels returns the labels of a Job and its pods.
func (e *Engine) labels(kind string, extra map[string]string) map[string]string {
	l := map[string]string{}
	for k, v := range e.cfg.Labels {
		l[k] = v
	}
	for k, v := range extra {
		l[k] = v
	}
	if e.cfg.QueueName != "" {
		l[queueLabel] = e.cfg.QueueName
	}
	l[managedLabel] = managedValue
	l[experimentLabel] = e.expLabel
	l[kindLabel] = kind
	return l
}

// trialValue finds a trial's value of a tunable or global: its params,
// its own globals, the experiment's globals.
func (e *Engine) trialValue(req *engines.Request, name string) (string, bool) {
	if v, ok := req.Params[name]; ok {
		return v, true
	}
	for _, g := range []map[string]any{req.Globals, e.globals} {
		if v, ok := g[name]; ok && v != nil {
			switch x := v.(type) {
			case string:
				return x, true
			case float64:
				return strconv.FormatFloat(x, 'f', -1, 64), true
			default:
				return fmt.Sprint(x), true
			}
		}
	}
	return "", false
}

// resources returns the container's resources for a request (nil: none).
func (e *Engine) resources(req *engines.Request) (*kubeapi.Resources, error) {
	r := &kubeapi.Resources{Requests: map[string]string{}, Limits: map[string]string{}}
	for k, v := range e.cfg.Resources.Requests {
		r.Requests[k] = v
	}
	for k, v := range e.cfg.Resources.Limits {
		r.Limits[k] = v
	}
	if e.cfg.GPUs != nil && *e.cfg.GPUs > 0 {
		g := e.cfg.GPUResource
		if g == "" {
			g = "nvidia.com/gpu"
		}
		r.Limits[g] = strconv.Itoa(*e.cfg.GPUs)
	}
	if req != nil {
		keys := make([]string, 0, len(e.cfg.TrialResources))
		for k := range e.cfg.TrialResources {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			tr := e.cfg.TrialResources[k]
			v, ok := e.trialValue(req, tr.From)
			if !ok {
				return nil, fmt.Errorf(`trial_resources %s: the trial has no tunable or global %q`, k, tr.From)
			}
			q := strings.TrimSpace(v) + tr.Unit
			if !quantity.MatchString(q) {
				return nil, fmt.Errorf(`trial_resources %s: %s=%q gives %q, not a Kubernetes quantity`, k, tr.From, v, q)
			}
			what, name, _ := strings.Cut(k, ".")
			if what == "requests" {
				r.Requests[name] = q
			} else {
				r.Limits[name] = q
			}
		}
	}
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return nil, nil
	}
	return r, nil
}

// container returns the container running argv.
func (e *Engine) container(argv []string, env []kubeapi.EnvVar, res *kubeapi.Resources) kubeapi.Container {
	c := kubeapi.Container{Name: containerName, Image: e.cfg.Image, ImagePullPolicy: e.cfg.ImagePullPolicy,
		Command: argv, WorkingDir: e.workdir, Resources: res, TerminationMessagePolicy: "FallbackToLogsOnError"}
	keys := make([]string, 0, len(e.cfg.Env))
	for k := range e.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.Env = append(c.Env, kubeapi.EnvVar{Name: k, Value: e.cfg.Env[k]})
	}
	for _, s := range e.cfg.SecretEnv {
		c.Env = append(c.Env, kubeapi.EnvVar{Name: s.Name, ValueFrom: &kubeapi.EnvVarSource{SecretKeyRef: &kubeapi.KeyRef{Name: s.Secret, Key: s.Key}}})
	}
	for _, s := range e.cfg.EnvFromSecrets {
		c.EnvFrom = append(c.EnvFrom, map[string]any{"secretRef": map[string]any{"name": s}})
	}
	c.Env = append(c.Env, env...)
	return c
}

func fieldEnv(name, path string) kubeapi.EnvVar {
	v := kubeapi.EnvVar{Name: name, ValueFrom: &kubeapi.EnvVarSource{}}
	v.ValueFrom.FieldRef = &struct {
		FieldPath string `json:"fieldPath"`
	}{FieldPath: path}
	return v
}

// podSpec returns the pod spec of a Job.
func (e *Engine) podSpec(c kubeapi.Container) kubeapi.PodSpec {
	s := kubeapi.PodSpec{RestartPolicy: "Never", ServiceAccountName: e.cfg.ServiceAccount, NodeSelector: e.cfg.NodeSelector,
		Tolerations: e.cfg.Tolerations, PriorityClassName: e.cfg.PriorityClassName, Containers: []kubeapi.Container{c}}
	if g := e.cfg.TerminationGracePeriodSeconds; g != nil {
		v := int64(*g)
		s.TerminationGracePeriodSeconds = &v
	}
	for _, n := range e.cfg.ImagePullSecrets {
		s.ImagePullSecrets = append(s.ImagePullSecrets, kubeapi.LocalObjectRef{Name: n})
	}
	return s
}

// failurePolicy: a pod evicted or preempted (DisruptionTarget) is not
// the trial's failure: the Job controller starts another; any other
// failed pod fails the Job (backoffLimit 0).
func failurePolicy() *kubeapi.PodFailurePolicy {
	p := &kubeapi.PodFailurePolicy{Rules: []kubeapi.PodFailurePolicyRule{{Action: "Ignore"}}}
	p.Rules[0].OnPodConditions = append(p.Rules[0].OnPodConditions, struct {
		Type   string `json:"type"`
		Status string `json:"status,omitempty"`
	}{Type: "DisruptionTarget", Status: "True"})
	return p
}

func (e *Engine) ttl() *int32 {
	ttl := int32(defaultTTL)
	if e.cfg.TTLSecondsAfterFinished != nil {
		ttl = int32(min(*e.cfg.TTLSecondsAfterFinished, 1<<31-1))
	}
	return &ttl
}

func (e *Engine) annotations(extra map[string]string) map[string]string {
	a := map[string]string{}
	for k, v := range e.cfg.Annotations {
		a[k] = v
	}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// Submit creates the trial's request ConfigMap and Job. A Job of the same
// name (the same attempt of the same trial, submitted by an earlier bench
// that was killed before it recorded the Job) is followed instead.
func (e *Engine) Submit(ctx context.Context, job engines.Job) (engines.Ref, error) {
	if err := e.start(ctx); err != nil {
		return nil, fmt.Errorf("kubernetes: watching Jobs in namespace %s: %w", e.ns, err)
	}
	name := JobName(job)
	req, err := engines.DecodeRequest(job.Request)
	if err != nil {
		return nil, err
	}
	// Already there (a restarted bench's second submission)?
	if v, _ := e.inf.get(name); v.job != nil {
		return e.refOf(v.job), nil
	}
	res, err := e.resources(req)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: job %s: %w", name, err)
	}
	labels := e.labels("trial", map[string]string{jobNameLabel: name, trialLabel: strconv.Itoa(req.TrialID), attemptLabel: strconv.Itoa(job.Attempt)})
	if e.cfg.Bucket != "" {
		return e.submitS3(ctx, job, name, labels, res)
	}
	// The request first, so that the pod never waits for it.
	cm := kubeapi.ConfigMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: kubeapi.ObjectMeta{Name: name, Labels: labels},
		Data: map[string]string{RequestKey: string(job.Request)}}
	cmExisted := false
	if err := e.c.Do(ctx, http.MethodPost, e.cmPath(), nil, cm, nil); err != nil {
		if !kubeapi.IsConflict(err) {
			return nil, fmt.Errorf("kubernetes: creating the request ConfigMap %s: %w", name, err)
		}
		cmExisted = true
	}
	outcome := "configmap://" + e.ns + "/$(" + PodNameEnv + ")-outcome"
	env := []kubeapi.EnvVar{
		{Name: RequestEnv, ValueFrom: &kubeapi.EnvVarSource{ConfigMapKeyRef: &kubeapi.KeyRef{Name: name, Key: RequestKey}}},
		fieldEnv(PodNameEnv, "metadata.name"), fieldEnv(PodUIDEnv, "metadata.uid"),
	}
	c := e.container(engines.Command(e.bench, "env:"+RequestEnv, outcome), env, res)
	created, existed, err := e.createJob(ctx, e.trialJob(job, name, labels, c))
	if err != nil {
		if !cmExisted {
			e.deleteCM(context.WithoutCancel(ctx), name)
		}
		return nil, err
	}
	if existed {
		return e.refOf(created), nil
	}
	// The Job owns its request: both go away together (TTL, delete).
	yes := true
	patch := map[string]any{"metadata": map[string]any{"ownerReferences": []kubeapi.OwnerReference{{APIVersion: "batch/v1", Kind: "Job",
		Name: name, UID: created.Metadata.UID, BlockOwnerDeletion: &yes}}}}
	if err := e.c.DoType(ctx, http.MethodPatch, e.cmPath()+"/"+name, nil, patch, "application/merge-patch+json", nil); err != nil {
		e.log.Warn("kubernetes: could not make the Job the owner of its request ConfigMap (bench deletes it at the end)", "job", name, "err", err)
		e.mu.Lock()
		e.unowned[name] = true
		e.mu.Unlock()
	}
	return e.refOf(created), nil
}

// suspend: Jobs for a Kueue queue are created suspended.
func (e *Engine) suspend() *bool {
	if e.cfg.QueueName == "" {
		return nil
	}
	yes := true
	return &yes
}

// submitS3 puts the request in S3 and creates the Job, whose pod reads
// it from there and writes its outcome there.
func (e *Engine) submitS3(ctx context.Context, job engines.Job, name string, labels map[string]string, res *kubeapi.Resources) (engines.Ref, error) {
	tok := randToken()
	reqURL, outURL := e.s3URL(name+"."+tok+".request.json"), e.s3URL(name+"."+tok+".outcome.json")
	if err := engines.WriteURL(ctx, reqURL, job.Request); err != nil {
		return nil, fmt.Errorf("kubernetes: uploading the request of Job %s: %w", name, err)
	}
	c := e.container(engines.Command(e.bench, reqURL, outURL), nil, res)
	created, _, err := e.createJob(ctx, e.trialJob(job, name, labels, c))
	if err != nil {
		return nil, err
	}
	return e.refOf(created), nil
}

// trialJob is the Job of a trial whose container is c.
func (e *Engine) trialJob(job engines.Job, name string, labels map[string]string, c kubeapi.Container) kubeapi.Job {
	zero := int32(0)
	// The trial's progress goes to the pod's log (progress.go).
	c.Env = append(c.Env[:len(c.Env):len(c.Env)], kubeapi.EnvVar{Name: engines.ProgressLogEnv, Value: "1"})
	return kubeapi.Job{APIVersion: "batch/v1", Kind: "Job",
		Metadata: kubeapi.ObjectMeta{Name: name, Labels: labels, Annotations: e.annotations(map[string]string{submitNameAnn: engines.SubmitName(job)})},
		Spec: kubeapi.JobSpec{BackoffLimit: &zero, ActiveDeadlineSeconds: e.deadline(), TTLSecondsAfterFinished: e.ttl(), Suspend: e.suspend(),
			PodFailurePolicy: failurePolicy(),
			Template:         kubeapi.PodTemplate{Metadata: kubeapi.ObjectMeta{Labels: labels, Annotations: e.annotations(nil)}, Spec: e.podSpec(c)}}}
}

// createJob creates a Job, or reads the one of that name that exists
// already (existed: an earlier bench's submission of the same attempt).
// The watch's cache gets it at once.
func (e *Engine) createJob(ctx context.Context, j kubeapi.Job) (created *kubeapi.Job, existed bool, err error) {
	created = &kubeapi.Job{}
	name := j.Metadata.Name
	if err := e.c.Do(ctx, http.MethodPost, e.jobsPath(), nil, j, created); err != nil {
		if !kubeapi.IsConflict(err) {
			return nil, false, fmt.Errorf("kubernetes: creating Job %s in namespace %s: %w", name, e.ns, err)
		}
		if err := e.c.Do(ctx, http.MethodGet, e.jobsPath()+"/"+name, nil, nil, created); err != nil {
			return nil, false, fmt.Errorf("kubernetes: reading Job %s that already exists: %w", name, err)
		}
		existed = true
	} else {
		e.mu.Lock()
		e.created++
		e.mu.Unlock()
	}
	e.inf.add(created)
	return created, existed, nil
}

func (e *Engine) deadline() *int64 {
	if e.cfg.ActiveDeadlineSeconds == nil {
		return nil
	}
	d := int64(*e.cfg.ActiveDeadlineSeconds)
	return &d
}

func (e *Engine) refOf(j *kubeapi.Job) engines.Ref {
	r := ref{Namespace: e.ns, Job: j.Metadata.Name, UID: j.Metadata.UID}
	if cs := j.Spec.Template.Spec.Containers; len(cs) > 0 {
		cmd := cs[0].Command
		for i := 0; i+1 < len(cmd); i++ {
			if cmd[i] == "--outcome" && strings.HasPrefix(cmd[i+1], "s3://") {
				r.Outcome = cmd[i+1]
			}
		}
	}
	b, _ := json.Marshal(r)
	return b
}

// s3URL is s3://bucket/prefix/name.
func (e *Engine) s3URL(name string) string {
	if p := strings.Trim(e.cfg.Prefix, "/"); p != "" {
		return "s3://" + e.cfg.Bucket + "/" + p + "/" + name
	}
	return "s3://" + e.cfg.Bucket + "/" + name
}

// randToken is 8 random hex digits: the S3 keys of two runs that reuse a
// Job name never collide.
func randToken() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b)
}

func (e *Engine) deleteCM(ctx context.Context, name string) {
	if err := e.c.Do(ctx, http.MethodDelete, e.cmPath()+"/"+name, nil, nil, nil); err != nil && !kubeapi.IsNotFound(err) {
		e.log.Warn("kubernetes: could not delete ConfigMap", "name", name, "err", err)
	}
}

// Poll reads the Job's state from the watch's cache (no API call).
func (e *Engine) Poll(ctx context.Context, rr engines.Ref) (engines.State, error) {
	r, err := parseRef(rr)
	if err != nil {
		return engines.State{}, err
	}
	if err := e.start(ctx); err != nil {
		return engines.State{}, fmt.Errorf("kubernetes: watching Jobs in namespace %s: %w", e.ns, err)
	}
	v, _ := e.inf.get(r.Job)
	if v.err != nil {
		// The watch is broken (the API server is unreachable): the cache
		// may be stale. An error, so that lost_after applies.
		return engines.State{}, fmt.Errorf("kubernetes: the watch of namespace %s is failing: %w", e.ns, v.err)
	}
	if v.job != nil && r.UID != "" && v.job.Metadata.UID != r.UID {
		// Another Job of the same name (this one was deleted and the
		// name reused): not ours.
		v.job, v.pods = nil, nil
	}
	st := stateOf(v, r.Index, e.maxDisruptions())
	if st.Phase == engines.Done && r.Index == nil {
		// bench exec-trial ends with status 0 when a signal stopped it
		// (it wrote an outcome that says so), so its pod Succeeded and
		// the Job completed: the pod was evicted or preempted, or
		// deleted. Evicted: submit the trial again; deleted: FAILED.
		pod, out, err := e.outcome(ctx, r, v, st)
		if err != nil {
			return engines.State{}, err
		}
		var disruption *kubeapi.Condition
		podName := "the Job's pod"
		if pod != nil {
			disruption = kubeapi.FindCondition(pod.Status.Conditions, "DisruptionTarget")
			podName = "pod " + pod.Metadata.Name
		}
		how := ""
		switch {
		case disruption != nil:
			how = disruptionWord(disruption)
		case pod == nil && len(v.disrupted) > 0:
			sort.Strings(v.disrupted)
			how = "evicted or preempted (" + strings.Join(v.disrupted, "; ") + ")"
		}
		sig := engines.Interrupted(out)
		switch {
		case sig != "" && how != "":
			return engines.State{Phase: engines.Lost, Reason: fmt.Sprintf("%s was %s (bench exec-trial got %s); submitting the trial again", podName, how, sig)}, nil
		case out == nil && how != "":
			// The evicted pod is gone already, and its outcome with it.
			return engines.State{Phase: engines.Lost, Reason: fmt.Sprintf("%s was %s and is gone with its outcome; submitting the trial again", podName, how)}, nil
		case sig != "":
			st.Phase = engines.Failed
			st.Reason = fmt.Sprintf("%s was stopped (bench exec-trial got %s) before the trial ended: deleted by someone?", podName, sig)
		}
	}
	if st.Phase == engines.Failed && v.job != nil && !jobFinished(v.job) {
		// Cannot run (image, config) or disrupted too often: stop it.
		e.abort(r.Job)
	}
	return st, nil
}

func (e *Engine) maxDisruptions() int {
	if e.cfg.MaxDisruptions != nil {
		return *e.cfg.MaxDisruptions
	}
	return defaultMaxDisruptions
}

// abort deletes a Job that will not succeed, once.
func (e *Engine) abort(name string) {
	e.mu.Lock()
	if e.aborting[name] {
		e.mu.Unlock()
		return
	}
	e.aborting[name] = true
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.deleteJob(ctx, name); err != nil {
		e.log.Warn("kubernetes: could not delete a Job that cannot run", "job", name, "err", err)
	}
}

// Ended returns a channel closed when the Job is over (engines.Notifier).
func (e *Engine) Ended(rr engines.Ref) <-chan struct{} {
	r, err := parseRef(rr)
	if err != nil || e.inf == nil {
		return nil
	}
	out := make(chan struct{})
	go func() {
		defer close(out)
		for {
			v, changed := e.inf.get(r.Job)
			if v.synced && stateOf(v, r.Index, e.maxDisruptions()).Phase.Final() {
				return
			}
			e.mu.Lock()
			closed := e.closed
			e.mu.Unlock()
			if closed {
				return
			}
			select {
			case <-changed:
			case <-time.After(time.Minute):
				// (So that a runner that stopped waiting does not leave
				// this goroutine behind for ever.)
				return
			}
		}
	}()
	return out
}

// outcome finds the pod whose outcome counts and reads its outcome
// ConfigMap (nil when there is none). An outcome once read is kept.
func (e *Engine) outcome(ctx context.Context, r ref, v view, st engines.State) (*kubeapi.Pod, []byte, error) {
	pod := lastPod(v.pods, r.Index)
	if (pod == nil || (st.Phase == engines.Done && pod.Status.Phase != "Succeeded")) && v.job != nil {
		// The Jobs' watch can be ahead of the pods' (a pod that ran
		// quickly): read the Job's pods.
		var l kubeapi.List[kubeapi.Pod]
		q := url.Values{"labelSelector": {jobNameLabel + "=" + r.Job}}
		if err := e.c.Do(ctx, http.MethodGet, e.podsPath(), q, nil, &l); err == nil {
			ps := make([]*kubeapi.Pod, len(l.Items))
			for i := range l.Items {
				ps[i] = &l.Items[i]
			}
			if p := lastPod(ps, r.Index); p != nil {
				pod = p
			}
		}
	}
	if r.Outcome != "" && r.Index == nil {
		e.mu.Lock()
		b, ok := e.outcomes[r.Outcome]
		e.mu.Unlock()
		if ok {
			return pod, b, nil
		}
		b, err := engines.ReadURL(ctx, r.Outcome)
		if err != nil {
			// (The s3 scheme says "no such object" for a missing one.)
			if strings.Contains(err.Error(), "no such object") {
				return pod, nil, nil
			}
			return pod, nil, fmt.Errorf("kubernetes: reading the outcome of Job %s: %w", r.Job, err)
		}
		e.mu.Lock()
		e.outcomes[r.Outcome] = b
		e.mu.Unlock()
		return pod, b, nil
	}
	if pod == nil || r.Index != nil {
		return pod, nil, nil
	}
	name := pod.Metadata.Name + "-outcome"
	e.mu.Lock()
	b, ok := e.outcomes[name]
	e.mu.Unlock()
	if ok {
		return pod, b, nil
	}
	var cm kubeapi.ConfigMap
	err := e.c.Do(ctx, http.MethodGet, e.cmPath()+"/"+name, nil, nil, &cm)
	switch {
	case kubeapi.IsNotFound(err):
		return pod, nil, nil
	case err != nil:
		return pod, nil, fmt.Errorf("kubernetes: reading the outcome of Job %s: %w", r.Job, err)
	}
	o, ok := cm.Data[OutcomeKey]
	if !ok {
		return pod, nil, nil
	}
	e.mu.Lock()
	e.outcomes[name] = []byte(o)
	e.mu.Unlock()
	return pod, []byte(o), nil
}

// Fetch reads the outcome ConfigMap of the Job's last pod, and, when the
// Job did not succeed, the tail of that pod's log (from the API).
func (e *Engine) Fetch(ctx context.Context, rr engines.Ref) (engines.Result, error) {
	r, err := parseRef(rr)
	if err != nil {
		return engines.Result{}, err
	}
	v, _ := e.inf.get(r.Job)
	st := stateOf(v, r.Index, e.maxDisruptions())
	pod, out, err := e.outcome(ctx, r, v, st)
	if err != nil {
		return engines.Result{}, err
	}
	res := engines.Result{Outcome: out}
	e.mu.Lock()
	e.fetched[r.Job] = true
	if pod != nil {
		delete(e.outcomes, pod.Metadata.Name+"-outcome")
	}
	delete(e.outcomes, r.Outcome)
	e.mu.Unlock()
	e.progress.Delete(r.Job)
	if st.Phase != engines.Done || res.Outcome == nil {
		res.Log = e.jobLog(ctx, r.Job, v, pod)
	}
	return res, nil
}

// jobLog says what Kubernetes tells about a Job that did not succeed: its
// conditions, its last pod's state, and the tail of that pod's log.
func (e *Engine) jobLog(ctx context.Context, name string, v view, pod *kubeapi.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kubernetes Job %s/%s", e.ns, name)
	if v.job == nil {
		b.WriteString(": no longer exists\n")
	} else {
		b.WriteString("\n")
		for _, c := range v.job.Status.Conditions {
			if c.Status == "True" {
				fmt.Fprintf(&b, "condition %s: %s\n", c.Type, joinNonEmpty(": ", c.Reason, c.Message))
			}
		}
	}
	if pod == nil {
		return b.String()
	}
	fmt.Fprintf(&b, "pod %s: %s\n", pod.Metadata.Name, podSummary(pod))
	q := url.Values{"container": {containerName}, "tailLines": {strconv.Itoa(logTailLines)}}
	var logText string
	if err := e.c.Do(ctx, http.MethodGet, e.podsPath()+"/"+pod.Metadata.Name+"/log", q, nil, &logText); err != nil {
		fmt.Fprintf(&b, "(its log could not be read: %v)\n", err)
	} else if logText = withoutProgress(logText); strings.TrimSpace(logText) != "" {
		fmt.Fprintf(&b, "log (last %d lines):\n%s", logTailLines, logText)
	}
	return b.String()
}

// Cancel deletes the Job (its pods are stopped, its ConfigMaps go with
// it). A Job that is already gone is not an error.
func (e *Engine) Cancel(ctx context.Context, rr engines.Ref) error {
	r, err := parseRef(rr)
	if err != nil {
		return err
	}
	if r.Index != nil {
		// One pilot of an Indexed Job: delete its pod (the Job's other
		// pilots go on).
		v, _ := e.inf.get(r.Job)
		if p := lastPod(v.pods, r.Index); p != nil {
			err := e.c.Do(ctx, http.MethodDelete, e.podsPath()+"/"+p.Metadata.Name, nil, nil, nil)
			if err != nil && !kubeapi.IsNotFound(err) {
				return fmt.Errorf("kubernetes: deleting pilot pod %s: %w", p.Metadata.Name, err)
			}
		}
		return nil
	}
	return e.deleteJob(ctx, r.Job)
}

func (e *Engine) deleteJob(ctx context.Context, name string) error {
	body := map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
	err := e.c.Do(ctx, http.MethodDelete, e.jobsPath()+"/"+name, nil, body, nil)
	if err != nil && !kubeapi.IsNotFound(err) {
		return fmt.Errorf("kubernetes: deleting Job %s: %w", name, err)
	}
	return nil
}

// Close stops the watch and, with cleanup "end", deletes the Jobs whose
// outcome was read (their pods and ConfigMaps go with them).
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var names []string
	if e.cfg.Cleanup != "ttl" {
		for n := range e.fetched {
			names = append(names, n)
		}
	}
	e.mu.Unlock()
	if e.inf != nil {
		e.inf.stop()
	}
	if e.c == nil {
		return nil
	}
	sort.Strings(names)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errs []error
	for _, n := range names {
		if err := e.deleteJob(ctx, n); err != nil {
			errs = append(errs, err)
		}
		e.mu.Lock()
		unowned := e.unowned[n]
		e.mu.Unlock()
		if unowned {
			// (Owned by its Job, it goes with it.)
			e.deleteCM(ctx, n)
		}
	}
	e.mu.Lock()
	created := e.created
	e.mu.Unlock()
	req, w := e.Calls()
	e.log.Info("kubernetes engine: API use", "namespace", e.ns, "jobs_created", created, "jobs_deleted", len(names), "requests", req, "watches", w)
	return errors.Join(errs...)
}

// SubmitPilots creates one Indexed Job of count pods that each run argv
// (bench worker ...). The refs are the pods' indexes.
func (e *Engine) SubmitPilots(ctx context.Context, name string, argv []string, count int) ([]engines.Ref, error) {
	if count < 1 || count > 100000 {
		return nil, fmt.Errorf("kubernetes: %d pilots: want 1 to 100000", count)
	}
	if len(argv) == 0 {
		return nil, errors.New("kubernetes: pilots need a command")
	}
	if err := e.start(ctx); err != nil {
		return nil, fmt.Errorf("kubernetes: watching Jobs in namespace %s: %w", e.ns, err)
	}
	if isDriverExe(argv[0]) {
		argv = append([]string{e.bench}, argv[1:]...)
	}
	res, err := e.resources(nil)
	if err != nil {
		return nil, err
	}
	base := strings.Trim(nameBad.ReplaceAllString(strings.ToLower(name), "-"), "-")
	tok := make([]byte, 3)
	sum := sha256.Sum256([]byte(fmt.Sprint(name, time.Now().UnixNano(), os.Getpid())))
	copy(tok, sum[:3])
	suffix := "-" + hex.EncodeToString(tok)
	if len(base) > maxNameLen-len(suffix)-2 {
		base = strings.TrimRight(base[:maxNameLen-len(suffix)-2], "-")
	}
	jobName := base + suffix
	labels := e.labels("pilots", map[string]string{jobNameLabel: jobName})
	n := int32(count)
	zero := int32(0)
	j := kubeapi.Job{APIVersion: "batch/v1", Kind: "Job", Metadata: kubeapi.ObjectMeta{Name: jobName, Labels: labels, Annotations: e.annotations(nil)},
		Spec: kubeapi.JobSpec{Completions: &n, Parallelism: &n, CompletionMode: "Indexed", BackoffLimitPerIndex: &zero, Suspend: e.suspend(),
			ActiveDeadlineSeconds: e.deadline(), TTLSecondsAfterFinished: e.ttl(), PodFailurePolicy: failurePolicy(),
			Template: kubeapi.PodTemplate{Metadata: kubeapi.ObjectMeta{Labels: labels, Annotations: e.annotations(nil)},
				Spec: e.podSpec(e.container(argv, nil, res))}}}
	var created kubeapi.Job
	if err := e.c.Do(ctx, http.MethodPost, e.jobsPath(), nil, j, &created); err != nil {
		return nil, fmt.Errorf("kubernetes: creating the pilots' Indexed Job %s: %w", jobName, err)
	}
	e.inf.add(&created)
	refs := make([]engines.Ref, count)
	for i := range refs {
		idx := i
		b, _ := json.Marshal(ref{Namespace: e.ns, Job: jobName, UID: created.Metadata.UID, Index: &idx})
		refs[i] = b
	}
	return refs, nil
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
