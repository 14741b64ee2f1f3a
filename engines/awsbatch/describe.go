package awsbatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/batch"
	btypes "github.com/aws/aws-sdk-go-v2/service/batch/types"
)

// describer coalesces the DescribeJobs calls of many pollers: an id asked
// for waits at most window for others to join it, and every
// describeMax ids (DescribeJobs' limit) go out at once in one call. With
// a window of a fifth of the poll interval, N runners polling once per
// interval make about N/100 calls per window instead of N.
type describer struct {
	api    batchAPI
	window time.Duration
	ctx    context.Context // ends at close
	stop   context.CancelFunc

	mu      sync.Mutex
	closed  bool
	waiting map[string][]chan describeResult // ids gathered, not yet sent
	order   []string                         // the gathered ids, in arrival order
	timer   *time.Timer                      // the window's end, when ids are waiting
	wg      sync.WaitGroup                   // calls in flight
}

type describeResult struct {
	job *btypes.JobDetail // nil: not listed
	err error
}

// callTimeout bounds one DescribeJobs call (the SDK retries inside it).
const callTimeout = time.Minute

var errClosed = errors.New("the engine is closed")

func newDescriber(api batchAPI, window time.Duration) *describer {
	ctx, stop := context.WithCancel(context.Background())
	return &describer{api: api, window: window, ctx: ctx, stop: stop, waiting: map[string][]chan describeResult{}}
}

// describe returns the job's description, nil when DescribeJobs does not
// list it.
func (d *describer) describe(ctx context.Context, id string) (*btypes.JobDetail, error) {
	ch := make(chan describeResult, 1)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errClosed
	}
	if _, ok := d.waiting[id]; !ok {
		d.order = append(d.order, id)
	}
	d.waiting[id] = append(d.waiting[id], ch)
	if len(d.order) >= describeMax {
		d.sendLocked(d.takeLocked())
	} else if d.timer == nil {
		d.timer = time.AfterFunc(d.window, d.flush)
	}
	d.mu.Unlock()
	select {
	case r := <-ch:
		return r.job, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// flush sends everything gathered (the window ended).
func (d *describer) flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = nil
	for len(d.order) > 0 {
		d.sendLocked(d.takeLocked())
	}
}

// takeLocked removes up to describeMax gathered ids and their waiters.
func (d *describer) takeLocked() map[string][]chan describeResult {
	n := min(len(d.order), describeMax)
	group := make(map[string][]chan describeResult, n)
	for _, id := range d.order[:n] {
		group[id] = d.waiting[id]
		delete(d.waiting, id)
	}
	d.order = append([]string(nil), d.order[n:]...)
	return group
}

// sendLocked starts one DescribeJobs call for a batch of ids.
func (d *describer) sendLocked(group map[string][]chan describeResult) {
	if len(group) == 0 {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.call(group)
	}()
}

func (d *describer) call(group map[string][]chan describeResult) {
	ids := make([]string, 0, len(group))
	for id := range group {
		ids = append(ids, id)
	}
	ctx, done := context.WithTimeout(d.ctx, callTimeout)
	defer done()
	out, err := d.api.DescribeJobs(ctx, &batch.DescribeJobsInput{Jobs: ids})
	found := map[string]*btypes.JobDetail{}
	if err == nil {
		for i := range out.Jobs {
			j := &out.Jobs[i]
			found[aws.ToString(j.JobId)] = j
			if arn := aws.ToString(j.JobArn); arn != "" {
				found[arn] = j
			}
		}
	}
	for id, chans := range group {
		r := describeResult{job: found[id], err: err}
		for _, ch := range chans {
			ch <- r
		}
	}
}

// close fails the waiting polls and ends calls in flight.
func (d *describer) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	for _, chans := range d.waiting {
		for _, ch := range chans {
			ch <- describeResult{err: errClosed}
		}
	}
	d.waiting, d.order = map[string][]chan describeResult{}, nil
	d.mu.Unlock()
	d.stop()
	d.wg.Wait()
}
