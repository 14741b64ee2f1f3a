package sql

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// Reading an mlos_bench database without adopting it.
//
// bench results, show, export, plot and report open the storage read-only
// (storage.Config.ReadOnly): an mlos_bench database must come out of them
// as it went in, schema and bytes, since only a run or a resume may adopt
// it. bench's queries name the columns and tables adoption adds
// (mlosAddedCols, trial_output, worker), so the read-only connection gets
// temporary views of mlos_bench's tables with those columns added (NULL,
// or their default), and empty temporary tables for bench's own: both
// SQLite and PostgreSQL look a name up in the connection's temporary
// schema first, so the queries stay as they are, and the temporary objects
// vanish with the connection. Nothing is written to the database.

// openMlosReadOnly sets the read-only connection up over an mlos_bench
// database; done is false for other databases (bench's own are migrated as
// before).
func (s *Store) openMlosReadOnly(ctx context.Context) (done bool, err error) {
	kind, _, ok, err := s.examine(ctx, s.db)
	if err != nil || !ok || kind != kindMlos {
		return false, err
	}
	var ts, bigint, schema string
	switch s.dialect.(type) {
	case sqliteDialect:
		ts, bigint, schema = "TIMESTAMP", "INTEGER", "main"
	case postgresDialect:
		ts, bigint = "TIMESTAMPTZ", "BIGINT"
		if err := s.db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return true, fmt.Errorf("storage: %s: %w", s.describe, s.scrub(err))
		}
		schema = `"` + strings.ReplaceAll(schema, `"`, `""`) + `"`
	default:
		return false, nil
	}
	added := map[string][]string{}
	var order []string
	for _, c := range append(append([]struct{ table, column, def string }(nil), mlosAddedCols...), laterAddedCols...) {
		if _, ok := added[c.table]; !ok {
			order = append(order, c.table)
		}
		var expr string
		switch def := strings.NewReplacer("{TS}", ts, "{BIGINT}", bigint).Replace(c.def); {
		case strings.Contains(def, "DEFAULT 0"):
			expr = "0"
		default:
			expr = "CAST(NULL AS " + strings.Fields(def)[0] + ")"
		}
		added[c.table] = append(added[c.table], expr+" AS "+c.column)
	}
	var stmts []string
	for _, table := range order {
		stmts = append(stmts, fmt.Sprintf("CREATE TEMP VIEW %s AS SELECT x.*, %s FROM %s.%s x", table, strings.Join(added[table], ", "), schema, table))
	}
	stmts = append(stmts, strings.NewReplacer("{TS}", ts, "{BIGINT}", bigint).Replace(mlosReadOnlyTables()+";"+laterTables))
	for _, stmt := range stmts {
		for _, one := range strings.Split(stmt, ";") {
			if strings.TrimSpace(one) == "" {
				continue
			}
			if _, err := s.db.ExecContext(ctx, one); err != nil {
				return true, fmt.Errorf("storage: read the mlos_bench database %s without changing it: %w", s.describe, s.scrub(err))
			}
		}
	}
	if err := s.detectLayout(ctx); err != nil {
		return true, err
	}
	s.log.Debug("reading an mlos_bench database read-only: it is not adopted", "storage", s.describe)
	return true, nil
}

// laterAddedCols and laterTables are what bench's migrations after
// mlosAdoptVersion add (00005_change_feed: trial.bench_seq, bench_feed;
// 00006_progress_step: trial_telemetry.step), so
// the read-only connection sees the columns and tables an adopted database
// would have. A migration added later must be reflected here too.
var laterAddedCols = []struct{ table, column, def string }{
	{"trial", "bench_seq", "{BIGINT}"},
	{"trial_telemetry", "step", "{BIGINT}"},
}

const laterTables = `CREATE TEMP TABLE bench_feed (exp_id TEXT NOT NULL PRIMARY KEY, seq {BIGINT} NOT NULL)`

// mlosReadOnlyTables are bench's tables that an mlos_bench database lacks
// (adoption's, mlosAdoptTables), empty and temporary: without their
// indexes and foreign keys, which cannot reach the database's tables from
// the temporary schema.
func mlosReadOnlyTables() string {
	var out []string
	for _, stmt := range strings.Split(mlosAdoptTables, ";") {
		if !strings.Contains(stmt, "CREATE TABLE") {
			continue
		}
		stmt = strings.Replace(stmt, "CREATE TABLE", "CREATE TEMP TABLE", 1)
		stmt = foreignKey.ReplaceAllString(stmt, "")
		out = append(out, references.ReplaceAllString(stmt, ""))
	}
	return strings.Join(out, ";")
}

var (
	foreignKey = regexp.MustCompile(`,\s*FOREIGN KEY \([^)]*\) REFERENCES \w+ \([^)]*\)`)
	references = regexp.MustCompile(` REFERENCES \w+ \([^)]*\)`)
)
