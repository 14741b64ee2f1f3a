package aws

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/shellenv"
	"io"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/internal/awsapi"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
)

// SSM class names.
const (
	SSMClassShort = "bench.services.AwsSsmService"
	SSMClassFull  = "bench.services.remote.aws.ssm_service.AwsSsmService"
)

// Defaults of the SSM service's settings.
const (
	DefaultSSMPollInterval = 2 * time.Second
	DefaultSSMShell        = "/bin/bash"
	// ssmDocument runs shell commands on Linux instances.
	ssmDocument = "AWS-RunShellScript"
	// GetCommandInvocation returns at most this much of each stream.
	ssmMaxStdout = 24000
	ssmMaxStderr = 8000
	// SSM's executionTimeout is at most 48 hours.
	ssmMaxExecutionTimeout = 48 * time.Hour
	ssmMaxComment          = 100
)

func init() {
	services.Register(newSSMFromSpec, SSMClassShort, SSMClassFull)
}

// SSMConfig is the config of AwsSsmService.
type SSMConfig struct {
	CommonConfig
	// PollInterval is how often the command's status is read (default 2s).
	PollInterval *decode.Duration `json:"poll_interval"`
	// PollTimeout bounds each command (default: no bound beyond the
	// request's timeout and its context); the smaller bound wins. Past it
	// the command is cancelled and the call fails with services.ErrTimeout.
	PollTimeout *decode.Duration `json:"poll_timeout"`
	// Shell runs the script on the instance (default /bin/bash, as the SSH
	// service); "" leaves it to AWS-RunShellScript (sh).
	Shell *string `json:"shell"`
	// WorkingDirectory is where the script starts on the instance.
	WorkingDirectory string `json:"working_directory"`
}

// SSMService runs scripts on EC2 instances with SSM Run Command
// (AWS-RunShellScript). It implements services.RemoteExec. The instance is
// named by the aws_instance_id parameter, which AwsEc2Service's
// ProvisionHost returns.
type SSMService struct {
	client   *awsapi.Client
	interval time.Duration
	timeout  time.Duration
	shell    string
	workDir  string
}

var _ services.RemoteExec = (*SSMService)(nil)

var shellPathRE = regexp.MustCompile(`^/[A-Za-z0-9_./+-]+$`)

func newSSMFromSpec(ctx context.Context, spec services.Spec) (any, error) {
	var c SSMConfig
	if err := services.DecodeConfig(spec, &c); err != nil {
		return nil, err
	}
	cref := spec.Ref.Child("config")
	if err := c.CommonConfig.validate(); err != nil {
		return nil, cref.Child("endpoint").Errorf("%v", err)
	}
	if c.PollInterval != nil && c.PollInterval.Std() <= 0 {
		return nil, cref.Child("poll_interval").Errorf("must be a positive duration")
	}
	if c.Shell != nil && *c.Shell != "" && !shellPathRE.MatchString(*c.Shell) {
		return nil, cref.Child("shell").Errorf("must be an absolute path to a shell (e.g. /bin/bash), or \"\" for the document's default sh")
	}
	if c.PollTimeout != nil && c.PollTimeout.Std() > ssmMaxExecutionTimeout {
		return nil, cref.Child("poll_timeout").Errorf("SSM runs commands for at most %s", ssmMaxExecutionTimeout)
	}
	return NewSSMService(ctx, c)
}

// NewSSMService builds the service from a validated config. Credentials
// come from the standard AWS chain.
func NewSSMService(ctx context.Context, c SSMConfig) (*SSMService, error) {
	awsCfg, err := loadAWSConfig(ctx, c.CommonConfig)
	if err != nil {
		return nil, err
	}
	api, err := awsapi.New(ctx, awsCfg, "SSM", "ssm", c.Endpoint)
	if err != nil {
		return nil, err
	}
	s := &SSMService{
		client:   api,
		interval: durationOr(c.PollInterval, DefaultSSMPollInterval),
		timeout:  durationOr(c.PollTimeout, 0),
		shell:    DefaultSSMShell,
		workDir:  c.WorkingDirectory,
	}
	if c.Shell != nil {
		s.shell = *c.Shell
	}
	return s, nil
}

// commands renders the AWS-RunShellScript "commands" parameter: the
// script with its exported variables, run by the configured shell.
func (s *SSMService) commands(req services.RemoteExecRequest) ([]string, error) {
	script, err := shellenv.Script(req.Env, req.Script)
	if err != nil {
		return nil, err
	}
	if s.shell == "" {
		return []string{script}, nil
	}
	return []string{s.shell + " -c " + shellenv.Quote(script)}, nil
}

// RemoteExec sends the script to the instance named by the aws_instance_id
// parameter and polls until it has finished. A non-zero exit code is not an
// error. Errors: the command could not be sent or delivered, it ran past
// req.Timeout, poll_timeout or the context's deadline (the command is
// cancelled; wraps services.ErrTimeout), or the context was cancelled
// (the command is cancelled; wraps context.Canceled).
//
// SSM returns at most the first 24,000 characters of stdout and 8,000 of
// stderr; longer output is marked Truncated. Output reaches req.Live once
// the command has finished (SSM does not stream it).
func (s *SSMService) RemoteExec(ctx context.Context, req services.RemoteExecRequest) (services.ExecResult, error) {
	fail := services.ExecResult{ExitCode: -1}
	id, err := paramString(req.Params, ParamInstanceID)
	if err != nil {
		return fail, fmt.Errorf("AwsSsmService: %w", err)
	}
	if id == "" {
		return fail, fmt.Errorf("AwsSsmService needs the %s parameter to know which instance to run on (AwsEc2Service's provisioning sets it, or put it in const_args)", ParamInstanceID)
	}
	name := req.CommandName
	if name == "" {
		name = "command"
	}
	cmds, err := s.commands(req)
	if err != nil {
		return fail, fmt.Errorf("%s on %s: %w", name, id, err)
	}
	limit := req.Timeout
	if s.timeout > 0 && (limit <= 0 || s.timeout < limit) {
		limit = s.timeout
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, limit, services.ErrTimeout)
	}
	defer cancel()

	in := ssmSendCommand{
		DocumentName: ssmDocument,
		InstanceIds:  []string{id},
		Comment:      truncate("bench: "+name, ssmMaxComment),
		Parameters:   map[string][]string{"commands": cmds},
	}
	if limit > 0 {
		secs := int64(math.Ceil(min(limit, ssmMaxExecutionTimeout).Seconds()))
		in.Parameters["executionTimeout"] = []string{strconv.FormatInt(secs, 10)}
	}
	if s.workDir != "" {
		in.Parameters["workingDirectory"] = []string{s.workDir}
	}
	names, _ := shellenv.Names(req.Env) // checked by commands
	slog.Debug("ssm: sending a command", "instance", id, "command", name, "lines", len(req.Script), "env", names, "timeout", limit)
	start := time.Now()
	var out struct{ Command struct{ CommandId string } }
	if err := s.client.JSON(runCtx, "AmazonSSM.SendCommand", in, &out); err != nil {
		return fail, s.endErr(ctx, runCtx, limit, name, id, "", fmt.Errorf("sending the command: %w", err))
	}
	cmdID := out.Command.CommandId
	slog.Info("ssm: command sent", "instance", id, "command", name, "command_id", cmdID)

	inv, err := s.waitInvocation(runCtx, cmdID, id)
	if err != nil {
		return fail, s.endErr(ctx, runCtx, limit, name, id, cmdID, err)
	}
	res, err := s.result(inv, req, start, limit)
	if err != nil {
		return res, fmt.Errorf("%s on %s (SSM command %s): %w", name, id, cmdID, err)
	}
	return res, nil
}

// waitInvocation polls the command's invocation on the instance until it
// has finished.
func (s *SSMService) waitInvocation(ctx context.Context, cmdID, instance string) (*ssmInvocation, error) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		inv := &ssmInvocation{}
		err := s.client.JSON(ctx, "AmazonSSM.GetCommandInvocation", map[string]string{"CommandId": cmdID, "InstanceId": instance}, inv)
		switch {
		case apiErrorCode(err) == "InvocationDoesNotExist":
			// Right after SendCommand the invocation may not be listed yet.
		case err != nil:
			return nil, fmt.Errorf("reading the command's status: %w", err)
		default:
			switch inv.Status {
			case "Pending", "InProgress", "Delayed", "Cancelling":
				slog.Debug("ssm: waiting", "command_id", cmdID, "status", inv.Status)
			default:
				return inv, nil
			}
		}
		t.Reset(s.interval)
	}
}

// result turns a finished invocation into an ExecResult.
func (s *SSMService) result(inv *ssmInvocation, req services.RemoteExecRequest, start time.Time, limit time.Duration) (services.ExecResult, error) {
	stdout, stderr := inv.StandardOutputContent, inv.StandardErrorContent
	line := services.LineResult{
		Line:      strings.Join(req.Script, "\n"),
		ExitCode:  int(inv.ResponseCode),
		Stdout:    stdout,
		Stderr:    stderr,
		Truncated: len(stdout) >= ssmMaxStdout || len(stderr) >= ssmMaxStderr,
		Duration:  time.Since(start),
	}
	if req.Live != nil {
		_, _ = io.WriteString(req.Live, stdout)
		_, _ = io.WriteString(req.Live, stderr)
	}
	res := services.ExecResult{ExitCode: line.ExitCode, Stdout: stdout, Stderr: stderr}
	details := inv.StatusDetails
	var err error
	switch inv.Status {
	case "Success":
	case "Failed":
		// "Failed" with an exit code is a script that failed: not an error.
		// Without one (-1) the script did not run to its end.
		if inv.ResponseCode < 0 || details == "Undeliverable" || details == "DeliveryTimedOut" || details == "Terminated" {
			err = fmt.Errorf("the command did not run: SSM status Failed (%s)", details)
		}
	case "TimedOut":
		line.TimedOut = true
		bound := "its execution timeout"
		if limit > 0 {
			bound = "its time limit of " + limit.String()
		}
		err = fmt.Errorf("SSM stopped the command after %s (%s): %w", bound, details, services.ErrTimeout)
	case "Cancelled":
		err = fmt.Errorf("the command was cancelled outside bench (SSM status %s, %s)", inv.Status, details)
	default:
		err = fmt.Errorf("unexpected SSM status %q (%s)", inv.Status, details)
	}
	if err != nil && line.ExitCode == 0 {
		line.ExitCode = -1
		res.ExitCode = -1
	}
	res.Lines = []services.LineResult{line}
	return res, err
}

// endErr cancels the command (when one was sent) after a timeout, a
// cancellation or a failure to follow it, and returns the error to report.
func (s *SSMService) endErr(ctx, runCtx context.Context, limit time.Duration, name, instance, cmdID string, err error) error {
	if cmdID != "" {
		// The run context may be over: cancel with a fresh bound.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := s.client.JSON(cctx, "AmazonSSM.CancelCommand", map[string]any{"CommandId": cmdID, "InstanceIds": []string{instance}}, nil); cerr != nil {
			slog.Warn("ssm: could not cancel the command; it may still run on the instance", "instance", instance, "command_id", cmdID, "error", cerr)
		} else {
			slog.Info("ssm: cancelled the command", "instance", instance, "command_id", cmdID)
		}
	}
	where := name + " on " + instance
	if cmdID != "" {
		where += " (SSM command " + cmdID + ")"
	}
	switch {
	case runCtx.Err() != nil && errors.Is(context.Cause(runCtx), services.ErrTimeout) && ctx.Err() == nil:
		return fmt.Errorf("%s ran past its time limit of %s and was cancelled: %w", where, limit, services.ErrTimeout)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s ran past the deadline and was cancelled: %w", where, errors.Join(services.ErrTimeout, context.DeadlineExceeded))
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("%s was cancelled: %w", where, context.Canceled)
	default:
		return fmt.Errorf("%s: %w", where, err)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut at a rune boundary.
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// ssmSendCommand is SSM's SendCommand request (JSON 1.1).
type ssmSendCommand struct {
	DocumentName string
	InstanceIds  []string
	Comment      string
	Parameters   map[string][]string
}

// ssmInvocation is the part of GetCommandInvocation's answer bench reads.
type ssmInvocation struct {
	Status                string
	StatusDetails         string
	ResponseCode          int
	StandardOutputContent string
	StandardErrorContent  string
}
