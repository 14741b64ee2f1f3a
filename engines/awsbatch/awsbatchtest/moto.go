// Package awsbatchtest runs AWS Batch tests against a real moto server
// whose jobs run as local processes.
//
// moto emulates Batch in two ways. Its "batch_simple" backend (config
// {"batch": {"use_docker": false}}) marks every job SUCCEEDED the moment
// it is submitted and runs nothing, so a job is never seen queued or
// running and TerminateJob changes nothing. Its default backend runs each
// job in a thread that walks the job through SUBMITTED, PENDING,
// RUNNABLE, STARTING and RUNNING, starts the job's container through the
// Docker API (docker.from_env(), i.e. DOCKER_HOST), polls it, and marks
// the job SUCCEEDED or FAILED from the container's exit code (FAILED with
// the TerminateJob reason when the job was terminated). Without a Docker
// engine every job FAILS at once.
//
// Start gives each test its own moto server (scripts/testenv/moto.sh, the
// script that starts the shared one) with DOCKER_HOST pointing at Docker,
// a small fake Docker API in this process: a "container" is the job's
// command run by a Go function the test gives (a fake bench, or the real
// `bench exec-trial` binary), with the job's environment. So moto's own
// job state machine, container overrides, environment, array jobs and
// TerminateJob are what the engine sees; only the container runtime is the
// test's.
package awsbatchtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/batch"
	btypes "github.com/aws/aws-sdk-go-v2/service/batch/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/benchtune/bench/internal/testenv"
)

// Region is the region the tests use.
const Region = "us-east-1"

// Fixture is a moto server with a Batch queue, job definition and S3
// bucket ready for the engine.
type Fixture struct {
	// Endpoint is the moto server's URL.
	Endpoint string
	// Server and Docker are the moto server and the fake Docker API that
	// runs the jobs' containers.
	Server *Server
	Docker *Docker
	// Env is what the engine must add to the containers' environment.
	Env map[string]string
	// JobQueue, JobDefinition and Bucket are what the engine config
	// names.
	JobQueue, JobDefinition, Bucket string
	// Batch and S3 are clients of the moto server.
	Batch *batch.Client
	S3    *s3.Client
}

// awsVars are the standard AWS chain's variables for tests: static fake
// credentials, region us-east-1, no shared config files (so ~/.aws never
// matters), no endpoint.
func awsVars(none string) [][2]string {
	return [][2]string{
		{"AWS_ACCESS_KEY_ID", "AKIDBENCHTEST"},
		{"AWS_SECRET_ACCESS_KEY", "bench-test-secret"},
		{"AWS_SESSION_TOKEN", ""},
		{"AWS_REGION", Region},
		{"AWS_DEFAULT_REGION", Region},
		{"AWS_PROFILE", ""},
		{"AWS_CONFIG_FILE", none},
		{"AWS_SHARED_CREDENTIALS_FILE", none},
		{"AWS_EC2_METADATA_DISABLED", "true"},
		{"AWS_ENDPOINT_URL", ""},
		{"AWS_ENDPOINT_URL_S3", ""},
	}
}

// AWSEnv points the standard AWS chain of this process at the test
// values (awsVars) for the test.
func AWSEnv(t testing.TB) {
	t.Helper()
	for _, kv := range awsVars(filepath.Join(t.TempDir(), "none")) {
		t.Setenv(kv[0], kv[1])
	}
}

// ChildEnv is the AWS part of a container's environment: the test values,
// and moto's endpoint in AWS_ENDPOINT_URL (as a container pointed at moto
// would have it).
func ChildEnv(endpoint string) []string {
	var out []string
	for _, kv := range awsVars("/nonexistent") {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return append(out, "AWS_ENDPOINT_URL="+endpoint)
}

// Server is a moto server whose Batch jobs run on a fake Docker.
type Server struct {
	Endpoint string
	Docker   *Docker
	script   string
	dir      string
}

// startServer starts the fake Docker and moto (scripts/testenv/moto.sh)
// with DOCKER_HOST pointing at it.
func startServer(run RunFunc) (*Server, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("cannot locate the module root")
	}
	s := &Server{script: filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "testenv", "moto.sh")}
	s.Docker = NewDocker(run)
	dir, err := os.MkdirTemp("", "bench-moto-")
	if err != nil {
		s.Docker.Close()
		return nil, err
	}
	s.dir = dir
	var stderr bytes.Buffer
	cmd := exec.Command(s.script, "up", dir)
	// moto (botocore) gets none of the tests' AWS variables: an empty
	// AWS_PROFILE fails its requests.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "DOCKER_HOST=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DOCKER_HOST="+s.Docker.Host())
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.Docker.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting moto: %v\n%s", err, stderr.String())
	}
	line := strings.TrimSpace(string(out))
	ep, ok := strings.CutPrefix(line, "export BENCH_TEST_MOTO_ENDPOINT=")
	if !ok {
		s.Stop()
		return nil, fmt.Errorf("moto.sh printed %q", line)
	}
	s.Endpoint = ep
	s.Docker.SetBaseEnv(ChildEnv(ep))
	return s, nil
}

// Log is the tail of moto's log.
func (s *Server) Log(lines int) string {
	b, err := os.ReadFile(filepath.Join(s.dir, "moto", "moto.log"))
	if err != nil {
		return err.Error()
	}
	return tail(string(b), lines)
}

// Count counts the requests moto logged for an API path (such as
// "/v1/submitjob").
func (s *Server) Count(path string) int {
	b, err := os.ReadFile(filepath.Join(s.dir, "moto", "moto.log"))
	if err != nil {
		return -1
	}
	return strings.Count(string(b), `"POST `+path+` HTTP/`)
}

// Stop stops moto and the fake Docker.
func (s *Server) Stop() {
	down := exec.Command(s.script, "down", s.dir)
	if out, err := down.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping moto: %v\n%s", err, out)
	}
	s.Docker.Close()
	os.RemoveAll(s.dir)
}

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
	sharedN   int
)

// Main runs a test binary's tests that use Shared, and stops the shared
// moto server afterwards. Call it from TestMain. It points the AWS chain
// of the whole process at the test values (AWSEnv).
func Main(m *testing.M) {
	none, err := os.MkdirTemp("", "bench-aws-none-")
	if err == nil {
		for _, kv := range awsVars(filepath.Join(none, "none")) {
			if kv[1] == "" {
				os.Unsetenv(kv[0])
			} else {
				os.Setenv(kv[0], kv[1])
			}
		}
	}
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.Stop()
	}
	sharedMu.Unlock()
	if none != "" {
		os.RemoveAll(none)
	}
	os.Exit(code)
}

// Shared returns a fixture on the test binary's one moto server (started
// on first use; the binary's TestMain must call Main), with a job queue,
// job definition and bucket of the test's own, whose jobs run with run:
// the engine must add Fixture.Env to the containers' environment (it
// routes each container to its test's RunFunc). Tests that use it may run
// in parallel. It skips the test when moto is not available
// (BENCH_TEST_MOTO_ENDPOINT unset: scripts/test.sh did not start moto),
// or fails it under BENCH_TEST_STRICT=1.
func Shared(t testing.TB, run RunFunc) *Fixture {
	t.Helper()
	testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
	sharedMu.Lock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = startServer(nil)
	}
	s, err := shared, sharedErr
	sharedN++
	n := sharedN
	sharedMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	route := fmt.Sprintf("t%d", n)
	s.Docker.Route(route, run)
	f := setUp(t, s, fmt.Sprintf("-%d", n))
	f.Env = map[string]string{RouteEnv: route}
	return f
}

// Start starts a moto server of the test's own whose jobs run with run,
// with a job queue, job definition and bucket, points the process's AWS
// chain at the test values (AWSEnv), and stops it all at the test's end.
// It skips the test when moto is not available, as Shared does.
func Start(t testing.TB, run RunFunc) *Fixture {
	t.Helper()
	testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
	AWSEnv(t)
	s, err := startServer(run)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("BENCH_TEST_MOTO_LOG") != "" {
			t.Logf("moto log (tail):\n%s", s.Log(60))
		}
		s.Stop()
	})
	return setUp(t, s, "")
}

// setUp creates an IAM role, a compute environment, a job queue, a job
// definition and a bucket, with names ending in suffix.
func setUp(t testing.TB, s *Server, suffix string) *Fixture {
	t.Helper()
	ep := s.Endpoint
	ctx := t.Context()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(Region),
		config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDBENCHTEST", SecretAccessKey: "bench-test-secret"}, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	f := &Fixture{
		Endpoint: ep, Server: s, Docker: s.Docker,
		Batch: batch.NewFromConfig(cfg, func(o *batch.Options) { o.BaseEndpoint = aws.String(ep) }),
		S3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(ep)
			o.UsePathStyle = true
			o.DisableLogOutputChecksumValidationSkipped = true
		}),
		JobQueue: "bench-queue" + suffix, JobDefinition: "bench-jobdef" + suffix, Bucket: "bench-outcomes" + suffix,
	}
	role := createRole(t, ep, "bench-batch-service"+suffix)
	// "already exists" is success: the SDK retries a call whose answer
	// was lost, and moto on a loaded machine can be slow enough for that.
	ceName := "bench-ce" + suffix
	if _, err := f.Batch.CreateComputeEnvironment(ctx, &batch.CreateComputeEnvironmentInput{
		ComputeEnvironmentName: aws.String(ceName), Type: btypes.CETypeUnmanaged,
		ServiceRole: aws.String(role),
	}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("moto: CreateComputeEnvironment: %v\nmoto log:\n%s", err, s.Log(30))
	}
	if _, err := f.Batch.CreateJobQueue(ctx, &batch.CreateJobQueueInput{
		JobQueueName: aws.String(f.JobQueue), Priority: aws.Int32(1), State: btypes.JQStateEnabled,
		ComputeEnvironmentOrder: []btypes.ComputeEnvironmentOrder{{Order: aws.Int32(1), ComputeEnvironment: aws.String(ceName)}},
	}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("moto: CreateJobQueue: %v\nmoto log:\n%s", err, s.Log(30))
	}
	if _, err := f.Batch.RegisterJobDefinition(ctx, &batch.RegisterJobDefinitionInput{
		JobDefinitionName: aws.String(f.JobDefinition), Type: btypes.JobDefinitionTypeContainer,
		ContainerProperties: &btypes.ContainerProperties{
			Image:   aws.String("bench:test"),
			Command: []string{"bench", "--help"},
			// The deprecated fields, not resourceRequirements: from a
			// VCPU requirement moto's DescribeJobs answers "vcpus": 1.0,
			// which the SDK cannot decode into an integer.
			Vcpus:  aws.Int32(1),
			Memory: aws.Int32(512),
		},
	}); err != nil {
		t.Fatalf("moto: RegisterJobDefinition: %v\nmoto log:\n%s", err, s.Log(30))
	}
	if _, err := f.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(f.Bucket)}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
		t.Fatalf("moto: CreateBucket: %v", err)
	}
	return f
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// createRole creates an IAM role in moto (the compute environment needs a
// service role) with a signed query request, sparing the tests an IAM
// client dependency.
func createRole(t testing.TB, ep, name string) string {
	t.Helper()
	form := url.Values{
		"Action": {"CreateRole"}, "Version": {"2010-05-08"}, "RoleName": {name},
		"AssumeRolePolicyDocument": {`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"batch.amazonaws.com"},"Action":"sts:AssumeRole"}]}`},
	}.Encode()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ep+"/", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sum := sha256Hex([]byte(form))
	creds := aws.Credentials{AccessKeyID: "AKIDBENCHTEST", SecretAccessKey: "bench-test-secret"}
	if err := v4.NewSigner().SignHTTP(t.Context(), creds, req, sum, "iam", Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("moto: CreateRole: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("moto: CreateRole: %s: %s", resp.Status, body)
	}
	s := string(body)
	i, j := strings.Index(s, "<Arn>"), strings.Index(s, "</Arn>")
	if i < 0 || j < i {
		t.Fatalf("moto: CreateRole: no Arn in %s", body)
	}
	return s[i+len("<Arn>") : j]
}

// ListJobsInput lists all the jobs of a queue, whatever their status.
func ListJobsInput(queue string) *batch.ListJobsInput {
	return &batch.ListJobsInput{JobQueue: aws.String(queue),
		Filters: []btypes.KeyValuesPair{{Name: aws.String("JOB_NAME"), Values: []string{"*"}}}}
}

// Job is what a Batch job's description says about the job.
type Job struct {
	ID, Status, Reason string
	Command            []string
	Env                map[string]string
	Tags               map[string]string
	Resources          map[string]string
	Timeout            int32
}

// Describe returns a job's description (moto's DescribeJobs).
func (f *Fixture) Describe(t testing.TB, id string) Job {
	t.Helper()
	out, err := f.Batch.DescribeJobs(context.WithoutCancel(t.Context()), &batch.DescribeJobsInput{Jobs: []string{id}})
	if err != nil {
		t.Fatalf("DescribeJobs %s: %v", id, err)
	}
	if len(out.Jobs) != 1 {
		t.Fatalf("DescribeJobs %s: %d jobs", id, len(out.Jobs))
	}
	d := out.Jobs[0]
	j := Job{ID: id, Status: string(d.Status), Reason: aws.ToString(d.StatusReason), Tags: d.Tags,
		Env: map[string]string{}, Resources: map[string]string{}}
	if d.Timeout != nil && d.Timeout.AttemptDurationSeconds != nil {
		j.Timeout = *d.Timeout.AttemptDurationSeconds
	}
	if c := d.Container; c != nil {
		j.Command = c.Command
		for _, kv := range c.Environment {
			j.Env[aws.ToString(kv.Name)] = aws.ToString(kv.Value)
		}
		for _, r := range c.ResourceRequirements {
			j.Resources[string(r.Type)] = aws.ToString(r.Value)
		}
	}
	return j
}

// WaitStatus waits until a job has one of the statuses and returns its
// description.
func (f *Fixture) WaitStatus(t testing.TB, id string, statuses ...string) Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j := f.Describe(t, id)
		for _, s := range statuses {
			if j.Status == s {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after 30s, want %v", id, j.Status, statuses)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ReadObject returns an S3 object of the fixture's moto (nil if absent).
func (f *Fixture) ReadObject(t testing.TB, bucket, key string) []byte {
	t.Helper()
	out, err := f.S3.GetObject(context.WithoutCancel(t.Context()), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return nil
		}
		t.Fatalf("GetObject s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ListKeys lists the object keys under a prefix.
func (f *Fixture) ListKeys(t testing.TB, prefix string) []string {
	t.Helper()
	out, err := f.S3.ListObjectsV2(context.WithoutCancel(t.Context()), &s3.ListObjectsV2Input{Bucket: aws.String(f.Bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
