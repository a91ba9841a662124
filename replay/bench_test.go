package replay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// pingRecording is n JSON-RPC request/response pairs of about 200 bytes.
func pingRecording(n int) []cassette.Record {
	b := replaytest.New("acp")
	pad := "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"
	for i := 1; i <= n; i++ {
		b.In(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"%s"}]}}`, i, pad))
		b.Out(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn","_meta":{"pad":"%s"}}}`, i, pad))
	}
	b.Event(cassette.EventStdinEOF).Exit(0)
	return b.End()
}

// benchReplies measures the time from writing a request to reading its
// reply, one at a time, and reports p50 and p99 in µs. The live ids differ
// from the recorded ones, so every reply is rewritten.
func benchReplies(b *testing.B, in io.Writer, out io.Reader) {
	br := bufio.NewReaderSize(out, 64<<10)
	pad := "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"
	lat := make([]time.Duration, 0, b.N)
	reqs := make([][]byte, b.N)
	for i := range reqs {
		reqs[i] = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"%s"}]}}`+"\n", 1000000+i, pad)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := in.Write(reqs[i]); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkReplyLatencyInProcess: the Go API (io.Pipe both ways).
func BenchmarkReplyLatencyInProcess(b *testing.B) {
	c, err := StartChild(FromRecords("bench", pingRecording(b.N)), WithSpeed(0))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchReplies(b, c.Stdin, c.Stdout)
}

// BenchmarkReplyLatencyOSPipes: RunChild over OS pipes, as `rpctap replay`
// runs between a parent and its stdin/stdout (minus process start-up).
func BenchmarkReplyLatencyOSPipes(b *testing.B) {
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunChild(context.Background(), FromRecords("bench", pingRecording(b.N)), inR, outW, io.Discard, nil, WithSpeed(0))
		outW.Close()
	}()
	benchReplies(b, inW, outR)
	inW.Close()
	<-done
	inR.Close()
	outR.Close()
}
