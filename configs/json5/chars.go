package json5

import (
	"unicode"
	"unicode/utf8"
)

const utf8RuneError = utf8.RuneError

func decodeRune(b []byte) (rune, int) { return utf8.DecodeRune(b) }

func isUnicodeZs(r rune) bool { return r > 0x7f && unicode.Is(unicode.Zs, r) }

// isIDStart reports whether r may start an ECMAScript IdentifierName.
func isIDStart(r rune) bool {
	if r < 0x80 {
		return r == '$' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
	}
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo, unicode.Nl)
}

// isIDPart reports whether r may continue an ECMAScript IdentifierName.
func isIDPart(r rune) bool {
	if r < 0x80 {
		return isIDStart(r) || (r >= '0' && r <= '9')
	}
	return isIDStart(r) || r == 0x200C || r == 0x200D ||
		unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc)
}
