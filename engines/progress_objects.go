package engines

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/trial"
)

// An object store (s3://) cannot append to an object, so a running trial's
// progress goes there as a sequence of small objects under a prefix
// beside the outcome (ProgressPrefix): X.outcome.json gives
// X.outcome.json.progress/00000001.jsonl, 00000002.jsonl, ... Each object
// holds whole JSON lines (trial.Progress) and is written once; read in
// sequence order they make the same stream as a progress file, so a
// reader (ProgressReader) counts a byte offset over their concatenation.

// ProgressObjectInterval is the least time between two progress objects
// (reports in between are batched into the next).
const ProgressObjectInterval = time.Second

// ProgressPrefix is the prefix of the progress objects beside an s3://
// outcome URL ("" for other outcomes: they have a progress file,
// ProgressPath, or none).
func ProgressPrefix(outcome string) string {
	if !strings.HasPrefix(outcome, "s3://") {
		return ""
	}
	return outcome + ".progress/"
}

// progressObjectDigits is the width of an object's sequence number: the
// names sort in sequence order (a job writing one a second for three
// years stays within it).
const progressObjectDigits = 8

// ProgressObjectName is the name (under ProgressPrefix) of the seq-th
// progress object, counted from 1.
func ProgressObjectName(seq int) string {
	return fmt.Sprintf("%0*d.jsonl", progressObjectDigits, seq)
}

// ProgressObjectSeq is the sequence number of a progress object's name
// (under ProgressPrefix); false for a name that is not one.
func ProgressObjectSeq(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ".jsonl")
	if !ok || len(digits) != progressObjectDigits {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || strings.ContainsAny(digits, "+-") {
		return 0, false
	}
	return n, true
}

// ObjectProgressWriter writes a trial's reports as progress objects
// (WriteURL under ProgressPrefix): the reports of at most every interval
// in one object, and the rest at Close. Safe for concurrent use. A write
// that fails is logged once and its reports are kept for the next write,
// so that the objects stay a gapless sequence.
type ObjectProgressWriter struct {
	prefix   string
	interval time.Duration
	write    func(ctx context.Context, url string, data []byte) error

	mu      sync.Mutex
	buf     []byte
	seq     int
	closed  bool
	warned  bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	lastPut time.Time
}

// NewObjectProgressWriter starts a writer of the progress objects beside
// the s3:// outcome URL outcome (nil when it is not one).
func NewObjectProgressWriter(outcome string, interval time.Duration) *ObjectProgressWriter {
	prefix := ProgressPrefix(outcome)
	if prefix == "" {
		return nil
	}
	if interval <= 0 {
		interval = ProgressObjectInterval
	}
	w := &ObjectProgressWriter{prefix: prefix, interval: interval, write: WriteURL,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

// Add adds one report (a zero Ts becomes now); it is written at the next
// flush.
func (w *ObjectProgressWriter) Add(p trial.Progress) {
	if p.Ts.IsZero() {
		p.Ts = time.Now().UTC()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.buf = append(append(w.buf, b...), '\n')
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *ObjectProgressWriter) loop() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		}
		w.mu.Lock()
		wait := time.Until(w.lastPut.Add(w.interval))
		w.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-w.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		if !w.flush(context.Background()) {
			// Kept for the next try, an interval on.
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
}

// flush writes the buffered reports as the next object; false when the
// write failed (they are kept).
func (w *ObjectProgressWriter) flush(ctx context.Context) bool {
	// Only the loop, or Close once the loop ended, flushes: one at a time.
	w.mu.Lock()
	w.lastPut = time.Now()
	data, seq := w.buf, w.seq+1
	w.mu.Unlock()
	if len(data) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := w.prefix + ProgressObjectName(seq)
	err := w.write(ctx, u, data)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if !w.warned {
			w.warned = true
			slog.Warn("bench exec-trial: cannot write the trial's progress; trying again", "url", u, "err", err)
		}
		return false
	}
	w.seq = seq
	w.buf = append([]byte(nil), w.buf[len(data):]...)
	return true
}

// closeTries is how many times Close tries to write the last reports.
const closeTries = 3

// Close writes what is left and stops the writer.
func (w *ObjectProgressWriter) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	// The last reports: a few tries, an interval apart.
	for try := 1; try <= closeTries; try++ {
		if w.flush(context.Background()) {
			return nil
		}
		if try < closeTries {
			time.Sleep(w.interval)
		}
	}
	return fmt.Errorf("the trial's last progress reports could not be written under %s", w.prefix)
}

// ProgressObjectReader is implemented by a Store whose URLs can hold
// progress objects (the s3 scheme): it reads the stream of the objects
// beside an outcome URL from offset on, as ProgressReader.ReadProgress.
type ProgressObjectReader interface {
	ReadProgressObjects(ctx context.Context, outcome string, offset int64) ([]byte, error)
}

// ReadProgressObjects reads the progress objects beside a non-local
// outcome URL through its scheme's Store (for an engine whose outcomes go
// to s3:// URLs, to implement ProgressReader); none (nil, nil) where the
// outcome has no progress objects or its scheme cannot read them.
func ReadProgressObjects(ctx context.Context, outcome string, offset int64) ([]byte, error) {
	if ProgressPrefix(outcome) == "" {
		return nil, nil
	}
	s, ok := storeFor(outcome)
	if !ok {
		return nil, nil
	}
	r, ok := s.(ProgressObjectReader)
	if !ok {
		return nil, nil
	}
	return r.ReadProgressObjects(ctx, outcome, offset)
}
