package configs

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMergeParameters(t *testing.T) {
	dest := map[string]any{"max_suggestions": int64(100), "seed": int64(42)}
	src := map[string]any{"max_suggestions": int64(10), "unrelated": "x", "password": "p"}
	if err := MergeParameters(dest, src, []string{"password"}, "storage"); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max_suggestions": int64(10), "seed": int64(42), "password": "p"}
	if diff := cmp.Diff(want, dest); diff != "" {
		t.Error(diff)
	}
	err := MergeParameters(map[string]any{}, src, []string{"script_password"}, `environment "x"`)
	var mp *MissingParamError
	if !errors.As(err, &mp) || mp.Param != "script_password" || !strings.Contains(err.Error(), `environment "x"`) {
		t.Errorf("got %v, want a MissingParamError naming the environment and the parameter", err)
	}
}

func TestPreprocessDynamicKeepsType(t *testing.T) {
	dest := NewOrdered()
	dest.Set("port", "$parent_port")
	dest.Set("name", "$missing")
	dest.Set("label", "prefix-$parent_port") // only whole-value references are replaced
	PreprocessDynamic(dest, map[string]any{"parent_port": int64(5432)})
	want := map[string]any{"port": int64(5432), "name": "$missing", "label": "prefix-$parent_port"}
	if diff := cmp.Diff(want, dest.Map()); diff != "" {
		t.Error(diff)
	}
}

func TestExpandGroups(t *testing.T) {
	m := map[string]any{"linux": []any{"kernel", "swap"}, "db": "mysql"}
	got, err := ExpandGroups([]string{"$linux", "plain", "$db"}, m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kernel", "swap", "plain", "mysql"}, got); diff != "" {
		t.Error(diff)
	}
	if _, err := ExpandGroups([]string{"$nope"}, m); err == nil || !strings.Contains(err.Error(), "$db, $linux") {
		t.Errorf("unknown reference: got %v", err)
	}
	if _, err := ExpandGroups([]string{"$x"}, nil); err == nil || !strings.Contains(err.Error(), "no tunable_params_map") {
		t.Errorf("no map: got %v", err)
	}
}

func TestSanitize(t *testing.T) {
	in := map[string]any{"password": "hunter2", "user": "bob", "nested": map[string]any{"storageAccountKey": "k", "x": int64(1)}, "api_token": "t"}
	got := Sanitize(in)
	want := map[string]any{"password": "[REDACTED]", "user": "bob", "nested": map[string]any{"storageAccountKey": "[REDACTED]", "x": int64(1)}, "api_token": "[REDACTED]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

// Command-line globals are text or numbers; a config key's own type wins
// where the text spells a value of it (--ssh_insecure_ignore_host_key true).
func TestMergeParametersCoercesToKeyType(t *testing.T) {
	dest := map[string]any{
		"insecure": false, "port": int64(22), "ratio": 0.5, "name": "x", "unset": nil, "flag2": true,
		"flag3": false, "flag4": true,
	}
	src := map[string]any{
		"insecure": "true", "port": "2222", "ratio": "0.25", "name": int64(7), "unset": "true", "flag2": "maybe",
		"flag3": " Yes ", "flag4": "off", // decode.Bool's words
	}
	if err := MergeParameters(dest, src, nil, ""); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"insecure": true, "port": int64(2222), "ratio": 0.25, "name": int64(7), "unset": "true", "flag2": "maybe",
		"flag3": true, "flag4": false,
	}
	if diff := cmp.Diff(want, dest); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	// const_args and environment parameters reach scripts as text: they
	// keep the global's value as it is, as in mlos_bench.
	o := NewOrdered()
	o.Set("enabled", true)
	if err := MergeOrdered(o, map[string]any{"enabled": "FALSE"}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if v, _ := o.Get("enabled"); v != "FALSE" {
		t.Errorf("const_args: enabled = %#v, want the text unchanged", v)
	}
	p := map[string]any{"version": 1.0}
	MergeVerbatim(p, map[string]any{"version": "1.10"})
	if p["version"] != "1.10" {
		t.Errorf("parameters: version = %#v, want the text unchanged", p["version"])
	}
}
