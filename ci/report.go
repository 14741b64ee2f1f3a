package ci

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func spread(s Side) string {
	if s.N == 0 {
		return "-"
	}
	v := FormatValue(s.Median)
	if s.Spread == nil {
		return v + " ± ∞"
	}
	return v + " ± " + strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.0f", *s.Spread*100), ".0"), ".") + "%"
}

// changeCell writes the change as benchstat does: "+5.12%" when
// significant, "~" when not.
func changeCell(r Row) string {
	if r.Change == nil || r.P == nil {
		return "?"
	}
	if !r.Significant {
		return "~"
	}
	return FormatChange(*r.Change)
}

func intervalCell(r Row) string {
	if r.CILow == nil || r.CIHigh == nil {
		return "-"
	}
	return "[" + FormatChange(*r.CILow) + ", " + FormatChange(*r.CIHigh) + "]"
}

func pCell(r Row) string {
	if r.P == nil {
		return fmt.Sprintf("(n=%d+%d)", r.Base.N, r.Cur.N)
	}
	return fmt.Sprintf("(p=%s n=%d+%d)", fmtP(*r.P), r.Base.N, r.Cur.N)
}

// WriteText writes the comparison as a benchstat-like table, one block
// per configuration: median ± spread of each side, the change ("~" when
// not significant), its 95% interval and the p-value.
func (rep *Report) WriteText(w io.Writer, verdicts bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	last := "\x00"
	for _, r := range rep.Rows {
		if r.Config+r.Key != last {
			if last != "\x00" {
				fmt.Fprintln(tw)
			}
			last = r.Config + r.Key
			fmt.Fprintf(tw, "%s\t%s\t%s\tvs base\t95%% CI\t\n", r.Config, rep.Baseline, rep.Current)
		}
		extra := ""
		if verdicts {
			extra = strings.ToUpper(r.Verdict)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Metric, spread(r.Base), spread(r.Cur), changeCell(r), intervalCell(r), pCell(r), extra)
	}
	if rep.Method == MethodPaired || strings.HasPrefix(rep.Method, MethodPaired) {
		fmt.Fprintf(tw, "\n~: not significant at alpha = %s (exact signed-rank test of the A/B blocks); ±: 95%% CI of the median; vs base: median of the per-block ratios - 1; CI: bootstrap 95%% CI of it\n", fmtP(rep.Alpha))
	} else {
		fmt.Fprintf(tw, "\n~: not significant at alpha = %s (two-sided Mann–Whitney U); ±: 95%% CI of the median; CI: bootstrap 95%% CI of the change of medians\n", fmtP(rep.Alpha))
	}
	return tw.Flush()
}

// WriteVerdicts writes one line per row (the stderr summary of bench ci)
// and a last line with the overall verdict.
func (rep *Report) WriteVerdicts(w io.Writer, prefix string) {
	for _, r := range rep.Rows {
		ch := "?"
		if r.Change != nil {
			ch = FormatChange(*r.Change)
		}
		p := "-"
		if r.P != nil {
			p = fmtP(*r.P)
		}
		fmt.Fprintf(w, "%s%-12s %s [%s]: %s (%s, p=%s, n=%d+%d): %s\n", prefix, strings.ToUpper(r.Verdict), r.Metric, r.Config,
			ch, intervalCell(r), p, r.Base.N, r.Cur.N, r.Reason)
	}
	fmt.Fprintf(w, "%sverdict: %s\n", prefix, strings.ToUpper(rep.Verdict))
}

// Counts counts the rows by verdict.
func (rep *Report) Counts() map[string]int {
	c := map[string]int{}
	for _, r := range rep.Rows {
		c[r.Verdict]++
	}
	return c
}

var verdictIcon = map[string]string{Pass: "✅", Improved: "🟢", Regression: "❌", Insufficient: "⚠️", Missing: "⚠️"}

// WriteMarkdown writes a summary fit for $GITHUB_STEP_SUMMARY.
func (rep *Report) WriteMarkdown(w io.Writer, title string) error {
	c := rep.Counts()
	fmt.Fprintf(w, "### %s: %s %s\n\n", title, verdictIcon[rep.Verdict], strings.ToUpper(rep.Verdict))
	fmt.Fprintf(w, "Baseline **%s**, current **%s**: %d regression(s), %d improvement(s), %d pass, %d insufficient, %d missing.\n\n",
		mdEsc(rep.Baseline), mdEsc(rep.Current), c[Regression], c[Improved], c[Pass], c[Insufficient], c[Missing])
	fmt.Fprintln(w, "| | configuration | metric | baseline | current | change | 95% CI | p | threshold |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rep.Rows {
		p := "-"
		if r.P != nil {
			p = fmtP(*r.P)
		}
		th := ""
		if r.Rule != nil {
			th = r.Rule.String()
		}
		fmt.Fprintf(w, "| %s | %s | `%s` | %s | %s | %s | %s | %s | %s |\n", verdictIcon[r.Verdict], mdEsc(r.Config), r.Metric,
			spread(r.Base), spread(r.Cur), changeCell(r), intervalCell(r), p, th)
	}
	fmt.Fprintf(w, "\n<sub>%s; alpha = %s. `~`: not significant.</sub>\n", mdEsc(Method), fmtP(rep.Alpha))
	return nil
}

func mdEsc(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML: one test case per metric and
// configuration; a regression is a failure, missing data an error, too
// few samples an error (or skipped with allowInsufficient).
func (rep *Report) WriteJUnit(w io.Writer, suite string, allowInsufficient bool) error {
	s := junitSuite{Name: suite}
	for _, r := range rep.Rows {
		ch := "?"
		if r.Change != nil {
			ch = FormatChange(*r.Change)
		}
		p := "-"
		if r.P != nil {
			p = fmtP(*r.P)
		}
		detail := fmt.Sprintf("baseline %s, current %s, change %s %s, p=%s, n=%d+%d: %s",
			spread(r.Base), spread(r.Cur), ch, intervalCell(r), p, r.Base.N, r.Cur.N, r.Reason)
		c := junitCase{Name: r.Metric, Classname: suite + "." + r.Config, SystemOut: detail}
		msg := &junitMessage{Message: r.Reason, Type: r.Verdict, Text: detail}
		switch r.Verdict {
		case Regression:
			c.Failure = msg
			s.Failures++
		case Missing:
			c.Error = msg
			s.Errors++
		case Insufficient:
			if allowInsufficient {
				c.Skipped = msg
				s.Skipped++
			} else {
				c.Error = msg
				s.Errors++
			}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	doc := junitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteJSON writes the report as JSON (NaN medians as null).
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep.jsonSafe())
}

// jsonSafe replaces NaN medians (no samples), which JSON cannot hold.
func (rep *Report) jsonSafe() any {
	type side struct {
		N      int       `json:"n"`
		Median *float64  `json:"median"`
		Values []float64 `json:"values"`
		Spread *float64  `json:"spread,omitempty"`
	}
	conv := func(s Side) side {
		out := side{N: s.N, Values: s.Values, Spread: s.Spread}
		if s.N > 0 {
			out.Median = ptr(s.Median)
		}
		if out.Values == nil {
			out.Values = []float64{}
		}
		return out
	}
	type row struct {
		Row
		Base side `json:"baseline"`
		Cur  side `json:"current"`
	}
	rows := make([]row, len(rep.Rows))
	for i, r := range rep.Rows {
		rows[i] = row{Row: r, Base: conv(r.Base), Cur: conv(r.Cur)}
	}
	return struct {
		*Report
		Rows []row `json:"rows"`
	}{rep, rows}
}
