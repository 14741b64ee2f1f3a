package sql

import (
	dbsql "database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
)

// dialect holds what differs between SQLite, PostgreSQL and MySQL.
// Queries are written with "?" placeholders and rebound for PostgreSQL.
type dialect interface {
	name() string
	rebind(q string) string
	// ts converts a UTC time to what the driver stores.
	ts(t time.Time) any
	// forUpdate is the suffix that locks the selected rows until the end of
	// the transaction ("" where the write transaction already holds a
	// database-wide lock).
	forUpdate() string
	// readTx are the options of the transactions that only read: one
	// consistent snapshot, no write lock.
	readTx() *dbsql.TxOptions
	// writeTx are the options of write transactions (nil: the driver's
	// default). Every statement of a write transaction sees the rows
	// committed before it started (READ COMMITTED), as the locking of
	// insertTrial and Claim expects.
	writeTx() *dbsql.TxOptions
	// retry reports an error after which the whole write transaction,
	// rolled back by the database, may simply run again (a deadlock).
	retry(err error) bool
	// ignoreDup is the suffix of an INSERT that skips the rows whose key
	// (the columns cols, a primary key or unique index) is already stored.
	// (Whether a row was inserted: runner.insertNew.)
	ignoreDup(cols string) string
	// upsert is the suffix of a one-row INSERT that, when the key cols is
	// already stored, sets the columns set to the values given instead.
	upsert(cols string, set ...string) string
	// returning reports whether UPDATE ... RETURNING and INSERT ...
	// RETURNING are supported.
	returning() bool
	// cachesStmts reports whether runner keeps prepared statements.
	cachesStmts() bool
	// serializesWriters reports whether the database allows a single writer.
	serializesWriters() bool
	// skipLocked is the suffix of a SELECT that locks the rows it returns
	// and skips those another transaction holds ("" where the write
	// transaction already holds a database-wide lock).
	skipLocked() string
	// clockQuery returns the database server's current time ("" where the
	// database runs on this machine and shares its clock).
	clockQuery() string
}

type sqliteDialect struct{}

// sqliteTime is how timestamps are written in SQLite: UTC, microseconds,
// sortable as text and understood by SQLite's date functions.
const sqliteTime = "2006-01-02 15:04:05.000000"

func (sqliteDialect) name() string              { return "sqlite" }
func (sqliteDialect) rebind(q string) string    { return q }
func (sqliteDialect) ts(t time.Time) any        { return t.UTC().Format(sqliteTime) }
func (sqliteDialect) forUpdate() string         { return "" }
func (sqliteDialect) serializesWriters() bool   { return true }
func (sqliteDialect) readTx() *dbsql.TxOptions  { return &dbsql.TxOptions{ReadOnly: true} }
func (sqliteDialect) skipLocked() string        { return "" }
func (sqliteDialect) clockQuery() string        { return "" }
func (postgresDialect) skipLocked() string      { return " FOR UPDATE SKIP LOCKED" }
func (postgresDialect) clockQuery() string      { return "SELECT clock_timestamp()" }
func (postgresDialect) name() string            { return "postgres" }
func (postgresDialect) ts(t time.Time) any      { return t.UTC() }
func (postgresDialect) forUpdate() string       { return " FOR NO KEY UPDATE" }
func (postgresDialect) serializesWriters() bool { return false }
func (postgresDialect) readTx() *dbsql.TxOptions {
	return &dbsql.TxOptions{ReadOnly: true, Isolation: dbsql.LevelRepeatableRead}
}

// writeTx: PostgreSQL's default isolation is READ COMMITTED.
func (postgresDialect) writeTx() *dbsql.TxOptions { return nil }
func (postgresDialect) retry(error) bool          { return false }
func (postgresDialect) returning() bool           { return true }
func (postgresDialect) cachesStmts() bool         { return true }
func (postgresDialect) ignoreDup(cols string) string {
	return " ON CONFLICT (" + cols + ") DO NOTHING"
}
func (postgresDialect) upsert(cols string, set ...string) string { return onConflictSet(cols, set) }

func (sqliteDialect) writeTx() *dbsql.TxOptions { return nil }
func (sqliteDialect) retry(error) bool          { return false }
func (sqliteDialect) returning() bool           { return true }
func (sqliteDialect) cachesStmts() bool         { return true }
func (sqliteDialect) ignoreDup(cols string) string {
	return " ON CONFLICT (" + cols + ") DO NOTHING"
}
func (sqliteDialect) upsert(cols string, set ...string) string { return onConflictSet(cols, set) }

func onConflictSet(cols string, set []string) string {
	parts := make([]string, len(set))
	for i, c := range set {
		parts[i] = c + " = excluded." + c
	}
	return " ON CONFLICT (" + cols + ") DO UPDATE SET " + strings.Join(parts, ", ")
}

type postgresDialect struct{}

// mysqlDialect is MySQL 8 and MariaDB 10.6 or later (SKIP LOCKED), InnoDB
// tables. Timestamps are DATETIME(6) holding UTC (the connection's time
// zone is UTC and the driver reads and writes times in UTC).
type mysqlDialect struct{}

func (mysqlDialect) name() string            { return "mysql" }
func (mysqlDialect) rebind(q string) string  { return q }
func (mysqlDialect) ts(t time.Time) any      { return t.UTC() }
func (mysqlDialect) forUpdate() string       { return " FOR UPDATE" }
func (mysqlDialect) serializesWriters() bool { return false }
func (mysqlDialect) skipLocked() string      { return " FOR UPDATE SKIP LOCKED" }
func (mysqlDialect) clockQuery() string      { return "SELECT UTC_TIMESTAMP(6)" }
func (mysqlDialect) returning() bool         { return false }

// cachesStmts: a MySQL server holds at most max_prepared_stmt_count
// (16382 by default) prepared statements for all its clients together,
// which many bench workers with a statement cache per connection could
// use up; the driver puts the arguments into the statement text instead
// (interpolateParams), one round trip per statement.
func (mysqlDialect) cachesStmts() bool { return false }
func (mysqlDialect) readTx() *dbsql.TxOptions {
	return &dbsql.TxOptions{ReadOnly: true, Isolation: dbsql.LevelRepeatableRead}
}

// writeTx: InnoDB's default, REPEATABLE READ, would read every plain
// SELECT of a transaction from the snapshot of its first one, and take gap
// locks that make concurrent inserts deadlock. Write transactions are READ
// COMMITTED as the session's default, set once on each connection
// (readCommitted), so that beginning one is a single round trip.
func (mysqlDialect) writeTx() *dbsql.TxOptions { return nil }

// retry: InnoDB resolves a deadlock by rolling back one of the
// transactions (error 1213), which may then run again.
func (mysqlDialect) retry(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}

// ignoreDup sets a key column to itself on a duplicate: the row is left
// unchanged. (INSERT IGNORE would also turn other errors, such as a value
// too long, into warnings.)
func (mysqlDialect) ignoreDup(cols string) string {
	first, _, _ := strings.Cut(cols, ",")
	first = strings.TrimSpace(first)
	return " ON DUPLICATE KEY UPDATE " + first + " = " + first
}

// isDupKey reports MySQL's duplicate key error (1062), which fails only
// the statement: the transaction goes on.
func isDupKey(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

func (mysqlDialect) upsert(_ string, set ...string) string {
	parts := make([]string, len(set))
	for i, c := range set {
		parts[i] = c + " = VALUES(" + c + ")"
	}
	return " ON DUPLICATE KEY UPDATE " + strings.Join(parts, ", ")
}

// rebind turns the n-th "?" into "$n". The queries of this package hold no
// "?" inside literals.
func (postgresDialect) rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// normTime is the form every timestamp takes before it is stored: UTC,
// truncated to the microseconds the databases keep; zero means now.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// dbTime scans a timestamp column: time.Time from PostgreSQL and MySQL
// (and from SQLite when the driver parses it), text from SQLite, or NULL.
type dbTime struct {
	t     time.Time
	valid bool
}

func (d *dbTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*d = dbTime{}
		return nil
	case time.Time:
		*d = dbTime{t: x.UTC(), valid: true}
		return nil
	case string:
		return d.parse(x)
	case []byte:
		return d.parse(string(x))
	}
	return fmt.Errorf("timestamp column: unexpected %T", v)
}

var timeLayouts = []string{
	sqliteTime,
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
}

func (d *dbTime) parse(s string) error {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			*d = dbTime{t: t.UTC(), valid: true}
			return nil
		}
	}
	return fmt.Errorf("timestamp column: cannot parse %q", s)
}

// clean makes text storable in every database: PostgreSQL's text columns
// refuse NUL bytes and invalid UTF-8, which captured output may hold.
func clean(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
