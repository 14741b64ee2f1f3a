package ci

import "os"

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func readFile(p string) ([]byte, error) { return os.ReadFile(p) }
func removeFile(p string)               { os.Remove(p) }
func writeFile(p, s string)             { os.WriteFile(p, []byte(s), 0o644) }
