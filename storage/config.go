package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/internal/decode"

	internalregistry "github.com/benchtune/bench/internal/registry"
)

// DefaultSQLiteFile is the database file bench uses when no storage is
// configured: it lives in the working folder, so that running the same
// experiment again resumes it.
const DefaultSQLiteFile = "bench.sqlite"

// DefaultConfig is the storage used when none is configured: the SQLite
// file DefaultSQLiteFile in the working folder.
func DefaultConfig() Config {
	return Config{DriverName: "sqlite", Database: DefaultSQLiteFile}
}

// Config is the "config" object of an mlos_bench storage config
// (mlos_bench.storage.sql.storage.SqlStorage): the keyword arguments of
// SQLAlchemy's URL.create plus log_sql and lazy_schema_create.
//
// DriverName picks the backend: "sqlite", "sqlite3" or "sqlite+<dbapi>"
// (Database is the file path, or ":memory:"), "postgresql", "postgres"
// or "postgresql+<dbapi>" (e.g. "postgresql+psycopg2"), and "mysql",
// "mariadb", "mysql+<dbapi>" or "mariadb+<dbapi>" (e.g.
// "mysql+mysqlconnector"; MySQL 8 or MariaDB 10.6 and later). The dbapi
// part is ignored: bench uses its own drivers. Other databases are an
// error.
type Config struct {
	DriverName string `json:"drivername"`
	Database   string `json:"database"`
	Username   string `json:"username,omitempty"`
	Password   string `json:"password,omitempty"`
	Host       string `json:"host,omitempty"`
	Port       int    `json:"port,omitempty"`
	// Query holds extra connection options: for PostgreSQL any libpq
	// keyword (sslmode, connect_timeout, application_name, search_path
	// ...); for MySQL any parameter of the Go MySQL driver's DSN (tls,
	// timeout, readTimeout, ...); for SQLite only "synchronous" (NORMAL,
	// the default, or FULL).
	Query map[string]string `json:"query,omitempty"`
	// LogSQL logs every SQL statement (log/slog, level INFO).
	LogSQL bool `json:"log_sql,omitempty"`
	// LazySchemaCreate defers creating or upgrading the schema until the
	// first call that needs it.
	LazySchemaCreate bool `json:"lazy_schema_create,omitempty"`

	// NoCreate makes Open fail with ErrNoDatabase instead of creating a new
	// SQLite file (for commands that only read, like `bench results`).
	NoCreate bool `json:"-"`
	// ReadOnly opens the database for commands that only read (bench
	// results, show, export, plot, report): an mlos_bench database is not
	// adopted (bench's columns and tables it lacks are shown to this
	// connection only, as temporary views), and a SQLite file is not
	// switched to WAL mode, so neither its schema nor its bytes change.
	// Only a run or a resume adopts it.
	ReadOnly bool `json:"-"`
	// Logger receives warnings and SQL logs; nil means slog.Default().
	Logger *slog.Logger `json:"-"`
	// Clock, when set, is the clock leases are set and compared with
	// (Claim, Heartbeat, worker registrations) instead of the database's:
	// tests put it and the scheduler's on one fake clock (internal/clock)
	// to expire or keep leases without waiting.
	Clock func() time.Time `json:"-"`
}

// UnmarshalJSON decodes a storage config, accepting the port as a number or
// a numeric string (configs often fill it from a "$port" global).
// Unknown keys are an error.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	var aux struct {
		plain
		Port  json.RawMessage `json:"port,omitempty"`
		Query map[string]any  `json:"query,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if rest, ok := strings.CutPrefix(msg, "unknown field "); ok {
			return fmt.Errorf("storage config: unknown key %s", rest)
		}
		return fmt.Errorf("storage config: %s", msg)
	}
	*c = Config(aux.plain)
	if len(aux.Port) > 0 && string(aux.Port) != "null" {
		// A number or a string of one (decode.Int's rule: "5432" or
		// 5432.0 too).
		var v any
		if err := json.Unmarshal(aux.Port, &v); err != nil {
			return fmt.Errorf("storage config: port: want a number, got %s", aux.Port)
		}
		switch v.(type) {
		case float64, string:
		default:
			return fmt.Errorf("storage config: port: want a number, got %s", aux.Port)
		}
		p, ok := decode.Int(v)
		if !ok || p < 0 || p > 65535 {
			return fmt.Errorf("storage config: port: want a port number, got %s", aux.Port)
		}
		c.Port = int(p)
	}
	if aux.Query != nil {
		c.Query = make(map[string]string, len(aux.Query))
		for k, v := range aux.Query {
			switch x := v.(type) {
			case string:
				c.Query[k] = x
			case float64, bool:
				c.Query[k] = fmt.Sprint(x)
			default:
				return fmt.Errorf("storage config: query.%s: want a string, number or boolean", k)
			}
		}
	}
	return nil
}

// Backend returns the backend DriverName selects ("sqlite", "postgresql"
// or "mysql"), or an error wrapping ErrUnsupportedDriver.
func (c Config) Backend() (string, error) {
	name := strings.ToLower(strings.TrimSpace(c.DriverName))
	base, dbapi, _ := strings.Cut(name, "+")
	switch base {
	case "sqlite", "sqlite3":
		return "sqlite", nil
	case "postgresql", "postgres", "pgsql":
		return "postgresql", nil
	case "mysql", "mariadb":
		return "mysql", nil
	case "":
		if dbapi == "" {
			return "", fmt.Errorf("%w: storage config has no drivername; %s", ErrUnsupportedDriver, supported)
		}
	case "duckdb":
		return "", fmt.Errorf("%w %q: %s; DuckDB's Go drivers need cgo, and bench is a static binary built without it (CGO_ENABLED=0), so it cannot link DuckDB; use sqlite (one file, like DuckDB) — see docs/storage.md", ErrUnsupportedDriver, c.DriverName, supported)
	}
	return "", fmt.Errorf("%w %q: %s", ErrUnsupportedDriver, c.DriverName, supported)
}

const supported = `bench supports "sqlite" (also "sqlite3", "sqlite+pysqlite"), "postgresql" (also "postgres", "postgresql+psycopg2") and "mysql" (also "mariadb", "mysql+mysqlconnector", "mysql+pymysql")`

// String renders the config as a URL with the password hidden.
func (c Config) String() string {
	backend, err := c.Backend()
	if err != nil {
		backend = c.DriverName
	}
	if backend == "sqlite" {
		return "sqlite:///" + c.Database
	}
	u := url.URL{Scheme: backend, Host: c.Host, Path: "/" + c.Database}
	if c.Port != 0 {
		u.Host = c.Host + ":" + strconv.Itoa(c.Port)
	}
	switch {
	case c.Username != "" && c.Password != "":
		u.User = url.UserPassword(c.Username, "xxxxx")
	case c.Username != "":
		u.User = url.User(c.Username)
	case c.Password != "":
		u.User = url.UserPassword("", "xxxxx")
	}
	if len(c.Query) > 0 {
		q := url.Values{}
		for k, v := range c.Query {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// GoString hides the password from %#v.
func (c Config) GoString() string { return "storage.Config(" + c.String() + ")" }

// LogValue hides the password from log/slog.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// ParseURL reads a database URL in SQLAlchemy's form into a Config:
// "sqlite:///relative/file.db", "sqlite:////abs/file.db", "sqlite://"
// (in memory), "postgresql://user:pass@host:5432/db?sslmode=disable",
// "mysql://user:pass@host:3306/db".
func ParseURL(raw string) (Config, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Config{}, fmt.Errorf("%w: storage URL %q has no scheme (want sqlite:///file, postgresql://host/db or mysql://host/db)", ErrInvalid, redactURL(raw))
	}
	c := Config{DriverName: scheme}
	backend, err := c.Backend()
	if err != nil {
		return Config{}, err
	}
	if backend == "sqlite" {
		path, query, _ := strings.Cut(rest, "?")
		switch {
		case path == "" || path == "/" || path == "/:memory:":
			c.Database = ":memory:"
		case strings.HasPrefix(path, "/"):
			c.Database = path[1:]
		default:
			return Config{}, fmt.Errorf("%w: sqlite URL %q: want sqlite:///path (three slashes)", ErrInvalid, raw)
		}
		if query != "" {
			q, err := url.ParseQuery(query)
			if err != nil {
				return Config{}, fmt.Errorf("%w: sqlite URL query: %v", ErrInvalid, err)
			}
			c.Query = flatten(q)
		}
		return c, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%w: storage URL %q is not a URL", ErrInvalid, redactURL(raw))
	}
	c.Host = u.Hostname()
	if p := u.Port(); p != "" {
		if c.Port, err = strconv.Atoi(p); err != nil {
			return Config{}, fmt.Errorf("%w: storage URL port %q", ErrInvalid, p)
		}
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	c.Database = strings.TrimPrefix(u.Path, "/")
	if q := u.Query(); len(q) > 0 {
		c.Query = flatten(q)
	}
	return c, nil
}

func flatten(q url.Values) map[string]string {
	m := make(map[string]string, len(q))
	for k, v := range q {
		m[k] = v[len(v)-1]
	}
	return m
}

// redactURL hides the password of a URL that failed to parse.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPw := strings.Cut(rest[:at], ":")
	if !hasPw {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// OpenFunc opens a backend's Storage.
type OpenFunc func(ctx context.Context, cfg Config) (Storage, error)

var (
	backendsMu sync.RWMutex
	backends   = map[string]OpenFunc{}
)

// RegisterBackend makes a backend ("sqlite", "postgresql", "mysql")
// available to Open. storage/sql registers them; import it for its side
// effect:
//
//	import _ "github.com/benchtune/bench/storage/sql"
func RegisterBackend(name string, open OpenFunc) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic("storage: backend " + name + " registered twice")
	}
	backends[name] = open
}

// Open opens the storage cfg describes, creating or upgrading its schema
// unless cfg.LazySchemaCreate is set.
func Open(ctx context.Context, cfg Config) (Storage, error) {
	backend, err := cfg.Backend()
	if err != nil {
		return nil, err
	}
	backendsMu.RLock()
	open := backends[backend]
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	backendsMu.RUnlock()
	if open == nil {
		slices.Sort(names)
		return nil, fmt.Errorf("%w: the %s backend is not linked into this program (registered: %v); import github.com/benchtune/bench/storage/sql", ErrUnsupportedDriver, backend, names)
	}
	return open(ctx, cfg)
}

// Check is storage's validate step, shared by bench validate and bench
// run (before anything starts): the driver must be one bench has, and its
// backend must be linked into the program. Open makes the same checks.
func Check(cfg Config) error {
	backend, err := cfg.Backend()
	if err != nil {
		return err
	}
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	if backends[backend] == nil {
		names := make([]string, 0, len(backends))
		for n := range backends {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("%w: the %s backend is not linked into this program (registered: %v); import github.com/benchtune/bench/storage/sql", ErrUnsupportedDriver, backend, names)
	}
	return nil
}

// classes are the storage config classes bench knows (all SQL: the
// backend comes from the config's drivername).
var classes = internalregistry.New[struct{}]("storage")

func init() {
	classes.Register(struct{}{},
		"mlos_bench.storage.sql.storage.SqlStorage",
		"mlos_bench.storage.SqlStorage",
		"bench.storage.SqlStorage")
}

// Classes lists the storage class names.
func Classes() []string { return classes.Names() }

// CheckClass reports an unknown storage class, naming the known ones.
func CheckClass(class string) error {
	if _, ok := classes.Lookup(class); !ok {
		return fmt.Errorf("unknown storage class %q; known classes: %s", class, strings.Join(Classes(), ", "))
	}
	return nil
}

// DecodeConfig turns a storage config's class and "config" object (globals
// already merged in) into a Config: an unknown class, an unknown key or a
// value of the wrong type is an error naming it.
func DecodeConfig(class string, m map[string]any) (Config, error) {
	if err := CheckClass(class); err != nil {
		return Config{}, err
	}
	var cfg Config
	data, err := json.Marshal(m)
	if err != nil {
		return cfg, err
	}
	err = json.Unmarshal(data, &cfg)
	return cfg, err
}
