package awsbatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	btypes "github.com/aws/aws-sdk-go-v2/service/batch/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/awsbatch/awsbatchtest"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/trial"
)

// fakeBench plays `bench exec-trial` in a job's container (moto runs no
// containers; awsbatchtest's fake Docker calls this instead): it reads the
// request the way the real command does (env:NAME or s3://), and writes an
// outcome whose score is the trial id to the outcome URL in S3. Commands
// other than exec-trial (pilots) just succeed.
type fakeBench struct {
	f *awsbatchtest.Fixture
	// exit, when set, is the exit code without writing an outcome.
	exit int
	// block keeps the container running until moto kills it.
	block bool
	mu    sync.Mutex
	argvs [][]string
	reqs  [][]byte
}

func (b *fakeBench) run(ctx context.Context, argv, env []string) int {
	b.mu.Lock()
	b.argvs = append(b.argvs, argv)
	b.mu.Unlock()
	if b.block {
		<-ctx.Done()
		return 137
	}
	if b.exit != 0 {
		return b.exit
	}
	if len(argv) != 6 || argv[1] != "exec-trial" || argv[2] != "--request" || argv[4] != "--outcome" {
		return 0
	}
	var req []byte
	if name, ok := strings.CutPrefix(argv[3], "env:"); ok {
		v, ok := awsbatchtest.Lookup(env, name)
		if !ok {
			return 2
		}
		req = []byte(v)
	} else {
		bucket, key, err := parseS3URL(argv[3])
		if err != nil {
			return 2
		}
		st := &s3Store{client: b.f.S3}
		if req, err = st.Read(ctx, "s3://"+bucket+"/"+key); err != nil {
			return 2
		}
	}
	b.mu.Lock()
	b.reqs = append(b.reqs, req)
	b.mu.Unlock()
	r, err := engines.DecodeRequest(req)
	if err != nil {
		return 2
	}
	out, err := engines.EncodeOutcome(trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": float64(r.TrialID)}})
	if err != nil {
		return 2
	}
	bucket, key, err := parseS3URL(argv[5])
	if err != nil {
		return 2
	}
	if _, err := b.f.S3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(string(out))}); err != nil {
		return 3
	}
	return 0
}

func TestMain(m *testing.M) { awsbatchtest.Main(m) }

// startMoto returns a fixture on the package's moto server whose
// containers run a fakeBench.
func startMoto(t *testing.T) (*awsbatchtest.Fixture, *fakeBench) {
	t.Helper()
	fb := &fakeBench{}
	f := awsbatchtest.Shared(t, fb.run)
	fb.f = f
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("moto log (tail):\n%s", f.Server.Log(40))
		}
	})
	return f, fb
}

// engineConfig is a config for the fixture; extra keys are added.
func engineConfig(f *awsbatchtest.Fixture, extra map[string]any) map[string]any {
	env := map[string]any{}
	for k, v := range f.Env {
		env[k] = v
	}
	c := map[string]any{
		"job_queue": f.JobQueue, "job_definition": f.JobDefinition, "region": awsbatchtest.Region,
		"endpoint_url": f.Endpoint, "bucket": f.Bucket, "prefix": "bench/outcomes",
		"poll_interval": 0.05, "environment": env,
	}
	for k, v := range extra {
		if k == "environment" {
			for ek, ev := range v.(map[string]any) {
				env[ek] = ev
			}
			continue
		}
		c[k] = v
	}
	return c
}

// callCounter counts the SDK's HTTP requests by Batch operation path.
type callCounter struct {
	next    aws.HTTPClient
	mu      sync.Mutex
	calls   map[string]int
	submits [][]byte
}

func (c *callCounter) Do(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.URL.Path == "/v1/submitjob" && r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	c.mu.Lock()
	c.calls[r.URL.Path]++
	if body != nil {
		c.submits = append(c.submits, body)
	}
	c.mu.Unlock()
	return c.next.Do(r)
}

// lastSubmit returns the last SubmitJob request's container overrides.
func (c *callCounter) lastSubmit(t *testing.T) (in struct {
	ContainerOverrides struct {
		ResourceRequirements []struct{ Type, Value string }
	}
	ArrayProperties *struct{ Size int }
	Timeout         *struct{ AttemptDurationSeconds int }
}) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.submits) == 0 {
		t.Fatal("no SubmitJob request")
	}
	if err := json.Unmarshal(c.submits[len(c.submits)-1], &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// resources returns the resource requirements as TYPE=VALUE strings.
func resources(rr []struct{ Type, Value string }) []string {
	var out []string
	for _, r := range rr {
		out = append(out, r.Type+"="+r.Value)
	}
	return out
}

func (c *callCounter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[path]
}

// newTestEngine builds the engine as engines.New does (the common keys
// "bench" and "poll_interval" split off), with its HTTP requests counted.
func newTestEngine(t *testing.T, cfg map[string]any, slots int) (*Engine, *callCounter) {
	t.Helper()
	cc := &callCounter{next: awshttp.NewBuildableClient(), calls: map[string]int{}}
	p := engines.Params{Config: map[string]any{}, Slots: slots, ExperimentID: "exp-1", Dir: t.TempDir()}
	for k, v := range cfg {
		switch k {
		case "bench":
			p.Common.Bench = v.(string)
		case "poll_interval":
			d, err := decode.Seconds(toFloat(v))
			if err != nil {
				t.Fatal(err)
			}
			p.Common.PollInterval = decode.Duration(d)
		default:
			p.Config[k] = v
		}
	}
	p.Common.Defaults()
	e, err := newEngine(t.Context(), p, func(c *aws.Config) { c.HTTPClient = cc })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, cc
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("not a number: %v", v))
}

func request(trialID int, pad int) []byte {
	r := &engines.Request{ExperimentID: "exp-1", TrialID: trialID, RunnerID: 1, Args: []string{"--config", "cli.jsonc"}, Dir: "/work",
		Params: map[string]string{"x": "1", "pad": strings.Repeat("p", pad)}}
	return r.Encode()
}

func parseTestRef(t *testing.T, r engines.Ref) ref {
	t.Helper()
	x, err := parseRef(r)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// pollUntilFinal polls until the job's phase is final and returns the
// phases seen (each once, in order) and the final state.
func pollUntilFinal(t *testing.T, e engines.Engine, r engines.Ref) ([]engines.Phase, engines.State) {
	t.Helper()
	var seen []engines.Phase
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := e.Poll(t.Context(), r)
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if len(seen) == 0 || seen[len(seen)-1] != st.Phase {
			seen = append(seen, st.Phase)
		}
		if st.Phase.Final() {
			return seen, st
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s after 30s (%s)", st.Phase, st.Progress)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSubmitPollFetch(t *testing.T) {
	t.Parallel()
	f, fb := startMoto(t)
	e, cc := newTestEngine(t, engineConfig(f, map[string]any{
		"vcpus": 2, "memory_mib": 2048, "timeout_s": 600, "bench": "/usr/local/bin/bench",
		"environment": map[string]any{"BENCH_LOG": "debug"},
	}), 3)
	if e.Name() != "aws_batch" || e.Slots() != 3 {
		t.Fatalf("Name, Slots = %q, %d", e.Name(), e.Slots())
	}
	req := request(7, 0)
	rr, err := e.Submit(t.Context(), engines.Job{Name: "bench-exp.1-7", Request: req, Slot: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := parseTestRef(t, rr)
	if r.RequestURL != "env:BENCH_REQUEST" || !strings.HasPrefix(r.OutcomeURL, "s3://"+f.Bucket+"/bench/outcomes/bench-exp_1-7.0.") {
		t.Fatalf("ref = %+v", r)
	}
	job := f.Describe(t, r.JobID)
	if diff := cmp.Diff([]string{"/usr/local/bin/bench", "exec-trial", "--request", "env:BENCH_REQUEST", "--outcome", r.OutcomeURL}, job.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if job.Env["BENCH_REQUEST"] != string(req) || job.Env["BENCH_LOG"] != "debug" {
		t.Errorf("environment = %v", job.Env)
	}
	if job.Tags["bench:experiment"] != "exp-1" || job.Tags["bench:trial"] != "7" || job.Tags["bench:attempt"] != "0" {
		t.Errorf("tags = %v", job.Tags)
	}
	if job.Timeout != 600 {
		t.Errorf("attemptDurationSeconds = %d, want 600", job.Timeout)
	}
	// moto's DescribeJobs leaves out the overrides' resource requirements:
	// check what was submitted.
	if diff := cmp.Diff([]string{"VCPU=2", "MEMORY=2048"}, resources(cc.lastSubmit(t).ContainerOverrides.ResourceRequirements)); diff != "" {
		t.Errorf("resource requirements (-want +got):\n%s", diff)
	}
	seen, st := pollUntilFinal(t, e, rr)
	// moto may run the job before the first poll (CI saw it done 35 ms
	// after submission), so the queued/running phases are not always seen:
	// check that whatever was seen before the end was not final.
	if st.Phase != engines.Done {
		t.Fatalf("phases %v, final %+v: want done", seen, st)
	}
	for _, ph := range seen[:len(seen)-1] {
		if ph.Final() {
			t.Fatalf("phases %v: a final phase before the last", seen)
		}
	}
	if st.Started.IsZero() || !strings.Contains(st.Progress, "SUCCEEDED") {
		t.Errorf("final state %+v", st)
	}
	res, err := e.Fetch(t.Context(), rr)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engines.DecodeOutcome(res.Outcome)
	if err != nil {
		t.Fatalf("outcome %q: %v", res.Outcome, err)
	}
	if out.Status != trial.SUCCEEDED || out.Results["score"] != 7.0 {
		t.Errorf("outcome = %+v", out)
	}
	if !strings.Contains(res.Log, "SUCCEEDED") {
		t.Errorf("log = %q", res.Log)
	}
	if len(fb.reqs) != 1 || string(fb.reqs[0]) != string(req) {
		t.Errorf("the container read %q, want the request", fb.reqs)
	}
}

func TestDescribeJobsBatched(t *testing.T) {
	t.Parallel()
	f, _ := startMoto(t)
	// One runner per job: 150 runners poll at once.
	e, cc := newTestEngine(t, engineConfig(f, map[string]any{"poll_interval": 1}), 150)
	const n = 150
	refs := make([]engines.Ref, n)
	for i := range refs {
		var err error
		if refs[i], err = e.Submit(t.Context(), engines.Job{Name: fmt.Sprintf("bench-batch-%d", i+1), Request: request(i+1, 0), Slot: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	before := cc.count("/v1/describejobs")
	// The window is 200 ms with poll_interval 1s; on a loaded test machine
	// 150 goroutines may take longer than that to start, so widen it: the
	// 100-id flush, not the window, must make the first call.
	e.desc.window = 3 * time.Second
	var wg sync.WaitGroup
	var lost atomic.Int32
	errs := make(chan error, n)
	for _, r := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := e.Poll(t.Context(), r)
			if err != nil {
				errs <- err
			}
			if st.Phase == engines.Lost {
				lost.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := cc.count("/v1/describejobs") - before; got != 2 {
		t.Errorf("%d runners polling at once made %d DescribeJobs calls, want 2 (100 ids, then 50)", n, got)
	}
	if lost.Load() != 0 {
		t.Errorf("%d jobs reported lost", lost.Load())
	}
}

func TestCancelTerminates(t *testing.T) {
	t.Parallel()
	f, fb := startMoto(t)
	fb.block = true
	e, _ := newTestEngine(t, engineConfig(f, nil), 1)
	rr, err := e.Submit(t.Context(), engines.Job{Name: "bench-exp-1", Request: request(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := e.Poll(t.Context(), rr)
		if err != nil {
			t.Fatal(err)
		}
		if st.Phase == engines.Running {
			break
		}
		if st.Phase.Final() || time.Now().After(deadline) {
			t.Fatalf("job %s, want running", st.Phase)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := e.Cancel(t.Context(), rr); err != nil {
		t.Fatal(err)
	}
	_, st := pollUntilFinal(t, e, rr)
	if st.Phase != engines.Failed || !strings.Contains(st.Reason, "bench: trial cancelled") {
		t.Fatalf("after Cancel: %+v, want failed with the cancel reason", st)
	}
	res, err := e.Fetch(t.Context(), rr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != nil || !strings.Contains(res.Log, "bench: trial cancelled") {
		t.Errorf("Fetch = %q, log %q: want no outcome and the reason", res.Outcome, res.Log)
	}
	// Cancelling a job that ended is not an error.
	if err := e.Cancel(t.Context(), rr); err != nil {
		t.Errorf("second Cancel: %v", err)
	}
}

func TestFailedJobHasNoOutcome(t *testing.T) {
	t.Parallel()
	f, fb := startMoto(t)
	fb.exit = 3
	e, _ := newTestEngine(t, engineConfig(f, nil), 1)
	rr, err := e.Submit(t.Context(), engines.Job{Name: "bench-exp-2", Request: request(2, 0)})
	if err != nil {
		t.Fatal(err)
	}
	_, st := pollUntilFinal(t, e, rr)
	if st.Phase != engines.Failed {
		t.Fatalf("state %+v, want failed", st)
	}
	res, err := e.Fetch(t.Context(), rr)
	if err != nil || res.Outcome != nil {
		t.Fatalf("Fetch = %q, %v: want no outcome, no error", res.Outcome, err)
	}
}

func TestLargeRequestGoesToS3(t *testing.T) {
	t.Parallel()
	f, fb := startMoto(t)
	e, _ := newTestEngine(t, engineConfig(f, map[string]any{"inline_request_limit": 512}), 1)
	req := request(3, 600)
	rr, err := e.Submit(t.Context(), engines.Job{Name: "bench-exp-3", Request: req, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := parseTestRef(t, rr)
	if !strings.HasPrefix(r.RequestURL, "s3://"+f.Bucket+"/bench/outcomes/bench-exp-3.1.") || !strings.HasSuffix(r.RequestURL, ".request.json") {
		t.Fatalf("request URL %q, want an S3 object", r.RequestURL)
	}
	bucket, key, _ := parseS3URL(r.RequestURL)
	if got := f.ReadObject(t, bucket, key); string(got) != string(req) {
		t.Fatalf("the S3 request is %q, want the request", got)
	}
	job := f.Describe(t, r.JobID)
	if _, ok := job.Env["BENCH_REQUEST"]; ok {
		t.Error("a large request is also in the environment")
	}
	if _, st := pollUntilFinal(t, e, rr); st.Phase != engines.Done {
		t.Fatalf("state %+v", st)
	}
	res, err := e.Fetch(t.Context(), rr)
	if err != nil || res.Outcome == nil {
		t.Fatalf("Fetch = %q, %v", res.Outcome, err)
	}
	if len(fb.reqs) != 1 || string(fb.reqs[0]) != string(req) {
		t.Errorf("the container read %d requests, want the request", len(fb.reqs))
	}
	// The limit counts the request as it travels: a JSON string, quotes
	// escaped.
	small := []byte(`{"a":"b"}`) // "{\"a\":\"b\"}": 13 bytes
	e.inlineLimit = 13
	if v, ok := e.inline(small); !ok || v != string(small) {
		t.Errorf("a request of 13 escaped bytes is not inline with limit 13")
	}
	e.inlineLimit = 12
	if _, ok := e.inline(small); ok {
		t.Error("a request of 13 escaped bytes is inline with limit 12")
	}
}

// TestRelaunchSubmitsSameRequest: a job the engine lost is submitted again
// (as engines.Runner does) with the same request bytes, under new object
// keys, and runs to its outcome.
func TestRelaunchSubmitsSameRequest(t *testing.T) {
	for _, limit := range []int{0, 4096} {
		t.Run(fmt.Sprintf("inline_limit=%d", limit), func(t *testing.T) {
			t.Parallel()
			f, fb := startMoto(t)
			e, _ := newTestEngine(t, engineConfig(f, map[string]any{"inline_request_limit": limit}), 1)
			req := request(5, 100)
			// A job Batch no longer knows (its record expired, or an id
			// from another account) is lost.
			lost, _ := json.Marshal(ref{JobID: "00000000-dead-beef-0000-000000000000", OutcomeURL: "s3://" + f.Bucket + "/x"})
			if st, err := e.Poll(t.Context(), lost); err != nil || st.Phase != engines.Lost {
				t.Fatalf("Poll of an unknown job = %+v, %v; want lost", st, err)
			}
			first, err := e.Submit(t.Context(), engines.Job{Name: "bench-exp-5", Request: req, Attempt: 0})
			if err != nil {
				t.Fatal(err)
			}
			again, err := e.Submit(t.Context(), engines.Job{Name: "bench-exp-5", Request: req, Attempt: 1})
			if err != nil {
				t.Fatal(err)
			}
			r1, r2 := parseTestRef(t, first), parseTestRef(t, again)
			if r1.JobID == r2.JobID || r1.OutcomeURL == r2.OutcomeURL {
				t.Fatalf("the relaunch reuses the first job's id or outcome: %+v %+v", r1, r2)
			}
			for _, rr := range []engines.Ref{first, again} {
				if _, st := pollUntilFinal(t, e, rr); st.Phase != engines.Done {
					t.Fatalf("state %+v", st)
				}
			}
			if len(fb.reqs) != 2 || string(fb.reqs[0]) != string(req) || string(fb.reqs[1]) != string(req) {
				t.Fatalf("the containers read %d requests, want the same request twice", len(fb.reqs))
			}
			if limit == 0 && r1.RequestURL == r2.RequestURL {
				t.Errorf("both launches share the S3 request %s", r1.RequestURL)
			}
		})
	}
}

func TestPilots(t *testing.T) {
	t.Parallel()
	f, fb := startMoto(t)
	e, cc := newTestEngine(t, engineConfig(f, map[string]any{"gpus": 1}), 1)
	argv := []string{"bench", "worker", "--connect", "nats://driver:4222"}
	refs, err := e.SubmitPilots(t.Context(), "bench-pilots-exp.1", argv, 3)
	if err != nil {
		t.Fatal(err)
	}
	in := cc.lastSubmit(t)
	if in.ArrayProperties == nil || in.ArrayProperties.Size != 3 || !cmp.Equal([]string{"GPU=1"}, resources(in.ContainerOverrides.ResourceRequirements)) {
		t.Errorf("SubmitJob array %+v, resources %v", in.ArrayProperties, in.ContainerOverrides.ResourceRequirements)
	}
	if len(refs) != 3 {
		t.Fatalf("%d refs, want 3", len(refs))
	}
	for i, rr := range refs {
		r := parseTestRef(t, rr)
		if !strings.HasSuffix(r.JobID, fmt.Sprintf(":%d", i)) {
			t.Errorf("pilot %d: job id %q, want an array child", i, r.JobID)
		}
		if _, st := pollUntilFinal(t, e, rr); st.Phase != engines.Done {
			t.Errorf("pilot %d: %+v", i, st)
		}
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if len(fb.argvs) != 3 {
		t.Fatalf("%d containers ran, want 3", len(fb.argvs))
	}
	for _, a := range fb.argvs {
		if diff := cmp.Diff(argv, a); diff != "" {
			t.Errorf("pilot command (-want +got):\n%s", diff)
		}
	}
	one, err := e.SubmitPilots(t.Context(), "one", argv, 1)
	if err != nil || len(one) != 1 || strings.Contains(parseTestRef(t, one[0]).JobID, ":") {
		t.Errorf("one pilot: %v, %v; want one plain job", one, err)
	}
	if _, err := e.SubmitPilots(t.Context(), "none", argv, 0); err == nil {
		t.Error("0 pilots: no error")
	}
}

// TestS3Scheme: the registered "s3" scheme reads and writes with the
// standard AWS configuration (AWS_ENDPOINT_URL here, as in a container
// pointed at moto).
func TestS3Scheme(t *testing.T) {
	f, _ := startMoto(t)
	t.Setenv("AWS_ENDPOINT_URL", f.Endpoint)
	st := NewEnvStore()
	u := "s3://" + f.Bucket + "/a/b/outcome.json"
	if err := st.Write(t.Context(), u, []byte(`{"status":"SUCCEEDED"}`)); err != nil {
		t.Fatal(err)
	}
	got, err := st.Read(t.Context(), u)
	if err != nil || string(got) != `{"status":"SUCCEEDED"}` {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := st.Read(t.Context(), "s3://"+f.Bucket+"/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing object: %v", err)
	}
	for _, bad := range []string{"s3://", "s3://bucket", "s3://bucket/", "s3:///key"} {
		if _, err := st.Read(t.Context(), bad); err == nil {
			t.Errorf("Read(%q): no error", bad)
		}
	}
	// Through engines.ReadURL and WriteURL, as `bench exec-trial` uses it.
	u2 := "s3://" + f.Bucket + "/via-engines.json"
	if err := engines.WriteURL(t.Context(), u2, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := engines.ReadURL(t.Context(), u2); err != nil || string(got) != "x" {
		t.Fatalf("ReadURL = %q, %v", got, err)
	}
}

func TestConfigErrors(t *testing.T) {
	good := map[string]any{"job_queue": "q", "job_definition": "d", "bucket": "b-1", "region": "us-east-1"}
	tests := []struct {
		name string
		set  map[string]any
		drop string
		want string
	}{
		{"unknown key", map[string]any{"job_que": "q"}, "", `unknown config key "job_que"`},
		{"no queue", nil, "job_queue", `"job_queue"`},
		{"no definition", nil, "job_definition", `"job_definition"`},
		{"no bucket", nil, "bucket", `"bucket"`},
		{"bad bucket", map[string]any{"bucket": "Not_A_Bucket"}, "", `"bucket"`},
		{"bad prefix", map[string]any{"prefix": "a/../b"}, "", `"prefix"`},
		{"bad endpoint", map[string]any{"endpoint_url": "localhost:5000"}, "", `"endpoint_url"`},
		{"max_jobs", map[string]any{"max_jobs": 0}, "", `"max_jobs"`},
		{"vcpus", map[string]any{"vcpus": 0}, "", `"vcpus"`},
		{"memory", map[string]any{"memory_mib": -1}, "", `"memory_mib"`},
		{"gpus type", map[string]any{"gpus": "two"}, "", `"gpus"`},
		{"timeout", map[string]any{"timeout_s": 10}, "", `"timeout_s"`},
		{"inline limit", map[string]any{"inline_request_limit": 9000}, "", `"inline_request_limit"`},
		{"env name", map[string]any{"environment": map[string]any{"1X": "y"}}, "", `"environment"`},
		{"env reserved", map[string]any{"environment": map[string]any{"BENCH_REQUEST": "y"}}, "", `BENCH_REQUEST`},
		{"env value type", map[string]any{"environment": map[string]any{"X": 1}}, "", `"environment`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := map[string]any{}
			for k, v := range good {
				if k != tc.drop {
					cfg[k] = v
				}
			}
			for k, v := range tc.set {
				cfg[k] = v
			}
			_, err := engines.New(t.Context(), engines.Spec{Class: ClassFull, Config: cfg}, engines.Params{Slots: 1})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %s", err, tc.want)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	ms := func(t time.Time) *int64 { v := t.UnixMilli(); return &v }
	started := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		status btypes.JobStatus
		reason string
		exit   *int32
		want   engines.Phase
		reas   string
	}{
		{btypes.JobStatusSubmitted, "", nil, engines.Queued, ""},
		{btypes.JobStatusPending, "", nil, engines.Queued, ""},
		{btypes.JobStatusRunnable, "", nil, engines.Queued, ""},
		{btypes.JobStatusStarting, "", nil, engines.Queued, ""},
		{btypes.JobStatusRunning, "", nil, engines.Running, ""},
		{btypes.JobStatusSucceeded, "Essential container in task exited", aws.Int32(0), engines.Done, "Essential container in task exited"},
		{btypes.JobStatusFailed, "Job attempt duration exceeded timeout", nil, engines.TimedOut, "Job attempt duration exceeded timeout"},
		{btypes.JobStatusFailed, "Essential container in task exited", aws.Int32(2), engines.Failed, "Essential container in task exited; container: exit code 2"},
		{btypes.JobStatusFailed, "bench: trial cancelled", nil, engines.Failed, "bench: trial cancelled"},
		{"SOMETHING_NEW", "", nil, engines.Queued, ""},
		// No status reason: what is known instead (the last attempt's
		// container when the job's own has nothing).
		{btypes.JobStatusFailed, "", aws.Int32(137), engines.Failed, "AWS Batch gave no status reason; container: exit code 137, OutOfMemoryError: killed; log stream jd/default/abc"},
		{btypes.JobStatusFailed, "", nil, engines.Failed, "AWS Batch gave no status reason"},
	}
	for _, tc := range tests {
		d := &btypes.JobDetail{Status: tc.status, StatusReason: aws.String(tc.reason), StartedAt: ms(started)}
		if tc.exit != nil && tc.reason == "" {
			d.Attempts = []btypes.AttemptDetail{{Container: &btypes.AttemptContainerDetail{ExitCode: tc.exit,
				Reason: aws.String("OutOfMemoryError: killed"), LogStreamName: aws.String("jd/default/abc")}}}
		} else if tc.exit != nil {
			d.Container = &btypes.ContainerDetail{ExitCode: tc.exit}
		}
		st := stateOf(d)
		if st.Phase != tc.want || st.Reason != tc.reas || !st.Started.Equal(started) {
			t.Errorf("%s %q: %+v, want %s %q", tc.status, tc.reason, st, tc.want, tc.reas)
		}
		if !strings.Contains(st.Progress, string(tc.status)) || !strings.Contains(st.Progress, "2026-11-23T12:00:00Z") {
			t.Errorf("%s: progress %q", tc.status, st.Progress)
		}
	}
}

func TestBatchJobName(t *testing.T) {
	for in, want := range map[string]string{
		"bench-exp.1-7":           "bench-exp_1-7",
		"_x":                      "x",
		"":                        "bench",
		strings.Repeat("a", 200):  strings.Repeat("a", 128),
		"bench-ütf-1":             "bench-_tf-1",
		"bench-my experiment!-12": "bench-my_experiment_-12",
	} {
		if got := batchJobName(in); got != want {
			t.Errorf("batchJobName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExampleConfig: configs/examples/engines/aws-batch.jsonc builds an
// engine with the keys it shows.
func TestExampleConfig(t *testing.T) {
	p := filepath.Join("..", "..", "configs", "examples", "engines", "aws-batch.jsonc")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := source.Parse(p, data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := configs.Object(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := m["config"].(map[string]any)
	eng, err := engines.New(t.Context(), engines.Spec{Class: m["class"].(string), Config: cfg}, engines.Params{Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	e := eng.(*Engine)
	if e.Slots() != 16 || e.bench != "bench" || e.inlineLimit != 4096 || *e.cfg.TimeoutS != 3600 || e.prefix != "bench" {
		t.Errorf("engine from the example: slots %d, bench %q, inline %d, config %+v", e.Slots(), e.bench, e.inlineLimit, e.cfg)
	}
}
