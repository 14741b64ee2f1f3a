package p

import (
	"os"
	"strconv"
	"testing"
)

func init() {
	if f, err := strconv.ParseFloat(os.Getenv("FACTOR"), 64); err == nil {
		Factor = f
	}
}

var sink int

func BenchmarkSort(b *testing.B) {
	for range b.N {
		sink += Work(2000)
	}
}

func BenchmarkSame(b *testing.B) {
	for range b.N {
		sink += Same(20000)
	}
}

func BenchmarkAlloc(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		s := make([]byte, 1024)
		sink += len(s)
	}
}
