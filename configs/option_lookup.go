package configs

// IsOption reports whether name (e.g. "--storage") is one of the
// launcher options of bench run.
func IsOption(name string) bool { return findOption(name) != nil }
