package ci

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// ghEscape escapes a GitHub Actions workflow command's message.
func ghEscape(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghEscapeProp escapes a workflow command's property value.
func ghEscapeProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// WriteGitHubAnnotations writes GitHub Actions workflow commands, one per
// row that needs attention: ::error for a regression, ::warning for
// missing data or too few samples, ::notice for an improvement. Each
// names the metric, the configuration and the change.
func (rep *Report) WriteGitHubAnnotations(w io.Writer, title string) {
	for _, r := range rep.Rows {
		var kind string
		switch r.Verdict {
		case Regression:
			kind = "error"
		case Missing, Insufficient:
			kind = "warning"
		case Improved:
			kind = "notice"
		default:
			continue
		}
		ch := "?"
		if r.Change != nil {
			ch = FormatChange(*r.Change)
		}
		p := "-"
		if r.P != nil {
			p = fmtP(*r.P)
		}
		t := fmt.Sprintf("%s: %s %s [%s]", title, strings.ToUpper(r.Verdict), r.Metric, r.Config)
		msg := fmt.Sprintf("%s [%s] changed %s (%s, p=%s, n=%d+%d): %s", r.Metric, r.Config, ch, intervalCell(r), p, r.Base.N, r.Cur.N, r.Reason)
		fmt.Fprintf(w, "::%s title=%s::%s\n", kind, ghEscapeProp(t), ghEscape(msg))
	}
}

// Notable tells whether a row is both significant and beyond its
// threshold: a regression, or a significant improvement larger than the
// limit on the other side (e.g. -12% with max_increase 5%).
func (r Row) Notable() bool {
	if r.Verdict == Regression {
		return true
	}
	if r.Verdict != Improved || r.Change == nil || r.Rule == nil {
		return false
	}
	lim := math.Inf(1)
	if r.Rule.MaxIncrease != nil {
		lim = *r.Rule.MaxIncrease
	}
	if r.Rule.MaxDecrease != nil {
		lim = math.Min(lim, *r.Rule.MaxDecrease)
	}
	return math.Abs(*r.Change) > lim
}

// WritePRComment writes a Markdown pull/merge request comment: the rows
// that are both significant and beyond their threshold in a table, every
// other row folded in a <details> block.
func (rep *Report) WritePRComment(w io.Writer, title string) error {
	var notable, other []Row
	for _, r := range rep.Rows {
		if r.Notable() || r.Verdict == Missing || r.Verdict == Insufficient {
			notable = append(notable, r)
		} else {
			other = append(other, r)
		}
	}
	c := rep.Counts()
	fmt.Fprintf(w, "### %s: %s %s\n\n", title, verdictIcon[rep.Verdict], strings.ToUpper(rep.Verdict))
	fmt.Fprintf(w, "**%s** vs baseline **%s**: %d regression(s), %d improvement(s), %d unchanged or within threshold, %d insufficient, %d missing.\n\n",
		mdEsc(rep.Current), mdEsc(rep.Baseline), c[Regression], c[Improved], c[Pass], c[Insufficient], c[Missing])
	table := func(rows []Row) {
		fmt.Fprintln(w, "| | configuration | metric | baseline | current | change | 95% CI | p | threshold |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
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
	}
	if len(notable) == 0 {
		fmt.Fprintln(w, "No change is both significant and beyond its threshold.")
	} else {
		fmt.Fprintln(w, "Changes that are significant and beyond their threshold (and rows that could not be decided):")
		fmt.Fprintln(w)
		table(notable)
	}
	if len(other) > 0 {
		fmt.Fprintf(w, "\n<details><summary>%d other row(s): not significant, or within the threshold</summary>\n\n", len(other))
		table(other)
		fmt.Fprintln(w, "\n</details>")
	}
	fmt.Fprintf(w, "\n<sub>alpha = %s; %s</sub>\n", fmtP(rep.Alpha), mdEsc(rep.Method))
	return nil
}
