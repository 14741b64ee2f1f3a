// Package sql stores experiments in SQLite (embedded, pure Go, the default),
// PostgreSQL or MySQL/MariaDB through database/sql, with versioned schema
// migrations.
//
// Importing the package registers the "sqlite", "postgresql" and "mysql"
// backends of storage.Open:
//
//	import _ "github.com/benchtune/bench/storage/sql"
//
// SQLite databases are opened in WAL mode with a busy timeout, foreign keys
// on and write transactions that take the write lock when they begin
// (BEGIN IMMEDIATE), so several goroutines and several processes can write
// and read the same file at once. PostgreSQL and MySQL transactions lock
// the rows they change; creating trials locks the experiment row so that
// trial ids stay dense across processes, and claiming trials locks the rows
// it takes and skips those another claim holds (FOR UPDATE SKIP LOCKED).
package sql

import (
	"context"
	dbsql "database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/benchtune/bench/storage"
)

func init() {
	storage.RegisterBackend("sqlite", openStorage)
	storage.RegisterBackend("postgresql", openStorage)
	storage.RegisterBackend("mysql", openStorage)
}

// openStorage is Open for storage.Open: a failure is a nil Storage, not a
// Storage holding a nil *Store (which callers would try to close).
func openStorage(ctx context.Context, cfg storage.Config) (storage.Storage, error) {
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Store is the SQL implementation of storage.Storage.
type Store struct {
	db       *dbsql.DB // reads (and everything on PostgreSQL and MySQL)
	wdb      *dbsql.DB // write transactions and migrations
	dialect  dialect
	describe string
	log      *slog.Logger
	logSQL   bool
	password string // only to scrub it from driver errors

	// writeMu serializes this process's write transactions on SQLite, where
	// the database allows a single writer anyway: writers then queue here
	// instead of polling the file lock. Other processes still wait on the
	// busy timeout.
	writeMu sync.Mutex

	wal bool // switch the SQLite file to WAL mode on connect

	// readOnly: storage.Config.ReadOnly (readonly.go); one connection,
	// which holds the temporary views over an mlos_bench database.
	readOnly bool

	schemaMu    sync.Mutex
	schemaReady bool
	layout      layout // what the database lacks of bench's schema, set with schemaReady

	// held: each experiment's configurations, counted incrementally by
	// checkBudget (trials.go).
	heldMu sync.Mutex
	held   map[string]*heldConfigSet

	stmtMu sync.Mutex
	stmts  map[stmtKey]*dbsql.Stmt
	wanted map[stmtKey]bool

	// clockOffset is how far the database server's clock is ahead of this
	// machine's, measured at clockAt (PostgreSQL and MySQL; see now).
	clockMu     sync.Mutex
	clockOffset time.Duration
	clockAt     time.Time
	// clock replaces the database's clock for leases (Config.Clock).
	clock func() time.Time

	// feedUnnumbered: this store's user may not number the change feed's
	// pending changes (MySQL, MariaDB; see numberPending).
	feedUnnumbered atomic.Bool
}

var _ storage.Storage = (*Store)(nil)

// busyTimeout is how long an SQLite statement waits for another
// connection's or process's write lock before failing.
const busyTimeout = 30 * time.Second

// Open connects to the database cfg describes and, unless
// cfg.LazySchemaCreate is set, creates or upgrades its schema.
func Open(ctx context.Context, cfg storage.Config) (*Store, error) {
	backend, err := cfg.Backend()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Store{log: log, logSQL: cfg.LogSQL, password: cfg.Password, readOnly: cfg.ReadOnly, clock: cfg.Clock}
	switch backend {
	case "sqlite":
		err = s.openSQLite(cfg)
	case "postgresql":
		err = s.openPostgres(cfg)
	case "mysql":
		err = s.openMySQL(cfg)
	default:
		err = fmt.Errorf("%w %q", storage.ErrUnsupportedDriver, cfg.DriverName)
	}
	if err != nil {
		return nil, s.scrub(err)
	}
	// Before connect, which may switch an SQLite file to WAL mode: a
	// database bench must not touch stays as it is. (One that does not
	// answer is reported by connect.)
	if s.db.PingContext(ctx) == nil {
		if err := s.refuseForeign(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.connect(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("storage: connect to %s: %w", s.describe, s.scrub(err))
	}
	if !cfg.LazySchemaCreate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.log.Debug("storage opened", "storage", s.describe)
	return s, nil
}

func (s *Store) openSQLite(cfg storage.Config) error {
	s.dialect = sqliteDialect{}
	var synchronous = "NORMAL"
	for k, v := range cfg.Query {
		switch strings.ToLower(k) {
		case "synchronous":
			switch strings.ToUpper(v) {
			case "NORMAL", "FULL", "EXTRA":
				synchronous = strings.ToUpper(v)
			default:
				return fmt.Errorf("%w: sqlite query option synchronous=%q: want NORMAL, FULL or EXTRA", storage.ErrInvalid, v)
			}
		default:
			return fmt.Errorf("%w: unknown sqlite query option %q (only \"synchronous\" is supported)", storage.ErrInvalid, k)
		}
	}
	if cfg.Host != "" || cfg.Port != 0 || cfg.Username != "" || cfg.Password != "" {
		return fmt.Errorf("%w: sqlite storage takes no host, port, username or password", storage.ErrInvalid)
	}
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	params.Add("_pragma", "foreign_keys(1)")
	params.Add("_txlock", "immediate")
	db := strings.TrimSpace(cfg.Database)
	memory := db == "" || db == ":memory:"
	var dsn string
	if memory {
		// Every connection to ":memory:" is a database of its own: keep a
		// single connection so that all calls see the same one.
		dsn = "file::memory:?" + params.Encode()
		s.describe = "sqlite in memory (nothing is kept)"
	} else {
		path, err := filepath.Abs(db)
		if err != nil {
			return fmt.Errorf("storage: sqlite database path %q: %w", db, err)
		}
		if cfg.NoCreate {
			if _, err := os.Stat(path); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("%w: sqlite file %s", storage.ErrNoDatabase, path)
				}
				return fmt.Errorf("storage: sqlite file %s: %w", path, err)
			}
		}
		if dir := filepath.Dir(path); dir != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return fmt.Errorf("%w: sqlite file %s: folder %s does not exist", storage.ErrInvalid, path, dir)
			}
		}
		// journal_mode is set once by connect: WAL is a property of the file.
		params.Add("_pragma", "synchronous("+synchronous+")")
		s.wal = true
		dsn = "file:" + uriPath(path) + "?" + params.Encode()
		s.describe = "sqlite file " + path
	}
	open := func(conns int) (*dbsql.DB, error) {
		h, err := dbsql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", s.describe, err)
		}
		h.SetMaxOpenConns(conns)
		h.SetMaxIdleConns(conns)
		h.SetConnMaxLifetime(0)
		h.SetConnMaxIdleTime(0)
		return h, nil
	}
	var err error
	if memory {
		// A single connection, kept forever: closing it would drop the data.
		s.db, err = open(1)
		s.wdb = s.db
		return err
	}
	if cfg.ReadOnly {
		// One connection (it holds the temporary views of readonly.go),
		// and the file's journal mode is left as it is.
		s.wal = false
		s.db, err = open(1)
		s.wdb = s.db
		return err
	}
	if s.db, err = open(8); err != nil {
		return err
	}
	// SQLite has one writer at a time: a single write connection loses no
	// concurrency and keeps its page cache warm between transactions.
	s.wdb, err = open(1)
	return err
}

// connect checks the database answers and puts a SQLite file in WAL mode.
// A new SQLite file that another process is creating at the same moment
// may report itself busy without waiting (changing the journal mode needs
// the file for itself): that is retried until busyTimeout.
func (s *Store) connect(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeout)
	delay := 10 * time.Millisecond
	for {
		err := s.db.PingContext(ctx)
		if err == nil && s.wal {
			var mode string
			err = s.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
			if err == nil && !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("sqlite refused WAL mode (journal mode is %q)", mode)
			}
		}
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// isBusy reports an SQLite "database is locked" error.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 5 // SQLITE_BUSY
}

// uriPath escapes the characters an SQLite URI filename gives a meaning.
func uriPath(p string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(filepath.ToSlash(p))
}

func (s *Store) openPostgres(cfg storage.Config) error {
	s.dialect = postgresDialect{}
	// Build a keyword/value string without the password, so that no parse
	// error can echo it; the password is set on the parsed config.
	var kv []string
	add := func(k, v string) { kv = append(kv, k+"="+quoteConnValue(v)) }
	if cfg.Host != "" {
		add("host", cfg.Host)
	}
	if cfg.Port != 0 {
		add("port", strconv.Itoa(cfg.Port))
	}
	if cfg.Username != "" {
		add("user", cfg.Username)
	}
	if cfg.Database != "" {
		add("dbname", cfg.Database)
	}
	for k, v := range cfg.Query {
		lk := strings.ToLower(k)
		if lk == "password" || lk == "passfile" {
			return fmt.Errorf("%w: give the postgresql password as the \"password\" key, not in query", storage.ErrInvalid)
		}
		add(k, v)
	}
	pc, err := pgx.ParseConfig(strings.Join(kv, " "))
	if err != nil {
		return fmt.Errorf("%w: postgresql connection settings: %v", storage.ErrInvalid, err)
	}
	if cfg.Password != "" {
		pc.Password = cfg.Password
	}
	host := pc.Host
	if strings.HasPrefix(host, "/") {
		host = "[" + host + "]"
	}
	s.describe = fmt.Sprintf("postgresql %s@%s:%d/%s", pc.User, host, pc.Port, pc.Database)
	s.db = stdlib.OpenDB(*pc)
	s.db.SetMaxOpenConns(16)
	s.db.SetMaxIdleConns(4)
	s.db.SetConnMaxIdleTime(5 * time.Minute)
	if cfg.ReadOnly {
		// One connection, kept: it holds the temporary views of
		// readonly.go.
		s.db.SetMaxOpenConns(1)
		s.db.SetMaxIdleConns(1)
		s.db.SetConnMaxIdleTime(0)
	}
	s.wdb = s.db
	return nil
}

// openMySQL connects to MySQL or MariaDB. The connection is set up for the
// schema: times are read and written in UTC (parseTime, loc=UTC and the
// session time_zone), and the session is strict (values that do not fit
// are errors, not truncated).
func (s *Store) openMySQL(cfg storage.Config) error {
	s.dialect = mysqlDialect{}
	// The query options are parsed as a DSN without user, password or
	// address, so that no parse error can echo the password; the rest is
	// set on the parsed config.
	q := url.Values{}
	var socket string
	for k, v := range cfg.Query {
		switch strings.ToLower(k) {
		case "password", "passwd", "user", "username":
			return fmt.Errorf("%w: give the mysql %s as the %q key, not in query", storage.ErrInvalid, k, strings.ToLower(k))
		case "unix_socket": // SQLAlchemy's MySQL drivers' name for it
			socket = v
			continue
		}
		q.Set(k, v)
	}
	mc, err := mysql.ParseDSN("/?" + q.Encode())
	if err != nil {
		return fmt.Errorf("%w: mysql connection settings: %v", storage.ErrInvalid, err)
	}
	if strings.TrimSpace(cfg.Database) == "" {
		return fmt.Errorf("%w: mysql storage needs a database", storage.ErrInvalid)
	}
	mc.User, mc.Passwd, mc.DBName = cfg.Username, cfg.Password, cfg.Database
	host := cfg.Host
	if host == "" {
		host = "localhost"
	}
	switch {
	case socket != "":
		mc.Net, mc.Addr = "unix", socket
	case strings.HasPrefix(host, "/"):
		mc.Net, mc.Addr = "unix", host
	default:
		port := cfg.Port
		if port == 0 {
			port = 3306
		}
		mc.Net, mc.Addr = "tcp", net.JoinHostPort(host, strconv.Itoa(port))
	}
	if mc.Timeout == 0 {
		mc.Timeout = 30 * time.Second
	}
	mc.ParseTime, mc.Loc = true, time.UTC
	// RowsAffected counts the rows an UPDATE matched, as on the other
	// databases, not only those whose values changed.
	mc.ClientFoundRows = true
	// The driver escapes the arguments into the statement (utf8mb4) rather
	// than preparing each statement on the server (see cachesStmts).
	mc.InterpolateParams = true
	// A change's number is taken in the same round trip as the statement
	// before it (feed.go, takeWith). The statements are this package's
	// own texts; every value is an argument the driver escapes.
	mc.MultiStatements = true
	if mc.Params == nil {
		mc.Params = map[string]string{}
	}
	mc.Params["time_zone"] = "'+00:00'"
	mc.Params["sql_mode"] = "'TRADITIONAL,NO_ENGINE_SUBSTITUTION'"
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return fmt.Errorf("%w: mysql connection settings: %v", storage.ErrInvalid, err)
	}
	s.describe = fmt.Sprintf("mysql %s@%s/%s", mc.User, mc.Addr, mc.DBName)
	s.db = dbsql.OpenDB(readCommitted{conn})
	s.db.SetMaxOpenConns(16)
	s.db.SetMaxIdleConns(4)
	s.db.SetConnMaxIdleTime(5 * time.Minute)
	// Servers close connections idle longer than wait_timeout (8 hours by
	// default); renewing them well before keeps the pool's ones alive.
	s.db.SetConnMaxLifetime(time.Hour)
	s.wdb = s.db
	return nil
}

// readCommitted makes READ COMMITTED the default isolation of the
// transactions of every new MySQL connection (see mysqlDialect.writeTx),
// once per connection: a transaction begun with an isolation level costs
// the driver a round trip of its own (SET TRANSACTION ISOLATION LEVEL)
// before START TRANSACTION, three per trial. SET SESSION TRANSACTION is
// understood by MySQL and MariaDB alike (the session variable's name is
// not: transaction_isolation, tx_isolation).
type readCommitted struct{ driver.Connector }

func (c readCommitted) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("storage: mysql connection cannot run statements (%T)", conn)
	}
	if _, err := ex.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

func quoteConnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Describe says where the data lives, without any password.
func (s *Store) Describe() string { return s.describe }

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	if s.wdb != nil && s.wdb != s.db {
		errs = append(errs, s.wdb.Close())
	}
	return s.scrub(errors.Join(errs...))
}

// DB is the underlying database handle, for tests and tools.
func (s *Store) DB() *dbsql.DB { return s.db }

// scrub removes the password from an error message, keeping the error
// chain for errors.Is/As.
func (s *Store) scrub(err error) error {
	if err == nil || s.password == "" || !strings.Contains(err.Error(), s.password) {
		return err
	}
	return &scrubbed{err: err, msg: strings.ReplaceAll(err.Error(), s.password, "xxxxx")}
}

type scrubbed struct {
	err error
	msg string
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
