// Package kubetest runs the Kubernetes engine's tests against a real API
// server (kube-apiserver and etcd on loopback, started by
// scripts/testenv/kube.sh), and plays, in the open, the parts of a
// cluster that do not run there: the Job controller, the kubelet, the
// garbage collector and the TTL controller.
//
// What is real: the API server (authentication by token, RBAC
// authorization, admission, validation and defaulting of Jobs, Pods and
// ConfigMaps, the Eviction API, TokenRequest), etcd, and every watch.
// What this package plays:
//
//   - the Job controller: for each Job it creates pods from the Job's
//     template through the API (generateName, owner reference, the
//     completion index of Indexed Jobs), applies the Job's
//     podFailurePolicy (Ignore, FailJob, Count; onPodConditions and
//     onExitCodes), backoffLimit and backoffLimitPerIndex, and
//     activeDeadlineSeconds (it deletes the running pods at the deadline),
//     and writes the Job's status (startTime, active/succeeded/failed,
//     SuccessCriteriaMet+Complete or FailureTarget+Failed with the
//     controller's reasons) through the status subresource;
//   - the kubelet: it runs each pod's container command as a local
//     process (the image's "bench" is the bench binary under test), with
//     the pod's environment resolved as the kubelet does (values,
//     ConfigMap and Secret keys, envFrom Secrets, the downward API fields,
//     $(VAR) expansion of the command), a kubeconfig holding a real token
//     of the pod's service account (TokenRequest) in KUBECONFIG, and
//     writes the pod's status; it stops a pod that is deleted (SIGTERM,
//     then SIGKILL after the grace period), plays image pull errors for
//     images named "bench-test.invalid/...", and plays the kernel's OOM
//     killer by summing the RSS of the pod's processes against its
//     memory limit (SIGKILL, reason OOMKilled);
//   - the garbage collector and TTL controller: dependents (pods,
//     ConfigMaps) whose owners are gone are deleted, and finished Jobs
//     past ttlSecondsAfterFinished;
//   - the node: one Node object whose kubelet endpoint is a TLS server in
//     the test that serves each pod's output, so the pods/log API (the API
//     server proxies it to the kubelet) answers with the real output.
package kubetest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/engines/kubernetes/kubeapi"
	"github.com/benchtune/bench/internal/testenv"
)

// Environment variables set by scripts/testenv/kube.sh.
const (
	AdminKubeconfigEnv  = "BENCH_TEST_KUBECONFIG"
	EngineKubeconfigEnv = "BENCH_TEST_KUBE_ENGINE_KUBECONFIG"
)

// TrialServiceAccount is the service account the tests' trial pods run as.
const TrialServiceAccount = "bench-trial"

// EngineRole is the Role the engine's user gets in a test namespace: the
// one docs/engines-kubernetes.md gives.
const EngineRole = `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "bench-engine"},
 "rules": [
  {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get", "list", "watch", "delete"]},
  {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
  {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
  {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "patch", "delete"]}]}`

// TrialRole is the Role of the trial pods' service account: create the
// outcome ConfigMap, nothing else.
const TrialRole = `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "bench-trial"},
 "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}`

// Fixture is a fresh namespace on the test API server with the engine's
// RBAC in place and the played controllers running.
type Fixture struct {
	Namespace string
	// AdminKubeconfig is the administrator's kubeconfig; EngineKubeconfig
	// the engine's (user bench-engine, with the EngineRole only).
	AdminKubeconfig, EngineKubeconfig string
	Admin                             *kubeapi.Client
	Cluster                           *Cluster
}

// Options configure the played kubelet.
type Options struct {
	// Bench is the binary that runs for a container command "bench ...".
	Bench string
	// LogDir receives each pod's output (default: a test folder).
	LogDir string
}

// Start makes a namespace and starts the played controllers; the test is
// skipped (or fails under BENCH_TEST_STRICT=1) without the API server.
func Start(t testing.TB, opt Options) *Fixture {
	t.Helper()
	adminKC := testenv.Get(t, AdminKubeconfigEnv)
	engineKC := testenv.Get(t, EngineKubeconfigEnv)
	rc, err := kubeapi.LoadKubeconfig([]string{adminKC}, "")
	if err != nil {
		t.Fatal(err)
	}
	admin := kubeapi.NewClient(rc)
	ns := "bench-test-" + randHex(4)
	ctx := context.Background()
	must := func(method, path string, body string) {
		t.Helper()
		var obj any
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if err := admin.Do(ctx, method, path, nil, obj, nil); err != nil {
			t.Fatalf("setting up namespace %s: %v", ns, err)
		}
	}
	must(http.MethodPost, "/api/v1/namespaces", `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "`+ns+`"}}`)
	for _, sa := range []string{"default", TrialServiceAccount} {
		must(http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts", `{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "`+sa+`"}}`)
	}
	rbac := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns
	must(http.MethodPost, rbac+"/roles", EngineRole)
	must(http.MethodPost, rbac+"/rolebindings", `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bench-engine"},
		"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench-engine"},
		"subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bench-engine"}]}`)
	must(http.MethodPost, rbac+"/roles", TrialRole)
	must(http.MethodPost, rbac+"/rolebindings", `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bench-trial"},
		"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench-trial"},
		"subjects": [{"kind": "ServiceAccount", "name": "`+TrialServiceAccount+`", "namespace": "`+ns+`"}]}`)
	if opt.LogDir == "" {
		opt.LogDir = t.TempDir()
	}
	cl := newCluster(admin, ns, opt, rc, t.TempDir())
	// The played kubelet's node: the API server reaches its log endpoint
	// (pods/log) at the node's InternalIP and kubelet port.
	logs := httptest.NewTLSServer(http.HandlerFunc(cl.serveLog))
	port := logs.Listener.Addr().(*net.TCPAddr).Port
	cl.node = "bench-test-node-" + ns
	must(http.MethodPost, "/api/v1/nodes", `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "`+cl.node+`"}}`)
	status := map[string]any{"status": map[string]any{
		"addresses":       []any{map[string]any{"type": "InternalIP", "address": "127.0.0.1"}},
		"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": port}},
		"conditions":      []any{map[string]any{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "played by kubetest"}}}}
	if err := admin.DoType(ctx, http.MethodPatch, "/api/v1/nodes/"+cl.node+"/status", nil, status, "application/merge-patch+json", nil); err != nil {
		t.Fatalf("node status: %v", err)
	}
	cl.start()
	t.Cleanup(func() {
		cl.stop()
		logs.Close()
		_ = admin.Do(context.Background(), http.MethodDelete, "/api/v1/nodes/"+cl.node, nil, nil, nil)
		_ = admin.Do(context.Background(), http.MethodDelete, "/api/v1/namespaces/"+ns, nil, nil, nil)
	})
	return &Fixture{Namespace: ns, AdminKubeconfig: adminKC, EngineKubeconfig: engineKC, Admin: admin, Cluster: cl}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Cluster is the played Job controller, kubelet, garbage collector and
// TTL controller of one namespace.
type Cluster struct {
	c      *kubeapi.Client
	ns     string
	node   string
	opt    Options
	rc     *kubeapi.Config
	tmp    string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}
	mu     sync.Mutex
	pods   map[string]*podRun // by pod name
	// PodsCreated counts the pods the played controller created, per Job
	// name.
	podsCreated map[string]int
	jobsSeen    map[string]bool
}

// podRun is one pod the played kubelet runs.
type podRun struct {
	name, uid, job, jobUID string
	index                  int // -1: not indexed
	done                   chan struct{}
	phase                  string
	exitCode               int32
	reason                 string
	disrupted              bool
	conditions             []kubeapi.Condition
	deleting               bool
	proc                   *os.Process
}

func newCluster(c *kubeapi.Client, ns string, opt Options, rc *kubeapi.Config, tmp string) *Cluster {
	ctx, cancel := context.WithCancel(context.Background())
	return &Cluster{c: c, ns: ns, opt: opt, rc: rc, tmp: tmp, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1),
		pods: map[string]*podRun{}, podsCreated: map[string]int{}, jobsSeen: map[string]bool{}}
}

// PodsCreated returns how many pods the played Job controller created for
// a Job.
func (cl *Cluster) PodsCreated(job string) int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.podsCreated[job]
}

// JobsSeen returns the names of every Job the played controller has seen
// (Jobs deleted since included).
func (cl *Cluster) JobsSeen() []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	out := make([]string, 0, len(cl.jobsSeen))
	for n := range cl.jobsSeen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Pods returns the names of the running pods of a Job.
func (cl *Cluster) Pods(job string) []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var out []string
	for _, p := range cl.pods {
		if p.job == job && p.phase == "Running" {
			out = append(out, p.name)
		}
	}
	sort.Strings(out)
	return out
}

func (cl *Cluster) wake() {
	select {
	case cl.kick <- struct{}{}:
	default:
	}
}

func (cl *Cluster) start() {
	cl.wg.Add(3)
	go func() { defer cl.wg.Done(); cl.watchLoop("/apis/batch/v1/namespaces/" + cl.ns + "/jobs") }()
	go func() { defer cl.wg.Done(); cl.watchLoop("/api/v1/namespaces/" + cl.ns + "/pods") }()
	go func() { defer cl.wg.Done(); cl.controlLoop() }()
}

func (cl *Cluster) stop() {
	cl.cancel()
	cl.mu.Lock()
	for _, p := range cl.pods {
		if p.proc != nil {
			_ = syscall.Kill(-p.proc.Pid, syscall.SIGKILL)
		}
	}
	cl.mu.Unlock()
	cl.wg.Wait()
}

// watchLoop wakes the control loop on every change of a kind, and has
// the kubelet stop pods that are being deleted.
func (cl *Cluster) watchLoop(path string) {
	for cl.ctx.Err() == nil {
		err := cl.c.Watch(cl.ctx, path, url.Values{}, func(ev kubeapi.WatchEvent) error {
			if strings.HasSuffix(path, "/pods") && ev.Type != "BOOKMARK" && ev.Type != "ERROR" {
				var p kubeapi.Pod
				if json.Unmarshal(ev.Object, &p) == nil && p.Metadata.DeletionTimestamp != nil {
					cl.stopPod(p.Metadata.Name, p.Status.Conditions, p.Spec.TerminationGracePeriodSeconds)
				}
			}
			cl.wake()
			return nil
		})
		_ = err
		select {
		case <-cl.ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// controlLoop reconciles every Job on a change, and at least every
// 200 ms (deadlines, TTLs, garbage).
func (cl *Cluster) controlLoop() {
	for {
		select {
		case <-cl.ctx.Done():
			return
		case <-cl.kick:
		case <-time.After(200 * time.Millisecond):
		}
		cl.reconcile()
	}
}

func (cl *Cluster) path(kind string) string {
	if kind == "jobs" {
		return "/apis/batch/v1/namespaces/" + cl.ns + "/jobs"
	}
	return "/api/v1/namespaces/" + cl.ns + "/" + kind
}

// rawJob is a Job read as JSON (its template copied as it is).
type rawJob struct {
	kubeapi.Job
	Raw map[string]any
}

func (cl *Cluster) reconcile() {
	ctx := cl.ctx
	var jl struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := cl.c.Do(ctx, http.MethodGet, cl.path("jobs"), nil, nil, &jl); err != nil {
		return
	}
	live := map[string]bool{}
	for _, raw := range jl.Items {
		var j rawJob
		if json.Unmarshal(raw, &j.Job) != nil || json.Unmarshal(raw, &j.Raw) != nil {
			continue
		}
		live[j.Metadata.UID] = true
		cl.mu.Lock()
		cl.jobsSeen[j.Metadata.Name] = true
		cl.mu.Unlock()
		cl.reconcileJob(ctx, &j)
	}
	cl.collectGarbage(ctx, live)
}

// collectGarbage plays the garbage collector: pods and ConfigMaps whose
// owners are all gone are deleted.
func (cl *Cluster) collectGarbage(ctx context.Context, liveJobs map[string]bool) {
	var pl kubeapi.List[kubeapi.Pod]
	if err := cl.c.Do(ctx, http.MethodGet, cl.path("pods"), nil, nil, &pl); err != nil {
		return
	}
	live := map[string]bool{}
	for k := range liveJobs {
		live[k] = true
	}
	for _, p := range pl.Items {
		live[p.Metadata.UID] = true
	}
	for _, p := range pl.Items {
		if orphan(p.Metadata.OwnerReferences, live) && p.Metadata.DeletionTimestamp == nil && !cl.ownerLives(ctx, p.Metadata.OwnerReferences) {
			_ = cl.c.Do(ctx, http.MethodDelete, cl.path("pods")+"/"+p.Metadata.Name, nil, nil, nil)
		}
	}
	var cml kubeapi.List[kubeapi.ConfigMap]
	if err := cl.c.Do(ctx, http.MethodGet, cl.path("configmaps"), nil, nil, &cml); err != nil {
		return
	}
	for _, cm := range cml.Items {
		if orphan(cm.Metadata.OwnerReferences, live) && !cl.ownerLives(ctx, cm.Metadata.OwnerReferences) {
			_ = cl.c.Do(ctx, http.MethodDelete, cl.path("configmaps")+"/"+cm.Metadata.Name, nil, nil, nil)
		}
	}
}

// ownerLives reads each owner (as the garbage collector does before it
// deletes a dependent: the lists above may be older than the dependent).
func (cl *Cluster) ownerLives(ctx context.Context, refs []kubeapi.OwnerReference) bool {
	for _, r := range refs {
		path := cl.path("pods") + "/" + r.Name
		if r.Kind == "Job" {
			path = cl.path("jobs") + "/" + r.Name
		}
		var obj struct {
			Metadata kubeapi.ObjectMeta `json:"metadata"`
		}
		err := cl.c.Do(ctx, http.MethodGet, path, nil, nil, &obj)
		if err == nil && obj.Metadata.UID == r.UID {
			return true
		}
		if err != nil && !kubeapi.IsNotFound(err) {
			return true // not sure: keep it
		}
	}
	return false
}

// orphan reports whether an object has owners and none of them lives.
func orphan(refs []kubeapi.OwnerReference, live map[string]bool) bool {
	if len(refs) == 0 {
		return false
	}
	for _, r := range refs {
		if live[r.UID] {
			return false
		}
	}
	return true
}

func finished(j *kubeapi.Job) (bool, time.Time) {
	for _, t := range []string{"Complete", "Failed"} {
		if c := kubeapi.FindCondition(j.Status.Conditions, t); c != nil {
			if c.LastTransitionTime != nil {
				return true, *c.LastTransitionTime
			}
			return true, time.Now()
		}
	}
	return false, time.Time{}
}

// reconcileJob plays the Job controller for one Job.
func (cl *Cluster) reconcileJob(ctx context.Context, j *rawJob) {
	if done, at := finished(&j.Job); done {
		if ttl := j.Spec.TTLSecondsAfterFinished; ttl != nil && time.Since(at) >= time.Duration(*ttl)*time.Second {
			_ = cl.c.Do(ctx, http.MethodDelete, cl.path("jobs")+"/"+j.Metadata.Name, nil,
				map[string]any{"propagationPolicy": "Background"}, nil)
		}
		return
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	start := now
	if j.Status.StartTime != nil {
		start = *j.Status.StartTime
	}
	indexed := j.Spec.CompletionMode == "Indexed"
	completions := 1
	if j.Spec.Completions != nil {
		completions = int(*j.Spec.Completions)
	}
	cl.mu.Lock()
	var mine []*podRun
	for _, p := range cl.pods {
		if p.jobUID == j.Metadata.UID {
			mine = append(mine, p)
		}
	}
	cl.mu.Unlock()
	active, succeeded, failed := 0, 0, 0
	succ := map[int]bool{}
	failedPer := map[int]int{}
	activePer := map[int]bool{}
	failJob, failReason, failMsg := false, "", ""
	for _, p := range mine {
		cl.mu.Lock()
		phase, disrupted, code, conds := p.phase, p.disrupted, p.exitCode, p.conditions
		cl.mu.Unlock()
		switch phase {
		case "Succeeded":
			succeeded++
			succ[p.index] = true
		case "Failed":
			action := failureAction(j.Spec.PodFailurePolicy, code, conds, disrupted)
			switch action {
			case "Ignore":
			case "FailJob":
				failed++
				failJob, failReason = true, "PodFailurePolicy"
				failMsg = fmt.Sprintf("Container bench for pod %s/%s failed with exit code %d matching FailJob rule", cl.ns, p.name, code)
			default:
				failed++
				failedPer[p.index]++
			}
		default:
			active++
			activePer[p.index] = true
		}
	}
	status := map[string]any{"startTime": start.Format(time.RFC3339), "active": active, "succeeded": succeeded, "failed": failed}
	ready := int32(active)
	status["ready"] = ready
	deadline := j.Spec.ActiveDeadlineSeconds != nil && now.Sub(start) >= time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second
	backoff := int32(6)
	if j.Spec.BackoffLimit != nil {
		backoff = *j.Spec.BackoffLimit
	}
	if !indexed && int32(failed) > backoff && !failJob {
		failJob, failReason, failMsg = true, "BackoffLimitExceeded", "Job has reached the specified backoff limit"
	}
	if indexed && j.Spec.BackoffLimitPerIndex != nil {
		for i, n := range failedPer {
			if int32(n) > *j.Spec.BackoffLimitPerIndex && !activePer[i] {
				failJob, failReason, failMsg = true, "FailedIndexes", "Job has failed indexes"
			}
		}
	}
	if deadline && !failJob {
		failJob, failReason, failMsg = true, "DeadlineExceeded", "Job was active longer than specified deadline"
	}
	if failJob {
		if active > 0 {
			// Terminate the running pods first (the real controller sets
			// FailureTarget now and Failed once they are gone).
			for _, p := range mine {
				cl.mu.Lock()
				running := p.phase != "Succeeded" && p.phase != "Failed"
				cl.mu.Unlock()
				if running {
					_ = cl.c.Do(ctx, http.MethodDelete, cl.path("pods")+"/"+p.name, nil, nil, nil)
				}
			}
			cl.writeStatus(ctx, j, status, []kubeapi.Condition{cond("FailureTarget", failReason, failMsg, now)})
			return
		}
		cl.writeStatus(ctx, j, status, []kubeapi.Condition{cond("FailureTarget", failReason, failMsg, now), cond("Failed", failReason, failMsg, now)})
		return
	}
	if (indexed && len(succ) >= completions) || (!indexed && succeeded >= completions) {
		status["completionTime"] = now.Format(time.RFC3339)
		status["active"] = 0
		cl.writeStatus(ctx, j, status, []kubeapi.Condition{cond("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods", now),
			cond("Complete", "CompletionsReached", "Reached expected number of succeeded pods", now)})
		return
	}
	// Create the pods that are missing.
	if indexed {
		for i := 0; i < completions; i++ {
			if !succ[i] && !activePer[i] && (j.Spec.BackoffLimitPerIndex == nil || int32(failedPer[i]) <= *j.Spec.BackoffLimitPerIndex) {
				cl.createPod(ctx, j, i)
			}
		}
	} else if active == 0 {
		cl.createPod(ctx, j, -1)
	}
	cl.writeStatus(ctx, j, status, nil)
}

func cond(typ, reason, msg string, at time.Time) kubeapi.Condition {
	return kubeapi.Condition{Type: typ, Status: "True", Reason: reason, Message: msg, LastTransitionTime: &at, LastProbeTime: &at}
}

// failureAction applies a Job's podFailurePolicy to a failed pod.
func failureAction(p *kubeapi.PodFailurePolicy, code int32, conds []kubeapi.Condition, disrupted bool) string {
	if p == nil {
		return "Count"
	}
	for _, r := range p.Rules {
		for _, pc := range r.OnPodConditions {
			if kubeapi.FindCondition(conds, pc.Type) != nil {
				return r.Action
			}
		}
		if m, ok := r.OnExitCodes.(map[string]any); ok {
			vals, _ := m["values"].([]any)
			in := false
			for _, v := range vals {
				if f, ok := v.(float64); ok && int32(f) == code {
					in = true
				}
			}
			if (m["operator"] == "In" && in) || (m["operator"] == "NotIn" && !in && code != 0) {
				return r.Action
			}
		}
	}
	return "Count"
}

// writeStatus writes a Job's status (conditions appended to the Job's).
func (cl *Cluster) writeStatus(ctx context.Context, j *rawJob, status map[string]any, add []kubeapi.Condition) {
	conds := append([]kubeapi.Condition{}, j.Status.Conditions...)
	for _, c := range add {
		if kubeapi.FindCondition(conds, c.Type) == nil {
			conds = append(conds, c)
		}
	}
	if len(conds) > 0 {
		status["conditions"] = conds
	}
	// Unchanged: no write.
	old, _ := json.Marshal(map[string]any{"startTime": fmtTime(j.Status.StartTime), "active": int(j.Status.Active), "succeeded": int(j.Status.Succeeded),
		"failed": int(j.Status.Failed), "n": len(j.Status.Conditions), "ready": ptrVal(j.Status.Ready), "ct": fmtTime(j.Status.CompletionTime)})
	ct, _ := status["completionTime"].(string)
	newb, _ := json.Marshal(map[string]any{"startTime": status["startTime"], "active": status["active"], "succeeded": status["succeeded"],
		"failed": status["failed"], "n": len(conds), "ready": status["ready"], "ct": ct})
	if string(old) == string(newb) {
		return
	}
	err := cl.c.DoType(ctx, http.MethodPatch, cl.path("jobs")+"/"+j.Metadata.Name+"/status", nil,
		map[string]any{"status": status}, "application/merge-patch+json", nil)
	if err != nil && ctx.Err() == nil && !kubeapi.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "kubetest: job controller: writing the status of Job %s: %v\n", j.Metadata.Name, err)
	}
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func ptrVal(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// createPod plays the Job controller's pod creation.
func (cl *Cluster) createPod(ctx context.Context, j *rawJob, index int) {
	spec, _ := j.Raw["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	podSpec, _ := tmpl["spec"].(map[string]any)
	if podSpec == nil {
		return
	}
	labels := map[string]any{}
	if l, ok := meta["labels"].(map[string]any); ok {
		for k, v := range l {
			labels[k] = v
		}
	}
	ann := map[string]any{}
	if a, ok := meta["annotations"].(map[string]any); ok {
		for k, v := range a {
			ann[k] = v
		}
	}
	gen := j.Metadata.Name + "-"
	// Deep copy the spec through JSON.
	b, _ := json.Marshal(podSpec)
	var ps map[string]any
	_ = json.Unmarshal(b, &ps)
	if index >= 0 {
		gen = fmt.Sprintf("%s-%d-", j.Metadata.Name, index)
		ann["batch.kubernetes.io/job-completion-index"] = strconv.Itoa(index)
		labels["batch.kubernetes.io/job-completion-index"] = strconv.Itoa(index)
		if cs, ok := ps["containers"].([]any); ok {
			for _, c := range cs {
				cm, _ := c.(map[string]any)
				env, _ := cm["env"].([]any)
				cm["env"] = append([]any{map[string]any{"name": "JOB_COMPLETION_INDEX", "value": strconv.Itoa(index)}}, env...)
			}
		}
	}
	ps["nodeName"] = cl.node
	yes := true
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"generateName": gen, "labels": labels, "annotations": ann,
			"ownerReferences": []kubeapi.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Metadata.Name, UID: j.Metadata.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		"spec": ps}
	var created kubeapi.Pod
	if err := cl.c.Do(ctx, http.MethodPost, cl.path("pods"), nil, pod, &created); err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "kubetest: job controller: creating a pod of Job %s: %v\n", j.Metadata.Name, err)
		}
		return
	}
	pr := &podRun{name: created.Metadata.Name, uid: created.Metadata.UID, job: j.Metadata.Name, jobUID: j.Metadata.UID, index: index,
		done: make(chan struct{}), phase: "Pending"}
	cl.mu.Lock()
	cl.pods[pr.name] = pr
	cl.podsCreated[j.Metadata.Name]++
	cl.mu.Unlock()
	cl.wg.Add(1)
	go func() {
		defer cl.wg.Done()
		cl.runPod(&created, pr)
	}()
}

// stopPod plays the kubelet's answer to a deleted pod: SIGTERM, then
// SIGKILL after the grace period (at most 10 s here).
func (cl *Cluster) stopPod(name string, conds []kubeapi.Condition, grace *int64) {
	cl.mu.Lock()
	p, ok := cl.pods[name]
	if !ok || p.deleting {
		cl.mu.Unlock()
		return
	}
	p.deleting = true
	if kubeapi.FindCondition(conds, "DisruptionTarget") != nil {
		p.disrupted = true
		p.conditions = conds
	}
	proc := p.proc
	cl.mu.Unlock()
	if proc == nil {
		return
	}
	_ = syscall.Kill(-proc.Pid, syscall.SIGTERM)
	g := 10 * time.Second
	if grace != nil && time.Duration(*grace)*time.Second < g {
		g = time.Duration(*grace) * time.Second
	}
	go func() {
		select {
		case <-p.done:
		case <-time.After(g):
			_ = syscall.Kill(-proc.Pid, syscall.SIGKILL)
		}
	}()
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// runPod plays the kubelet for one pod.
func (cl *Cluster) runPod(pod *kubeapi.Pod, pr *podRun) {
	ctx := cl.ctx
	defer close(pr.done)
	defer cl.wake()
	c := pod.Spec.Containers[0]
	setWaiting := func(reason, msg string) {
		cl.patchPodStatus(ctx, pod.Metadata.Name, map[string]any{"phase": "Pending",
			"containerStatuses": []any{map[string]any{"name": c.Name, "image": c.Image, "imageID": "", "ready": false, "restartCount": 0,
				"state": map[string]any{"waiting": map[string]any{"reason": reason, "message": msg}}}}})
	}
	// Resolve the environment, as the kubelet does before it starts the
	// container (a missing ConfigMap or Secret: CreateContainerConfigError,
	// tried again).
	var env []string
	for {
		if cl.deleted(pr) || ctx.Err() != nil {
			cl.finishPod(ctx, pod, pr, "Failed", 137, "ContainerCannotRun", nil, nil)
			return
		}
		if strings.HasPrefix(c.Image, "bench-test.invalid/") {
			setWaiting("ErrImagePull", fmt.Sprintf("failed to pull and unpack image %q: not found", c.Image))
		} else if e, err := cl.resolveEnv(ctx, pod, c); err != nil {
			setWaiting("CreateContainerConfigError", err.Error())
		} else {
			env = e
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	expand := func(s string) string {
		return varRef.ReplaceAllStringFunc(s, func(m string) string {
			if v, ok := vars[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	for i := range argv {
		argv[i] = expand(argv[i])
	}
	if len(argv) == 0 {
		cl.finishPod(ctx, pod, pr, "Failed", 128, "ContainerCannotRun", nil, nil)
		return
	}
	if argv[0] == "bench" && cl.opt.Bench != "" {
		argv[0] = cl.opt.Bench
	}
	// The pod's service account token (a real one, from TokenRequest).
	kc, err := cl.podKubeconfig(ctx, pod)
	if err != nil {
		setWaiting("CreateContainerError", err.Error())
		cl.finishPod(ctx, pod, pr, "Failed", 128, "ContainerCannotRun", nil, nil)
		return
	}
	logf, err := os.Create(filepath.Join(cl.opt.LogDir, pod.Metadata.Name+".log"))
	if err != nil {
		cl.finishPod(ctx, pod, pr, "Failed", 128, "ContainerCannotRun", nil, nil)
		return
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(cleanEnv(), env...), "KUBECONFIG="+kc, "HOSTNAME="+pod.Metadata.Name)
	cmd.Dir = c.WorkingDir
	if cmd.Dir == "" {
		cmd.Dir = cl.tmp
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now().UTC().Truncate(time.Second)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(logf, err)
		cl.finishPod(ctx, pod, pr, "Failed", 127, "StartError", &started, nil)
		return
	}
	cl.mu.Lock()
	pr.proc = cmd.Process
	pr.phase = "Running"
	deleting := pr.deleting
	cl.mu.Unlock()
	if deleting {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	cl.patchPodStatus(ctx, pod.Metadata.Name, map[string]any{"phase": "Running", "startTime": started.Format(time.RFC3339),
		"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
		"containerStatuses": []any{map[string]any{"name": c.Name, "image": c.Image, "imageID": "", "ready": true, "restartCount": 0, "started": true,
			"state": map[string]any{"running": map[string]any{"startedAt": started.Format(time.RFC3339)}}}}})
	cl.wake()
	// The OOM killer: the pod's processes over its memory limit.
	oom := make(chan struct{})
	var limit int64
	if c.Resources != nil {
		limit = parseBytes(c.Resources.Limits["memory"])
	}
	waited := make(chan struct{})
	if limit > 0 {
		go func() {
			for {
				select {
				case <-waited:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if rss, pids := treeRSS(cmd.Process.Pid); rss > limit {
					// The container's whole cgroup is killed
					// (memory.oom.group, as the kubelet sets it).
					close(oom)
					for _, p := range pids {
						_ = syscall.Kill(p, syscall.SIGKILL)
					}
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					return
				}
			}
		}()
	}
	err = cmd.Wait()
	close(waited)
	// Whatever the command left behind in its group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	code := int32(0)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = int32(ee.ExitCode())
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int32(ws.Signal())
		}
	} else if err != nil {
		code = 128
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	select {
	case <-oom:
		reason = "OOMKilled"
	default:
	}
	phase := "Succeeded"
	if code != 0 {
		phase = "Failed"
	}
	cl.finishPod(ctx, pod, pr, phase, code, reason, &started, nil)
}

// cleanEnv is this process's environment without what a pod would not
// have (the tests' kubeconfig, the driver's AWS settings: a pod has only
// what its spec gives it).
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "BENCH_TEST_KUBE") || strings.HasPrefix(kv, "AWS_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (cl *Cluster) deleted(pr *podRun) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return pr.deleting
}

// finishPod writes a pod's final status; a deleted pod is then removed
// (the kubelet confirms the deletion with grace period 0).
func (cl *Cluster) finishPod(ctx context.Context, pod *kubeapi.Pod, pr *podRun, phase string, code int32, reason string, started, _ *time.Time) {
	now := time.Now().UTC().Truncate(time.Second)
	term := map[string]any{"exitCode": code, "reason": reason, "finishedAt": now.Format(time.RFC3339)}
	if started != nil {
		term["startedAt"] = started.Format(time.RFC3339)
	}
	cl.mu.Lock()
	conds := []any{map[string]any{"type": "Ready", "status": "False", "reason": "PodCompleted"}}
	for _, c := range pr.conditions {
		if c.Type != "Ready" {
			conds = append(conds, c)
		}
	}
	deleting := pr.deleting
	cl.mu.Unlock()
	cl.patchPodStatus(context.WithoutCancel(ctx), pod.Metadata.Name, map[string]any{"phase": phase, "conditions": conds,
		"containerStatuses": []any{map[string]any{"name": pod.Spec.Containers[0].Name, "image": pod.Spec.Containers[0].Image, "imageID": "",
			"ready": false, "restartCount": 0, "started": false, "state": map[string]any{"terminated": term}}}})
	cl.mu.Lock()
	pr.phase, pr.exitCode, pr.reason = phase, code, reason
	cl.mu.Unlock()
	if deleting {
		zero := 0
		_ = cl.c.Do(context.WithoutCancel(ctx), http.MethodDelete, cl.path("pods")+"/"+pod.Metadata.Name, nil,
			map[string]any{"gracePeriodSeconds": zero}, nil)
	}
}

func (cl *Cluster) patchPodStatus(ctx context.Context, name string, status map[string]any) {
	err := cl.c.DoType(ctx, http.MethodPatch, cl.path("pods")+"/"+name+"/status", nil, map[string]any{"status": status}, "application/merge-patch+json", nil)
	if err != nil && ctx.Err() == nil && !kubeapi.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "kubetest: kubelet: writing the status of pod %s: %v\n", name, err)
	}
}

// resolveEnv resolves a container's environment as the kubelet does.
func (cl *Cluster) resolveEnv(ctx context.Context, pod *kubeapi.Pod, c kubeapi.Container) ([]string, error) {
	var out []string
	getData := func(kind, name string) (map[string]string, error) {
		var obj struct {
			Data map[string]string `json:"data"`
		}
		if err := cl.c.Do(ctx, http.MethodGet, cl.path(kind)+"/"+name, nil, nil, &obj); err != nil {
			if kubeapi.IsNotFound(err) {
				return nil, fmt.Errorf("%s %q not found", strings.TrimSuffix(kind, "s"), name)
			}
			return nil, err
		}
		if kind == "secrets" {
			for k, v := range obj.Data {
				// (Secret data is base64.)
				var b []byte
				if err := json.Unmarshal([]byte(strconv.Quote(v)), &b); err == nil {
					obj.Data[k] = string(b)
				}
			}
		}
		return obj.Data, nil
	}
	for _, ef := range c.EnvFrom {
		if sr, ok := ef["secretRef"].(map[string]any); ok {
			name, _ := sr["name"].(string)
			d, err := getData("secrets", name)
			if err != nil {
				return nil, err
			}
			for k, v := range d {
				out = append(out, k+"="+v)
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out = append(out, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil:
			var v string
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = pod.Metadata.Name
			case "metadata.uid":
				v = pod.Metadata.UID
			case "metadata.namespace":
				v = pod.Metadata.Namespace
			default:
				return nil, fmt.Errorf("field %s: not played by kubetest", e.ValueFrom.FieldRef.FieldPath)
			}
			out = append(out, e.Name+"="+v)
		case e.ValueFrom.ConfigMapKeyRef != nil, e.ValueFrom.SecretKeyRef != nil:
			kind, ref := "configmaps", e.ValueFrom.ConfigMapKeyRef
			if ref == nil {
				kind, ref = "secrets", e.ValueFrom.SecretKeyRef
			}
			d, err := getData(kind, ref.Name)
			if err != nil {
				return nil, err
			}
			v, ok := d[ref.Key]
			if !ok {
				return nil, fmt.Errorf("couldn't find key %s in %s %s/%s", ref.Key, strings.TrimSuffix(kind, "s"), cl.ns, ref.Name)
			}
			out = append(out, e.Name+"="+v)
		}
	}
	return out, nil
}

// podKubeconfig writes a kubeconfig holding a token of the pod's service
// account (TokenRequest), bound to the pod.
func (cl *Cluster) podKubeconfig(ctx context.Context, pod *kubeapi.Pod) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	body := map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
		"spec": map[string]any{"expirationSeconds": 3600, "boundObjectRef": map[string]any{"apiVersion": "v1", "kind": "Pod", "name": pod.Metadata.Name, "uid": pod.Metadata.UID}}}
	if err := cl.c.Do(ctx, http.MethodPost, cl.path("serviceaccounts")+"/"+sa+"/token", nil, body, &tr); err != nil {
		return "", fmt.Errorf("service account %s: %w", sa, err)
	}
	dir := filepath.Join(cl.tmp, pod.Metadata.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(tr.Status.Token), 0o600); err != nil {
		return "", err
	}
	caFile := filepath.Join(dir, "ca.crt")
	// The CA of the test server: from the admin kubeconfig's file.
	adminKC := os.Getenv(AdminKubeconfigEnv)
	ca := ""
	if f, err := os.Open(adminKC); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "certificate-authority: "); ok {
				ca = v
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile(ca); err == nil {
		_ = os.WriteFile(caFile, b, 0o600)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority: %q}
users:
- name: u
  user: {tokenFile: %q}
contexts:
- name: c
  context: {cluster: c, user: u, namespace: %q}
current-context: c
`, cl.rc.Host, caFile, filepath.Join(dir, "token"), cl.ns)
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, []byte(kc), 0o600)
}

// parseBytes reads a memory quantity ("64Mi", "100M", "1Gi", "1000").
func parseBytes(q string) int64 {
	units := []struct {
		s string
		m int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(q, u.s); ok {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return 0
			}
			return int64(f * float64(u.m))
		}
	}
	f, _ := strconv.ParseFloat(q, 64)
	return int64(f)
}

// treeRSS sums the resident memory of a process and its descendants (a
// container's processes: the trial's scripts run in process groups of
// their own).
func treeRSS(root int) (int64, []int) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		rest := string(b)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	var sum int64
	var pids []int
	for pid := range parent {
		for p, n := pid, 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				pids = append(pids, pid)
				break
			}
		}
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 1 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum += n * int64(os.Getpagesize())
		}
	}
	return sum, pids
}

// serveLog plays the kubelet's log endpoint:
// GET /containerLogs/NAMESPACE/POD/CONTAINER?tailLines=N.
func (cl *Cluster) serveLog(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] != cl.ns || strings.Contains(parts[1], "..") {
		http.NotFound(w, r)
		return
	}
	b, err := os.ReadFile(filepath.Join(cl.opt.LogDir, parts[1]+".log"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && n >= 0 && n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(strings.Join(lines, "")))
}

// Evict evicts a pod through the Eviction API (as a node drain or the
// scheduler's preemption would).
func (f *Fixture) Evict(ctx context.Context, pod string) error {
	body := map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": pod, "namespace": f.Namespace}}
	return f.Admin.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+f.Namespace+"/pods/"+pod+"/eviction", nil, body, nil)
}

// DeleteJob deletes a Job as `kubectl delete job` does (background
// propagation).
func (f *Fixture) DeleteJob(ctx context.Context, name string) error {
	return f.Admin.Do(ctx, http.MethodDelete, "/apis/batch/v1/namespaces/"+f.Namespace+"/jobs/"+name, nil,
		map[string]any{"propagationPolicy": "Background"}, nil)
}

// Jobs lists the names of the namespace's Jobs.
func (f *Fixture) Jobs(ctx context.Context) ([]string, error) {
	var l kubeapi.List[kubeapi.Job]
	if err := f.Admin.Do(ctx, http.MethodGet, "/apis/batch/v1/namespaces/"+f.Namespace+"/jobs", nil, nil, &l); err != nil {
		return nil, err
	}
	var out []string
	for _, j := range l.Items {
		out = append(out, j.Metadata.Name)
	}
	sort.Strings(out)
	return out, nil
}

// Object reads one object as JSON into out.
func (f *Fixture) Object(ctx context.Context, path string, out any) error {
	return f.Admin.Do(ctx, http.MethodGet, path, nil, nil, out)
}
