package launcher

// The execution engines bench knows (each registers its classes with the
// engines package).
import (
	_ "github.com/benchtune/bench/engines"
	_ "github.com/benchtune/bench/engines/awsbatch" // AWS Batch; the s3:// scheme of requests and outcomes
)
