// Package awsbatch runs trials as AWS Batch jobs (engine class
// bench.engines.AWSBatchEngine).
//
// Each trial is one Batch job on a configured job queue and job definition
// whose container runs `bench exec-trial --request URL --outcome URL`
// (containerOverrides.command). A request up to inline_request_limit bytes
// travels in the container's environment (BENCH_REQUEST, read with
// --request env:BENCH_REQUEST); a larger one is put in S3 first. The
// outcome always comes back through S3: the container writes it to
// s3://bucket/prefix/..., and Fetch reads it.
//
// Job states are read with DescribeJobs, coalesced across all the runners
// of an engine: the ids that runners poll within a short window go out in
// one call of up to 100 ids (see describer).
//
// The package also registers the "s3" scheme with engines.RegisterScheme,
// so that `bench exec-trial` in the container reads and writes s3:// URLs
// with the standard AWS SDK configuration of the container (its job role,
// AWS_REGION, AWS_ENDPOINT_URL, ...).
//
// Credentials always come from the standard AWS chain (environment
// variables, the shared config and credentials files with an optional
// profile, SSO, web identity, container and instance metadata). They are
// never logged nor put in errors, requests or job overrides.
package awsbatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/batch"
	btypes "github.com/aws/aws-sdk-go-v2/service/batch/types"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/decode"
)

// Class names of the engine.
const (
	ClassShort = "bench.engines.AWSBatchEngine"
	ClassFull  = "bench.engines.aws_batch.AWSBatchEngine"
)

// EngineName is the engine's name in trial handles.
const EngineName = "aws_batch"

// RequestEnv is the container environment variable that holds an inline
// request.
const RequestEnv = "BENCH_REQUEST"

// Defaults and limits.
const (
	// DefaultInlineRequestLimit is the default inline_request_limit. ECS,
	// which runs Batch containers, allows 8192 characters for all of a
	// task's overrides (command, environment and JSON punctuation
	// included), so an inline request must stay well below that.
	DefaultInlineRequestLimit = 4096
	// maxInlineRequestLimit keeps inline requests under the ECS limit.
	maxInlineRequestLimit = 7168
	// describeMax is DescribeJobs' limit on ids per call.
	describeMax = 100
	// minTimeout is Batch's smallest attemptDurationSeconds.
	minTimeout = 60
	// maxArraySize is Batch's largest array job.
	maxArraySize = 10000
	// newJobGrace: a job this engine submitted less than this long ago
	// that DescribeJobs does not list yet is queued (eventual
	// consistency), not lost.
	newJobGrace = 30 * time.Second
	// cancelReason is the TerminateJob reason.
	cancelReason = "bench: trial cancelled"
)

func init() {
	engines.Register(New, ClassShort, ClassFull)
}

// Config is the engine's own config (beside engines.Common).
type Config struct {
	// JobQueue is the job queue's name or ARN (required).
	JobQueue string `json:"job_queue"`
	// JobDefinition is the job definition's name, name:revision or ARN
	// (required). Its image must have bench (Common.Bench) on its PATH
	// and the experiment's configs.
	JobDefinition string `json:"job_definition"`
	// Region is the AWS region ("": the standard chain's).
	Region string `json:"region"`
	// EndpointURL overrides the Batch and S3 endpoints (moto, VPC
	// endpoints).
	EndpointURL string `json:"endpoint_url"`
	// Profile selects a profile of the shared AWS config files.
	Profile string `json:"profile"`
	// Bucket and Prefix are the S3 place of large requests and of all
	// outcomes (Bucket is required).
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix"`
	// MaxJobs is how many trials run at once (default: num_trial_runners).
	MaxJobs *int `json:"max_jobs"`
	// VCPUs, MemoryMiB and GPUs override the job definition's resource
	// requirements.
	VCPUs     *float64 `json:"vcpus"`
	MemoryMiB *int     `json:"memory_mib"`
	GPUs      *int     `json:"gpus"`
	// TimeoutS is the job's attemptDurationSeconds: Batch stops a job that
	// runs longer (the trial is then TIMED_OUT). At least 60.
	TimeoutS *int `json:"timeout_s"`
	// Environment is added to the container's environment (not for
	// secrets: Batch shows overrides to anyone who can describe the job).
	Environment map[string]string `json:"environment"`
	// InlineRequestLimit is the largest request (in bytes, as a JSON
	// string) passed in the container's environment; larger requests go
	// to S3.
	InlineRequestLimit *int `json:"inline_request_limit"`
}

// ref is the engine's Ref JSON.
type ref struct {
	JobID      string `json:"job_id"`
	OutcomeURL string `json:"outcome_url,omitempty"`
	RequestURL string `json:"request_url,omitempty"`
}

func parseRef(r engines.Ref) (ref, error) {
	var x ref
	if err := json.Unmarshal(r, &x); err != nil {
		return ref{}, fmt.Errorf("aws_batch: bad job reference %q: %w", string(r), err)
	}
	if x.JobID == "" {
		return ref{}, fmt.Errorf("aws_batch: job reference %q has no job_id", string(r))
	}
	return x, nil
}

// batchAPI is the part of the Batch client the engine uses.
type batchAPI interface {
	SubmitJob(ctx context.Context, in *batch.SubmitJobInput, opts ...func(*batch.Options)) (*batch.SubmitJobOutput, error)
	DescribeJobs(ctx context.Context, in *batch.DescribeJobsInput, opts ...func(*batch.Options)) (*batch.DescribeJobsOutput, error)
	TerminateJob(ctx context.Context, in *batch.TerminateJobInput, opts ...func(*batch.Options)) (*batch.TerminateJobOutput, error)
	ListJobs(ctx context.Context, in *batch.ListJobsInput, opts ...func(*batch.Options)) (*batch.ListJobsOutput, error)
}

// Engine is the AWS Batch engine.
type Engine struct {
	cfg          Config
	bench        string
	experimentID string
	slots        int
	inlineLimit  int
	prefix       string // clean, no leading or trailing slash
	batch        batchAPI
	s3           *s3Store
	desc         *describer

	mu        sync.Mutex
	submitted map[string]time.Time // job id → when this engine submitted it
}

var (
	_ engines.Engine         = (*Engine)(nil)
	_ engines.PilotSubmitter = (*Engine)(nil)
)

// New is the engine factory.
func New(ctx context.Context, p engines.Params) (engines.Engine, error) {
	return newEngine(ctx, p, nil)
}

// newEngine builds the engine; opt (tests) adjusts the AWS config.
func newEngine(ctx context.Context, p engines.Params, opt func(*aws.Config)) (*Engine, error) {
	var c Config
	if err := decode.Into(p.Config, &c); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	awsCfg, err := loadAWSConfig(ctx, c.Region, c.Profile)
	if err != nil {
		return nil, err
	}
	if opt != nil {
		opt(&awsCfg)
	}
	e := &Engine{
		cfg:          c,
		bench:        p.Common.Bench,
		experimentID: p.ExperimentID,
		slots:        max(p.Slots, 1),
		inlineLimit:  DefaultInlineRequestLimit,
		prefix:       strings.Trim(c.Prefix, "/"),
		submitted:    map[string]time.Time{},
	}
	if e.bench == "" || isDriverExe(e.bench) {
		// Common.Defaults fills in this binary's path, which means
		// nothing in a container: there the default is bench on the
		// image's PATH.
		e.bench = "bench"
	}
	if c.MaxJobs != nil {
		e.slots = *c.MaxJobs
	}
	if c.InlineRequestLimit != nil {
		e.inlineLimit = *c.InlineRequestLimit
	}
	var ep *string
	if c.EndpointURL != "" {
		ep = aws.String(c.EndpointURL)
	}
	e.batch = batch.NewFromConfig(awsCfg, func(o *batch.Options) { o.BaseEndpoint = ep })
	e.s3 = &s3Store{client: newS3Client(awsCfg, ep)}
	e.desc = newDescriber(e.batch, describeWindow(p.Common.PollInterval.Std()))
	return e, nil
}

// describeWindow is how long the describer gathers job ids before a
// DescribeJobs call: a fifth of the poll interval, between 5 and 200 ms.
func describeWindow(poll time.Duration) time.Duration {
	return min(max(poll/5, 5*time.Millisecond), 200*time.Millisecond)
}

// isDriverExe reports whether path is this process's own executable (the
// default of Common.Bench).
func isDriverExe(path string) bool {
	exe, err := os.Executable()
	return err == nil && path == exe
}

var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func (c *Config) validate() error {
	if strings.TrimSpace(c.JobQueue) == "" {
		return errors.New(`config key "job_queue": the Batch job queue (name or ARN) is required`)
	}
	if strings.TrimSpace(c.JobDefinition) == "" {
		return errors.New(`config key "job_definition": the Batch job definition (name, name:revision or ARN) is required`)
	}
	if c.Bucket == "" {
		return errors.New(`config key "bucket": an S3 bucket for outcomes (and large requests) is required`)
	}
	if !bucketName.MatchString(c.Bucket) {
		return fmt.Errorf(`config key "bucket": %q is not an S3 bucket name`, c.Bucket)
	}
	for _, el := range strings.Split(strings.Trim(c.Prefix, "/"), "/") {
		if el == "." || el == ".." {
			return fmt.Errorf(`config key "prefix": %q may not contain "." or ".." elements`, c.Prefix)
		}
	}
	if c.EndpointURL != "" {
		u, err := url.Parse(c.EndpointURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf(`config key "endpoint_url": %q is not an http:// or https:// URL`, c.EndpointURL)
		}
	}
	if c.MaxJobs != nil && *c.MaxJobs < 1 {
		return fmt.Errorf(`config key "max_jobs": must be at least 1, got %d`, *c.MaxJobs)
	}
	if c.VCPUs != nil && !(*c.VCPUs > 0) {
		return fmt.Errorf(`config key "vcpus": must be more than 0, got %v`, *c.VCPUs)
	}
	if c.MemoryMiB != nil && *c.MemoryMiB < 1 {
		return fmt.Errorf(`config key "memory_mib": must be at least 1, got %d`, *c.MemoryMiB)
	}
	if c.GPUs != nil && *c.GPUs < 0 {
		return fmt.Errorf(`config key "gpus": must be 0 or more, got %d`, *c.GPUs)
	}
	if c.TimeoutS != nil && *c.TimeoutS < minTimeout {
		return fmt.Errorf(`config key "timeout_s": Batch's smallest attempt duration is %d seconds, got %d`, minTimeout, *c.TimeoutS)
	}
	if c.InlineRequestLimit != nil && (*c.InlineRequestLimit < 0 || *c.InlineRequestLimit > maxInlineRequestLimit) {
		return fmt.Errorf(`config key "inline_request_limit": must be between 0 (always S3) and %d bytes (ECS allows 8192 characters for all container overrides), got %d`,
			maxInlineRequestLimit, *c.InlineRequestLimit)
	}
	for k := range c.Environment {
		if !envName.MatchString(k) {
			return fmt.Errorf(`config key "environment": %q is not an environment variable name`, k)
		}
		if k == RequestEnv || strings.HasPrefix(k, "AWS_BATCH") {
			return fmt.Errorf(`config key "environment": %s is set by bench or Batch`, k)
		}
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// loadAWSConfig resolves region and credentials through the standard AWS
// chain (credentials lazily, on the first request).
func loadAWSConfig(ctx context.Context, region, profile string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// The SDK's errors name files and profiles, never secrets.
		return aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New(`no AWS region: set config key "region", AWS_REGION, or a region in the AWS profile`)
	}
	return cfg, nil
}

// Name is "aws_batch".
func (e *Engine) Name() string { return EngineName }

// Slots is max_jobs (default num_trial_runners).
func (e *Engine) Slots() int { return e.slots }

// Close stops the describer.
func (e *Engine) Close() error {
	e.desc.close()
	return nil
}

var batchNameBad = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// batchJobName makes a job name Batch accepts: letters, digits, '-' and
// '_' (no '.'), starting with a letter or digit, at most 128 characters.
func batchJobName(name string) string {
	n := batchNameBad.ReplaceAllString(name, "_")
	n = strings.TrimLeft(n, "_-")
	if n == "" {
		n = "bench"
	}
	if len(n) > 128 {
		n = n[:128]
	}
	return n
}

var tagBad = regexp.MustCompile(`[^\p{L}\p{N} +=._:/@-]`)

// tagValue makes a string fit for a Batch tag value.
func tagValue(s string) string {
	s = tagBad.ReplaceAllString(s, "_")
	if len(s) > 256 {
		s = s[:256]
	}
	return s
}

// token returns 8 random hex digits: object keys of different runs of an
// experiment (or of a job name reused after its database was removed)
// never collide, so Fetch never reads an older run's outcome.
func token() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b[:])
}

// s3URL is s3://bucket/prefix/name.
func (e *Engine) s3URL(name string) string {
	if e.prefix == "" {
		return "s3://" + e.cfg.Bucket + "/" + name
	}
	return "s3://" + e.cfg.Bucket + "/" + e.prefix + "/" + name
}

// containerEnv returns the configured environment plus extra, sorted.
func (e *Engine) containerEnv(extra map[string]string) []btypes.KeyValuePair {
	all := map[string]string{}
	for k, v := range e.cfg.Environment {
		all[k] = v
	}
	for k, v := range extra {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]btypes.KeyValuePair, 0, len(keys))
	for _, k := range keys {
		out = append(out, btypes.KeyValuePair{Name: aws.String(k), Value: aws.String(all[k])})
	}
	return out
}

// overrides returns the container overrides for a command.
func (e *Engine) overrides(command []string, extraEnv map[string]string) *btypes.ContainerOverrides {
	o := &btypes.ContainerOverrides{Command: command, Environment: e.containerEnv(extraEnv)}
	if e.cfg.VCPUs != nil {
		o.ResourceRequirements = append(o.ResourceRequirements, btypes.ResourceRequirement{
			Type: btypes.ResourceTypeVcpu, Value: aws.String(strconv.FormatFloat(*e.cfg.VCPUs, 'f', -1, 64))})
	}
	if e.cfg.MemoryMiB != nil {
		o.ResourceRequirements = append(o.ResourceRequirements, btypes.ResourceRequirement{
			Type: btypes.ResourceTypeMemory, Value: aws.String(strconv.Itoa(*e.cfg.MemoryMiB))})
	}
	if e.cfg.GPUs != nil && *e.cfg.GPUs > 0 {
		o.ResourceRequirements = append(o.ResourceRequirements, btypes.ResourceRequirement{
			Type: btypes.ResourceTypeGpu, Value: aws.String(strconv.Itoa(*e.cfg.GPUs))})
	}
	return o
}

func (e *Engine) timeout() *btypes.JobTimeout {
	if e.cfg.TimeoutS == nil {
		return nil
	}
	return &btypes.JobTimeout{AttemptDurationSeconds: aws.Int32(int32(min(*e.cfg.TimeoutS, 1<<31-1)))}
}

// Submit submits one job: the request inline or in S3, the outcome to S3.
// The job's name is engines.SubmitName(job): a job of that name already in
// the queue (a bench killed after SubmitJob, before the job was recorded
// with the trial) is taken instead of submitting the trial again.
func (e *Engine) Submit(ctx context.Context, job engines.Job) (engines.Ref, error) {
	name := batchJobName(job.Name)
	subName := batchJobName(engines.SubmitName(job))
	if r, ok, err := e.findSubmitted(ctx, subName); err != nil {
		return nil, fmt.Errorf("aws_batch: looking for an earlier submission of job %s: %w", subName, err)
	} else if ok {
		return json.Marshal(r)
	}
	base := fmt.Sprintf("%s.%d.%s", name, job.Attempt, token())
	r := ref{OutcomeURL: e.s3URL(base + ".outcome.json")}
	env := map[string]string{}
	if inline, ok := e.inline(job.Request); ok {
		r.RequestURL = "env:" + RequestEnv
		env[RequestEnv] = inline
	} else {
		r.RequestURL = e.s3URL(base + ".request.json")
		if err := e.s3.Write(ctx, r.RequestURL, job.Request); err != nil {
			return nil, fmt.Errorf("aws_batch: uploading the request of job %s: %w", name, err)
		}
	}
	tags := map[string]string{"bench:attempt": strconv.Itoa(job.Attempt)}
	var head struct {
		ExperimentID string `json:"experiment_id"`
		TrialID      int    `json:"trial_id"`
	}
	if json.Unmarshal(job.Request, &head) == nil {
		if head.ExperimentID != "" {
			tags["bench:experiment"] = tagValue(head.ExperimentID)
		}
		if head.TrialID > 0 {
			tags["bench:trial"] = strconv.Itoa(head.TrialID)
		}
	}
	if tags["bench:experiment"] == "" && e.experimentID != "" {
		tags["bench:experiment"] = tagValue(e.experimentID)
	}
	out, err := e.batch.SubmitJob(ctx, &batch.SubmitJobInput{
		JobName:            aws.String(subName),
		JobQueue:           aws.String(e.cfg.JobQueue),
		JobDefinition:      aws.String(e.cfg.JobDefinition),
		ContainerOverrides: e.overrides(engines.Command(e.bench, r.RequestURL, r.OutcomeURL), env),
		Timeout:            e.timeout(),
		Tags:               tags,
	})
	if err != nil {
		return nil, fmt.Errorf("aws_batch: submitting job %s to queue %s: %w", name, e.cfg.JobQueue, err)
	}
	r.JobID = aws.ToString(out.JobId)
	if r.JobID == "" {
		return nil, fmt.Errorf("aws_batch: SubmitJob for %s returned no job id", name)
	}
	e.noteSubmitted(r.JobID)
	b, _ := json.Marshal(r)
	return b, nil
}

// findSubmitted finds the latest job of the queue named name (ListJobs with a
// JOB_NAME filter, which lists jobs of every status) and rebuilds its
// reference from its command line (DescribeJobs).
func (e *Engine) findSubmitted(ctx context.Context, name string) (ref, bool, error) {
	var latest *btypes.JobSummary
	in := &batch.ListJobsInput{JobQueue: aws.String(e.cfg.JobQueue),
		Filters: []btypes.KeyValuesPair{{Name: aws.String("JOB_NAME"), Values: []string{name}}}}
	for page := 0; page < 20; page++ {
		out, err := e.batch.ListJobs(ctx, in)
		if err != nil {
			return ref{}, false, err
		}
		for i := range out.JobSummaryList {
			j := &out.JobSummaryList[i]
			// (A JOB_NAME value ending in '*' is a prefix: names here never
			// end so, but check the name all the same.)
			if aws.ToString(j.JobName) == name && (latest == nil || aws.ToInt64(j.CreatedAt) > aws.ToInt64(latest.CreatedAt)) {
				latest = j
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	if latest == nil {
		return ref{}, false, nil
	}
	id := aws.ToString(latest.JobId)
	d, err := e.desc.describe(ctx, id)
	if err != nil || d == nil || d.Container == nil {
		return ref{}, false, err
	}
	r := ref{JobID: id}
	cmd := d.Container.Command
	for i := 0; i+1 < len(cmd); i++ {
		switch cmd[i] {
		case "--request":
			r.RequestURL = cmd[i+1]
		case "--outcome":
			r.OutcomeURL = cmd[i+1]
		}
	}
	if r.OutcomeURL == "" {
		return ref{}, false, nil // not a trial job of this engine
	}
	return r, true, nil
}

// inline returns the request as an environment value when it fits.
func (e *Engine) inline(req []byte) (string, bool) {
	if e.inlineLimit <= 0 {
		return "", false
	}
	// The overrides travel as JSON: count the escaped size.
	esc, err := json.Marshal(string(req))
	if err != nil || len(esc)-2 > e.inlineLimit {
		return "", false
	}
	return string(req), true
}

func (e *Engine) noteSubmitted(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	e.submitted[id] = now
	for k, t := range e.submitted {
		if now.Sub(t) > newJobGrace {
			delete(e.submitted, k)
		}
	}
}

// recentlySubmitted reports whether this engine submitted the job less
// than newJobGrace ago.
func (e *Engine) recentlySubmitted(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.submitted[id]
	return ok && time.Since(t) < newJobGrace
}

// Poll reads the job's state (DescribeJobs, coalesced with other polls).
func (e *Engine) Poll(ctx context.Context, rr engines.Ref) (engines.State, error) {
	r, err := parseRef(rr)
	if err != nil {
		return engines.State{}, err
	}
	d, err := e.desc.describe(ctx, r.JobID)
	if err != nil {
		return engines.State{}, fmt.Errorf("aws_batch: describing job %s: %w", r.JobID, err)
	}
	if d == nil {
		if e.recentlySubmitted(r.JobID) {
			return engines.State{Phase: engines.Queued, Progress: "NOT_YET_LISTED"}, nil
		}
		return engines.State{Phase: engines.Lost, Reason: fmt.Sprintf("AWS Batch does not know job %s (DescribeJobs did not list it)", r.JobID)}, nil
	}
	return stateOf(d), nil
}

// timedOutReason matches Batch's statusReason for a job stopped at its
// attempt duration ("Job attempt duration exceeded timeout").
var timedOutReason = regexp.MustCompile(`(?i)attempt duration exceeded`)

// stateOf maps a job's description to a State.
func stateOf(d *btypes.JobDetail) engines.State {
	status := d.Status
	reason := aws.ToString(d.StatusReason)
	st := engines.State{Reason: reason}
	if d.StartedAt != nil && *d.StartedAt > 0 {
		st.Started = time.UnixMilli(*d.StartedAt).UTC()
	}
	if d.StoppedAt != nil && *d.StoppedAt > 0 {
		st.Ended = time.UnixMilli(*d.StoppedAt).UTC()
	}
	switch status {
	case btypes.JobStatusSubmitted, btypes.JobStatusPending, btypes.JobStatusRunnable, btypes.JobStatusStarting:
		st.Phase = engines.Queued
	case btypes.JobStatusRunning:
		st.Phase = engines.Running
	case btypes.JobStatusSucceeded:
		st.Phase = engines.Done
	case btypes.JobStatusFailed:
		st.Phase = engines.Failed
		if timedOutReason.MatchString(reason) {
			st.Phase = engines.TimedOut
		}
		st.Reason = failureReason(d)
	default:
		// A status this code does not know yet: not final, keep polling.
		st.Phase = engines.Queued
	}
	st.Progress = joinNonEmpty(" ", string(status), reason)
	if !st.Started.IsZero() {
		st.Progress += " started " + st.Started.Format(time.RFC3339)
	}
	return st
}

// containerReason is the container's exit code and reason, if any: the
// job's container, else its last attempt's.
func containerReason(d *btypes.JobDetail) string {
	var exit *int32
	var reason string
	if d.Container != nil {
		exit, reason = d.Container.ExitCode, aws.ToString(d.Container.Reason)
	}
	if n := len(d.Attempts); n > 0 && d.Attempts[n-1].Container != nil {
		c := d.Attempts[n-1].Container
		if exit == nil {
			exit = c.ExitCode
		}
		if reason == "" {
			reason = aws.ToString(c.Reason)
		}
	}
	var parts []string
	if exit != nil {
		parts = append(parts, fmt.Sprintf("exit code %d", *exit))
	}
	if reason != "" {
		parts = append(parts, reason)
	}
	if len(parts) == 0 {
		return ""
	}
	return "container: " + strings.Join(parts, ", ")
}

// logStream is the job's CloudWatch log stream, if Batch names one.
func logStream(d *btypes.JobDetail) string {
	if d.Container != nil && aws.ToString(d.Container.LogStreamName) != "" {
		return aws.ToString(d.Container.LogStreamName)
	}
	if n := len(d.Attempts); n > 0 && d.Attempts[n-1].Container != nil {
		return aws.ToString(d.Attempts[n-1].Container.LogStreamName)
	}
	return ""
}

// failureReason says why a job FAILED with what Batch tells: its status
// reason (or that it gave none), the container's exit code and reason,
// and the log stream to read.
func failureReason(d *btypes.JobDetail) string {
	reason := strings.TrimSpace(aws.ToString(d.StatusReason))
	if reason == "" {
		reason = "AWS Batch gave no status reason"
	}
	parts := []string{reason}
	if c := containerReason(d); c != "" {
		parts = append(parts, c)
	}
	if ls := logStream(d); ls != "" {
		parts = append(parts, "log stream "+ls)
	}
	return strings.Join(parts, "; ")
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

// Fetch reads the job's outcome from S3 (nil when there is none) and says
// what Batch reports about the job in Log.
func (e *Engine) Fetch(ctx context.Context, rr engines.Ref) (engines.Result, error) {
	r, err := parseRef(rr)
	if err != nil {
		return engines.Result{}, err
	}
	var res engines.Result
	if r.OutcomeURL != "" {
		b, err := e.s3.read(ctx, r.OutcomeURL)
		switch {
		case errors.Is(err, errNoObject):
		case err != nil:
			return engines.Result{}, fmt.Errorf("aws_batch: reading the outcome of job %s: %w", r.JobID, err)
		default:
			res.Outcome = b
		}
	}
	d, err := e.desc.describe(ctx, r.JobID)
	switch {
	case err != nil:
		res.Log = fmt.Sprintf("AWS Batch job %s: could not describe it: %v", r.JobID, err)
	case d == nil:
		res.Log = fmt.Sprintf("AWS Batch job %s: not listed by DescribeJobs", r.JobID)
	default:
		res.Log = jobLog(d)
	}
	return res, nil
}

// jobLog is what Batch says about a job, one fact a line.
func jobLog(d *btypes.JobDetail) string {
	var b strings.Builder
	fmt.Fprintf(&b, "AWS Batch job %s (%s): %s\n", aws.ToString(d.JobId), aws.ToString(d.JobName), d.Status)
	if r := aws.ToString(d.StatusReason); r != "" {
		fmt.Fprintf(&b, "status reason: %s\n", r)
	}
	if c := containerReason(d); c != "" {
		fmt.Fprintln(&b, c)
	}
	if ls := logStream(d); ls != "" {
		fmt.Fprintf(&b, "log stream: %s\n", ls)
	}
	return b.String()
}

// Cancel terminates the job (TerminateJob; a job that already ended is
// left as it is by Batch).
func (e *Engine) Cancel(ctx context.Context, rr engines.Ref) error {
	r, err := parseRef(rr)
	if err != nil {
		return err
	}
	_, err = e.batch.TerminateJob(ctx, &batch.TerminateJobInput{JobId: aws.String(r.JobID), Reason: aws.String(cancelReason)})
	if err != nil {
		return fmt.Errorf("aws_batch: terminating job %s: %w", r.JobID, err)
	}
	return nil
}

// SubmitPilots submits an array job of count children that each run argv
// (one plain job when count is 1). The refs are the children's ids
// (<array job id>:<index>), which Poll and Cancel take.
func (e *Engine) SubmitPilots(ctx context.Context, name string, argv []string, count int) ([]engines.Ref, error) {
	if count < 1 || count > maxArraySize {
		return nil, fmt.Errorf("aws_batch: %d pilots: Batch runs 1 to %d at once in one array job", count, maxArraySize)
	}
	if len(argv) == 0 {
		return nil, errors.New("aws_batch: pilots need a command")
	}
	if isDriverExe(argv[0]) {
		// bench pilots starts argv with Common.Bench, whose default is
		// the driver's path: in the container, bench is e.bench.
		argv = append([]string{e.bench}, argv[1:]...)
	}
	in := &batch.SubmitJobInput{
		JobName:            aws.String(batchJobName(name)),
		JobQueue:           aws.String(e.cfg.JobQueue),
		JobDefinition:      aws.String(e.cfg.JobDefinition),
		ContainerOverrides: e.overrides(argv, nil),
		Timeout:            e.timeout(),
		Tags:               map[string]string{"bench:pilots": tagValue(name)},
	}
	if e.experimentID != "" {
		in.Tags["bench:experiment"] = tagValue(e.experimentID)
	}
	if count > 1 {
		in.ArrayProperties = &btypes.ArrayProperties{Size: aws.Int32(int32(count))}
	}
	out, err := e.batch.SubmitJob(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("aws_batch: submitting %d pilots to queue %s: %w", count, e.cfg.JobQueue, err)
	}
	id := aws.ToString(out.JobId)
	if id == "" {
		return nil, errors.New("aws_batch: SubmitJob for the pilots returned no job id")
	}
	refs := make([]engines.Ref, count)
	for i := range refs {
		cid := id
		if count > 1 {
			cid = fmt.Sprintf("%s:%d", id, i)
		}
		e.noteSubmitted(cid)
		b, _ := json.Marshal(ref{JobID: cid})
		refs[i] = b
	}
	return refs, nil
}
