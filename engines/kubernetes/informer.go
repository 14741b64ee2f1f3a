package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/benchtune/bench/engines/kubernetes/kubeapi"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// informer keeps a cache of the Jobs and Pods of one label selector from a
// list followed by a watch (re-listed when the watch's resource version
// expired), as client-go's informers do, and wakes waiters when a Job
// changes. Engine.Poll reads this cache: following a running trial costs
// no API call.
type informer struct {
	c        *kubeapi.Client
	ns       string
	selector string
	log      *slog.Logger

	mu   sync.Mutex
	jobs map[string]*kubeapi.Job // by name
	pods map[string]*kubeapi.Pod // by name
	// gone are Jobs deleted while watched (name → when), so that Poll can
	// tell a Job deleted by someone else from one never seen.
	gone map[string]time.Time
	// disrupted counts, per Job, the pods that failed with a
	// DisruptionTarget condition (evicted, preempted): by pod UID.
	disrupted map[string]map[string]string
	synced    map[string]bool // "jobs", "pods"
	changed   chan struct{}   // closed and replaced on every change
	err       error           // the last List or watch error (nil once it works again)

	cancel context.CancelFunc
	done   sync.WaitGroup
}

func newInformer(c *kubeapi.Client, ns, selector string, log *slog.Logger) *informer {
	return &informer{c: c, ns: ns, selector: selector, log: log,
		jobs: map[string]*kubeapi.Job{}, pods: map[string]*kubeapi.Pod{}, gone: map[string]time.Time{},
		disrupted: map[string]map[string]string{}, synced: map[string]bool{}, changed: make(chan struct{})}
}

func (in *informer) start() {
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	in.done.Add(2)
	go func() { defer in.done.Done(); in.run(ctx, "jobs", "/apis/batch/v1/namespaces/"+in.ns+"/jobs") }()
	go func() { defer in.done.Done(); in.run(ctx, "pods", "/api/v1/namespaces/"+in.ns+"/pods") }()
}

func (in *informer) stop() {
	if in.cancel != nil {
		in.cancel()
		in.done.Wait()
	}
}

// notify wakes every waiter (in.mu held).
func (in *informer) notify() {
	close(in.changed)
	in.changed = make(chan struct{})
}

// run lists and watches one kind until ctx ends.
func (in *informer) run(ctx context.Context, kind, path string) {
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		rv, err := in.list(ctx, kind, path)
		for err == nil && ctx.Err() == nil {
			began := time.Now()
			rv, err = in.watchFrom(ctx, kind, path, rv)
			if err != nil {
				break
			}
			if time.Since(began) > 5*time.Second {
				backoff = 200 * time.Millisecond
				continue
			}
			// A watch that ended at once (a proxy that closes streams):
			// not in a tight loop.
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
		}
		if ctx.Err() != nil {
			return
		}
		in.mu.Lock()
		in.err = err
		in.notify()
		in.mu.Unlock()
		if !kubeapi.IsStatus(err, http.StatusGone) {
			in.log.Debug("kubernetes: list/watch failed; trying again", "kind", kind, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
		}
	}
}

// list replaces the cache of kind with a fresh list; it returns the
// list's resource version.
func (in *informer) list(ctx context.Context, kind, path string) (string, error) {
	q := url.Values{"labelSelector": {in.selector}, "limit": {"500"}}
	switch kind {
	case "jobs":
		var all []kubeapi.Job
		rv := ""
		for {
			var l kubeapi.List[kubeapi.Job]
			if err := in.c.Do(ctx, http.MethodGet, path, q, nil, &l); err != nil {
				return "", err
			}
			all = append(all, l.Items...)
			rv = l.Metadata.ResourceVersion
			if l.Metadata.Continue == "" {
				break
			}
			q.Set("continue", l.Metadata.Continue)
		}
		in.mu.Lock()
		fresh := map[string]*kubeapi.Job{}
		for i := range all {
			fresh[all[i].Metadata.Name] = &all[i]
		}
		for name := range in.jobs {
			if _, ok := fresh[name]; !ok {
				in.gone[name] = time.Now()
			}
		}
		in.jobs = fresh
		in.synced[kind], in.err = true, nil
		in.notify()
		in.mu.Unlock()
		return rv, nil
	default:
		var all []kubeapi.Pod
		rv := ""
		for {
			var l kubeapi.List[kubeapi.Pod]
			if err := in.c.Do(ctx, http.MethodGet, path, q, nil, &l); err != nil {
				return "", err
			}
			all = append(all, l.Items...)
			rv = l.Metadata.ResourceVersion
			if l.Metadata.Continue == "" {
				break
			}
			q.Set("continue", l.Metadata.Continue)
		}
		in.mu.Lock()
		in.pods = map[string]*kubeapi.Pod{}
		for i := range all {
			in.putPod(&all[i])
		}
		in.synced[kind], in.err = true, nil
		in.notify()
		in.mu.Unlock()
		return rv, nil
	}
}

// watchFrom follows a watch from rv; it returns the last resource version
// seen when the stream ends normally.
func (in *informer) watchFrom(ctx context.Context, kind, path, rv string) (string, error) {
	q := url.Values{"labelSelector": {in.selector}, "resourceVersion": {rv}, "timeoutSeconds": {"300"}}
	err := in.c.Watch(ctx, path, q, func(ev kubeapi.WatchEvent) error {
		if ev.Type == "ERROR" {
			st := kubeapi.DecodeStatus(ev.Object)
			return &kubeapi.APIError{Code: st.Code, Reason: st.Reason, Message: st.Message, Verb: "WATCH", Path: path}
		}
		var meta struct {
			Metadata kubeapi.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(ev.Object, &meta); err != nil {
			return fmt.Errorf("watch %s: %w", path, err)
		}
		rv = meta.Metadata.ResourceVersion
		if ev.Type == "BOOKMARK" {
			return nil
		}
		in.mu.Lock()
		defer in.mu.Unlock()
		switch kind {
		case "jobs":
			var j kubeapi.Job
			if err := json.Unmarshal(ev.Object, &j); err != nil {
				return fmt.Errorf("watch %s: %w", path, err)
			}
			if ev.Type == "DELETED" {
				delete(in.jobs, j.Metadata.Name)
				in.gone[j.Metadata.Name] = time.Now()
			} else {
				in.putJob(&j)
			}
		default:
			var p kubeapi.Pod
			if err := json.Unmarshal(ev.Object, &p); err != nil {
				return fmt.Errorf("watch %s: %w", path, err)
			}
			in.putPod(&p)
			if ev.Type == "DELETED" {
				delete(in.pods, p.Metadata.Name)
			}
		}
		in.notify()
		return nil
	})
	return rv, err
}

// newer reports whether resource version a is newer than b (resource
// versions are opaque, but etcd's are increasing integers; when they do
// not parse, the later event wins).
func newer(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	return x >= y
}

// putJob stores a Job unless the cache holds a newer version (in.mu
// held).
func (in *informer) putJob(j *kubeapi.Job) {
	if old, ok := in.jobs[j.Metadata.Name]; ok && old.Metadata.UID == j.Metadata.UID && !newer(j.Metadata.ResourceVersion, old.Metadata.ResourceVersion) {
		return
	}
	in.jobs[j.Metadata.Name] = j
	delete(in.gone, j.Metadata.Name)
}

// putPod stores a pod and notes a disruption (in.mu held).
func (in *informer) putPod(p *kubeapi.Pod) {
	if old, ok := in.pods[p.Metadata.Name]; ok && old.Metadata.UID == p.Metadata.UID && !newer(p.Metadata.ResourceVersion, old.Metadata.ResourceVersion) {
		return
	}
	in.pods[p.Metadata.Name] = p
	if c := kubeapi.FindCondition(p.Status.Conditions, "DisruptionTarget"); c != nil {
		job := p.Metadata.Labels[jobNameLabel]
		if in.disrupted[job] == nil {
			in.disrupted[job] = map[string]string{}
		}
		in.disrupted[job][p.Metadata.UID] = joinNonEmpty(": ", c.Reason, c.Message)
	}
}

// add stores a Job this engine just created or read (ahead of its watch
// event).
func (in *informer) add(j *kubeapi.Job) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.putJob(j)
	in.notify()
}

// view is a consistent copy of what the cache holds about one Job.
type view struct {
	job       *kubeapi.Job
	pods      []*kubeapi.Pod
	gone      bool // deleted while watched
	disrupted []string
	synced    bool
	err       error
}

// get returns the cache's view of a Job and a channel closed at its next
// change.
func (in *informer) get(name string) (view, <-chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	v := view{job: in.jobs[name], synced: in.synced["jobs"] && in.synced["pods"], err: in.err}
	_, v.gone = in.gone[name]
	for _, p := range in.pods {
		if p.Metadata.Labels[jobNameLabel] == name {
			v.pods = append(v.pods, p)
		}
	}
	for _, r := range in.disrupted[name] {
		v.disrupted = append(v.disrupted, r)
	}
	return v, in.changed
}

// waitSynced waits until both kinds were listed once.
func (in *informer) waitSynced(ctx context.Context) error {
	for {
		in.mu.Lock()
		ok, ch, err := in.synced["jobs"] && in.synced["pods"], in.changed, in.err
		in.mu.Unlock()
		if ok {
			return nil
		}
		// Not allowed (RBAC) or not authenticated: no point in waiting.
		if kubeapi.IsStatus(err, http.StatusForbidden) || kubeapi.IsStatus(err, http.StatusUnauthorized) {
			return err
		}
		t := time.NewTimer(30 * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-ch:
			t.Stop()
		case <-t.C:
			if err != nil {
				return err
			}
		}
	}
}
