package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseGPHyper(t *testing.T) {
	for _, s := range []string{"", "map"} {
		if _, set, err := parseGPHyper(s); err != nil || set {
			t.Errorf("%q: set %v, %v; want the MAP fit", s, set, err)
		}
	}
	h, set, err := parseGPHyper("mcmc=16")
	if err != nil || !set || h != (gpHyper{n: 16, burn0: 50, burn: 0, thin: 1}) {
		t.Errorf("mcmc=16: %+v, %v, %v", h, set, err)
	}
	h, set, err = parseGPHyper("mcmc=8, burn0=20,burn=2,thin=3")
	if err != nil || !set || h != (gpHyper{n: 8, burn0: 20, burn: 2, thin: 3}) {
		t.Errorf("mcmc=8,burn0=20,burn=2,thin=3: %+v, %v, %v", h, set, err)
	}
	for _, bad := range []string{"mcmc", "mcmc=0", "mcmc=-2", "mcmc=4,thin=0", "mcmc=x", "burn=3", "mcmc=4,steps=2"} {
		if _, _, err := parseGPHyper(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// -gp-hyper changes the noise benchmark's GPs (noise-free and noise-aware),
// says so in the output, is deterministic, and refuses bad values.
func TestGPHyperFlag(t *testing.T) {
	defer func(s string) { gpHyperArg = s }(gpHyperArg)
	base := []string{"-noise", "0.05", "-funcs", "branin", "-seeds", "2", "-budget", "25", "-noise-methods", "noisefree,aware"}
	var plain, mc, again bytes.Buffer
	if err := run(base, &plain); err != nil {
		t.Fatal(err)
	}
	gpHyperArg = ""
	if err := run(append(base, "-gp-hyper", "mcmc=3,burn0=5"), &mc); err != nil {
		t.Fatal(err)
	}
	gpHyperArg = ""
	if err := run(append(base, "-gp-hyper", "mcmc=3,burn0=5"), &again); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mc.String(), "hyperparameters (every GP): EI integrated over 3 slice samples (burn-in 5 sweeps") {
		t.Errorf("output with -gp-hyper does not name it:\n%s", mc.String())
	}
	if perSeedLines(plain.String()) == perSeedLines(mc.String()) {
		t.Errorf("-gp-hyper changed no regret:\n%s", mc.String())
	}
	if perSeedLines(mc.String()) != perSeedLines(again.String()) {
		t.Errorf("-gp-hyper is not deterministic:\n%s\n%s", mc.String(), again.String())
	}
	for _, bad := range []string{"mcmc=0", "hmc=4"} {
		gpHyperArg = ""
		if err := run(append(base, "-gp-hyper", bad), &bytes.Buffer{}); err == nil {
			t.Errorf("-gp-hyper %s: no error", bad)
		}
	}
}
