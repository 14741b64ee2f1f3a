// Package localtree walks a local folder for an upload to a file share:
// what every FileShare implementation does the same way.
package localtree

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
)

// Walk visits the folder root, to be uploaded to the remote folder rel
// (slash-separated, "" for the share's root). dir is called for root and,
// when recursive, for every sub-folder; file for every regular file (and
// link to a file). Links to folders and special files are skipped with a
// warning. The remote paths passed on are rel joined with the path below
// root. what names the operation in errors ("S3 upload").
func Walk(ctx context.Context, root, rel string, recursive bool, what string, dir, file func(localPath, remoteRel string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sub, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		subRel := path.Join(rel, filepath.ToSlash(sub))
		if subRel == "." {
			subRel = ""
		}
		typ := d.Type()
		if typ&fs.ModeSymlink != 0 {
			st, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("%s: following the link %s: %w", what, p, err)
			}
			if st.IsDir() {
				slog.Warn(what+": skipping a link to a folder (links to folders are not followed)", "path", p)
				return nil
			}
			typ = st.Mode().Type()
		}
		switch {
		case d.IsDir():
			if p != root && !recursive {
				return fs.SkipDir
			}
			return dir(p, subRel)
		case typ.IsRegular():
			return file(p, subRel)
		default:
			slog.Warn(what+": skipping a file that is neither regular nor a folder", "path", p, "type", typ.String())
			return nil
		}
	})
}
