// Command shipit is the quickstart's workload: it compresses a
// deterministic 48 MiB mix of text-like and binary data in blocks, with a
// number of parallel workers, and reports how long shipping the data over
// a network link would take: the compression time plus the time to send
// the compressed bytes. Faster compression sends more bytes; stronger
// compression costs CPU time — the tunables trade one for the other.
//
//	shipit -level 6 -block-kb 256 -workers 1 -format gzip -link-mbps 800 \
//	       -results results.csv -telemetry telemetry.csv
package main

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	level := flag.Int("level", 6, "compression level: 0 (store) to 9, or -2 (Huffman only)")
	blockKB := flag.Int("block-kb", 256, "block size in KiB; blocks are compressed independently")
	workers := flag.Int("workers", 1, "parallel compression workers")
	format := flag.String("format", "gzip", "gzip, zlib or flate")
	sizeMB := flag.Int("size-mb", 48, "amount of data in MiB")
	linkMbps := flag.Float64("link-mbps", 800, "network link speed in megabits per second")
	results := flag.String("results", "results.csv", "CSV file for the results (metric,value)")
	telemetry := flag.String("telemetry", "", "CSV file for per-block telemetry (timestamp,metric,value)")
	flag.Parse()
	if err := run(*level, *blockKB, *workers, *format, *sizeMB, *linkMbps, *results, *telemetry); err != nil {
		fmt.Fprintln(os.Stderr, "shipit:", err)
		os.Exit(1)
	}
}

// data returns size bytes: runs of words from a small vocabulary (like
// logs) interleaved with random bytes (like already-compressed media).
func data(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"GET", "POST", "/api/v1/items", "200", "404", "user", "session", "latency_ms", "cache", "miss", "hit", "region=eu", "region=us", "ok", "error", "retry", "timeout", "INFO", "WARN", "DEBUG"}
	var b bytes.Buffer
	b.Grow(size)
	for b.Len() < size {
		if rng.IntN(10) < 8 {
			for i := 0; i < 40; i++ {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
				if rng.IntN(8) == 0 {
					b.WriteString(strconv.Itoa(rng.IntN(100000)))
					b.WriteByte('\n')
				}
			}
		} else {
			buf := make([]byte, 512)
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			b.Write(buf)
		}
	}
	return b.Bytes()[:size]
}

func newWriter(format string, w io.Writer, level int) (io.WriteCloser, error) {
	switch format {
	case "gzip":
		return gzip.NewWriterLevel(w, level)
	case "zlib":
		return zlib.NewWriterLevel(w, level)
	case "flate":
		return flate.NewWriter(w, level)
	}
	return nil, fmt.Errorf("unknown format %q (want gzip, zlib or flate)", format)
}

type blockResult struct {
	size int
	took time.Duration
	end  time.Time
	err  error
}

func run(level, blockKB, workers int, format string, sizeMB int, linkMbps float64, resultsPath, telemetryPath string) error {
	if blockKB < 1 || workers < 1 || sizeMB < 1 || linkMbps <= 0 {
		return fmt.Errorf("block-kb, workers, size-mb and link-mbps must be positive")
	}
	if level < -2 || level > 9 {
		return fmt.Errorf("level %d out of range -2..9", level)
	}
	input := data(sizeMB << 20)
	block := blockKB << 10
	var blocks [][]byte
	for off := 0; off < len(input); off += block {
		blocks = append(blocks, input[off:min(off+block, len(input))])
	}
	out := make([]blockResult, len(blocks))
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for i := range jobs {
				t0 := time.Now()
				buf.Reset()
				zw, err := newWriter(format, &buf, level)
				if err == nil {
					if _, err = zw.Write(blocks[i]); err == nil {
						err = zw.Close()
					}
				}
				out[i] = blockResult{size: buf.Len(), took: time.Since(t0), end: time.Now(), err: err}
			}
		}()
	}
	for i := range blocks {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)

	compressed := 0
	for _, r := range out {
		if r.err != nil {
			return r.err
		}
		compressed += r.size
	}
	sendSeconds := float64(compressed) * 8 / (linkMbps * 1e6)
	total := elapsed.Seconds() + sendSeconds

	f, err := os.Create(resultsPath)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"metric", "value"})
	for _, kv := range [][2]string{
		{"score", strconv.FormatFloat(total, 'f', 6, 64)},
		{"compress_seconds", strconv.FormatFloat(elapsed.Seconds(), 'f', 6, 64)},
		{"send_seconds", strconv.FormatFloat(sendSeconds, 'f', 6, 64)},
		{"ratio", strconv.FormatFloat(float64(len(input))/float64(compressed), 'f', 4, 64)},
		{"throughput_mb_s", strconv.FormatFloat(float64(len(input))/(1<<20)/elapsed.Seconds(), 'f', 2, 64)},
		{"compressed_bytes", strconv.Itoa(compressed)},
	} {
		_ = w.Write(kv[:])
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("shipit: %d blocks, %d workers, level %d: %.3fs compress + %.3fs send = %.3fs (ratio %.2f)\n",
		len(blocks), workers, level, elapsed.Seconds(), sendSeconds, total, float64(len(input))/float64(compressed))

	if telemetryPath != "" {
		tf, err := os.Create(telemetryPath)
		if err != nil {
			return err
		}
		tw := csv.NewWriter(tf)
		_ = tw.Write([]string{"timestamp", "metric", "value"})
		step := max(1, len(out)/20) // at most ~20 readings
		for i := 0; i < len(out); i += step {
			_ = tw.Write([]string{out[i].end.UTC().Format(time.RFC3339Nano), "block_ms", strconv.FormatFloat(float64(out[i].took.Microseconds())/1000, 'f', 3, 64)})
		}
		tw.Flush()
		if err := tw.Error(); err != nil {
			return err
		}
		return tf.Close()
	}
	return nil
}
