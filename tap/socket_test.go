package tap

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// upstreamServer echoes each connection's bytes back, and after the
// client's half-close says "bye\n" and closes: it needs the half-close to
// be passed on to answer at all.
func upstreamServer(t *testing.T, path string) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				c.Write([]byte("bye\n"))
			}()
		}
	}()
}

func TestProxy(t *testing.T) {
	dir := t.TempDir()
	up, listen := filepath.Join(dir, "up.sock"), filepath.Join(dir, "tap.sock")
	upstreamServer(t, up)
	obs := newCollector()
	p := &Proxy{Listen: listen, Upstream: up, Observer: obs, Warn: io.Discard}
	if err := p.Bind(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx) }()

	var wantIn, wantOut []byte
	for i, data := range [][]byte{
		[]byte("{\"jsonrpc\":\"2.0\",\"id\":1}\n"),
		append(bytes.Repeat([]byte("\xff\r\n"), 200000), "no eol"...),
	} {
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: listen, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		got := readAllAsync(c)
		c.Write(data)
		c.CloseWrite()
		select {
		case b := <-got:
			want := append(append([]byte(nil), data...), "bye\n"...)
			if !bytes.Equal(b, want) {
				t.Errorf("connection %d: got %d bytes, want %d", i+1, len(b), len(want))
			}
			wantIn = append(wantIn, data...)
			wantOut = append(wantOut, want...)
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d: no answer (half-close not passed on?)", i+1)
		}
		c.Close()
	}
	// Wait for the conn-close of the last connection before stopping.
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(strings.Join(obs.kinds(), ","), "conn-close") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := os.Lstat(listen); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
	obs.check(t)
	if !bytes.Equal(obs.data[Stdin].Bytes(), wantIn) || !bytes.Equal(obs.data[Stdout].Bytes(), wantOut) {
		t.Errorf("observed in %d out %d bytes, want %d and %d", obs.data[Stdin].Len(), obs.data[Stdout].Len(), len(wantIn), len(wantOut))
	}
	// Per connection: opened, then closed (connection 1 may close after 2
	// opened: the test does not wait for it).
	var conns []string
	for _, e := range obs.events {
		conns = append(conns, e.Kind+":"+string(rune('0'+e.Conn)))
	}
	got := strings.Join(conns, " ")
	for _, n := range []string{"1", "2"} {
		opened, closed := strings.Index(got, "conn-open:"+n), strings.Index(got, "conn-close:"+n)
		if opened < 0 || closed < opened || strings.Count(got, ":"+n) != 2 {
			t.Errorf("events %s: connection %s not opened then closed once", got, n)
		}
	}
	if len(conns) != 4 {
		t.Errorf("events %s", got)
	}
}

// A stale socket file is replaced; a live one is refused.
func TestProxyBind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Proxy{Listen: path}).Bind(); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("bind over a live socket: %v", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // leaves a stale file
	p := &Proxy{Listen: path}
	if err := p.Bind(); err != nil {
		t.Errorf("bind over a stale socket: %v", err)
	}
	p.ln.Close()
	os.WriteFile(path, nil, 0o600)
	if err := (&Proxy{Listen: path}).Bind(); err == nil {
		t.Error("bind over a regular file succeeded")
	}
}

// Shutdown cuts a connection that does not end within the grace.
func TestProxyShutdownGrace(t *testing.T) {
	dir := t.TempDir()
	up, listen := filepath.Join(dir, "up.sock"), filepath.Join(dir, "tap.sock")
	upstreamServer(t, up)
	p := &Proxy{Listen: listen, Upstream: up, Grace: 200 * time.Millisecond, Warn: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx) }()
	var c net.Conn
	var err error
	for range 100 {
		if c, err = net.Dial("unix", listen); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello\n")) // and never close
	buf := make([]byte, 6)
	io.ReadFull(c, buf)
	t0 := time.Now()
	cancel()
	select {
	case <-served:
		if d := time.Since(t0); d < 150*time.Millisecond || d > 3*time.Second {
			t.Errorf("shutdown took %v with a 200ms grace", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve hung on an open connection")
	}
}
