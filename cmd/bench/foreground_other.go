//go:build !unix

package main

import "os"

// inForeground reports true: without job control there is no background
// process group to stay out of.
func inForeground(*os.File) bool { return true }
