package main

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestParseLSPrior(t *testing.T) {
	if p, set, err := parseLSPrior(""); err != nil || set || p != defaultLSPrior {
		t.Errorf(`"": %v, %v, %v; want the default, not set`, p, set, err)
	}
	p, set, err := parseLSPrior("hvarfner")
	if err != nil || !set || math.Abs(p.perRootD-4.113) > 1e-3 || math.Abs(p.sd-1.732) > 1e-3 || p.hi != 1000 {
		t.Errorf("hvarfner: %v, %v, %v", p, set, err)
	}
	p, set, err = parseLSPrior("median=0.5,sd=2")
	if err != nil || !set || p.perRootD != 0.15 || p.sd != 2 || p.hi != 10 {
		t.Errorf("median=0.5,sd=2: %v, %v, %v", p, set, err)
	}
	for _, bad := range []string{"long", "median=0", "median=-1", "width=2", "hi=0.005", "sd=x"} {
		if _, _, err := parseLSPrior(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// -ls-prior changes the noise benchmark's GPs, says so in the output, and
// refuses a kernel it does not combine with.
func TestLSPriorFlag(t *testing.T) {
	defer func(s string) { lsPriorArg = s }(lsPriorArg)
	base := []string{"-noise", "0.05", "-funcs", "branin", "-seeds", "2", "-budget", "30", "-noise-methods", "noisefree,aware"}
	var plain, longer bytes.Buffer
	if err := run(base, &plain); err != nil {
		t.Fatal(err)
	}
	if err := run(append(base, "-ls-prior", "median=8"), &longer); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(longer.String(), "lengthscale prior (every GP): log-normal, median 2.4·√D, sd 1, bounds [0.01, 10]") {
		t.Errorf("output with -ls-prior median=8 does not name the prior:\n%s", longer.String())
	}
	if perSeedLines(plain.String()) == perSeedLines(longer.String()) {
		t.Errorf("-ls-prior median=8 changed no regret:\n%s", longer.String())
	}
	if err := run(append(base, "-ls-prior", "hvarfner", "-noise-kernel", "additive"), &bytes.Buffer{}); err == nil {
		t.Error("-ls-prior with -noise-kernel additive: no error")
	}
	if err := run(append(base, "-ls-prior", "width=3"), &bytes.Buffer{}); err == nil {
		t.Error("-ls-prior width=3: no error")
	}
	defer func(s string) { gpWarp = s }(gpWarp)
	var unwarped bytes.Buffer
	if err := run(append(base, "-gp-warp", "off"), &unwarped); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(unwarped.String(), "output warping (every GP): off") || perSeedLines(plain.String()) == perSeedLines(unwarped.String()) {
		t.Errorf("-gp-warp off: not named or no regret changed:\n%s", unwarped.String())
	}
	if err := run(append(base, "-gp-warp", "maybe"), &bytes.Buffer{}); err == nil {
		t.Error("-gp-warp maybe: no error")
	}
}

// perSeedLines keeps the "per seed" parts of -noise-methods output.
func perSeedLines(s string) string {
	return strings.Join(regexp.MustCompile(`per seed .*`).FindAllString(s, -1), "\n")
}

// -acq-diag's runs are the noise-free GP's: the regret it prints per seed
// is -noise-methods noisefree's, seed by seed.
func TestAcqDiagIsTheNoiseFreeRun(t *testing.T) {
	defer func(b bool) { acqDiag = b }(acqDiag)
	base := []string{"-noise", "0.05", "-funcs", "hartmann6", "-seeds", "3", "-budget", "25"}
	var ref, diag bytes.Buffer
	if err := run(append(base, "-noise-methods", "noisefree"), &ref); err != nil {
		t.Fatal(err)
	}
	if err := run(append(base, "-acq-diag"), &diag); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`; per seed (.*)`).FindStringSubmatch(ref.String())
	if m == nil {
		t.Fatalf("no per-seed line:\n%s", ref.String())
	}
	var got []string
	for _, r := range regexp.MustCompile(`seed \d+: regret (\S+),`).FindAllStringSubmatch(diag.String(), -1) {
		got = append(got, r[1])
	}
	if strings.Join(got, " ") != strings.TrimSpace(m[1]) {
		t.Errorf("acq-diag regrets %v, noisefree per seed %q\n%s", got, m[1], diag.String())
	}
	if !strings.Contains(diag.String(), "global basin reached (regret < 1e-3): ") {
		t.Errorf("no summary:\n%s", diag.String())
	}
	if err := run([]string{"-noise", "0.05", "-funcs", "branin", "-seeds", "1", "-budget", "25", "-acq-diag"}, &bytes.Buffer{}); err == nil {
		t.Error("-acq-diag on branin: no error")
	}
}

func TestParseAcqEffort(t *testing.T) {
	if r, s, g, err := parseAcqEffort(""); r != 0 || s != 0 || g != 0 || err != nil {
		t.Errorf(`"": %d, %d, %d, %v`, r, s, g, err)
	}
	if r, s, g, err := parseAcqEffort("2048, 10"); r != 2048 || s != 10 || g != 0 || err != nil {
		t.Errorf(`"2048, 10": %d, %d, %d, %v`, r, s, g, err)
	}
	if r, s, g, err := parseAcqEffort("256,3,5"); r != 256 || s != 3 || g != 5 || err != nil {
		t.Errorf(`"256,3,5": %d, %d, %d, %v`, r, s, g, err)
	}
	for _, bad := range []string{"2048", "0,3", "256,-1", "a,b", "1,2,-3", "1,2,3,4"} {
		if _, _, _, err := parseAcqEffort(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
