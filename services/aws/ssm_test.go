package aws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/services"
)

// trickyEnv holds values that break a script if spliced into it unquoted.
var trickyEnv = map[string]string{
	"PLAIN":     "value",
	"QUOTES":    `it's "quoted" 'twice'`,
	"EXPAND":    "$HOME ${PATH} $(echo pwned) `echo pwned`",
	"SEPARATOR": "a; echo pwned && false | true & # comment",
	"NEWLINE":   "line1\nline2\n",
	"BACKSLASH": `c:\path\ \\ \'`,
	"EMPTY":     "",
	"UNICODE":   "ünïcödé ✓",
}

func TestSSMConfigErrors(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"zero poll", map[string]any{"poll_interval": 0}, "/config/poll_interval: must be a positive duration"},
		{"relative shell", map[string]any{"shell": "bash"}, "/config/shell: must be an absolute path"},
		{"shell with spaces", map[string]any{"shell": "/bin/bash -x"}, "/config/shell: must be an absolute path"},
		{"long timeout", map[string]any{"poll_timeout": "49h"}, "/config/poll_timeout: SSM runs commands for at most 48h0m0s"},
		{"unknown", map[string]any{"document": "x"}, `/config/document: unknown config key "document"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := services.New(t.Context(), services.Spec{Class: SSMClassShort, Config: tc.cfg})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestSSMCommandsQuoting runs the exact commands the service sends through
// the shell AWS-RunShellScript uses (sh), and checks that every variable
// arrives unchanged and that nothing in a value ran.
func TestSSMCommandsQuoting(t *testing.T) {
	script := []string{
		`for v in PLAIN QUOTES EXPAND SEPARATOR NEWLINE BACKSLASH EMPTY UNICODE; do printf '%s=[%s]\n' "$v" "$(printenv "$v")"; done`,
		`cd /`,
		`pwd`, // the lines form one script: cd carries over
	}
	want := ""
	for _, k := range []string{"PLAIN", "QUOTES", "EXPAND", "SEPARATOR", "NEWLINE", "BACKSLASH", "EMPTY", "UNICODE"} {
		// $(...) drops trailing newlines.
		want += k + "=[" + strings.TrimRight(trickyEnv[k], "\n") + "]\n"
	}
	want += "/\n"
	for _, shell := range []string{"/bin/bash", "/bin/sh", ""} {
		t.Run("shell="+shell, func(t *testing.T) {
			s := &SSMService{shell: shell}
			cmds, err := s.commands(services.RemoteExecRequest{Script: script, Env: trickyEnv})
			if err != nil {
				t.Fatal(err)
			}
			// AWS-RunShellScript writes the commands, one a line, into a
			// script file and runs it with sh.
			out, err := exec.CommandContext(t.Context(), "sh", "-c", strings.Join(cmds, "\n")).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if diff := cmp.Diff(want, string(out)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("bad names", func(t *testing.T) {
		s := &SSMService{shell: "/bin/bash"}
		for _, env := range []map[string]string{{"1X": "v"}, {"A-B": "v"}, {"A B": "v"}, {"": "v"}} {
			if _, err := s.commands(services.RemoteExecRequest{Env: env}); err == nil || !strings.Contains(err.Error(), "invalid environment variable name") {
				t.Errorf("env %v: error = %v", env, err)
			}
		}
		_, err := s.commands(services.RemoteExecRequest{Env: map[string]string{"SECRET": "hunter2\x00"}})
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error = %v, want one that names SECRET without its value", err)
		}
	})
}

// TestSSMAgainstMoto sends a command through moto. moto records the
// command and reports every invocation as Success with empty output at
// once (it runs nothing), so this checks what reaches the SSM API: the
// document, the instance, the comment, the rendered commands and the
// execution timeout.
func TestSSMAgainstMoto(t *testing.T) {
	ec := newMotoEC2(t, nil)
	ec.cfg.ImageID, ec.cfg.InstanceType = motoAMI(t, ec), "t2.micro"
	ctx := t.Context()
	host, err := ec.ProvisionHost(ctx, services.Params{ParamInstanceName: uniqueName(t, "bench-ssm-")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ec.DeprovisionHost(context.Background(), host) })
	id := host[ParamInstanceID].(string)

	svc, err := services.New(ctx, services.Spec{Class: SSMClassFull, Config: map[string]any{
		"endpoint": ec.cfg.Endpoint, "region": "us-east-1", "poll_interval": 0.05, "working_directory": "/opt/bench",
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := svc.(*SSMService)
	name := uniqueName(t, "bench-run-")
	req := services.RemoteExecRequest{
		Script:      []string{"echo start", "./run.sh --flag"},
		Params:      services.Params{ParamInstanceID: id, "other": int64(3)},
		Env:         trickyEnv,
		CommandName: name,
		Timeout:     90500 * time.Millisecond,
	}
	var live bytes.Buffer
	req.Live = &live
	res, err := s.RemoteExec(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || len(res.Lines) != 1 || res.Lines[0].Line != "echo start\n./run.sh --flag" {
		t.Errorf("result = %+v", res)
	}

	type command struct {
		Comment, DocumentName string
		InstanceIds           []string
		Parameters            map[string][]string
	}
	var list struct{ Commands []command }
	if err := s.client.JSON(ctx, "AmazonSSM.ListCommands", map[string]string{"InstanceId": id}, &list); err != nil {
		t.Fatal(err)
	}
	var sent []command
	for _, c := range list.Commands {
		if c.Comment == "bench: "+name {
			sent = append(sent, c)
		}
	}
	if len(sent) != 1 {
		t.Fatalf("moto lists %d commands named %s for %s, want 1", len(sent), name, id)
	}
	c := sent[0]
	// moto 5.2 adds every instance of the region to a command sent to
	// explicit instance ids (it treats the empty target list as "all"), so
	// only check that the instance is among them.
	if !slices.Contains(c.InstanceIds, id) {
		t.Errorf("the command's instances %v do not include %s", c.InstanceIds, id)
	}
	wantCmds, err := s.commands(req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"document": "AWS-RunShellScript",
		"params": map[string][]string{
			"commands":         wantCmds,
			"executionTimeout": {"91"},
			"workingDirectory": {"/opt/bench"},
		},
	}
	got := map[string]any{
		"document": c.DocumentName,
		"params":   c.Parameters,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("command sent (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(wantCmds[0], "/bin/bash -c 'export BACKSLASH=") {
		t.Errorf("commands = %q, want the script run by /bin/bash with its exports first", wantCmds[0])
	}

	t.Run("no instance", func(t *testing.T) {
		_, err := s.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"true"}, Params: services.Params{}})
		if err == nil || !strings.Contains(err.Error(), "needs the aws_instance_id parameter") {
			t.Errorf("error = %v", err)
		}
	})
}

// fakeSSM answers the SSM calls the service makes for the cases moto cannot
// produce: moto completes every command at once with exit code 0 and has
// no CancelCommand. It speaks the real wire protocol (JSON 1.1), so the
// SDK client and the service's handling of each status are exercised.
type fakeSSM struct {
	mu        sync.Mutex
	notYet    int             // InvocationDoesNotExist answers before the first status
	statuses  []fakeInvStatus // answered in turn; the last one repeats
	polls     int
	cancelled []string // "commandID/instance"
}

type fakeInvStatus struct {
	Status, Details, Stdout, Stderr string
	Code                            int
}

func (f *fakeSSM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	switch r.Header.Get("X-Amz-Target") {
	case "AmazonSSM.SendCommand":
		reply(map[string]any{"Command": map[string]any{"CommandId": "cmd-1", "Status": "Pending"}})
	case "AmazonSSM.GetCommandInvocation":
		if f.notYet > 0 {
			f.notYet--
			w.WriteHeader(http.StatusBadRequest)
			reply(map[string]any{"__type": "InvocationDoesNotExist", "message": "not yet"})
			return
		}
		st := f.statuses[min(f.polls, len(f.statuses)-1)]
		f.polls++
		if len(f.cancelled) > 0 {
			st = fakeInvStatus{Status: "Cancelled", Details: "Cancelled", Code: -1}
		}
		reply(map[string]any{
			"CommandId": in["CommandId"], "InstanceId": in["InstanceId"], "Status": st.Status, "StatusDetails": st.Details,
			"ResponseCode": st.Code, "StandardOutputContent": st.Stdout, "StandardErrorContent": st.Stderr,
		})
	case "AmazonSSM.CancelCommand":
		ids, _ := in["InstanceIds"].([]any)
		for _, id := range ids {
			f.cancelled = append(f.cancelled, in["CommandId"].(string)+"/"+id.(string))
		}
		reply(map[string]any{})
	default:
		w.WriteHeader(http.StatusBadRequest)
		reply(map[string]any{"__type": "InvalidAction", "message": "not faked: " + r.Header.Get("X-Amz-Target")})
	}
}

func TestSSMStatuses(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDBENCHTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "bench-test-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	inProgress := fakeInvStatus{Status: "InProgress", Details: "InProgress", Code: -1}
	tests := []struct {
		name       string
		notYet     int
		statuses   []fakeInvStatus
		timeout    time.Duration
		cancelCtx  bool
		wantCode   int
		wantOut    string
		wantTrunc  bool
		wantErr    string // substring; "" for none
		wantTO     bool   // wraps ErrTimeout
		wantCancel bool   // CancelCommand was called
	}{
		{name: "success after not-yet and in-progress", notYet: 2, statuses: []fakeInvStatus{inProgress, {Status: "Success", Details: "Success", Stdout: "hello\n", Stderr: "warn\n"}}, wantOut: "hello\n"},
		{name: "script exit code", statuses: []fakeInvStatus{{Status: "Failed", Details: "Failed", Code: 3, Stdout: "partial"}}, wantCode: 3, wantOut: "partial"},
		{name: "long output", statuses: []fakeInvStatus{{Status: "Success", Details: "Success", Stdout: strings.Repeat("x", ssmMaxStdout)}}, wantOut: strings.Repeat("x", ssmMaxStdout), wantTrunc: true},
		{name: "undeliverable", statuses: []fakeInvStatus{{Status: "Failed", Details: "Undeliverable", Code: -1}}, wantCode: -1, wantErr: "the command did not run: SSM status Failed (Undeliverable)"},
		{name: "ssm execution timeout", statuses: []fakeInvStatus{{Status: "TimedOut", Details: "ExecutionTimedOut", Code: -1}}, wantCode: -1, wantErr: "SSM stopped the command after its execution timeout", wantTO: true},
		{name: "cancelled elsewhere", statuses: []fakeInvStatus{{Status: "Cancelled", Details: "Cancelled", Code: -1}}, wantCode: -1, wantErr: "cancelled outside bench"},
		{name: "bench timeout cancels", statuses: []fakeInvStatus{inProgress}, timeout: 300 * time.Millisecond, wantCode: -1, wantErr: "ran past its time limit of 300ms and was cancelled", wantTO: true, wantCancel: true},
		{name: "context cancel cancels", statuses: []fakeInvStatus{inProgress}, cancelCtx: true, wantCode: -1, wantErr: "was cancelled", wantCancel: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeSSM{notYet: tc.notYet, statuses: tc.statuses}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			svc, err := services.New(t.Context(), services.Spec{Class: SSMClassShort, Config: map[string]any{"endpoint": srv.URL, "region": "us-east-1", "poll_interval": 0.02}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if tc.cancelCtx {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(200*time.Millisecond, cancel)
			}
			start := time.Now()
			res, err := svc.(*SSMService).RemoteExec(ctx, services.RemoteExecRequest{
				Script: []string{"true"}, Params: services.Params{ParamInstanceID: "i-0abc"}, CommandName: "t", Timeout: tc.timeout,
			})
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error = %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
			if got := errors.Is(err, services.ErrTimeout); got != tc.wantTO {
				t.Errorf("errors.Is(err, ErrTimeout) = %v, want %v (err %v)", got, tc.wantTO, err)
			}
			if tc.cancelCtx && !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
			if res.ExitCode != tc.wantCode || res.Stdout != tc.wantOut {
				t.Errorf("exit %d stdout %.40q, want exit %d stdout %.40q", res.ExitCode, res.Stdout, tc.wantCode, tc.wantOut)
			}
			if len(res.Lines) == 1 && res.Lines[0].Truncated != tc.wantTrunc {
				t.Errorf("Truncated = %v, want %v", res.Lines[0].Truncated, tc.wantTrunc)
			}
			fake.mu.Lock()
			cancelled := fake.cancelled
			fake.mu.Unlock()
			if tc.wantCancel {
				if diff := cmp.Diff([]string{"cmd-1/i-0abc"}, cancelled); diff != "" {
					t.Errorf("CancelCommand calls (-want +got):\n%s", diff)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("took %s to give up", d)
				}
			} else if len(cancelled) != 0 {
				t.Errorf("CancelCommand was called: %v", cancelled)
			}
		})
	}
}
