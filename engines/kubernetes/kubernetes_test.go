package kubernetes

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/kubernetes/kubeapi"
	"github.com/benchtune/bench/engines/kubernetes/kubetest"
	"github.com/benchtune/bench/schemas"
)

// writeKubeconfig writes a kubeconfig with one token user.
func writeKubeconfig(t *testing.T, dir, server, extraUser string) string {
	t.Helper()
	p := filepath.Join(dir, "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "` + server + `", insecure-skip-tls-verify: true}
users:
- name: u
  user:
` + extraUser + `
contexts:
- name: one
  context: {cluster: c, user: u, namespace: team-a}
- name: two
  context: {cluster: c, user: u}
current-context: one
`
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	kc := writeKubeconfig(t, dir, "https://127.0.0.1:1", "    token: abc")
	base := func() map[string]any { return map[string]any{"kubeconfig": kc, "image": "bench:1"} }
	for _, tc := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"no image", map[string]any{"image": ""}, `"image"`},
		{"bad namespace", map[string]any{"namespace": "Team_A"}, `"namespace"`},
		{"pull policy", map[string]any{"image_pull_policy": "Sometimes"}, `"image_pull_policy"`},
		{"quantity", map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "lots"}}}, `not a Kubernetes quantity`},
		{"trial resource key", map[string]any{"trial_resources": map[string]any{"cpu": map[string]any{"from": "x"}}}, `"requests.NAME"`},
		{"trial resource unit", map[string]any{"trial_resources": map[string]any{"limits.memory": map[string]any{"from": "x", "unit": "parsecs"}}}, `quantity suffix`},
		{"label", map[string]any{"labels": map[string]any{"bench.io/job": "x"}}, `set by bench`},
		{"env", map[string]any{"env": map[string]any{"BENCH_REQUEST": "x"}}, `set by bench`},
		{"secret env", map[string]any{"secret_env": []any{map[string]any{"name": "A"}}}, `"secret_env[0]"`},
		{"toleration", map[string]any{"tolerations": []any{map[string]any{"keys": "x"}}}, `unknown key "keys"`},
		{"deadline", map[string]any{"active_deadline_seconds": 0}, `"active_deadline_seconds"`},
		{"cleanup", map[string]any{"cleanup": "never"}, `"cleanup"`},
		{"context", map[string]any{"context": "three"}, `no context named "three"`},
		{"kubeconfig", map[string]any{"kubeconfig": filepath.Join(dir, "missing")}, `no kubeconfig found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			for k, v := range tc.set {
				cfg[k] = v
			}
			_, err := engines.New(context.Background(), engines.Spec{Class: ClassShort, Config: cfg}, engines.Params{ExperimentID: "x", ValidateOnly: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one that says %s", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "abc") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

func TestKubeconfigContexts(t *testing.T) {
	dir := t.TempDir()
	kc := writeKubeconfig(t, dir, "https://10.0.0.1:6443", "    token: abc")
	e, err := newEngine(context.Background(), engines.Params{Config: map[string]any{"kubeconfig": kc, "image": "b"}, ExperimentID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if e.ns != "team-a" || e.c.Cfg().Host != "https://10.0.0.1:6443" {
		t.Errorf("namespace %q host %q, want the current context's", e.ns, e.c.Cfg().Host)
	}
	e2, err := newEngine(context.Background(), engines.Params{Config: map[string]any{"kubeconfig": kc, "context": "two", "image": "b"}, ExperimentID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if e2.ns != "default" {
		t.Errorf("context two: namespace %q, want default", e2.ns)
	}
	e3, err := newEngine(context.Background(), engines.Params{Config: map[string]any{"kubeconfig": kc, "namespace": "mine", "image": "b"}, ExperimentID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if e3.ns != "mine" {
		t.Errorf("namespace key: %q", e3.ns)
	}
}

// TestExecCredentialPlugin: a kubeconfig user with an exec plugin: the
// plugin's token is sent as a bearer token (and cached).
func TestExecCredentialPlugin(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin.sh")
	count := filepath.Join(dir, "count")
	if err := os.WriteFile(plugin, []byte(`#!/bin/sh
echo x >> "`+count+`"
case "$KUBERNETES_EXEC_INFO" in *ExecCredential*) ;; *) exit 3 ;; esac
echo '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "from-plugin-'"$1"'"}}'
`), 0o755); err != nil {
		t.Fatal(err)
	}
	var got []string
	srv := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"metadata": {"name": "cm"}, "data": {"outcome.json": "{}"}}`))
	})
	kc := writeKubeconfig(t, dir, srv, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      args: [one]")
	rc, err := kubeapi.LoadKubeconfig([]string{kc}, "")
	if err != nil {
		t.Fatal(err)
	}
	c := kubeapi.NewClient(rc)
	for i := 0; i < 2; i++ {
		if err := c.Do(context.Background(), http.MethodGet, "/api/v1/namespaces/a/configmaps/cm", nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"Bearer from-plugin-one", "Bearer from-plugin-one"}, got); diff != "" {
		t.Errorf("Authorization headers (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 1 {
		t.Errorf("the plugin ran %d times, want 1 (its token is cached)", strings.Count(string(b), "x"))
	}
}

func TestClientCertificateData(t *testing.T) {
	dir := t.TempDir()
	kc := writeKubeconfig(t, dir, "https://127.0.0.1:1", "    client-certificate-data: "+base64.StdEncoding.EncodeToString([]byte("not a cert"))+
		"\n    client-key-data: "+base64.StdEncoding.EncodeToString([]byte("not a key")))
	_, err := kubeapi.LoadKubeconfig([]string{kc}, "")
	if err == nil || !strings.Contains(err.Error(), "client certificate and key") {
		t.Errorf("error %v, want one about the client certificate", err)
	}
}

func TestJobName(t *testing.T) {
	req := func(exp string, trial int, params map[string]string) []byte {
		b, _ := json.Marshal(map[string]any{"experiment_id": exp, "trial_id": trial, "params": params, "dir": "/d"})
		return b
	}
	a := JobName(engines.Job{Request: req("My_Experiment.v2", 7, map[string]string{"x": "1"})})
	if !dns1123Label.MatchString(a) || len(a) > maxNameLen || !strings.HasPrefix(a, "bench-my-experiment-v2-7-0-") {
		t.Errorf("JobName %q: not a short DNS label of the experiment and trial", a)
	}
	if b := JobName(engines.Job{Request: req("My_Experiment.v2", 7, map[string]string{"x": "1"})}); b != a {
		t.Errorf("the same submission got names %q and %q", a, b)
	}
	if b := JobName(engines.Job{Request: req("My_Experiment.v2", 7, map[string]string{"x": "1"}), Attempt: 1}); b == a || !strings.Contains(b, "-7-1-") {
		t.Errorf("attempt 1: %q", b)
	}
	if b := JobName(engines.Job{Request: req("My_Experiment.v2", 7, map[string]string{"x": "2"})}); b == a {
		t.Errorf("other values, same name %q", b)
	}
	long := JobName(engines.Job{Request: req(strings.Repeat("e", 200), 123456, nil)})
	if len(long) > maxNameLen || !dns1123Label.MatchString(long) || !strings.Contains(long, "-123456-0-") {
		t.Errorf("long experiment id: %q", long)
	}
}

func TestStateOf(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	job := func(conds ...kubeapi.Condition) *kubeapi.Job {
		j := &kubeapi.Job{}
		j.Metadata.Name = "j"
		j.Status.Conditions = conds
		j.Status.StartTime = &at
		return j
	}
	c := func(typ, reason string) kubeapi.Condition {
		return kubeapi.Condition{Type: typ, Status: "True", Reason: reason, Message: reason + " message"}
	}
	pod := func(phase string, cs ...kubeapi.ContainerStatus) *kubeapi.Pod {
		p := &kubeapi.Pod{}
		p.Metadata.Name = "j-abcde"
		p.Metadata.Labels = map[string]string{jobNameLabel: "j"}
		p.Metadata.CreationTimestamp = &at
		p.Status.Phase = phase
		p.Status.ContainerStatuses = cs
		return p
	}
	waiting := func(reason, msg string) kubeapi.ContainerStatus {
		var cs kubeapi.ContainerStatus
		cs.State.Waiting = &struct {
			Reason  string `json:"reason,omitempty"`
			Message string `json:"message,omitempty"`
		}{reason, msg}
		return cs
	}
	oom := kubeapi.ContainerStatus{State: kubeapi.ContainerState{Terminated: &kubeapi.ContainerTerminated{ExitCode: 137, Reason: "OOMKilled"}}}
	for _, tc := range []struct {
		name   string
		v      view
		phase  engines.Phase
		reason string
	}{
		{"not listed yet", view{}, engines.Queued, ""},
		{"unknown", view{synced: true}, engines.Lost, "no such Job"},
		{"deleted", view{synced: true, gone: true}, engines.Failed, "deleted"},
		{"pending", view{synced: true, job: job(), pods: []*kubeapi.Pod{pod("Pending")}}, engines.Queued, ""},
		{"running", view{synced: true, job: job(), pods: []*kubeapi.Pod{pod("Running")}}, engines.Running, ""},
		{"complete", view{synced: true, job: job(c("SuccessCriteriaMet", "x"), c("Complete", "x"))}, engines.Done, ""},
		{"deadline", view{synced: true, job: job(c("Failed", "DeadlineExceeded"))}, engines.TimedOut, "DeadlineExceeded"},
		{"oom", view{synced: true, job: job(c("Failed", "BackoffLimitExceeded")), pods: []*kubeapi.Pod{pod("Failed", oom)}}, engines.Failed, "OOMKilled"},
		{"failure target only", view{synced: true, job: job(c("FailureTarget", "DeadlineExceeded")), pods: []*kubeapi.Pod{pod("Running")}}, engines.Running, ""},
		{"image pull", view{synced: true, job: job(), pods: []*kubeapi.Pod{pod("Pending", waiting("ImagePullBackOff", "Back-off pulling image"))}}, engines.Failed, "ImagePullBackOff: Back-off pulling image"},
		{"container creating", view{synced: true, job: job(), pods: []*kubeapi.Pod{pod("Pending", waiting("ContainerCreating", ""))}}, engines.Queued, ""},
		{"disrupted too often", view{synced: true, job: job(), disrupted: []string{"a", "b", "c", "d"}}, engines.Failed, "evicted or preempted 4 times"},
		{"disrupted", view{synced: true, job: job(), disrupted: []string{"a"}, pods: []*kubeapi.Pod{pod("Running")}}, engines.Running, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stateOf(tc.v, nil, 3)
			if st.Phase != tc.phase || !strings.Contains(st.Reason, tc.reason) {
				t.Errorf("state %s %q, want %s with %q", st.Phase, st.Reason, tc.phase, tc.reason)
			}
		})
	}
}

// TestJobSpec submits a Job with every option to the test API server (no
// trial runs: its Secret does not exist) and reads it back.
func TestJobSpec(t *testing.T) {
	f := kubetest.Start(t, kubetest.Options{Bench: "/bin/false"})
	cfg := map[string]any{"kubeconfig": f.EngineKubeconfig, "namespace": f.Namespace, "image": "registry.example/bench:1.2",
		"image_pull_policy": "IfNotPresent", "image_pull_secrets": []any{"regcred"}, "service_account": kubetest.TrialServiceAccount,
		"resources":       map[string]any{"requests": map[string]any{"cpu": "500m"}, "limits": map[string]any{"memory": "1Gi"}},
		"gpus":            1,
		"trial_resources": map[string]any{"requests.memory": map[string]any{"from": "mem_mib", "unit": "Mi"}, "limits.cpu": map[string]any{"from": "cores"}},
		"node_selector":   map[string]any{"pool": "bench"}, "tolerations": []any{map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}},
		"labels": map[string]any{"team": "perf"}, "annotations": map[string]any{"example.com/owner": "me"},
		"env": map[string]any{"MODE": "fast"}, "secret_env": []any{map[string]any{"name": "DB_PASSWORD", "secret": "db", "key": "password"}},
		"env_from_secrets": []any{"api-keys"}, "active_deadline_seconds": 600, "ttl_seconds_after_finished": 3600, "workdir": "/work"}
	eng, err := engines.New(context.Background(), engines.Spec{Class: ClassShort, Config: cfg},
		engines.Params{ExperimentID: "spec", Globals: map[string]any{"cores": 2.0}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	req := (&engines.Request{ExperimentID: "spec", TrialID: 3, Params: map[string]string{"mem_mib": "512"}, Dir: "/d"}).Encode()
	ref, err := eng.Submit(t.Context(), engines.Job{Name: "x", Request: req})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Cancel(context.Background(), ref)
	r, _ := parseRef(ref)
	var j kubeapi.Job
	if err := f.Object(t.Context(), "/apis/batch/v1/namespaces/"+f.Namespace+"/jobs/"+r.Job, &j); err != nil {
		t.Fatal(err)
	}
	ps := j.Spec.Template.Spec
	c := ps.Containers[0]
	want := []string{"bench", "exec-trial", "--request", "env:BENCH_REQUEST", "--outcome", "configmap://" + f.Namespace + "/$(BENCH_POD_NAME)-outcome"}
	if diff := cmp.Diff(want, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&kubeapi.Resources{Requests: map[string]string{"cpu": "500m", "memory": "512Mi"},
		Limits: map[string]string{"memory": "1Gi", "cpu": "2", "nvidia.com/gpu": "1"}}, c.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if c.Image != "registry.example/bench:1.2" || c.ImagePullPolicy != "IfNotPresent" || c.WorkingDir != "/work" || ps.ServiceAccountName != kubetest.TrialServiceAccount ||
		ps.NodeSelector["pool"] != "bench" || len(ps.Tolerations) != 1 || len(ps.ImagePullSecrets) != 1 || ps.RestartPolicy != "Never" {
		t.Errorf("pod spec: %+v", ps)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom.ConfigMapKeyRef != nil:
			env[e.Name] = "configmap:" + e.ValueFrom.ConfigMapKeyRef.Name + "/" + e.ValueFrom.ConfigMapKeyRef.Key
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "field:" + e.ValueFrom.FieldRef.FieldPath
		}
	}
	if diff := cmp.Diff(map[string]string{"MODE": "fast", "DB_PASSWORD": "secret:db/password", RequestEnv: "configmap:" + r.Job + "/" + RequestKey,
		PodNameEnv: "field:metadata.name", PodUIDEnv: "field:metadata.uid", engines.ProgressLogEnv: "1"}, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if len(c.EnvFrom) != 1 {
		t.Errorf("envFrom: %v", c.EnvFrom)
	}
	if j.Metadata.Labels["team"] != "perf" || j.Metadata.Labels[experimentLabel] != "spec" || j.Metadata.Labels[trialLabel] != "3" ||
		j.Metadata.Annotations["example.com/owner"] != "me" || j.Spec.Template.Metadata.Labels["team"] != "perf" {
		t.Errorf("labels %v annotations %v", j.Metadata.Labels, j.Metadata.Annotations)
	}
	if *j.Spec.BackoffLimit != 0 || *j.Spec.ActiveDeadlineSeconds != 600 || *j.Spec.TTLSecondsAfterFinished != 3600 ||
		j.Spec.PodFailurePolicy == nil || j.Spec.PodFailurePolicy.Rules[0].Action != "Ignore" {
		t.Errorf("job spec: %+v", j.Spec)
	}
	// The request ConfigMap is owned by the Job.
	var cm kubeapi.ConfigMap
	if err := f.Object(t.Context(), "/api/v1/namespaces/"+f.Namespace+"/configmaps/"+r.Job, &cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.Metadata.OwnerReferences) != 1 || cm.Metadata.OwnerReferences[0].UID != j.Metadata.UID || cm.Data[RequestKey] != string(req) {
		t.Errorf("request ConfigMap: %+v", cm.Metadata)
	}
	// A trial without the tunable the trial_resources name: a clear error.
	req2 := (&engines.Request{ExperimentID: "spec", TrialID: 4, Params: map[string]string{}, Dir: "/d"}).Encode()
	if _, err := eng.Submit(t.Context(), engines.Job{Name: "y", Request: req2}); err == nil || !strings.Contains(err.Error(), `no tunable or global "mem_mib"`) {
		t.Errorf("missing trial resource: %v", err)
	}
}

func TestExampleConfig(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t, t.TempDir(), "https://127.0.0.1:1", "    token: abc"))
	p := filepath.Join("..", "..", "configs", "examples", "engines", "kubernetes.jsonc")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := source.Parse(p, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schemas.Engine, doc); err != nil {
		t.Fatal(err)
	}
	m, err := configs.Object(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := m["config"].(map[string]any)
	eng, err := engines.New(t.Context(), engines.Spec{Class: m["class"].(string), Config: cfg}, engines.Params{Slots: 2, ExperimentID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	e := eng.(*Engine)
	if e.Slots() != 16 || e.bench != "bench" || e.ns != "bench" || *e.cfg.ActiveDeadlineSeconds != 3600 || len(e.cfg.TrialResources) != 2 {
		t.Errorf("engine from the example: slots %d, bench %q, namespace %q, config %+v", e.Slots(), e.bench, e.ns, e.cfg)
	}
}

func TestLabelSafe(t *testing.T) {
	for _, s := range []string{"exp1", "My Experiment/2", strings.Repeat("x", 100), "---", ""} {
		l := labelSafe(s)
		if !labelValue.MatchString(l) || len(l) > 63 {
			t.Errorf("labelSafe(%q) = %q: not a label value", s, l)
		}
	}
	if labelSafe("a b") == labelSafe("a_b") {
		t.Errorf("two experiment ids share a label")
	}
}

// TestForbidden: an engine user without the Role in its namespace gets
// the API server's "forbidden" at once, not after a wait.
func TestForbidden(t *testing.T) {
	f := kubetest.Start(t, kubetest.Options{Bench: "/bin/false"})
	eng, err := engines.New(context.Background(), engines.Spec{Class: ClassShort, Config: map[string]any{
		"kubeconfig": f.EngineKubeconfig, "namespace": "default", "image": "b"}}, engines.Params{ExperimentID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	req := (&engines.Request{ExperimentID: "x", TrialID: 1, Dir: "/d"}).Encode()
	start := time.Now()
	_, err = eng.Submit(t.Context(), engines.Job{Name: "x", Request: req})
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("Submit without RBAC: %v, want forbidden", err)
	}
	t.Log(err)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the forbidden answer took %s", d)
	}
}

// TestPollErrorWhileWatchFails: once the watch cannot be restarted, Poll
// returns an error (the runner's lost_after counts), not the stale cache.
func TestPollErrorWhileWatchFails(t *testing.T) {
	var mu sync.Mutex
	failing := false
	srv := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := failing
		mu.Unlock()
		switch {
		case f:
			http.Error(w, `{"kind": "Status", "code": 503, "reason": "ServiceUnavailable", "message": "down"}`, http.StatusServiceUnavailable)
		case r.URL.Query().Get("watch") == "1":
			// A watch that ends at once: the informer watches again.
			w.WriteHeader(http.StatusOK)
		case strings.HasSuffix(r.URL.Path, "/jobs"):
			_, _ = w.Write([]byte(`{"metadata": {"resourceVersion": "5"}, "items": [{"metadata": {"name": "j1", "uid": "u1", "resourceVersion": "5"}, "status": {"active": 1}}]}`))
		default:
			_, _ = w.Write([]byte(`{"metadata": {"resourceVersion": "5"}, "items": []}`))
		}
	})
	kc := writeKubeconfig(t, t.TempDir(), srv, "    token: abc")
	eng, err := engines.New(context.Background(), engines.Spec{Class: ClassShort, Config: map[string]any{"kubeconfig": kc, "image": "b"}}, engines.Params{ExperimentID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ref := engines.Ref(`{"namespace": "team-a", "job": "j1", "uid": "u1"}`)
	if st, err := eng.Poll(t.Context(), ref); err != nil || st.Phase != engines.Queued {
		t.Fatalf("Poll with the watch working: %+v %v, want queued", st, err)
	}
	mu.Lock()
	failing = true
	mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := eng.Poll(t.Context(), ref)
		if err != nil && strings.Contains(err.Error(), "watch") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Poll still answers from the cache a minute after the API server went away: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
