package main

import (
	"bytes"
	"strings"
	"testing"
)

// -noise-kernel additive changes the noise-aware methods' model (another
// reported configuration on Hartmann6), not naive's; additive10 leaves
// the functions below 10 dimensions to the Matérn kernel; unknown values
// and the additive kernel with a local search are refused.
func TestNoiseKernelAdditive(t *testing.T) {
	defer func(k, s string) { noiseKernel, noiseSearch = k, s }(noiseKernel, noiseSearch)
	regret := func(kernel, method string) string {
		out, perSeed := noiseRegret(t, method, "-noise", "0.1", "-funcs", "hartmann6", "-seeds", "2", "-budget", "24", "-noise-kernel", kernel, "-noise-methods", method)
		if strings.Contains(out, "noise-aware kernel") != (kernel != "matern") {
			t.Errorf("%s: the output names the kernel only when it is not the default:\n%s", kernel, out)
		}
		return perSeed
	}
	if a, b := regret("additive", "aware"), regret("matern", "aware"); a == b {
		t.Errorf("aware: additive and matern both reported regret %s", a)
	}
	if a, b := regret("additive10", "aware"), regret("matern", "aware"); a != b {
		t.Errorf("aware in 6-D: additive10 %s, matern %s: want the Matérn kernel below 10 dimensions", a, b)
	}
	if a, b := regret("additive", "naive"), regret("matern", "naive"); a != b {
		t.Errorf("naive: additive %s, matern %s: want today's GP either way", a, b)
	}
	for _, args := range [][]string{
		{"-noise-kernel", "rbf"},
		{"-noise-kernel", "additive", "-noise-search", "local"},
	} {
		var out bytes.Buffer
		err := run(append([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "1", "-budget", "20"}, args...), &out)
		if err == nil || !strings.Contains(err.Error(), "-noise-kernel") {
			t.Errorf("%v: error %v, want one naming -noise-kernel", args, err)
		}
		noiseSearch = "global"
	}
}
