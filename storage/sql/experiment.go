package sql

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/benchtune/bench/storage"
)

// Experiment creates the experiment info.ID or resumes it.
func (s *Store) Experiment(ctx context.Context, info storage.ExperimentInfo) (storage.Experiment, bool, error) {
	info.ID = clean(strings.TrimSpace(info.ID))
	if info.ID == "" {
		return nil, false, fmt.Errorf("%w: experiment id is empty", storage.ErrInvalid)
	}
	objectives, err := checkObjectives(info.Objectives)
	if err != nil {
		return nil, false, fmt.Errorf("experiment %q: %w", info.ID, err)
	}
	host, _ := os.Hostname()
	pid := os.Getpid()
	now := normTime(time.Time{})
	var (
		created bool
		stored  storage.ExperimentInfo
	)
	err = s.write(ctx, func(r runner) error {
		cols := "exp_id, description, root_env_config, git_repo, git_commit, notes"
		args := []any{info.ID, clean(info.Description), clean(info.RootEnvConfig), clean(info.GitRepo), clean(info.GitCommit),
			encodeNotes(mergeNotes(nil, info.Notes))}
		if !s.layout.noExpRun {
			cols += ", ts_start, status, driver_name, driver_pid"
			args = append(args, s.dialect.ts(now), trial.PENDING.String(), s.driverName(host), pid)
		}
		var err error
		_, created, err = r.insertNew(ctx, `INSERT INTO experiment (`+cols+`) VALUES (`+
			strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")+`)`, "exp_id", args...)
		if err != nil {
			return fmt.Errorf("storage: create experiment %q: %w", info.ID, err)
		}
		if created {
			rows := make([][]any, len(objectives))
			for i, o := range objectives {
				rows[i] = []any{info.ID, o.Name, i, o.Direction, nullWeight(o.Weight)}
			}
			if err := r.insertRows(ctx, "objectives", []string{"exp_id", "optimization_target", "ordinal", "optimization_direction", "weight"}, rows, ""); err != nil {
				return err
			}
		} else if s.layout.noExpRun {
			// mlos_bench's own migration adds the driver columns.
		} else if _, err := r.exec(ctx, `UPDATE experiment SET driver_name = ?, driver_pid = ? WHERE exp_id = ?`, s.driverName(host), pid, info.ID); err != nil {
			return fmt.Errorf("storage: resume experiment %q: %w", info.ID, err)
		}
		stored, err = s.loadInfo(ctx, r, info.ID)
		if err != nil {
			return err
		}
		if merged := mergeNotes(stored.Notes, info.Notes); len(merged) != len(stored.Notes) {
			if _, err := r.exec(ctx, `UPDATE experiment SET notes = ? WHERE exp_id = ?`, encodeNotes(merged), info.ID); err != nil {
				return fmt.Errorf("storage: record notes of experiment %q: %w", info.ID, err)
			}
			stored.Notes = merged
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if created {
		s.log.Debug("new experiment", "experiment", info.ID, "storage", s.describe)
	} else {
		s.log.Info("resuming experiment", "experiment", info.ID, "storage", s.describe)
		if stored.GitCommit != info.GitCommit || stored.GitRepo != info.GitRepo {
			s.log.Warn("experiment was started from another git commit",
				"experiment", info.ID, "stored_repo", stored.GitRepo, "stored_commit", stored.GitCommit,
				"repo", info.GitRepo, "commit", info.GitCommit)
		}
		if !sameObjectives(stored.Objectives, objectives) {
			s.log.Warn("experiment objectives differ from the stored ones; keeping the stored ones",
				"experiment", info.ID, "stored", fmtObjectives(stored.Objectives), "given", fmtObjectives(objectives))
		}
	}
	stored.FirstTrialID = info.FirstTrialID
	return &experiment{s: s, info: stored}, !created, nil
}

// mergeNotes returns stored with the notes of add it lacks appended
// (empty notes left out).
func mergeNotes(stored, add []string) []string {
	out := slices.Clone(stored)
	for _, n := range add {
		n = clean(strings.TrimSpace(n))
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// encodeNotes stores notes as a JSON array (NULL for none).
func encodeNotes(notes []string) any {
	if len(notes) == 0 {
		return nil
	}
	b, err := json.Marshal(notes)
	if err != nil {
		return nil
	}
	return string(b)
}

func checkObjectives(in []storage.Objective) ([]storage.Objective, error) {
	out := make([]storage.Objective, 0, len(in))
	seen := map[string]bool{}
	for i, o := range in {
		o.Name = strings.TrimSpace(o.Name)
		if o.Name == "" {
			return nil, fmt.Errorf("%w: objective %d has no name", storage.ErrInvalid, i)
		}
		if seen[o.Name] {
			return nil, fmt.Errorf("%w: objective %q given twice", storage.ErrInvalid, o.Name)
		}
		seen[o.Name] = true
		o.Direction = strings.ToLower(strings.TrimSpace(o.Direction))
		if o.Direction != "min" && o.Direction != "max" {
			return nil, fmt.Errorf("%w: objective %q: direction %q is not \"min\" or \"max\"", storage.ErrInvalid, o.Name, o.Direction)
		}
		out = append(out, o)
	}
	return out, nil
}

func nullWeight(w float64) any {
	if w == 0 {
		return nil
	}
	return w
}

func sameObjectives(a, b []storage.Objective) bool {
	return slices.EqualFunc(a, b, func(x, y storage.Objective) bool {
		return x.Name == y.Name && x.Direction == y.Direction && x.Weight == y.Weight
	})
}

func fmtObjectives(os []storage.Objective) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = o.Name + ":" + o.Direction
	}
	return strings.Join(parts, ",")
}

const experimentCols = `exp_id, description, root_env_config, git_repo, git_commit, ts_start, ts_end, status, driver_name, driver_pid, notes`

func scanExperiment(sc interface{ Scan(...any) error }) (storage.ExperimentInfo, error) {
	var (
		info                     storage.ExperimentInfo
		desc, status, driverName dbsql.NullString
		notes                    dbsql.NullString
		driverPID                dbsql.NullInt64
		start, end               dbTime
	)
	if err := sc.Scan(&info.ID, &desc, &info.RootEnvConfig, &info.GitRepo, &info.GitCommit, &start, &end, &status, &driverName, &driverPID, &notes); err != nil {
		return info, err
	}
	if notes.Valid && notes.String != "" {
		if err := json.Unmarshal([]byte(notes.String), &info.Notes); err != nil {
			return info, fmt.Errorf("experiment %q: stored notes: %w", info.ID, err)
		}
	}
	info.Description = desc.String
	info.TsStart, info.TsEnd = start.t, end.t
	info.DriverName, info.DriverPID = driverName.String, int(driverPID.Int64)
	if status.Valid {
		st, err := trial.ParseStatus(status.String)
		if err != nil {
			return info, fmt.Errorf("experiment %q: %w", info.ID, err)
		}
		info.Status = st
	}
	return info, nil
}

func (s *Store) loadInfo(ctx context.Context, r runner, id string) (storage.ExperimentInfo, error) {
	info, err := scanExperiment(r.queryRow(ctx, `SELECT `+s.experimentCols()+` FROM experiment WHERE exp_id = ?`, id))
	if errors.Is(err, dbsql.ErrNoRows) {
		return info, fmt.Errorf("%w: experiment %q in %s", storage.ErrNotFound, id, s.describe)
	}
	if err != nil {
		return info, fmt.Errorf("storage: load experiment %q: %w", id, s.scrub(err))
	}
	objs, err := s.loadObjectives(ctx, r, id)
	if err != nil {
		return info, err
	}
	info.Objectives = objs[id]
	return info, nil
}

// loadObjectives returns the objectives of one experiment, or of all when
// id is "".
func (s *Store) loadObjectives(ctx context.Context, r runner, id string) (map[string][]storage.Objective, error) {
	q := `SELECT exp_id, optimization_target, optimization_direction, weight FROM objectives`
	var args []any
	if id != "" {
		q += ` WHERE exp_id = ?`
		args = append(args, id)
	}
	q += ` ORDER BY exp_id, ordinal, optimization_target`
	out := map[string][]storage.Objective{}
	err := r.each(ctx, func(rows *dbsql.Rows) error {
		var (
			exp    string
			o      storage.Objective
			weight dbsql.NullFloat64
		)
		if err := rows.Scan(&exp, &o.Name, &o.Direction, &weight); err != nil {
			return err
		}
		o.Weight = weight.Float64
		out[exp] = append(out[exp], o)
		return nil
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: load objectives: %w", err)
	}
	return out, nil
}

// LoadExperiment opens an existing experiment without changing it.
func (s *Store) LoadExperiment(ctx context.Context, id string) (storage.Experiment, error) {
	var info storage.ExperimentInfo
	err := s.read(ctx, func(r runner) error {
		var err error
		info, err = s.loadInfo(ctx, r, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &experiment{s: s, info: info}, nil
}

// Experiments lists the experiments with their trial counts.
func (s *Store) Experiments(ctx context.Context) ([]storage.ExperimentSummary, error) {
	var out []storage.ExperimentSummary
	err := s.read(ctx, func(r runner) error {
		out = out[:0]
		err := r.each(ctx, func(rows *dbsql.Rows) error {
			info, err := scanExperiment(rows)
			if err != nil {
				return err
			}
			out = append(out, storage.ExperimentSummary{ExperimentInfo: info, Trials: map[trial.Status]int{}})
			return nil
		}, `SELECT `+s.experimentCols()+` FROM experiment ORDER BY exp_id`)
		if err != nil {
			return fmt.Errorf("storage: list experiments: %w", err)
		}
		objs, err := s.loadObjectives(ctx, r, "")
		if err != nil {
			return err
		}
		index := map[string]int{}
		for i := range out {
			out[i].Objectives = objs[out[i].ID]
			index[out[i].ID] = i
		}
		err = r.each(ctx, func(rows *dbsql.Rows) error {
			var (
				exp, status string
				n           int
			)
			if err := rows.Scan(&exp, &status, &n); err != nil {
				return err
			}
			st, err := trial.ParseStatus(status)
			if err != nil {
				return fmt.Errorf("experiment %q: %w", exp, err)
			}
			if i, ok := index[exp]; ok {
				out[i].Trials[st] += n
			}
			return nil
		}, `SELECT exp_id, status, COUNT(*) FROM trial GROUP BY exp_id, status`)
		if err != nil {
			return fmt.Errorf("storage: count trials: %w", err)
		}
		return nil
	})
	return out, err
}

// experiment is the storage.Experiment of a Store: the plain experiment,
// or an owner view of it (WithOwner) when owner is set.
type experiment struct {
	s     *Store
	info  storage.ExperimentInfo
	owner string
	lease time.Duration
}

var _ storage.Experiment = (*experiment)(nil)

func (e *experiment) Info() storage.ExperimentInfo {
	info := e.info
	info.Objectives = slices.Clone(e.info.Objectives)
	return info
}

func (e *experiment) SetStatus(ctx context.Context, status trial.Status, ts time.Time) error {
	ts = normTime(ts)
	var end any
	if status.IsCompleted() {
		end = e.s.dialect.ts(ts)
	}
	return e.s.write(ctx, func(r runner) error {
		q, args := `UPDATE experiment SET status = ?, ts_end = ? WHERE exp_id = ?`, []any{status.String(), end, e.info.ID}
		if e.s.layout.noExpRun {
			// No status columns (mlos_bench adds them): only check it exists.
			q, args = `UPDATE experiment SET exp_id = exp_id WHERE exp_id = ?`, []any{e.info.ID}
		}
		res, err := r.exec(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("storage: set status of experiment %q: %w", e.info.ID, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("%w: experiment %q", storage.ErrNotFound, e.info.ID)
		}
		return nil
	})
}
