package engines

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/benchtune/bench/configs"
)

// Request is one trial as `bench exec-trial` gets it: the driver's launcher
// arguments (config files, never secret values), its working folder, and
// the trial's own values. The far side loads the same configs from the
// same paths (a shared file system, a host prepared with the same tree,
// or a container image) and runs the trial's environment once.
type Request struct {
	ExperimentID string `json:"experiment_id"`
	TrialID      int    `json:"trial_id"`
	RunnerID     int    `json:"trial_runner_id"`
	// Args are the driver's bench run arguments, with extra "--key value"
	// globals whose key names a secret left out.
	Args []string `json:"args"`
	// Dir is the driver's working folder; the far side runs there when it
	// exists (relative config paths then resolve as on the driver).
	Dir string `json:"dir"`
	// Params are the trial's tunable values as stored.
	Params map[string]string `json:"params"`
	// Globals are the trial's own globals (its metadata, trial_id,
	// trial_runner_id): the experiment's come from Args' files.
	Globals map[string]any `json:"globals,omitempty"`
	// ProcessEnv is added to the environment of the trial's processes.
	ProcessEnv map[string]string `json:"process_env,omitempty"`
	// TelemetryInterval samples the trial's processes (Go duration; "":
	// off).
	TelemetryInterval string `json:"telemetry_interval,omitempty"`
	// Owner is the driver's claim on the trial: with shared storage the
	// far side stores the outcome under it.
	Owner string `json:"owner,omitempty"`
}

// Encode returns the request's JSON.
func (r *Request) Encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// Only strings, numbers and maps of them: cannot fail.
		panic(err)
	}
	return b
}

// DecodeRequest reads a request's JSON.
func DecodeRequest(b []byte) (*Request, error) {
	var r Request
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("trial request: %w", err)
	}
	if r.ExperimentID == "" || r.TrialID <= 0 {
		return nil, fmt.Errorf("trial request: experiment_id and trial_id are required")
	}
	return &r, nil
}

// Command is the far side's command line for a job: bench exec-trial with
// the request and outcome paths.
func Command(bench, requestPath, outcomePath string) []string {
	return []string{bench, "exec-trial", "--request", requestPath, "--outcome", outcomePath}
}

// ShellQuote quotes s for a POSIX shell (single quotes).
func ShellQuote(s string) string {
	if s != "" && safeShell.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var safeShell = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// ShellLine joins argv into a shell command line, each word quoted.
func ShellLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

var jobNameBad = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// JobName is bench-<experiment>-<trial>, fit for any engine.
func JobName(experimentID string, trialID int) string {
	n := fmt.Sprintf("bench-%s-%d", jobNameBad.ReplaceAllString(experimentID, "_"), trialID)
	if len(n) > 100 {
		n = n[:100]
	}
	return n
}

// SubmitName is the name a job is submitted under: its Name, its
// Attempt and a short hash of the trial it runs (experiment, trial id and
// tunable values, the driver's folder), "bench-<experiment>-<trial>.
// <attempt>.<hash>". It is the same whenever the same attempt of the same
// trial is submitted from the same folder, by whichever bench process, so
// that an engine can look for a job an earlier, killed bench submitted but
// did not record (idempotent submission); the hash tells apart the same
// trial of an experiment of the same id run from another folder (another
// user, another checkout) or an earlier experiment of the same id with
// other values. Letters, digits, '-', '_' and '.' only.
func SubmitName(job Job) string {
	var head trialHead
	_ = json.Unmarshal(job.Request, &head)
	// json.Marshal sorts map keys: the same values give the same bytes.
	key, _ := json.Marshal(head)
	sum := sha256.Sum256(key)
	name := job.Name
	if len(name) > 80 {
		name = name[:80]
	}
	return fmt.Sprintf("%s.%d.%s", jobNameBad.ReplaceAllString(name, "_"), job.Attempt, hex.EncodeToString(sum[:4]))
}

// trialHead is what tells which trial a request runs (SubmitName,
// SameTrial).
type trialHead struct {
	ExperimentID string            `json:"experiment_id"`
	TrialID      int               `json:"trial_id"`
	Params       map[string]string `json:"params"`
	Dir          string            `json:"dir"`
}

// SameTrial reports whether two requests run the same trial, as
// SubmitName tells trials apart: the same experiment, trial id, tunable
// values and driver's folder. What a restarted driver changes by itself
// does not count: its claim, the runner it hands the trial to, its
// launcher arguments (a log level added), its device slot. An engine that
// finds a run an earlier, killed bench started but did not record takes
// it as the job when SameTrial holds (a recorded job is re-attached to
// whatever the new driver's arguments are; so is this one). A request
// that cannot be read is no trial's.
func SameTrial(a, b []byte) bool {
	var ha, hb trialHead
	if json.Unmarshal(a, &ha) != nil || json.Unmarshal(b, &hb) != nil {
		return false
	}
	return reflect.DeepEqual(ha, hb)
}

// SafeArgs returns argv without the values of extra "--key value" or
// "--key=value" arguments whose key names a secret (a request is stored
// with the trial; secrets belong in --globals files).
func SafeArgs(argv []string) []string {
	var out []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		name, _, inline := strings.Cut(a, "=")
		key := strings.TrimLeft(name, "-")
		if strings.HasPrefix(a, "--") && configs.IsSecretKey(key) {
			if !inline && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "--") {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}
