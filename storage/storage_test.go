package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFormatValue(t *testing.T) {
	tests := []struct {
		in       any
		want     string
		wantNull bool
	}{
		{nil, "", true},
		{"text", "text", false},
		{"", "", false},
		{true, "true", false},
		{42, "42", false},
		{int8(-8), "-8", false},
		{int64(math.MaxInt64), "9223372036854775807", false},
		{uint64(math.MaxUint64), "18446744073709551615", false},
		{uint8(7), "7", false},
		{0.1, "0.1", false},
		{float32(0.1), "0.1", false},
		{1e21, "1e+21", false},
		{-2.5e-7, "-2.5e-07", false},
		{math.NaN(), "nan", false},
		{math.Inf(1), "inf", false},
		{math.Inf(-1), "-inf", false},
		{json.Number("12.50"), "12.50", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%T %v", tc.in, tc.in), func(t *testing.T) {
			got, null, err := FormatValue(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || null != tc.wantNull {
				t.Errorf("FormatValue(%#v) = %q, %v; want %q, %v", tc.in, got, null, tc.want, tc.wantNull)
			}
		})
	}
	for _, bad := range []any{[]int{1}, map[string]any{}, struct{}{}, json.Number("x"), time.Second} {
		if _, _, err := FormatValue(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("FormatValue(%#v): got %v, want ErrInvalid", bad, err)
		}
	}
}

func TestParseValue(t *testing.T) {
	tests := []struct {
		text string
		null bool
		want any
	}{
		{"42", false, 42.0},
		{"-0.5", false, -0.5},
		{" 1e3 ", false, 1000.0},
		{".5", false, 0.5},
		{"+7", false, 7.0},
		{"inf", false, math.Inf(1)},
		{"-Infinity", false, math.Inf(-1)},
		{"fast", false, "fast"},
		{"name", false, "name"},
		{"0x10", false, "0x10"},
		{"1_000", false, "1_000"},
		{"", false, ""},
		{"-", false, "-"},
		{"true", false, "true"},
		{"", true, nil},
	}
	for _, tc := range tests {
		if got := ParseValue(tc.text, tc.null); !cmp.Equal(got, tc.want) {
			t.Errorf("ParseValue(%q, %v) = %#v, want %#v", tc.text, tc.null, got, tc.want)
		}
	}
	if f, ok := ParseValue("nan", false).(float64); !ok || !math.IsNaN(f) {
		t.Errorf("ParseValue(nan) is not NaN")
	}
	// Round trip of the formatted forms.
	for _, v := range []float64{0, 1, -1, 0.1, 1.0 / 3, 1e300, 5e-324, math.Inf(1)} {
		text, _, _ := FormatValue(v)
		if got := ParseValue(text, false); got != v {
			t.Errorf("round trip of %v: %q -> %v", v, text, got)
		}
	}
}

func TestMetrics(t *testing.T) {
	m := Metrics{"a": 1.5, "b": "2", "c": "x", "d": nil, "e": math.NaN(), "f": math.Inf(-1)}
	floats := map[string]bool{"a": true, "b": true, "c": false, "d": false, "e": true, "missing": false}
	for name, want := range floats {
		if _, ok := m.Float(name); ok != want {
			t.Errorf("Float(%q) ok = %v, want %v", name, ok, want)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e", "f"}, m.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if m.Text("a") != "1.5" || m.Text("f") != "-inf" || m.Text("d") != "" || m.Text("c") != "x" {
		t.Errorf("Text: %q %q %q %q", m.Text("a"), m.Text("f"), m.Text("d"), m.Text("c"))
	}
	js, err := json.Marshal(struct {
		M Metrics
		T Telemetry
		N Metrics
	}{m, Telemetry{Ts: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Metric: "x", Value: math.Inf(1)}, nil})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"M":{"a":1.5,"b":"2","c":"x","d":null,"e":"nan","f":"-inf"},"T":{"ts":"2026-01-02T03:04:05Z","metric":"x","value":"inf"},"N":null}`
	if string(js) != want {
		t.Errorf("JSON:\n got %s\nwant %s", js, want)
	}
}

func TestHashParams(t *testing.T) {
	a := HashParams(map[string]string{"x": "1", "y": "2"})
	if a != HashParams(map[string]string{"y": "2", "x": "1"}) {
		t.Error("HashParams depends on map order")
	}
	for _, other := range []map[string]string{
		{"x": "1", "y": "3"}, {"x": "1"}, {"x": "1", "y": "2", "z": ""}, {"x=1\ny": "2"}, nil,
	} {
		if HashParams(other) == a {
			t.Errorf("HashParams(%v) collides", other)
		}
	}
	if len(a) != 64 {
		t.Errorf("hash %q is not 64 hex digits", a)
	}
}

func TestBackend(t *testing.T) {
	tests := []struct {
		driver, want string
	}{
		{"sqlite", "sqlite"},
		{"sqlite3", "sqlite"},
		{"sqlite+pysqlite", "sqlite"},
		{"SQLite+aiosqlite", "sqlite"},
		{"postgresql", "postgresql"},
		{"postgresql+psycopg2", "postgresql"},
		{"postgres", "postgresql"},
		{" postgresql+asyncpg ", "postgresql"},
		{"mysql", "mysql"},
		{"mysql+mysqlconnector", "mysql"},
		{"mysql+pymysql", "mysql"},
		{"MariaDB+mariadbconnector", "mysql"},
	}
	for _, tc := range tests {
		got, err := Config{DriverName: tc.driver}.Backend()
		if err != nil || got != tc.want {
			t.Errorf("Backend(%q) = %q, %v; want %q", tc.driver, got, err, tc.want)
		}
	}
	for _, bad := range []string{"mysqlx", "duckdb", "mssql+pyodbc", "", "+psycopg2", "sqlitex"} {
		_, err := Config{DriverName: bad}.Backend()
		if !errors.Is(err, ErrUnsupportedDriver) {
			t.Errorf("Backend(%q): got %v, want ErrUnsupportedDriver", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), `"sqlite"`) || !strings.Contains(err.Error(), `"postgresql"`) || !strings.Contains(err.Error(), `"mysql"`) {
			t.Errorf("Backend(%q) error does not list what is supported: %v", bad, err)
		}
	}
}

func TestConfigJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Config
		err  string
	}{
		{"sqlite", `{"drivername": "sqlite", "database": "mlos_bench.sqlite", "log_sql": false}`,
			Config{DriverName: "sqlite", Database: "mlos_bench.sqlite"}, ""},
		{"memory", `{"lazy_schema_create": true, "drivername": "sqlite", "database": ":memory:"}`,
			Config{DriverName: "sqlite", Database: ":memory:", LazySchemaCreate: true}, ""},
		{"postgresql", `{"log_sql": true, "drivername": "postgresql+psycopg2", "database": "mlos_bench", "username": "postgres",
			"password": "pw", "host": "localhost", "port": 5432, "query": {"sslmode": "disable", "connect_timeout": 5}}`,
			Config{DriverName: "postgresql+psycopg2", Database: "mlos_bench", Username: "postgres", Password: "pw", Host: "localhost",
				Port: 5432, LogSQL: true, Query: map[string]string{"sslmode": "disable", "connect_timeout": "5"}}, ""},
		{"port string", `{"drivername": "postgresql", "port": "6543"}`, Config{DriverName: "postgresql", Port: 6543}, ""},
		{"unknown key", `{"drivername": "sqlite", "databse": "x"}`, Config{}, `unknown key "databse"`},
		{"bad port", `{"drivername": "postgresql", "port": "http"}`, Config{}, "port: want a port number"},
		{"port range", `{"drivername": "postgresql", "port": 70000}`, Config{}, "port: want a port number"},
		{"port type", `{"drivername": "postgresql", "port": [1]}`, Config{}, "port: want a number"},
		{"query type", `{"drivername": "postgresql", "query": {"a": [1]}}`, Config{}, "query.a"},
		{"type", `{"drivername": 3}`, Config{}, "storage config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Config
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b *slog.Logger) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigHidesPassword(t *testing.T) {
	c := Config{DriverName: "postgresql", Username: "bench", Password: "hunter2", Host: "db", Port: 5432, Database: "b",
		Query: map[string]string{"sslmode": "require"}}
	if got, want := c.String(), "postgresql://bench:xxxxx@db:5432/b?sslmode=require"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("open", "storage", c)
	outs := []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c), logs.String()}
	for _, out := range outs {
		if strings.Contains(out, "hunter2") {
			t.Errorf("password shown: %s", out)
		}
	}
	if s := (Config{DriverName: "sqlite", Database: "x.db"}).String(); s != "sqlite:///x.db" {
		t.Errorf("sqlite String() = %q", s)
	}
	my := Config{DriverName: "mysql+mysqlconnector", Username: "root", Password: "hunter2", Host: "localhost", Port: 3306, Database: "mlos_bench"}
	if got, want := my.String(), "mysql://root:xxxxx@localhost:3306/mlos_bench"; got != want {
		t.Errorf("mysql String() = %q, want %q", got, want)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		in   string
		want Config
	}{
		{"sqlite:///bench.sqlite", Config{DriverName: "sqlite", Database: "bench.sqlite"}},
		{"sqlite:////abs/path.db", Config{DriverName: "sqlite", Database: "/abs/path.db"}},
		{"sqlite://", Config{DriverName: "sqlite", Database: ":memory:"}},
		{"sqlite:///:memory:", Config{DriverName: "sqlite", Database: ":memory:"}},
		{"sqlite:///x.db?synchronous=FULL", Config{DriverName: "sqlite", Database: "x.db", Query: map[string]string{"synchronous": "FULL"}}},
		{"postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable",
			Config{DriverName: "postgres", Host: "127.0.0.1", Port: 5433, Username: "postgres", Database: "postgres", Query: map[string]string{"sslmode": "disable"}}},
		{"postgresql+psycopg2://u:p%40ss@db/bench", Config{DriverName: "postgresql+psycopg2", Host: "db", Username: "u", Password: "p@ss", Database: "bench"}},
		{"mysql://bench:s%2Fcret@127.0.0.1:3306/mlos_bench?tls=preferred",
			Config{DriverName: "mysql", Host: "127.0.0.1", Port: 3306, Username: "bench", Password: "s/cret", Database: "mlos_bench", Query: map[string]string{"tls": "preferred"}}},
	}
	for _, tc := range tests {
		got, err := ParseURL(tc.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b *slog.Logger) bool { return a == b })); diff != "" {
			t.Errorf("ParseURL(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	bad := []struct{ in, err string }{
		{"bench.sqlite", "no scheme"},
		{"mssql://root:hunter2@db/x", "unsupported storage driver"},
		{"mysql://root:hunter2@db:port/x", "not a URL"},
		{"sqlite://relative.db", "three slashes"},
		{"postgresql://u:hunter2@db:port/x", "not a URL"},
	}
	for _, tc := range bad {
		_, err := ParseURL(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseURL(%q): got %v, want an error containing %q", tc.in, err, tc.err)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) error shows the password: %v", tc.in, err)
		}
	}
}

func TestOpenWithoutBackend(t *testing.T) {
	// This package's tests do not link storage/sql.
	_, err := Open(context.Background(), DefaultConfig())
	if !errors.Is(err, ErrUnsupportedDriver) || !strings.Contains(err.Error(), "storage/sql") {
		t.Errorf("Open without a registered backend: %v", err)
	}
	_, err = Open(context.Background(), Config{DriverName: "duckdb"})
	if !errors.Is(err, ErrUnsupportedDriver) || !strings.Contains(err.Error(), `"duckdb"`) {
		t.Errorf("Open(duckdb): %v", err)
	}
}
