package launcher

// The execution engines bench knows (each registers its classes with the
// engines package).
import (
	_ "github.com/benchtune/bench/engines"
)
