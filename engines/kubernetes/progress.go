package kubernetes

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/kubernetes/kubeapi"
)

// A running trial's progress: the trial's pod runs `bench exec-trial`
// with engines.ProgressLogEnv set, so each report is a marked line of the
// pod's log (its outcome is a ConfigMap or an S3 object, with no file
// beside it). ReadProgress reads the log through the API (pods/log) at
// each poll of the job and keeps the marked lines (engines.ProgressFromLog):
// the driver's offset counts bytes of those lines, so a report is handed
// on once however often the log is read again. Whole reads rather than a
// follow stream: a stream per running trial would hold a connection
// through the API server to the kubelet for each, and would have to be
// resumed after a break without losing or repeating lines (sinceTime has
// a resolution of one second); a read at each poll has neither problem,
// at the cost of reading the log again (bounded by maxProgressLogBytes;
// bench exec-trial's own log is a few lines per trial).

// maxProgressLogBytes bounds one read of a pod's log for its progress
// (limitBytes): reports after that much log are not seen while the trial
// runs (its outcome is not affected).
const maxProgressLogBytes = 16 << 20

// progressCursor maps the offsets of a Job's reports to its current pod:
// a pod that replaces another (an evicted trial's new attempt) starts
// fresh, its reports after those already handed on.
type progressCursor struct {
	mu   sync.Mutex
	pod  string // UID of the pod whose log is read
	base int64  // the driver's offset when that pod's log was first read
}

var (
	_ engines.ProgressReader = (*Engine)(nil)
	_ engines.ProgressPacer  = (*Engine)(nil)
)

// ProgressEvery paces the reads of a running trial's log
// (progress_interval): each is an API request.
func (e *Engine) ProgressEvery() time.Duration { return e.cfg.ProgressInterval.Std() }

// ReadProgress returns the job's reports from offset on (see above);
// none while its pod has not started.
func (e *Engine) ReadProgress(ctx context.Context, rr engines.Ref, offset int64) ([]byte, error) {
	r, err := parseRef(rr)
	if err != nil {
		return nil, err
	}
	if r.Index != nil {
		// A pilot's pods run workers, not trials.
		return nil, nil
	}
	if err := e.start(ctx); err != nil {
		return nil, err
	}
	v, _ := e.inf.get(r.Job)
	if v.job != nil && r.UID != "" && v.job.Metadata.UID != r.UID {
		return nil, nil
	}
	pod := lastPod(v.pods, nil)
	if pod == nil || pod.Status.Phase == "Pending" || pod.Status.Phase == "" {
		return nil, nil
	}
	q := url.Values{"container": {containerName}, "limitBytes": {strconv.Itoa(maxProgressLogBytes)}}
	var text string
	err = e.c.Do(ctx, http.MethodGet, e.podsPath()+"/"+pod.Metadata.Name+"/log", q, nil, &text)
	if kubeapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, _ := e.progress.LoadOrStore(r.Job, &progressCursor{})
	return c.(*progressCursor).next(pod.Metadata.UID, offset, engines.ProgressFromLog([]byte(text))), nil
}

// next returns the reports of pod (all read from its log so far) from the
// driver's offset on, at most engines.MaxProgressRead bytes.
func (cur *progressCursor) next(pod string, offset int64, reports []byte) []byte {
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if cur.pod != pod {
		cur.pod, cur.base = pod, offset
	}
	i := offset - cur.base
	if i < 0 || i >= int64(len(reports)) {
		return nil
	}
	b := reports[i:]
	if len(b) > engines.MaxProgressRead {
		b = b[:engines.MaxProgressRead]
	}
	return b
}

// withoutProgress drops the progress lines from a log told to a person.
func withoutProgress(log string) string {
	if !strings.Contains(log, engines.ProgressLogMarker) {
		return log
	}
	lines := strings.SplitAfter(log, "\n")
	out := lines[:0]
	for _, l := range lines {
		if !strings.Contains(l, engines.ProgressLogMarker) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
