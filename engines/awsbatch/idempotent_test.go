package awsbatch

import (
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/benchtune/bench/engines"
)

// lostAnswer sends every request to moto but drops the answer to SubmitJob:
// the job exists, the engine never learns its id (a bench killed after
// Batch accepted the job, before it was recorded with the trial).
type lostAnswer struct{ next aws.HTTPClient }

func (c lostAnswer) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(r)
	if err == nil && r.URL.Path == "/v1/submitjob" {
		resp.Body.Close()
		return nil, errors.New("connection reset (test: the answer is lost)")
	}
	return resp, err
}

// TestSubmitFindsEarlierSubmission: a trial whose SubmitJob reached Batch
// but whose answer was lost is not submitted again by the next Submit of
// the same attempt (a restarted bench): the job of that name is found
// (ListJobs) and followed, and its outcome comes back. Another attempt is a
// new job (issue 22, bug 3, for AWS Batch).
func TestSubmitFindsEarlierSubmission(t *testing.T) {
	t.Parallel()
	f, _ := startMoto(t)
	cfg := engineConfig(f, nil)
	p := engines.Params{Config: map[string]any{}, Slots: 1, ExperimentID: "exp-1", Dir: t.TempDir()}
	for k, v := range cfg {
		if k != "bench" && k != "poll_interval" {
			p.Config[k] = v
		}
	}
	p.Common.Defaults()
	lossy, err := newEngine(t.Context(), p, func(c *aws.Config) {
		c.HTTPClient = lostAnswer{next: awshttp.NewBuildableClient()}
		c.RetryMaxAttempts = 1
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lossy.Close() })
	job := engines.Job{Name: "bench-exp-1-9", Request: request(9, 0)}
	if _, err := lossy.Submit(t.Context(), job); err == nil {
		t.Fatal("the lossy client's Submit did not fail")
	}

	e, cc := newTestEngine(t, cfg, 1)
	rr, err := e.Submit(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if n := cc.count("/v1/submitjob"); n != 0 {
		t.Errorf("%d SubmitJob calls after the lost answer, want 0 (the job exists)", n)
	}
	if _, st := pollUntilFinal(t, e, rr); st.Phase != engines.Done {
		t.Fatalf("the found job: %+v", st)
	}
	res, err := e.Fetch(t.Context(), rr)
	if err != nil || res.Outcome == nil {
		t.Fatalf("the found job's outcome: %q, %v", res.Outcome, err)
	}
	next := job
	next.Attempt = 1
	r2, err := e.Submit(t.Context(), next)
	if err != nil {
		t.Fatal(err)
	}
	if parseTestRef(t, r2).JobID == parseTestRef(t, rr).JobID || cc.count("/v1/submitjob") != 1 {
		t.Errorf("attempt 1: job %s (attempt 0: %s), %d SubmitJob calls: want a new job", parseTestRef(t, r2).JobID, parseTestRef(t, rr).JobID, cc.count("/v1/submitjob"))
	}
}
