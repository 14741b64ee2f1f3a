package serve

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// RedactURL returns u for a log line or an error: user information
// ("https://TOKEN@host" or "user:password@") and the values of the query
// ("?token=...") replaced by [REDACTED], the fragment dropped. A URL that
// does not parse is not shown at all.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "[unreadable URL]"
	}
	out := *p
	out.User = nil
	out.Fragment, out.RawFragment = "", ""
	userinfo := ""
	if p.User != nil {
		userinfo = "[REDACTED]@"
	}
	if p.RawQuery != "" {
		q := p.Query()
		parts := make([]string, 0, len(q))
		for _, k := range slices.Sorted(maps.Keys(q)) {
			parts = append(parts, url.QueryEscape(k)+"=[REDACTED]")
		}
		if len(parts) == 0 {
			parts = append(parts, "[REDACTED]")
		}
		out.RawQuery = ""
		s := out.String()
		return withUser(s, out.Scheme, userinfo) + "?" + strings.Join(parts, "&")
	}
	return withUser(out.String(), out.Scheme, userinfo)
}

func withUser(s, scheme, userinfo string) string {
	if userinfo == "" || scheme == "" {
		return s
	}
	return strings.Replace(s, scheme+"://", scheme+"://"+userinfo, 1)
}

// baseURL returns the server URL that requests are made to: u without
// user information, query or fragment (the token comes from the token
// file, never from the URL), and whether anything was dropped.
func baseURL(u string) (string, bool, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", false, errors.New("the server URL does not parse: " + RedactURL(u))
	}
	dropped := p.User != nil || p.RawQuery != "" || p.ForceQuery || p.Fragment != ""
	p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
	return strings.TrimRight(p.String(), "/"), dropped, nil
}

// redactErr replaces the URL of a failed request's error (*url.Error
// names it) with RedactURL's.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = RedactURL(ue.URL)
	}
	return err
}
