package sql

import (
	dbsql "database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// dialect holds what differs between SQLite and PostgreSQL. Queries are
// written with "?" placeholders and rebound for PostgreSQL.
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
func (postgresDialect) forUpdate() string       { return " FOR UPDATE" }
func (postgresDialect) serializesWriters() bool { return false }
func (postgresDialect) readTx() *dbsql.TxOptions {
	return &dbsql.TxOptions{ReadOnly: true, Isolation: dbsql.LevelRepeatableRead}
}

type postgresDialect struct{}

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
// truncated to the microseconds both databases keep; zero means now.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// dbTime scans a timestamp column: time.Time from PostgreSQL (and from
// SQLite when the driver parses it), text from SQLite, or NULL.
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

// clean makes text storable in both databases: PostgreSQL's text columns
// refuse NUL bytes and invalid UTF-8, which captured output may hold.
func clean(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
